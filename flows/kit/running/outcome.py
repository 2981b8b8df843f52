"""Whether a finished run succeeded: a run that wrote its tables but lost too much to failures says so.

The rule (``RunSettings.max_failure_share``): the run failed when any model has more than that share of its
items failed, or when any stage sent calls and every one of them failed (a judge that never answered, a
key that was refused). Everything the run made is written first; then the flow ends in Prefect's Failed
state and the command exits 3, listing the reasons and the failures by stage and kind.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rpbench.storage.schemas import CALLS, FAILURES
from rpbench.storage.tables import read_records
from rpbench.tasks.core.errors import plain_error
from rpbench.tasks.core.records import CallRecord, Failure, failed_pairs

LEADERBOARD = "leaderboard.parquet"


def failures_by_stage(failures: Sequence[Failure]) -> dict[str, dict[str, int]]:
    """stage -> kind -> count, for the summary a user reads first."""
    out: dict[str, Counter[str]] = {}
    for f in failures:
        out.setdefault(f.stage, Counter())[f.kind] += 1
    return {stage: dict(sorted(kinds.items())) for stage, kinds in sorted(out.items())}


def _scored_per_model(root: Path) -> tuple[dict[str, int], dict[str, int] | None]:
    """Each model's n on the leaderboard, and the items it was asked where the report kept them."""
    path = root / LEADERBOARD
    if not path.is_file():
        return {}, None
    import pyarrow.parquet as pq

    from rpbench.tasks.reports.tables import items_asked_of

    table = pq.read_table(path, columns=["model", "n"])
    return {str(r["model"]): int(r["n"] or 0) for r in table.to_pylist()}, items_asked_of(table)


def model_reasons(failures: Sequence[Failure], scored: dict[str, int], limit: float,
                  asked: Mapping[str, int] | None = None) -> list[str]:
    """A reason for each model with more than ``limit`` of its items failed (a model with no scored item and
    some failed has them all failed). ``asked``: each model's items, where its failed ones may be among the
    scored (FURINA scores an unanswered item 0); else its scored and its failed items add up."""
    failed = Counter(model for model, _ in failed_pairs(failures))
    reasons = []
    for model in sorted(failed):
        total = (asked or {}).get(model) or failed[model] + scored.get(model, 0)
        share = failed[model] / total
        if share > limit:
            reasons.append(f"model {model}: {failed[model]} of {total} items failed ({share:.0%}, more than "
                           f"{limit:.0%})")
    return reasons


def stage_reasons(calls_by_stage: Mapping[str, Sequence[CallRecord]]) -> list[str]:
    """A reason for each stage that sent calls and got no usable reply to any of them."""
    reasons = []
    for stage, calls in sorted(calls_by_stage.items()):
        if calls and not any(c.outcome == "ok" for c in calls):
            # The error's words, not its type alone: a server never reached is an 'InternalServerError' to
            # litellm, which reads as the server answering 500.
            errors = Counter(plain_error(c.error or c.outcome, 120) for c in calls)
            common = ", ".join(f"{e} x{n}" for e, n in errors.most_common(2))
            replayed = ""
            if all(c.cached for c in calls):
                # Nothing was asked: an earlier run's unreadable replies, past the one fresh round a rerun gives
                # them (or kept by --keep-failures). Said, as a fixed server would otherwise look still broken.
                replayed = ("; all read from the call cache, earlier runs' replies that a rerun does not ask "
                            "again: give --cache a new file to ask the model afresh")
            reasons.append(f"stage {stage}: every one of its {len(calls)} calls failed ({common}){replayed}")
    return reasons


def judge_run(root: Path, stage_calls: dict[str, str], limit: float) -> dict[str, Any]:
    """The run's outcome from its published failures and leaderboard and its stages' calls tables."""
    path = root / FAILURES.filename
    failures = read_records(path, FAILURES) if path.is_file() else []
    calls = {stage: read_records(p, CALLS) for stage, p in stage_calls.items() if Path(p).is_file()}
    scored, asked = _scored_per_model(root)
    reasons = model_reasons(failures, scored, limit, asked) + stage_reasons(calls)
    return {"status": "failed" if reasons else "ok", "reasons": reasons, "max_failure_share": limit,
            "failures": failures_by_stage(failures)}
