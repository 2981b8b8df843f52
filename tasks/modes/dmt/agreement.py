"""The judge against human good/bad labels (DMT-RoleBench's check of its reward model): per metric, the
consistency rate (share of labels the judge matches), recall of good rounds and recall of bad rounds.

Human labels (CSV or JSONL): ``model, dialogue_id, round, metric, label`` (good/bad), optionally ``annotator``;
several annotators of one round are reduced to their majority (a tie is left out and counted).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rpbench.storage.user_files import load_rows, whole_number
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.core.records import JudgeAgreement
from rpbench.tasks.modes.dmt.catalog import METRICS
from rpbench.tasks.modes.dmt.records import Label
from rpbench.tasks.reports.judges import agreement_rows
from rpbench.tasks.reports.render import fmt

Key = tuple[str, str, int, str]


def load_human_labels(path: str | Path) -> tuple[dict[Key, str], int]:
    """(model, dialogue, round, metric) -> the majority label, and how many ties were left out."""
    rows = load_rows(path, "a labels file", "model, dialogue_id, round, metric, label")
    votes: dict[Key, Counter[str]] = {}
    voted: dict[tuple[str, Key], int] = {}
    for i, row in enumerate(rows):
        for field in ("model", "dialogue_id", "round", "metric", "label"):
            if str(row.get(field) or "").strip() == "":
                raise InputError(f"{path}: record {i}: field '{field}': missing")
        if not isinstance(row["metric"], str) or row["metric"] not in METRICS:
            raise InputError(f"{path}: record {i}: field 'metric': unknown metric '{row['metric']}' "
                             f"(known: {', '.join(METRICS)})")
        if row["label"] not in ("good", "bad"):
            raise InputError(f"{path}: record {i}: field 'label': '{row['label']}' is not good or bad")
        try:
            k = whole_number(row["round"])
        except (TypeError, ValueError):
            raise InputError(f"{path}: record {i}: field 'round': not an integer") from None
        key = (str(row["model"]), str(row["dialogue_id"]), k, str(row["metric"]))
        # One person's second label of one round would be a second vote in its majority.
        if str(row.get("annotator") or "").strip():
            if (str(row["annotator"]), key) in voted:
                raise InputError(f"{path}: record {i}: annotator '{row['annotator']}' already labelled this "
                                 f"round's {key[3]} in record {voted[(str(row['annotator']), key)]}")
            voted[(str(row["annotator"]), key)] = i
        votes.setdefault(key, Counter())[str(row["label"])] += 1
    majority, ties = {}, 0
    for key, c in votes.items():
        if c["good"] == c["bad"]:
            ties += 1
        else:
            majority[key] = "good" if c["good"] > c["bad"] else "bad"
    return majority, ties


def _judged(labels: Sequence[Label]) -> dict[Key, str]:
    """The judge's label of each (model, dialogue, round, metric) it labelled."""
    return {(lb.model, lb.dialogue_id, lb.round, lb.metric): lb.label for lb in labels
            if lb.source == "judge" and lb.label is not None}


def unjudged(human: dict[Key, str], labels: Sequence[Label]) -> list[Key]:
    """The labelled rounds this run's judge did not label (another run's, a typo in an id): left out of every
    figure, and counted in the report rather than dropped without a word."""
    judged = _judged(labels)
    return [key for key in human if key not in judged]


def agreement(human: dict[Key, str], labels: Sequence[Label], path: str | Path) -> list[dict[str, Any]]:
    """Per metric (and "all"): n, consistency rate, good-case recall, bad-case recall (None when undefined)."""
    judged = _judged(labels)
    pairs = [(key[3], h, judged[key]) for key, h in human.items() if key in judged]
    if not pairs:
        raise InputError(f"{path}: none of the labelled rounds was judged in this run (match on model, "
                         "dialogue_id, round and metric)")
    out = []
    for metric in [*[m for m in METRICS if any(p[0] == m for p in pairs)], "all"]:
        mine = [(h, j) for m, h, j in pairs if metric in ("all", m)]
        good = [j for h, j in mine if h == "good"]
        bad = [j for h, j in mine if h == "bad"]
        out.append({"metric": metric, "n": len(mine),
                    "consistency": sum(h == j for h, j in mine) / len(mine),
                    "good_recall": sum(j == "good" for j in good) / len(good) if good else None,
                    "bad_recall": sum(j == "bad" for j in bad) / len(bad) if bad else None})
    return out


def judge_rows(human: dict[Key, str], labels: Sequence[Label], judge: str, languages: dict[str, str],
               resamples: int = 1000, seed: int = 0) -> list[JudgeAgreement]:
    """The judge against the people's majority per metric (and all) and language, as every benchmark reports
    a judge against people: good 1, bad 0 (Pearson is then the phi coefficient, exact the consistency rate);
    ``languages``: each dialogue's."""
    judged = _judged(labels)
    pairs = [(judge, group, languages.get(key[1], "all"), float(h == "good"), float(judged[key] == "good"))
             for key, h in human.items() if key in judged for group in (key[3], "all")]
    return agreement_rows("dmt", pairs, resamples, seed)


def agreement_markdown(result: Sequence[dict[str, Any]], ties: int, left_out: Sequence[Key] = ()) -> str:
    lines = ["# DMT-RoleBench: the judge against people", "", "| metric | n | consistency | good recall | "
             "bad recall |", "|---|---|---|---|---|"]
    lines += [f"| {r['metric']} | {r['n']} | {fmt(r['consistency'], 3)} | {fmt(r['good_recall'], 3)} | "
              f"{fmt(r['bad_recall'], 3)} |" for r in result]
    text = "\n".join(lines) + f"\n\nRounds left out because annotators tied: {ties}.\n"
    if left_out:
        text += f"Labelled rounds this run did not judge, left out: {len(left_out)} (first: {describe(left_out[0])}).\n"
    return text


def describe(key: Key) -> str:
    model, dialogue, round_, metric = key
    return f"model {model}, dialogue {dialogue}, round {round_}, metric {metric}"
