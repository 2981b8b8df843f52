"""The table every report shows of a judge against people (``agreement.parquet``, any benchmark's): one row per
judge, group and language, each measure with its 95% bootstrap interval."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rpbench.tasks.core.records import JudgeAgreement
from rpbench.tasks.reports.render import fmt
from rpbench.tasks.reports.spec import Section
from rpbench.tasks.stats.agreement import judge_agreement

MEASURES = (("pearson", "Pearson"), ("spearman", "Spearman"), ("kendall", "Kendall"), ("exact", "exact"))


def judge_agreement_lines(rows: Iterable[JudgeAgreement | Mapping[str, Any]], with_benchmark: bool = False
                          ) -> list[str]:
    """Markdown table lines; empty when no benchmark had human scores to compare with."""
    found = [r.model_dump() if isinstance(r, JudgeAgreement) else dict(r) for r in rows]
    if not found:
        return []
    head = ["benchmark"] * with_benchmark + ["judge", "group", "language", "n", *(name for _, name in MEASURES)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for a in found:
        cells = [a["benchmark"]] * with_benchmark + [a["judge"], a["group"], a["language"], str(a["n"])]
        cells += [f"{fmt(a[m], 3)} [{fmt(a[m + '_low'], 2)}, {fmt(a[m + '_high'], 2)}]" for m, _ in MEASURES]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def agreement_rows(benchmark: str, pairs: Iterable[tuple[str, str, str, float | None, float | None]],
                   resamples: int = 1000, seed: int = 0) -> list[JudgeAgreement]:
    """(judge, group, language, human score, judge score) pairs: one row per judge, group and language. A pair
    missing either score (a failed judgment, a reply no one scored) is not compared: ``n`` counts those that are."""
    grouped: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    for judge, group, language, human, score in pairs:
        if human is not None and score is not None:
            grouped.setdefault((judge, group, language), []).append((human, score))
    return [JudgeAgreement.model_validate({**judge_agreement([h for h, _ in v], [j for _, j in v], resamples, seed),
                                           "benchmark": benchmark, "judge": k[0], "group": k[1], "language": k[2],
                                           "n": len(v)}) for k, v in sorted(grouped.items())]


def agreement_section(rows: Sequence[JudgeAgreement], note: str) -> Section | None:
    """Any report's section on its judges against people: the table, or (none measured) ``note`` saying why."""
    if rows:
        return Section("The judge against people", "\n".join([
            "Each judge's scores of the replies people scored, against those people's scores, per group and "
            "language (a release's own judge predictions beside them, where it has them); 95% bootstrap "
            "intervals over items.", "", *judge_agreement_lines(rows)]))
    return Section("The judge against people", f"Not measured: {note}") if note else None
