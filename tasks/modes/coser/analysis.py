"""CoSER's item scores, leaderboard and report: per dimension, per split (id, ood), with intervals that
resample circumstances whole, BLEU and ROUGE-L beside them, and every next-speaker draw counted."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from rpbench.tasks.core.records import Failure
from rpbench.tasks.modes.coser.records import (
    COLUMNS,
    DIMENSIONS,
    DRAWN,
    Circumstance,
    CircumstanceScore,
    Critique,
    Message,
    SceneEnd,
)
from rpbench.tasks.modes.coser.scoring import original_lines, overlap, scene_messages
from rpbench.tasks.reports.spec import (
    Analysis,
    AnalysisInput,
    Column,
    GroupKey,
    MetricSpec,
    ReportSpec,
    Scored,
    Scoring,
    Section,
)


def item_scores(circumstances: Sequence[Circumstance], messages: Sequence[Message], ends: Sequence[SceneEnd],
                critiques: Sequence[Critique], continue_from: int) -> tuple[list[CircumstanceScore], list[Failure]]:
    """One row per scene the critic scored on all four dimensions; a failed scene or critique is a failure
    (the circumstance is then not scored for that model, never given a default)."""
    by_id = {c.circumstance_id: c for c in circumstances}
    scenes: dict[tuple[str, str], list[Message]] = defaultdict(list)
    for m in messages:
        scenes[(m.circumstance_id, m.model)].append(m)
    failures = [Failure(stage="coser-scenes", model=e.model, item_id=e.circumstance_id, kind="scene_failed",
                        error=e.error) for e in ends if e.status == "failed"]
    judged: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for cr in critiques:
        if cr.status != "ok" or cr.score is None:
            failures.append(Failure(stage="coser-critiques", model=cr.model, item_id=cr.circumstance_id,
                                    kind=f"critique_failed:{cr.dimension}", error=cr.error))
        else:
            judged[(cr.circumstance_id, cr.model)][cr.dimension] = cr.score
    rows = []
    for (cid, model), dims in sorted(judged.items()):
        if len(dims) != len(DIMENSIONS):
            continue  # a dimension failed: counted above
        c = by_id[cid]
        bleu, rouge = overlap(original_lines(c.original), scene_messages(scenes[(cid, model)]), continue_from)
        rows.append(CircumstanceScore(item_id=cid, model=model, tag=c.tag or "-", score=statistics.fmean(
            dims[d] for d in DIMENSIONS), bleu=bleu, rouge_l=rouge, **{COLUMNS[d]: dims[d] for d in DIMENSIONS}))
    return rows, failures


def draws(messages: Sequence[Message]) -> dict[str, Counter[str]]:
    """model -> how many next speakers were decided otherwise than by the predictor's own valid choice."""
    out: dict[str, Counter[str]] = defaultdict(Counter)
    for m in messages:
        if m.drawn:
            out[m.model][m.decided_by] += 1
    return out


def _analyze(data: AnalysisInput) -> Analysis:
    drawn: dict[str, dict[str, int]] = data.context.get("draws", {})
    for row in data.board:
        row["drawn"] = float(sum(drawn.get(row["model"], {}).values()))
    sections = [Section("How the scores are made", "\n".join([
        "As CoSER's release scores them: one critic call per dimension lists the scene's flaws, each with a "
        "severity from 1 to 5; the dimension's score is 100 - 5 x (the sum of the severities - 0.3 x the actor "
        "turns), kept within 0 and 100. A circumstance's score is the mean of its four dimensions; a model's "
        "avg, the mean over circumstances (the mean of the four dimension means when every circumstance is "
        "scored, as CoSER reports it). Intervals resample circumstances.",
        "",
        "BLEU and ROUGE-L as CoSER computes them, against the book's conversation with thoughts removed, every "
        "turn under its speaker's name"
        + (f", from round {data.context['continue_from'] + 1} on" if data.context.get("continue_from") else "")
        + ". BLEU: NLTK's sentence_bleu (four-gram, uniform weights, no smoothing) on lower-cased tokens of "
        "NLTK's word_tokenize (Punkt with NLTK's English parameters, then the Treebank tokenizer; NLTK below "
        "3.10). ROUGE-L: the F-measure of rouge-chinese's Rouge, which is what CoSER's `from rouge import Rouge` "
        "gave where its released figures were made.",
    ]))]
    empty = data.context.get("empty_thoughts", 0)
    if empty:
        sections.append(Section("Key characters without an inner thought", (
            f"{empty} key character(s) of these circumstances have an empty inner thought in the data, so their "
            "actors were told none (CoSER gives every key character one).")))
    if drawn:
        body = ["| model | " + " | ".join(DRAWN) + " | all |", "|---|" + "---|" * (len(DRAWN) + 1)]
        for model, counts in sorted(drawn.items()):
            body.append(f"| {model} | " + " | ".join(str(counts.get(k, 0)) for k in DRAWN)
                        + f" | {sum(counts.values())} |")
        sections.append(Section("Next speakers drawn at random", "\n".join([
            "Where the next-speaker predictor's answer could not be followed, the next speaker was drawn (seeded) "
            "among the main characters and the Environment, as CoSER's protocol does: it said `random`, named "
            "someone off the list, named the speaker who just spoke, ended the scene before round 6, or gave no "
            "reply.", "", *body])))
    return Analysis(sections, {"draws": {m: dict(c) for m, c in drawn.items()}})


