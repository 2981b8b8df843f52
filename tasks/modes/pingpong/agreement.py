"""PingPong's check of its judges against people (its section 4.1).

Annotations (CSV or JSONL): ``model, conversation_id, annotator`` and a 1-5 rating per criterion
(``in_character``, ``entertaining``, ``fluency``; a blank is "not rated"). Per conversation the ratings are
averaged over annotators and the human final score is the mean of the criteria. Each judge's automatic
score of a conversation is its mean over turns per criterion and their mean as the final; "average" pools
the judges. Reported: Spearman's rho with its p-value per criterion and final, for each judge and for the
average; Krippendorff's alpha (ordinal) between annotators; each pair of annotators and each annotator
against the mean of the others, as Spearman on the final score.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rpbench.storage.user_files import Fields, load_rows, whole_number
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.core.records import JudgeAgreement
from rpbench.tasks.modes.pingpong.records import CRITERIA, TurnJudgment
from rpbench.tasks.modes.pingpong.scoring import judge_score
from rpbench.tasks.reports.judges import agreement_rows
from rpbench.tasks.stats import krippendorff_alpha, spearman
from rpbench.tasks.stats.agreement import means, paired_values

AVERAGE = "average"
# What `rpbench annotate pull` adds to each row (when and where it was answered in Label Studio): read past.
PULLED = ("annotated_at", "lead_time_s", "label_studio_task", "label_studio_annotation")
FINAL = "final"
Unit = tuple[str, str]  # (model, conversation_id)


def load_ratings(path: str | Path) -> dict[str, dict[str, dict[Unit, float]]]:
    """criterion (and "final") -> annotator -> (model, conversation) -> rating."""
    rows = load_rows(path, "an annotations file", "model, conversation_id, annotator and ratings")
    out: dict[str, dict[str, dict[Unit, float]]] = {c: {} for c in (*CRITERIA, FINAL)}
    first_seen: dict[tuple[str, Unit], int] = {}
    for i, row in enumerate(rows):
        fields = Fields(row, f"{path}: record {i}")
        for field in ("model", "conversation_id", "annotator"):
            if not (fields.text(field) or "").strip():
                raise fields.fail(field, "missing")
        unknown = sorted(set(row) - {"model", "conversation_id", "annotator", *CRITERIA, "comment", *PULLED})
        if unknown:
            raise InputError(f"{path}: record {i}: unknown field '{unknown[0]}' (known: model, conversation_id, "
                             f"annotator, {', '.join(CRITERIA)}, comment)")
        unit, who = (str(row["model"]), str(row["conversation_id"])), str(row["annotator"])
        # A second rating of one conversation by one person would replace the first without a word.
        if (who, unit) in first_seen:
            raise InputError(f"{path}: record {i}: annotator '{who}' already rated conversation "
                             f"'{unit[1]}' of model '{unit[0]}' in record {first_seen[(who, unit)]}")
        first_seen[(who, unit)] = i
        rated = {}
        for c in CRITERIA:
            value = row.get(c)
            if value in ("", None):
                continue
            try:
                rated[c] = float(whole_number(value))
            except (TypeError, ValueError):
                raise InputError(f"{path}: record {i}: field '{c}': not an integer 1-5") from None
            if not 1 <= rated[c] <= 5:
                raise InputError(f"{path}: record {i}: field '{c}': {int(rated[c])} is outside 1-5")
        if not rated:
            raise InputError(f"{path}: record {i}: rates none of {', '.join(CRITERIA)}")
        for c, v in rated.items():
            out[c].setdefault(who, {})[unit] = v
        if len(rated) == len(CRITERIA):
            out[FINAL].setdefault(who, {})[unit] = statistics.fmean(rated.values())
    return out


def judge_views(judgments: Sequence[TurnJudgment]) -> dict[str, dict[str, dict[Unit, float]]]:
    """criterion (and "final") -> judge (and "average") -> (model, conversation) -> automatic score."""
    grouped: dict[tuple[str, str, str], list[TurnJudgment]] = {}
    for j in judgments:
        grouped.setdefault((j.judge, j.model, j.conversation_id), []).append(j)
    out: dict[str, dict[str, dict[Unit, float]]] = {c: {} for c in (*CRITERIA, FINAL)}
    for (judge, model, cid), verdicts in grouped.items():
        s = judge_score(verdicts)
        for c in CRITERIA:
            out[c].setdefault(judge, {})[(model, cid)] = s.criteria[c]
        out[FINAL].setdefault(judge, {})[(model, cid)] = s.final
    for views in out.values():
        if len(views) > 1:
            views[AVERAGE] = means(views)
    return out


def agreement(ratings: dict[str, dict[str, dict[Unit, float]]], judgments: Sequence[TurnJudgment],
              path: str | Path) -> dict[str, Any]:
    """Judge-human correlations and agreement between annotators (see the module docstring)."""
    auto = judge_views(judgments)
    human = {c: means(by_annotator) for c, by_annotator in ratings.items()}
    if not set(human[FINAL]) & {u for v in auto[FINAL].values() for u in v} and not any(
            set(human[c]) & {u for v in auto[c].values() for u in v} for c in CRITERIA):
        raise InputError(f"{path}: no annotated conversation is in the run (match on model and conversation_id)")
    correlations = []
    for criterion in (*CRITERIA, FINAL):
        for judge, scores in sorted(auto[criterion].items(), key=lambda kv: (kv[0] == AVERAGE, kv[0])):
            x, y = paired_values(scores, human[criterion])
            rho, p = spearman(x, y)
            correlations.append({"judge": judge, "criterion": criterion, "spearman": rho, "p_value": p,
                                 "n": len(x)})
    finals = ratings[FINAL]
    annotators = sorted(finals)
    pairs = []
    for i, a in enumerate(annotators):
        for b in annotators[i + 1:]:
            x, y = paired_values(finals[a], finals[b])
            pairs.append({"a": a, "b": b, "spearman": spearman(x, y)[0], "n": len(x)})
    vs_rest = []
    for a in annotators:
        x, y = paired_values(finals[a], means(finals, exclude=[a]))
        vs_rest.append({"annotator": a, "spearman": spearman(x, y)[0], "n": len(x)})
    alpha = {c: krippendorff_alpha(ratings[c]) for c in (*CRITERIA, FINAL)}
    # Annotated conversations the run has no judgment of (another run's, a typo in an id): in no figure above,
    # and counted rather than dropped without a word.
    judged = {u for by_judge in auto.values() for v in by_judge.values() for u in v}
    annotated = {u for by in ratings.values() for r in by.values() for u in r}
    left_out = sorted(annotated - judged)
    return {"correlations": correlations, "alpha": alpha, "annotator_pairs": pairs, "annotator_vs_rest": vs_rest,
            "annotators": len({a for by in ratings.values() for a in by}),
            "conversations": len(annotated), "left_out": len(left_out),
            "first_left_out": list(left_out[0]) if left_out else None}


def judge_rows(ratings: dict[str, dict[str, dict[Unit, float]]], judgments: Sequence[TurnJudgment],
               resamples: int = 1000, seed: int = 0) -> list[JudgeAgreement]:
    """Each judge (and their average) against the mean human rating, per criterion (and final) and language,
    as every benchmark reports a judge against people; a conversation's language leads its id."""
    human = {c: means(by_annotator) for c, by_annotator in ratings.items()}
    pairs = [(judge, criterion, unit[1].partition("/")[0], human[criterion][unit], score)
             for criterion, by_judge in judge_views(judgments).items() for judge, scores in by_judge.items()
             for unit, score in scores.items() if unit in human[criterion]]
    return agreement_rows("pingpong", pairs, resamples, seed)


