"""RoleGPT's released answers under OpenCompass's Rouge-L (rpbench's default) and under rpbench's own options,
beside the RoleLLM paper's Tables 3a and 4a.

RoleBench ships RoleGPT's answers (``rolegpt_baseline.jsonl``) beside its test files (../shared/data/rolebench/,
read where present; nothing is sent to a model). ``rpbench rolellm eval`` scores them as any answers file, twice:
as OpenCompass (the RoleLLM authors' scorer) does, the first reference and jieba words for Chinese (the
default), and with rpbench's own options (``--combine max --zh-tokens chars``: the best of the references, one
token per character). OpenCompass also reports one figure per language over the general and role-specific
questions together; the Chinese one is printed too (the English general test file is not in the snapshot). This
prints each figure with the paper's and writes the table to ``benchmarks/rolellm_released.md``, which the
RoleLLM page of the manual includes.

Prints key=value lines; the headline (English SPE under OpenCompass's scoring, over the paper) is last.
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
from tests.shared_copies import use_shared_releases  # noqa: E402

use_shared_releases()  # the releases' code the runs read their prompts from, where ../shared has it

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


def _score(data: Path, out: Path, cache: Path, *options: str) -> tuple[dict, list[float]]:
    """The split's Rouge-L table for RoleGPT's released answers, and every row score, scored with ``options``."""
    from rpbench.storage.tables import read_records
    from rpbench.tasks.modes.rolellm.tables import ROW_SCORES
    from tests.helpers import rpbench

    ran = rpbench("rolellm", "eval", "--data", str(data), "--answers", f"rolegpt={data / 'rolegpt_baseline.jsonl'}",
                  "--out", str(out), "--resamples", "200", "--cache", str(cache), *options)
    if ran.returncode:
        sys.exit(f"{data}: rolellm eval failed:\n{ran.stderr[-2000:]}")
    by_split = json.loads((out / "manifest.json").read_text())["rolellm"]["by_split"]
    rows = [r.rouge_l for r in read_records(out / ROW_SCORES.filename, ROW_SCORES) if r.model == "rolegpt"]
    return next(v["rolegpt"] for v in by_split.values() if "rolegpt" in v), rows


def main() -> None:
    if not RELEASED.is_dir():
        say("skipped", f"no released RoleBench files in {RELEASED}")
        return
    rows, ratios, zh_rows = [], {}, []
    with tempfile.TemporaryDirectory(prefix="rpbench-rolellm-released-") as tmp:
        cache = Path(tmp) / "calls.sqlite"
        for name, folder, column, table, paper in SPLITS:
            data = RELEASED / folder
            released, scored = _score(data, Path(tmp) / name, cache)
            own, _ = _score(data, Path(tmp) / f"{name}-own", cache, "--combine", "max", "--zh-tokens", "chars")
            ours, theirs = released[column], own[column]
            if name.startswith("zh"):
                zh_rows += scored
            ratios[name] = ours / paper
            say(f"{name}.opencompass_rouge_l", f"{ours:.1f}")
            say(f"{name}.rpbench_options_rouge_l", f"{theirs:.1f}")
            say(f"{name}.paper_rouge_l", f"{paper:.1f}")
            rows.append(f"| {table} | {column} | {paper:.1f} | {ours:.1f} | {theirs:.1f} | {ours / paper:.2f} |")
    zh_all = sum(zh_rows) / len(zh_rows)
    say("zh.opencompass_general_and_role_specific_rouge_l", f"{zh_all:.1f}")
    TABLE.write_text("\n".join([
        "| paper table | split | paper (Rouge-L x100) | OpenCompass's scoring (rpbench's default) | rpbench's options "
        "(best reference, Chinese per character) | default over paper |",
        "|---|---|---|---|---|---|", *rows, "",
        f"OpenCompass's single Chinese figure (general and role-specific questions together, as its "
        f"RoleBench_instruct_zh reports it) on the same answers: {zh_all:.1f}."]) + "\n")
    say("table", TABLE.relative_to(ROOT))
    say("eng_spe_opencompass_ratio_to_paper", f"{ratios['eng_spe']:.3f}")


if __name__ == "__main__":
    main()
