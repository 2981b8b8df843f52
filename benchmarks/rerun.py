"""A finished flow run again: `rpbench furina demo` twice, the second finding every stage cached.

Runs the README's demo command twice in a fresh folder with a fresh call cache,
as separate processes, and times both. Then a third time with a new Prefect home
(no stage cached, the same call cache): every call must come from the call
cache and the benchmark and scores must be the same (the builder is
reproducible, not only cached). With PREFECT_API_URL set, the runs go to
that Prefect server (the UI then shows every stage of the second run Cached);
otherwise each command starts its own temporary server.

Prints key=value lines; the headline figure (second run / first run) is last.
Usage: .venv/bin/python benchmarks/rerun.py [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RPBENCH = Path(sys.executable).parent / "rpbench"


def say(key: str, value: object) -> None:
    print(f"{key}={value}", flush=True)


def demo(out: Path, env: dict[str, str] | None = None) -> tuple[float, dict]:
    start = time.perf_counter()
    proc = subprocess.run([str(RPBENCH), "demo", "--out", str(out), "--cache", str(out.parent / "calls.sqlite")],
                          capture_output=True, text=True, env=env or dict(os.environ))
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"rpbench furina demo failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    manifests = {part: json.loads((out / part / "manifest.json").read_text()) for part in ("pool", "bench", "eval")}
    return elapsed, manifests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="work folder (default: a new temporary one)")
    args = parser.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="rpbench-rerun-"))
    out = root / "demo"
    say("prefect_api", os.environ.get("PREFECT_API_URL", "temporary server per command"))
    first, _ = demo(out)
    second, manifests = demo(out)
    stages = sum(m["this_run"]["stages"] for m in manifests.values())
    cached = sum(m["this_run"]["cached"] for m in manifests.values())
    sent = sum(m["this_run"]["calls_sent"] for m in manifests.values())
    say("first_run_s", f"{first:.1f}")
    say("second_run_s", f"{second:.1f}")
    say("second_run_stages", stages)
    say("second_run_stages_cached", cached)
    say("second_run_calls_sent", sent)

    import pyarrow.parquet as pq

    def tables() -> dict[str, list]:
        volatile = {"seconds", "latency_s", "started_at", "call_id", "cached"}
        return {f"{part}/{p.name}": [{k: str(v) for k, v in r.items() if k not in volatile}
                                     for r in pq.read_table(p).to_pylist()]
                for part in ("bench", "eval") for p in sorted((out / part).glob("*.parquet")) if p.stem != "calls"}

    before = tables()
    fresh_home = {**os.environ, "PREFECT_HOME": str(root / "prefect-fresh")}
    fresh_home.pop("PREFECT_API_URL", None)
    third, manifests = demo(out, fresh_home)
    say("fresh_prefect_run_s", f"{third:.1f}")
    say("fresh_prefect_run_stages_cached", sum(m["this_run"]["cached"] for m in manifests.values()))
    say("fresh_prefect_run_calls_sent", sum(m["this_run"]["calls_sent"] for m in manifests.values()))
    after = tables()
    say("fresh_prefect_run_tables_identical", before == after)
    say("second_over_first", f"{second / first:.3f}")


if __name__ == "__main__":
    main()