def agreement_markdown(result: dict[str, Any]) -> str:
    def num(v: float | None, digits: int = 3) -> str:
        return "-" if v is None else f"{v:.{digits}f}"

    left = ""
    if result["left_out"]:
        model, conversation = result["first_left_out"]
        left = (f" Annotated conversations the run did not judge, left out: {result['left_out']} (first: model "
                f"{model}, conversation {conversation}).")
    lines = [f"# PingPong: judges against people\n\n{result['conversations']} conversations, "
             f"{result['annotators']} annotators.{left}\n", "## Spearman with the mean human rating\n",
             "| judge | criterion | rho | p | n |", "|---|---|---|---|---|"]
    lines += [f"| {r['judge']} | {r['criterion']} | {num(r['spearman'])} | {num(r['p_value'], 4)} | {r['n']} |"
              for r in result["correlations"]]
    lines += ["", "## Between annotators\n", "Krippendorff's alpha (ordinal): " + ", ".join(
        f"{c} {num(a)}" for c, a in result["alpha"].items()), ""]
    if result["annotator_pairs"]:
        lines += ["| annotator | annotator | Spearman (final) | n |", "|---|---|---|---|"]
        lines += [f"| {p['a']} | {p['b']} | {num(p['spearman'])} | {p['n']} |" for p in result["annotator_pairs"]]
        lines += ["", "| annotator | Spearman with the others' mean (final) | n |", "|---|---|---|"]
        lines += [f"| {r['annotator']} | {num(r['spearman'])} | {r['n']} |" for r in result["annotator_vs_rest"]]
    return "\n".join(lines) + "\n"
