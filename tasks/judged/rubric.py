"""A judged benchmark as the kit gives it, so that such a benchmark writes only its words and its spec.

An item is a persona (who the model plays), a prompt (what it is asked), the value it is broken down by (the
character) and the rubric it is graded by (its ``dimension``: a task, a trait; "" for a benchmark of one rubric).
A model under test answers each item in character; each judge grades the answers against the rubric, one item
a request or several at once (a release that grades five answers in one prompt), its scores read against a
schema (``grade_schema``) or by a release's own pattern (``pattern_grades``): a reply with no score in the
scale is asked again, then a counted failure, never a default score. Several judges are combined per item by a
named rule (``RULES``); the report gives the mean per group and dimension with its interval, macro-averaged over
the dimensions (each rubric counts once), and the share of items graded beside it.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import statistics
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field, create_model

from rpbench.storage.schemas import FAILURES, TableSpec
from rpbench.storage.tables import read_records
from rpbench.storage.user_files import jsonl_objects, language_field, new_id
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.core.records import Failure, Record
from rpbench.tasks.llm.requests import Message
from rpbench.tasks.llm.structured import REASONING, StatedInPrompt
from rpbench.tasks.reports.metrics import accuracy, mean_of
from rpbench.tasks.reports.spec import GroupKey, ReportSpec, Scored, Scoring
from rpbench.tasks.reports.viewer import Part, Sample, gist


class JudgedItem(Record):
    id: str
    persona: str  # who the model under test plays
    prompt: str  # what it is asked
    group: str  # what the scores are broken down by (the character, the persona)
    dimension: str = ""  # the rubric the answer is graded by ("" : the benchmark's one rubric)
    language: str = "en"


class JudgedAnswer(Record):
    """One system's answer to one item, with what its grading and its report need of the item."""

    item_id: str
    model: str
    group: str
    dimension: str
    language: str
    persona: str
    prompt: str
    text: str


class Grade(Record):
    """One judge's grade of one answer: the score in the rubric's scale, its reasoning, and the judge's whole
    reply (the same for every answer a request graded together)."""

    item_id: str
    model: str
    judge: str
    score: float
    reasoning: str
    reply: str


class JudgedScore(Record):
    """The item table of a judged benchmark: one system's answer to one item, its judges' grades combined."""

    item_id: str
    model: str
    group: str
    dimension: str
    language: str
    # The rule over the judges that graded the answer (None: no judge did; the failures say why).
    score: float | None
    judges: int  # how many graded it
    graded: float  # 1 when every judge graded it, else 0: the share shown beside the headline


ANSWERS = TableSpec("judged_answers", 1, JudgedAnswer)
GRADES = TableSpec("grades", 1, Grade)
JUDGED_SCORES = TableSpec("judged_scores", 1, JudgedScore)

# How several judges' grades of one answer become its score, by name (a settings' ``--combine``).
RULES: dict[str, Callable[[Sequence[float]], float]] = {
    "mean": statistics.fmean, "median": statistics.median, "min": min, "max": max}


def read_judged_items(path: str | Path, group: str, dimensions: Sequence[str] | None = None,
                      languages: Sequence[str] | None = None) -> list[JudgedItem]:
    """A judged benchmark's file: JSONL of {id, persona, prompt, ``group``[, dimension][, language]}; a problem is
    one InputError naming the file, the line and the field. ``dimensions``: the rubrics there are (an item
    naming another would be graded by none); ``languages``: those the prompts are written in."""
    items: list[JudgedItem] = []
    seen: set[str] = set()
    for where, r in jsonl_objects(path, "a file of items", f"'id', 'persona', 'prompt' and '{group}'"):
        for name in ("id", "persona", "prompt", group):
            if not isinstance(r.get(name), str) or not r[name].strip():
                raise InputError(f"{where}: field '{name}': {'missing' if name not in r else 'not a text'}")
        dimension = r.get("dimension", "" if not dimensions else None)
        if dimensions and dimension not in dimensions:
            shown = "missing" if dimension is None else f"'{dimension}' is no rubric of this benchmark"
            raise InputError(f"{where}: field 'dimension': {shown} (its rubrics: {', '.join(dimensions)})")
        language = language_field(where, r, languages, "the benchmark's")
        items.append(JudgedItem(id=new_id(where, r, seen), persona=r["persona"], prompt=r["prompt"], group=r[group],
                                dimension=dimension or "", language=language))
    return items


