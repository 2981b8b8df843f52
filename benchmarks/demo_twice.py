"""Two fresh `rpbench furina demo` runs build the same benchmark, and what that costs.

Runs the README's demo three times, each in a folder of its own with a fresh call cache and a fresh Prefect
home, so nothing is shared between them: twice as shipped (the embedded model reads every prompt from its
first token), then once with the embedded model reusing cached prompt prefixes (``reuse_prefixes = true``, a
copy of the default models file). Compares every Parquet table of the two shipped runs (all columns but
timings and call ids; a stage's own log under ``calls/``, written in the order replies came, as a set of rows)
and of the shipped and the reusing run, and times all three.

Prints key=value lines; the headline (shipped run's time over the reusing run's) is last.
Usage: .venv/bin/python benchmarks/demo_twice.py [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RPBENCH = Path(sys.executable).parent / "rpbench"
VOLATILE = {"seconds", "latency_s", "started_at", "call_id", "cached", "created"}


def say(key: str, value: object) -> None:
    print(f"{key}={value}", flush=True)


def demo(root: Path, models_file: Path | None = None) -> float:
    root.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env["PREFECT_HOME"] = str(root / "prefect")
    args = [str(RPBENCH), "demo", "--out", str(root / "demo"), "--cache", str(root / "calls.sqlite")]
    if models_file is not None:
        args += ["--models-file", str(models_file)]
    start = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True, env=env, cwd=root)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"rpbench furina demo failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return elapsed


def tables(root: Path) -> dict[str, list[dict[str, str]]]:
    import pyarrow.parquet as pq

    found = {}
    for path in sorted((root / "demo").rglob("*.parquet")):
        if "stages" in path.parts:  # the stages' own copies of what the run folder publishes
            continue
        rows = [{k: str(v) for k, v in row.items() if k not in VOLATILE} for row in pq.read_table(path).to_pylist()]
        if path.parent.name == "calls":  # a stage's own log of its calls, in the order the replies came
            rows.sort(key=lambda row: sorted(row.items()))
        found[str(path.relative_to(root))] = rows
    return found


def differing(a: dict[str, list], b: dict[str, list]) -> list[str]:
    return sorted(name for name in a.keys() | b.keys() if a.get(name) != b.get(name))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="work folder (default: a new temporary one)")
    args = parser.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="rpbench-demo-twice-"))
    first_s = demo(root / "first")
    second_s = demo(root / "second")
    first, second = tables(root / "first"), tables(root / "second")
    say("tables", len(first))
    say("rows", sum(len(rows) for rows in first.values()))
    say("first_run_s", f"{first_s:.1f}")
    say("second_run_s", f"{second_s:.1f}")
    say("fresh_runs_differing_tables", len(differing(first, second)))
    for name in differing(first, second):
        say("differs", name)

    from rpbench.tasks.llm.config import DEFAULT_CONFIG_PATH

    reusing = root / "reusing.toml"
    reusing.write_text(DEFAULT_CONFIG_PATH.read_text() + '\n[local_models.smollm2-135m]\nrequantize = "q4_0"\n'
                       "parallel = 1\nreuse_prefixes = true\n")
    reuse_s = demo(root / "reuse", reusing)
    say("reusing_run_s", f"{reuse_s:.1f}")
    say("reusing_run_differing_tables", len(differing(first, tables(root / "reuse"))))
    say("fresh_reads_over_reuse_time", f"{(first_s + second_s) / 2 / reuse_s:.3f}")


if __name__ == "__main__":
    main()
