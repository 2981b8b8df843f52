"""From judgments to CharacterBench's scores as all_eval.py computes them, the judge's agreement with people,
the report's sections and the viewer's samples."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from rpbench.storage.tables import read_records
from rpbench.tasks.core.records import failures_of
from rpbench.tasks.modes.characterbench.dimensions import DIMENSIONS
from rpbench.tasks.modes.characterbench.loader import load_items
from rpbench.tasks.modes.characterbench.records import Item, ItemScore, Judgment, Reply
from rpbench.tasks.modes.characterbench.tables import ITEMS, JUDGMENTS, REPLIES
from rpbench.tasks.reports import spec
from rpbench.tasks.reports.judges import agreement_rows
from rpbench.tasks.reports.render import fmt
from rpbench.tasks.reports.viewer import Part, Sample, failed_text, versus_people

RELEASED_JUDGE = "CharacterJudge (released predictions)"


def divisors(items: Sequence[Item]) -> dict[str, tuple[float, str]]:
    """Per dimension, what all_eval.py divides by: the highest human score among the dimension's items (the
    scale's top when no item has one), and where it came from."""
    out: dict[str, tuple[float, str]] = {}
    for dim in sorted({i.dimension for i in items}):
        human = [i.human for i in items if i.dimension == dim and i.human is not None]
        out[dim] = (max(human), "highest human score") if human else (
            float(max(DIMENSIONS[dim].top(i.language) for i in items if i.dimension == dim)), "top of scale")
    return out


def scored(data: list[str], language: str, limit: int | None, replies: list[str], judgments: list[str],
           judge: str, resamples: int, seed: int) -> spec.Scored:
    """The report stage's hook: item scores (a failed reply or judgment is a counted failure, never a score),
    the judge's and the released CharacterJudge's agreement with the human scores, samples."""
    every = load_items(data, [language])  # whole files: all_eval.py divides by each file's highest human score
    first = {i.dimension: n for n, i in reversed(list(enumerate(every)))}  # --limit: each file's first, as read
    items = [i for n, i in enumerate(every) if limit is None or n - first[i.dimension] < limit]
    made = [r for p in replies for r in read_records(p, REPLIES)]
    judged = [j for p in judgments for j in read_records(p, JUDGMENTS)]
    by = divisors(every)
    keyed = {(i.item_id, i.language): i for i in items}
    verdicts = {(j.item_id, j.language, j.model): j for j in judged}
    rows = []
    for r in made:
        i, j = keyed[(r.item_id, r.language)], verdicts.get((r.item_id, r.language, r.model))
        score = j.score if j is not None else None
        theirs = is_released(r, i)  # the human score and CharacterJudge's were given to that reply, no other
        rows.append(ItemScore(model=r.model, item_id=i.item_id, dimension=i.dimension, language=i.language,
                              score=score, scaled=None if score is None else score / by[i.dimension][0] * 5,
                              human=i.human if theirs else None,
                              released_judge=i.released_judge if theirs else None))
    failures = failures_of("characterbench-replies", "reply", made) + \
        failures_of("characterbench-judgments", "judgment", judged)
    name = next((j.judge for j in judged), judge)
    # One released prediction per released reply, however many systems sent that reply.
    once = {(r.item_id, r.language): r for r in rows if r.released_judge is not None}.values()
    agreed = agreement_rows("characterbench", [
        *((name, r.dimension, r.language, r.human, r.score) for r in rows),
        *((RELEASED_JUDGE, r.dimension, r.language, r.human, r.released_judge) for r in once)], resamples, seed)
    why = ("the people's scores are of the released replies, and this run judged none of them (only the models' "
           "own replies). Add --judge-released to check the judge against people."
           if any(i.human is not None for i in items) else "the files carry no human scores.")
    return spec.Scored(rows, failures, len(items), [(ITEMS, items), (REPLIES, made), (JUDGMENTS, judged)],
                       {"divisors": by, "language": language}, samples(items, made, verdicts), agreement=agreed,
                       agreement_note=why)


def is_released(reply: Reply, item: Item) -> bool:
    """Whether ``reply`` is the reply the release's people (and CharacterJudge) scored: the same text. A model's
    own reply to the item is another reply, and the item's human score says nothing of it."""
    return reply.status == "ok" and item.reply is not None and (reply.text or "").strip() == item.reply.strip()


def _analyze(data: spec.AnalysisInput) -> spec.Analysis:
    by: dict[str, list[Any]] = data.context.get("divisors", {})
    language = str(data.context.get("language", "zh"))
    text = ["A dimension's score is the mean of its judge scores / the highest human score in its file x 5, as "
            "the release's all_eval.py computes it; a model's, the mean over its dimensions. Where that highest "
            "human score is below the top of the judge's scale, a score can pass 5:", "",
            "| dimension | judge's scale | divided by |", "|---|---|---|",
            *(f"| {d} | 1-{DIMENSIONS[d].top(language)} | {fmt(v, 0)} ({how}) |" for d, (v, how) in sorted(by.items()))]
    return spec.Analysis([spec.Section("How the scores are made", "\n".join(text))])


REPORT = spec.ReportSpec(
    title="CharacterBench: role-playing replies judged per dimension",
    unit="replies",
    scoring=spec.Scoring(
        metrics=(spec.MetricSpec("score", "CharacterBench's score: per dimension the mean judge score / the highest "
                            "human score of the dimension x 5, then the mean over dimensions", column="scaled",
                            digits=2, macro_over="dimension", unit="0-5"),),
        groups=(spec.GroupKey("dimension", "dimension", order=tuple(DIMENSIONS)),
                spec.GroupKey("language", "language", breakdown=False)),
        item_column="item_id"),
    analyze=_analyze,
)


def samples(items: Sequence[Item], replies: Sequence[Reply], verdicts: dict[tuple[str, str, str], Judgment]
            ) -> Iterator[Sample]:
    """One sample per reply: the dialogue, the reply, the judge's score and reasoning beside the human's."""
    keyed = {(i.item_id, i.language): i for i in items}
    for r in replies:
        i, j = keyed[(r.item_id, r.language)], verdicts.get((r.item_id, r.language, r.model))
        parts = [Part("Character", i.profile, "note"),
                 *(Part(i.user if t.speaker == "user" else i.character, t.text, "turn") for t in i.dialogue),
                 Part(f"{r.model} — {i.character}", failed_text(r.text if r.status == "ok" else None, r.error), "turn"),
                 *([Part("Reference", i.reference, "note")] if i.reference else []),
                 *([Part("Judge", f"{fmt(j.score, 0)}: {j.text or ''}" if j.status == "ok"
                         else f"(no score: {j.error})", "note")] if j else [])]
        human, score = i.human if is_released(r, i) else None, j.score if j else None
        yield Sample(id=f"{r.model}/{i.item_id}/{i.language}", item=f"{i.item_id}/{i.language}", model=r.model,
                     title=f"{i.dimension}: {i.character}", score=f"judge {fmt(score, 0)} / human {fmt(human, 0)}",
                     parts=parts, facets={"dimension": i.dimension, "language": i.language,
                                          "judge vs human": versus_people(score, human)})
