"""From item scores to model scores, hallucination rates, the leaderboard, Pareto set and separability."""

from __future__ import annotations

import math
from typing import Any

from rpbench.tasks.modes.furina.builder.dwrs import DIMENSIONS
from rpbench.tasks.modes.furina.evaluation.scoring import (
    bootstrap_ci,
    pareto_front,
    performance,
    position_bias,
    reliability,
    separability_index,
)

ALL = "all"


def model_scores(item_scores: list[dict[str, Any]], resamples: int = 1000, seed: int = 0) -> list[dict[str, Any]]:
    """Score with a bootstrap CI for every (model, dimension, language, character_type), 'all' included."""
    rows = []
    models = sorted({s["model"] for s in item_scores})
    languages = [*sorted({s["language"] for s in item_scores}), ALL]
    for model in models:
        mine = [s for s in item_scores if s["model"] == model]
        for dim in [*DIMENSIONS, ALL]:
            for lang in languages:
                for ctype in ("established", "synthesized", ALL):
                    sel = [s["score"] for s in mine if dim in (ALL, s["dimension"]) and lang in (ALL, s["language"])
                           and ctype in (ALL, s["character_type"])]
                    if not sel:
                        continue
                    low, high = bootstrap_ci(sel, resamples, seed)
                    rows.append({"model": model, "dimension": dim, "language": lang, "character_type": ctype,
                                 "score": performance(sel), "ci_low": low, "ci_high": high, "n": len(sel)})
    return rows


def hallucination_rates(item_scores: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """SC: synthesized characters on CR items; EC: established characters on FR items; in percent."""
    rows = []
    for model in sorted({s["model"] for s in item_scores}):
        mine = [s for s in item_scores if s["model"] == model and s["hallucinated"] is not None]
        for lang in [*sorted({s["language"] for s in mine}), ALL]:
            sel = [s for s in mine if lang in (ALL, s["language"])]
            sc = [s["hallucinated"] for s in sel if s["character_type"] == "synthesized" and s["dimension"] == "CR"]
            ec = [s["hallucinated"] for s in sel if s["character_type"] == "established" and s["dimension"] == "FR"]
            both = sc + ec
            rate = 100.0 * sum(both) / len(both) if both else math.nan
            rows.append({"model": model, "language": lang,
                         "sc_rate": 100.0 * sum(sc) / len(sc) if sc else math.nan, "sc_n": len(sc),
                         "ec_rate": 100.0 * sum(ec) / len(ec) if ec else math.nan, "ec_n": len(ec),
                         "rate": rate, "reliability": reliability(rate) if both else None})
    return rows


def leaderboard(scores: list[dict[str, Any]], item_scores: list[dict[str, Any]], halluc: list[dict[str, Any]],
                failures: dict[str, dict[str, int]]) -> dict[str, Any]:
    overall = {r["model"]: r for r in scores if (r["dimension"], r["language"], r["character_type"]) == (ALL, ALL, ALL)}
    rel = {h["model"]: h for h in halluc if h["language"] == ALL}
    rows = []
    for model, r in sorted(overall.items(), key=lambda kv: -kv[1]["score"]):
        pairs = [(s["sigma1"], s["sigma2"]) for s in item_scores if s["model"] == model]
        bias = position_bias(pairs)
        h = rel.get(model, {})
        by_type = {t: next((x["score"] for x in scores if (x["model"], x["dimension"], x["language"],
                                                             x["character_type"]) == (model, ALL, ALL, t)), None)
                   for t in ("established", "synthesized")}
        gap = (by_type["established"] - by_type["synthesized"]
               if None not in by_type.values() else None)
        rows.append({
            "model": model, "score": r["score"], "ci_low": r["ci_low"], "ci_high": r["ci_high"], "n": r["n"],
            "established": by_type["established"], "synthesized": by_type["synthesized"], "gap": gap,
            **{d: next((x["score"] for x in scores if (x["model"], x["dimension"], x["language"],
                                                        x["character_type"]) == (model, d, ALL, ALL)), None)
               for d in DIMENSIONS},
            "sc_rate": h.get("sc_rate"), "ec_rate": h.get("ec_rate"), "reliability": h.get("reliability"),
            "order_disagreement": bias["disagreement_rate"], "position_offset": bias["mean_offset"],
            "failed": sum((failures.get(model) or {}).values()),
        })
    points = {r["model"]: (r["score"], r["reliability"]) for r in rows}
    return {
        "rows": rows,
        "pareto": pareto_front(points) if points else [],
        "separability_index": separability_index([r["score"] for r in rows]) if len(rows) > 1 else math.nan,
    }
