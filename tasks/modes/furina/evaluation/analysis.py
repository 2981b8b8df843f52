"""FURINA's numbers beyond the shared leaderboard: its scoring declaration, hallucination rates and
reliability, the established-vs-synthesized gap, position bias, the Pareto frontier and separability."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rpbench.tasks.core.records import ItemScore
from rpbench.tasks.modes.furina.dimensions import DIMENSIONS
from rpbench.tasks.modes.furina.evaluation.scoring import (
    pareto_front,
    performance,
    performance_statistic,
    position_bias,
    reliability,
)
from rpbench.tasks.reports.render import fmt, png
from rpbench.tasks.reports.spec import Analysis, Column, GroupKey, MetricSpec, ReportSpec, Scoring, Section
from rpbench.tasks.stats import separability_index

ALL = "all"
CHARACTER_TYPES = ("established", "synthesized")

SCORING = Scoring(
    metrics=(MetricSpec(
        "score", column="score", point=performance, statistic=performance_statistic,
        description="each item earns (f(sigma1) + f(6 - sigma2)) / 2 with f = {1: 3, 2: 1, 3: 0.5, 4: 0, 5: 0}, "
                    "sigma1 judged with the reply under test shown first, sigma2 with it second; "
                    "performance = sum / (3 N) x 100, with 95% bootstrap intervals.",
    ),),
    groups=(GroupKey("dimension", "dimension", DIMENSIONS),
            GroupKey("language", "language", breakdown=False),
            GroupKey("character_type", "character type", CHARACTER_TYPES)),
)

EXTRA_COLUMNS = (
    Column("gap", "gap"),
    Column("sc_rate", "SC %"),
    Column("ec_rate", "EC %"),
    Column("reliability", "reliability", missing="undefined (rate 0 or no items)"),
    Column("order_disagreement", "order disagreement", 2),
    Column("position_offset", "position offset", 2),
)


def hallucination_rates(item_scores: Sequence[ItemScore]) -> list[dict[str, Any]]:
    """SC: synthesized characters on CR items; EC: established characters on FR items; in percent."""
    rows = []
    for model in sorted({s.model for s in item_scores}):
        mine = [s for s in item_scores if s.model == model and s.hallucinated is not None]
        for lang in [*sorted({s.language for s in mine}), ALL]:
            sel = [s for s in mine if lang in (ALL, s.language)]
            sc = [bool(s.hallucinated) for s in sel if s.character_type == "synthesized" and s.dimension == "CR"]
            ec = [bool(s.hallucinated) for s in sel if s.character_type == "established" and s.dimension == "FR"]
            both = sc + ec
            rate = 100.0 * sum(both) / len(both) if both else math.nan
            rows.append({"model": model, "language": lang,
                         "sc_rate": 100.0 * sum(sc) / len(sc) if sc else math.nan, "sc_n": len(sc),
                         "ec_rate": 100.0 * sum(ec) / len(ec) if ec else math.nan, "ec_n": len(ec),
                         "rate": rate, "reliability": reliability(rate) if both else None})
    return rows


def analyze(board: list[dict[str, Any]], item_scores: Sequence[ItemScore]) -> Analysis:
    """Add FURINA's columns to each leaderboard row (in place) and its report sections."""
    rel = {h["model"]: h for h in hallucination_rates(item_scores) if h["language"] == ALL}
    for row in board:
        model = row["model"]
        bias = position_bias([(s.sigma1, s.sigma2) for s in item_scores if s.model == model])
        h = rel.get(model, {})
        est, syn = row.get("established"), row.get("synthesized")
        row.update({
            "gap": est - syn if est is not None and syn is not None else None,
            "sc_rate": h.get("sc_rate"), "ec_rate": h.get("ec_rate"), "reliability": h.get("reliability"),
            "order_disagreement": bias["disagreement_rate"], "position_offset": bias["mean_offset"],
        })
    points = {r["model"]: (r["score"], r["reliability"]) for r in board}
    pareto = pareto_front(points) if points else []
    si = separability_index([r["score"] for r in board]) if len(board) > 1 else math.nan
    text = (f"Pareto frontier (performance vs reliability): {', '.join(pareto) or '-'}\n\n"
            f"Separability index: {fmt(si, 3)}\n\n"
            "Hallucination: an item is hallucinated only when the checker says so for both judgments "
            "(SC: synthesized characters on CR items, EC: established characters on FR items); "
            "reliability = 100 / hallucination rate.")
    section = Section("Performance and reliability", text, {"pareto": _pareto_chart(board, pareto)})
    return Analysis([section], {"pareto": pareto, "separability_index": si})


def _pareto_chart(board: list[dict[str, Any]], pareto: list[str]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    finite = [r["reliability"] for r in board if r["reliability"] is not None]
    top = (max(finite) * 1.2) if finite else 1.0
    for r in board:
        y = r["reliability"] if r["reliability"] is not None else top
        ax.scatter(r["score"], y, marker="*" if r["model"] in pareto else "o", s=80)
        ax.annotate(r["model"], (r["score"], y), fontsize=7)
    ax.set_xlabel("performance")
    ax.set_ylabel("reliability (100 / hallucination %)")
    ax.set_title("Performance vs reliability (* = Pareto frontier)")
    return png(fig)


REPORT = ReportSpec("rpbench evaluation", SCORING, EXTRA_COLUMNS, analyze)
