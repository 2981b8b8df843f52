"""RoleGPT's released answers under rpbench's Rouge-L, beside the RoleLLM paper's Tables 3a and 4a.

RoleBench ships RoleGPT's answers (``rolegpt_baseline.jsonl``) beside its test files (../shared/data/rolebench/,
read where present; nothing is sent to a model). ``rpbench rolellm eval`` scores them as any answers file; this
prints each split's Rouge-L x100 with the paper's figure and the ratio, and writes the same as a Markdown table
to ``benchmarks/rolellm_released.md``, which the RoleLLM page of the manual includes.

Prints key=value lines; the headline (English SPE, rpbench over the paper) is last.
Usage: .venv/bin/python benchmarks/rolellm_released.py
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rpbench.tasks.core.offline import OFFLINE_ENV  # noqa: E402

os.environ.update(OFFLINE_ENV)
RELEASED = ROOT.parent / "shared" / "data" / "rolebench"
# (name, folder under RELEASED, the split's column, the paper's table and figure)
SPLITS = [
    ("eng_spe", "rolebench-eng/instruction-generalization/role_specific", "SPE", "3a (English)", 32.3),
    ("zh_cus", "rolebench-zh/general", "CUS", "4a (Chinese)", 53.7),
    ("zh_spe", "rolebench-zh/role_specific", "SPE", "4a (Chinese)", 24.8),
]
TABLE = ROOT / "benchmarks" / "rolellm_released.md"


def say(key: str, value: object) -> None:
    print(f"{key}={value}", flush=True)


def main() -> None:
    from tests.helpers import rpbench

    if not RELEASED.is_dir():
        say("skipped", f"no released RoleBench files in {RELEASED}")
        return
    rows, ratios = [], {}
    with tempfile.TemporaryDirectory(prefix="rpbench-rolellm-released-") as tmp:
        for name, folder, column, table, paper in SPLITS:
            data = RELEASED / folder
            out = Path(tmp) / name
            ran = rpbench("rolellm", "eval", "--data", str(data), "--answers",
                          f"rolegpt={data / 'rolegpt_baseline.jsonl'}", "--mode", "zsp", "--out", str(out),
                          "--resamples", "200", "--cache", str(Path(tmp) / "calls.sqlite"))
            if ran.returncode:
                sys.exit(f"{name}: rolellm eval failed:\n{ran.stderr[-2000:]}")
            by_split = json.loads((out / "manifest.json").read_text())["rolellm"]["by_split"]
            ours = next(v["rolegpt"][column] for v in by_split.values() if v["rolegpt"].get(column) is not None)
            ratios[name] = ours / paper
            say(f"{name}.rpbench_rouge_l", f"{ours:.1f}")
            say(f"{name}.paper_rouge_l", f"{paper:.1f}")
            rows.append(f"| {table} | {column} | {paper:.1f} | {ours:.1f} | {ours / paper:.2f} |")
    TABLE.write_text("\n".join([
        "| paper table | split | paper (Rouge-L x100) | rpbench on the released answers | ratio |",
        "|---|---|---|---|---|", *rows]) + "\n")
    say("table", TABLE.relative_to(ROOT))
    say("eng_spe_ratio_to_paper", f"{ratios['eng_spe']:.3f}")


if __name__ == "__main__":
    main()