def answer_row(item: JudgedItem, text: str, model: str) -> JudgedAnswer:
    return JudgedAnswer(item_id=item.id, model=model, group=item.group, dimension=item.dimension,
                        language=item.language, persona=item.persona, prompt=item.prompt, text=text)


# -- reading a judge ----------------------------------------------------------------------------------------
class RubricGrade(BaseModel):
    reasoning: str = Field(max_length=2000, json_schema_extra=REASONING)
    score: int


@functools.cache
def grade_schema(n: int, low: int, high: int, stated: bool = False) -> type[BaseModel]:
    """The reply grading ``n`` answers in the scale ``low``..``high``: ``{reasoning, score}`` for one, ``{grades:
    [n of them]}`` for several. ``stated``: the judge's prompt asks for the reply in its own words (the schema
    then only reads it: ``pattern_grades``)."""
    grade = create_model(f"RubricGrade_{low}_{high}", __base__=RubricGrade,
                         score=(int, Field(ge=low, le=high)))
    base: type[BaseModel] = StatedInPrompt if stated else BaseModel
    if n == 1:
        return create_model(f"RubricGrade{'Stated' if stated else ''}_{low}_{high}", __base__=(grade, base)
                            if stated else grade)
    return create_model(f"RubricGrades{'Stated' if stated else ''}_{n}_{low}_{high}", __base__=base,
                        grades=(list[grade], Field(min_length=n, max_length=n)))  # type: ignore[valid-type]


def grades_of(parsed: BaseModel) -> list[tuple[int, str]]:
    """(score, reasoning) per answer a reply graded, in the order they were asked."""
    rows = getattr(parsed, "grades", None)
    return [(g.score, g.reasoning) for g in rows] if rows is not None else [
        (parsed.score, parsed.reasoning)]  # type: ignore[attr-defined]


def pattern_grades(n: int, low: int, high: int, score: str, split: str | None = None) -> type[BaseModel]:
    """A release's own reading of its judge's free text: the reply cut into one evaluation per answer by
    ``split`` (a regex whose matches are the evaluations; None: the whole reply is one), each evaluation's score
    the first group of ``score``'s first match. An evaluation with no score, a score off the scale, or as many
    evaluations as answers not found raises ValueError: the gateway asks again, then counts a failure (never a
    default). A reply that is the schema's JSON (a role asked for structured replies) is read as JSON."""
    schema = grade_schema(n, low, high, stated=True)
    cut, find = (re.compile(split, re.DOTALL) if split else None), re.compile(score)

    def from_reply(cls: type[BaseModel], text: str) -> BaseModel:
        try:
            return cls.model_validate_json(text.strip())
        except ValueError:
            pass  # not the schema's JSON: read as the release reads it
        pieces = [p.strip() for p in cut.findall(text)] if cut else [text.strip()]
        if len(pieces) != n:
            raise ValueError(f"{len(pieces)} evaluation(s) found where {n} were asked for")
        grades = []
        for k, piece in enumerate(pieces, 1):
            found = find.search(piece)
            if found is None:
                raise ValueError(f"evaluation {k} states no score (its rubric asks for one)")
            value = int(found.group(1))
            if not low <= value <= high:
                raise ValueError(f"evaluation {k} scores {value}, outside the rubric's {low} to {high}")
            grades.append({"reasoning": piece[:2000], "score": value})
        return cls.model_validate(grades[0] if n == 1 else {"grades": grades})

    return type(schema.__name__, (schema,), {"from_reply": classmethod(from_reply),
                                             "__module__": __name__})


@dataclass(frozen=True)
class JudgeAsk:
    """One request to a judge: the answers it grades (ids, in the order the reply grades them), the messages,
    and the schema its reply is read against."""

    item_ids: tuple[str, ...]
    messages: list[Message]
    schema: type[BaseModel]