_DIMENSION_METRICS = tuple(MetricSpec(d, f"CoSER's {d} score", COLUMNS[d], digits=1, unit="0-100")
                           for d in DIMENSIONS)

REPORT = ReportSpec(
    title="CoSER: given-circumstance acting",
    unit="circumstances per model",
    scoring=Scoring(
        metrics=(MetricSpec("avg", "CoSER's average: the mean over circumstances of the mean of the four dimensions, "
                                   "each dimension's score 100 - 5 x (flaw severities - 0.3 x actor turns) within "
                                   "0-100", column="score", digits=2, unit="0-100"),
                 *_DIMENSION_METRICS,
                 MetricSpec("BLEU", "BLEU against the book's conversation, as CoSER computes it (NLTK's "
                                    "sentence_bleu on word_tokenize tokens, see below)", "bleu", digits=4,
                            interval=False),
                 MetricSpec("ROUGE-L", "ROUGE-L F against the book's conversation, as CoSER's released figures "
                                       "compute it (rouge-chinese's Rouge)", "rouge_l", digits=4, interval=False)),
        groups=(GroupKey("tag", "split", order=("id", "ood"),
                         headings=(("id", "seen books (id)"), ("ood", "unseen books (ood)"))),),
        cluster_column="item_id",
        item_column="item_id",
    ),
    extra_columns=(Column("drawn", "next speakers drawn", 0),),
    analyze=_analyze,
)


def context_for(circumstances: Sequence[Circumstance], messages: Sequence[Message],
                continue_from: int) -> dict[str, Any]:
    return {"draws": {m: dict(c) for m, c in draws(messages).items()}, "continue_from": continue_from,
            "empty_thoughts": sum(not m.text.strip() for c in circumstances for m in c.motivations)}


def scored(data: list[str], limit: int | None, continue_from: int, messages: list[str], ends: list[str],
           critiques: list[str]) -> Scored:
    """The report stage's hook: every system's scenes and critiques as circumstance scores, with samples."""
    from rpbench.storage.tables import read_records
    from rpbench.tasks.modes.coser.loader import load_circumstances
    from rpbench.tasks.modes.coser.samples import samples
    from rpbench.tasks.modes.coser.tables import CIRCUMSTANCES, CRITIQUES, MESSAGES, SCENE_ENDS

    circumstances = load_circumstances(data)[:limit]
    made = [m for p in messages for m in read_records(p, MESSAGES)]
    ended = [e for p in ends for e in read_records(p, SCENE_ENDS)]
    judged = [c for p in critiques for c in read_records(p, CRITIQUES)]
    rows, failures = item_scores(circumstances, made, ended, judged, continue_from)
    return Scored(rows, failures, len(circumstances),
                  [(CIRCUMSTANCES, circumstances), (MESSAGES, made), (SCENE_ENDS, ended), (CRITIQUES, judged)],
                  context_for(circumstances, made, continue_from), samples(circumstances, made, judged))
