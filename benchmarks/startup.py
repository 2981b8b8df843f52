"""How fast the command line answers: `rpbench --help`, `rpbench modes` and an input error, against what
importing the heavy libraries alone costs (what every command paid when registering a mode imported all of it).

Each command runs as a fresh process, as a user types it, three times; the median is printed. The headline
is the input error's time as a share of the heavy imports' time in the same run (lower is better: under 1, a
user's typo is answered before litellm and Prefect could even have loaded).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = 3
RPBENCH = [sys.executable, "-m", "rpbench.flows.cli.main"]
# What the command line imported before any command ran, when registering a mode imported all of it.
HEAVY = "import litellm, prefect, prefect.flows, rouge_score.rouge_scorer, scipy.stats, pyarrow.parquet"


def seconds(argv: list[str]) -> float:
    """Median wall time of ``argv`` over RUNS fresh processes (output discarded)."""
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run(argv, cwd=ROOT, capture_output=True, check=False)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    out = tempfile.mkdtemp(prefix="rpbench-startup-")
    python = seconds([sys.executable, "-c", "pass"])
    heavy = seconds([sys.executable, "-c", HEAVY])
    help_s = seconds([*RPBENCH, "--help"])
    modes_s = seconds([*RPBENCH, "modes"])
    error_s = seconds([*RPBENCH, "eval", "--bench", f"{out}/MISSING", "--model", "local-greedy", "--out", out])
    mode_help_s = seconds([*RPBENCH, "roleinteract", "run", "--help"])
    print(f"runs_per_figure={RUNS}")
    print(f"python_start_s={python:.2f}")
    print(f"heavy_imports_s={heavy:.2f}")
    print(f"help_s={help_s:.2f}")
    print(f"modes_s={modes_s:.2f}")
    print(f"mode_command_help_s={mode_help_s:.2f}")
    print(f"eval_missing_bench_error_s={error_s:.2f}")
    print(f"help_ratio_of_heavy_imports={help_s / heavy:.3f}")
    print(f"input_error_ratio_of_heavy_imports={error_s / heavy:.3f}")


if __name__ == "__main__":
    main()
