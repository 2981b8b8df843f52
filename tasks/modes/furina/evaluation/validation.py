"""Human validation of the judge (FURINA section 4.4): dimension accuracy, judge-human correlation, agreement.

Annotations (CSV or JSONL) have ``item_id, annotator`` and a ``dimension`` and/or a pairwise ``score``
(1-5, 1 = strong preference for the reply under test, the judge's first order), optionally a ``model``.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from rpbench.storage.user_files import Fields, load_rows, whole_number
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.core.records import JudgeAgreement
from rpbench.tasks.modes.furina.dimensions import DIMENSIONS
from rpbench.tasks.stats import krippendorff_alpha, pearson
from rpbench.tasks.stats.agreement import judge_agreement


def load_annotations(path: str | Path) -> list[dict[str, Any]]:
    """The annotations in a file, one per record in its order; each field checked, and one annotator's second
    dimension for an item (or second score for an item and model) an error naming both records."""
    rows = load_rows(path, "an annotations file", "item_id, annotator, ...")
    out: list[dict[str, Any]] = []
    first_seen: dict[tuple[str | None, ...], int] = {}
    for i, row in enumerate(rows):
        fields = Fields(row, f"{path}: record {i}")
        item, annotator = fields.text("item_id"), fields.text("annotator")
        dim = fields.text("dimension", required=False)
        dim = dim.strip() or None if dim is not None else None
        if dim is not None and dim not in DIMENSIONS:
            raise fields.fail("dimension", f"unknown dimension '{dim}' (one of {', '.join(DIMENSIONS)})")
        score = row.get("score")
        if score in ("", None):
            score = None
        else:
            try:
                score = whole_number(score)
            except (TypeError, ValueError):
                raise fields.fail("score", "not an integer 1-5") from None
            if not 1 <= score <= 5:
                raise fields.fail("score", f"{score} is outside 1-5")
        if dim is None and score is None:
            raise InputError(f"{path}: record {i}: needs a 'dimension' or a 'score'")
        model = fields.text("model", required=False)
        # One person's two answers to one question would be counted twice (and the later one would win where
        # answers are paired): a copy-paste slip, said rather than averaged.
        keys = ([("dimension", annotator, item)] if dim else []) + \
            ([("score", annotator, item, model or "")] if score is not None else [])
        for key in keys:
            if key in first_seen:
                what = "dimension" if key[0] == "dimension" else "score" + (f" (model '{model}')" if model else "")
                raise fields.fail(key[0], f"annotator '{annotator}' already gave item '{item}' a {what} in "
                                          f"record {first_seen[key]}")
            first_seen[key] = i
        out.append({"item_id": item, "annotator": annotator, "dimension": dim, "score": score, "model": model})
    return out


def check_models(annotations: list[dict[str, Any]], models: list[str], path: str | Path) -> None:
    """Every score names a model the evaluation judged, or the evaluation judged one model only: a score that
    matched no judged reply would be left out of the comparison without a word. (An evaluation with no judged
    item is the caller's "nothing to compare".)"""
    if not models:
        return
    for i, a in enumerate(annotations):
        if a["score"] is None:
            continue
        if a["model"] is None and len(models) > 1:
            raise InputError(f"{path}: record {i}: field 'model': missing; this evaluation judged "
                             f"{len(models)} models ({', '.join(models)}), so a score must say whose reply it is")
        if a["model"] is not None and a["model"] not in models:
            raise InputError(f"{path}: record {i}: field 'model': '{a['model']}' is not a model of this evaluation "
                             f"(it has {', '.join(models)})")


def _pearson(pairs: list[tuple[float, float]]) -> tuple[float | None, float | None]:
    if len(pairs) >= 3 and len({p[0] for p in pairs}) > 1 and len({p[1] for p in pairs}) > 1:
        return pearson([x for x, _ in pairs], [y for _, y in pairs])
    return None, None


def judge_views(score: dict[str, Any]) -> dict[str, float] | None:
    """The judge's verdict on an item on the annotators' scale (1 = the reply under test much better):
    the first order as given, the second mirrored (6 - sigma2), and both averaged. None when unjudged."""
    s1, s2 = score.get("sigma1"), score.get("sigma2")
    if s1 is None:
        return None
    views = {"order1": float(s1)}
    if s2 is not None:
        views |= {"order2": 6.0 - s2, "both": (s1 + 6.0 - s2) / 2}
    return views


def validate(annotations: list[dict[str, Any]], item_scores: list[dict[str, Any]], judge_name: str = "judge",
             resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Accuracy of the item dimension per human dimension and overall; Pearson judge-vs-human per dimension
    for the judge's first order, its mirrored second order and both averaged (``r``); annotator agreement;
    and, as every benchmark reports a judge against people (``judges``: JudgeAgreement rows), the judge's
    two orders averaged against each human score, with intervals."""
    item_dim = {s["item_id"]: s["dimension"] for s in item_scores}
    judge = {(s["model"], s["item_id"]): v for s in item_scores if (v := judge_views(s)) is not None}
    models = sorted({s["model"] for s in item_scores})

    accuracy: dict[str, dict[str, Any]] = {}
    for d in [*DIMENSIONS, "all"]:
        sel = [a for a in annotations if a["dimension"] is not None and d in ("all", a["dimension"])
               and a["item_id"] in item_dim]
        accuracy[d] = {"n": len(sel), "accuracy": sum(item_dim[a["item_id"]] == a["dimension"] for a in sel)
                       / len(sel) if sel else None}

    correlation: dict[str, dict[str, Any]] = {}
    judges: list[JudgeAgreement] = []
    for d in [*DIMENSIONS, "all"]:
        matched = []
        for a in annotations:
            if a["score"] is None or a["item_id"] not in item_dim or d not in ("all", item_dim[a["item_id"]]):
                continue
            model = a["model"] or (models[0] if len(models) == 1 else None)
            if (model, a["item_id"]) in judge:
                matched.append((judge[(model, a["item_id"])], float(a["score"])))
        row: dict[str, Any] = {"n": len(matched)}
        for view in ("order1", "order2"):
            row[f"r_{view}"] = _pearson([(v[view], h) for v, h in matched if view in v])[0]
        row["r"], row["p"] = _pearson([(v["both"], h) for v, h in matched if "both" in v])
        correlation[d] = row
        both = [(h, v["both"]) for v, h in matched if "both" in v]
        if both:  # the same measures every benchmark reports of a judge against people
            found = judge_agreement([h for h, _ in both], [j for _, j in both], resamples, seed)
            judges.append(JudgeAgreement.model_validate({**found, "benchmark": "furina", "judge": judge_name,
                                                         "group": d, "language": "all", "n": len(both)}))

    by_item: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for a in annotations:
        by_item[a["item_id"]][a["annotator"]] = a
    annotators = sorted({a["annotator"] for a in annotations})
    agreement = []
    for x, y in itertools.combinations(annotators, 2):
        shared = [v for v in by_item.values() if x in v and y in v]
        dims = [(v[x]["dimension"], v[y]["dimension"]) for v in shared if v[x]["dimension"] and v[y]["dimension"]]
        scores = [(v[x]["score"], v[y]["score"]) for v in shared if v[x]["score"] and v[y]["score"]]
        score_r: float | None = None
        if len(scores) >= 3 and len({s[0] for s in scores}) > 1 and len({s[1] for s in scores}) > 1:
            score_r = pearson([s[0] for s in scores], [s[1] for s in scores])[0]
        agreement.append({"pair": f"{x}/{y}", "dimension_agreement": sum(a == b for a, b in dims) / len(dims)
                          if dims else None, "n_dimension": len(dims), "score_r": score_r, "n_score": len(scores)})
    unknown = sorted({a["item_id"] for a in annotations} - set(item_dim))
    return {"dimension_accuracy": accuracy, "correlation": correlation, "agreement": agreement,
            "alpha": annotator_alpha(annotations), "unknown_items": unknown,
            "judges": [j.model_dump() for j in judges]}


def annotator_alpha(annotations: list[dict[str, Any]]) -> dict[str, float | None]:
    """Krippendorff's alpha over all annotators at once: nominal for the dimension each chose for an item,
    ordinal for the pairwise score of an item and model. None where it is undefined (one annotator, no
    item rated twice, no variation)."""
    dims: dict[str, dict[Any, float]] = defaultdict(dict)
    scores: dict[str, dict[Any, float]] = defaultdict(dict)
    for a in annotations:
        if a["dimension"] is not None:
            dims[a["annotator"]][a["item_id"]] = float(DIMENSIONS.index(a["dimension"]))
        if a["score"] is not None:
            scores[a["annotator"]][(a["model"] or "", a["item_id"])] = float(a["score"])
    return {"dimension": krippendorff_alpha(dims, "nominal"), "score": krippendorff_alpha(scores, "ordinal")}


def validation_markdown(result: dict[str, Any]) -> str:
    def f(x: Any) -> str:
        return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"

    lines = ["# Human validation", "", "## Dimension selection accuracy", "", "| dimension | n | accuracy |",
             "|---|---|---|"]
    lines += [f"| {d} | {v['n']} | {f(v['accuracy'])} |" for d, v in result["dimension_accuracy"].items()]
    lines += ["", "## Judge vs human scores (Pearson)", "",
              "r: the judge's two orders averaged; order 1: the reply under test shown first; order 2: shown "
              "second, mirrored onto the same scale.", "",
              "| dimension | n | r | p | r order 1 | r order 2 |", "|---|---|---|---|---|---|"]
    lines += [f"| {d} | {v['n']} | {f(v['r'])} | {f(v['p'])} | {f(v['r_order1'])} | {f(v['r_order2'])} |"
              for d, v in result["correlation"].items()]
    if result.get("unknown_items"):
        lines += ["", f"{len(result['unknown_items'])} annotated items are not in this evaluation and were "
                  f"left out: {', '.join(result['unknown_items'][:10])}"]
    alpha = result.get("alpha") or {}
    lines += ["", "## Agreement between annotators", "",
              f"Krippendorff's alpha, all annotators: dimension (nominal) {f(alpha.get('dimension'))}, "
              f"score (ordinal) {f(alpha.get('score'))}.", "",
              "| pair | dimension agreement | n | score r | n |", "|---|---|---|---|---|"]
    lines += [f"| {a['pair']} | {f(a['dimension_agreement'])} | {a['n_dimension']} | {f(a['score_r'])} "
              f"| {a['n_score']} |"
              for a in result["agreement"]]
    return "\n".join(lines) + "\n"