# -- scoring -----------------------------------------------------------------------------------------------
def combined_rows(answers: Sequence[JudgedAnswer], grades: Sequence[Grade], judges: Sequence[str],
                  rule: str) -> list[JudgedScore]:
    """Each answer's score: ``rule`` over the grades its judges gave it (every judge named in ``judges``)."""
    by_answer: dict[tuple[str, str], list[float]] = {}
    for g in grades:
        by_answer.setdefault((g.model, g.item_id), []).append(g.score)
    combine, out = RULES[rule], []
    for a in answers:
        scores = by_answer.get((a.model, a.item_id), [])
        out.append(JudgedScore(item_id=a.item_id, model=a.model, group=a.group, dimension=a.dimension,
                               language=a.language, score=combine(scores) if scores else None, judges=len(scores),
                               graded=float(len(scores) >= len(judges))))
    return out


def samples(answers: Sequence[JudgedAnswer], grades: Sequence[Grade], rows: Sequence[JudgedScore]
            ) -> Iterator[Sample]:
    """The viewer's: the persona, the prompt, the answer, and each judge's grade with its reasoning."""
    by_answer: dict[tuple[str, str], list[Grade]] = {}
    for g in grades:
        by_answer.setdefault((g.model, g.item_id), []).append(g)
    scores = {(r.model, r.item_id): r for r in rows}
    for a in answers:
        row = scores[(a.model, a.item_id)]
        marks = by_answer.get((a.model, a.item_id), [])
        yield Sample(id=f"{a.model}/{a.item_id}", item=a.item_id, model=a.model,
                     title=f"{a.item_id} ({a.group}{', ' + a.dimension if a.dimension else ''}): "
                           f"{gist(a.prompt, 60)}",
                     score="not graded" if row.score is None else f"score {row.score:g}",
                     parts=[Part("Persona", a.persona), Part("Prompt", a.prompt), Part(f"Answer ({a.model})", a.text),
                            *(Part(f"{g.judge}: {g.score:g}", g.reasoning) for g in marks)],
                     facets={"group": a.group, "dimension": a.dimension or "-", "language": a.language})


def scored(answers: list[str], grades: list[str], failures: list[str], judges: list[str], rule: str) -> Scored:
    """The kit's scoring hook for a judged benchmark: every answer's combined score (one no judge graded has
    none, and its failures stay counted), the failures, the grades kept final and the viewer's samples."""
    given = [a for p in answers for a in read_records(p, ANSWERS)]
    marks = [g for p in grades for g in read_records(p, GRADES)]
    failed = [f for p in failures for f in read_records(p, FAILURES)]
    rows = combined_rows(given, marks, judges, rule)
    # A judge that failed an answer another judge graded: reported by kind, the answer still scored.
    have = {(r.model, r.item_id) for r in rows if r.score is not None}
    failed = [f.model_copy(update={"scored": True}) if f.kind == "grade_failed" and (f.model, f.item_id) in have
              else f for f in failed]
    asked = {(a.model, a.item_id) for a in given} | {(f.model, f.item_id) for f in failed}
    return Scored(rows, failed, len({item for _, item in asked}), finals=[(GRADES, marks), (ANSWERS, given)],
                  samples=samples(given, marks, rows), context={"judges": judges, "rule": rule})


def judged_report(title: str, group_label: str, low: int, high: int, dimensions: Sequence[str] | None = (),
                  dimension_label: str = "dimension", headline: str = "score", group_columns: bool = True
                  ) -> ReportSpec:
    """The mean grade with its interval (macro-averaged over the ``dimensions``: each rubric counts once), a
    leaderboard column per dimension (none for a benchmark of one rubric; ``None``: several, as they come), per
    group (unless not ``group_columns``: two hundred personas are no table) and language, and the share of
    answers every judge graded beside it."""
    grade = dataclasses.replace(
        mean_of(headline, f"mean grade of the answers ({low} to {high}), the judges combined per answer by the "
                "run's rule; over several dimensions the mean of each dimension's mean (each rubric counts once)",
                "score", unit=f"{low}-{high}"), macro_over="dimension")
    return ReportSpec(title, Scoring(
        metrics=(grade,
                 accuracy("share of the answers every judge graded (the rest: failures, counted)", column="graded",
                          name="graded")),
        groups=((GroupKey("dimension", dimension_label, order=tuple(dimensions) if dimensions else None),)
                if dimensions is None or dimensions else ())
        + (GroupKey("group", group_label, breakdown=group_columns), GroupKey("language", "language")),
        item_column="item_id"), unit="answers")


def failure_row(stage: str, model: str, item_id: str, kind: str, error: str | None) -> Failure:
    return Failure(stage=stage, model=model, item_id=item_id, kind=kind, error=error)
