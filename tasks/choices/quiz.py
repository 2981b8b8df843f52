"""A multiple-choice quiz as the kit gives it, so that a quiz benchmark writes only its words and its spec.

An item is a question, its options and the gold letter, with the value it is broken down by (the character a
question is about, say); an answer is one system's reply to one item, the letters read from it by a named policy
(``letters.reader``) and whether they are exactly the gold one. A reply in which no option letter can be read is
asked again and then a counted failure (the gateway's parse attempts), never scored as an option. The scoring hook
(``scored``) gives the kit's report stage the rows, the failures and the viewer's samples; ``quiz_report`` the
leaderboard: accuracy with its interval, per group and language.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from rpbench.storage.schemas import FAILURES, TableSpec
from rpbench.storage.tables import read_records
from rpbench.storage.user_files import jsonl_objects, language_field, new_id
from rpbench.tasks.choices.letters import Reader, reader, score_letters
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.core.records import Failure, Record
from rpbench.tasks.reports.metrics import accuracy
from rpbench.tasks.reports.spec import GroupKey, ReportSpec, Scored, Scoring
from rpbench.tasks.reports.viewer import Part, Sample, gist

LETTERS = "ABCDEFGH"


class ChoiceItem(Record):
    id: str
    question: str
    options: list[str]
    gold: str  # the right option's letter
    group: str  # what the quiz is broken down by (the character the question is about)
    language: str = "en"

    @property
    def letters(self) -> str:
        return LETTERS[:len(self.options)]

    def options_text(self) -> str:
        return "\n".join(f"{letter}. {text}" for letter, text in zip(self.letters, self.options, strict=True))


class ChoiceAnswer(Record):
    """The item table of a quiz: one system's answer to one question."""

    item_id: str
    model: str
    group: str
    language: str
    text: str  # the reply, as the viewer shows it
    chosen: list[str]
    gold: str
    correct: float  # 1 when the letters read are exactly the gold one, else 0 (an unanswered question too)
    # False: no usable reply (none, an empty one, or one with no option letter after the asks): not right, and
    # counted as a failure besides. A system that leaves a question unanswered never ranks above one that
    # answers it wrongly.
    answered: bool = True


CHOICE_ANSWERS = TableSpec("choice_answers", 2, ChoiceAnswer)  # 2: answered


def read_choice_items(path: str | Path, group: str, languages: Sequence[str] | None = None) -> list[ChoiceItem]:
    """A quiz file: JSONL of {id, question, options (2 to 8 texts), answer (the gold letter), ``group``[, language]};
    a problem is one InputError naming the file, the line and the field. ``languages``: those the quiz's prompt
    is written in (a question in another would be asked in English without a word)."""
    items: list[ChoiceItem] = []
    seen: set[str] = set()
    for where, r in jsonl_objects(path, "a quiz file", f"'id', 'question', 'options', 'answer' and '{group}'"):
        for name in ("id", "question", "answer", group):
            if not isinstance(r.get(name), str) or not r[name].strip():
                raise InputError(f"{where}: field '{name}': {'missing' if name not in r else 'not a text'}")
        options = r.get("options")
        if not isinstance(options, list) or not 2 <= len(options) <= len(LETTERS) or \
                not all(isinstance(o, str) and o.strip() for o in options):
            raise InputError(f"{where}: field 'options': a list of 2 to {len(LETTERS)} texts")
        gold, letters = r["answer"].strip().upper(), LETTERS[:len(options)]
        if len(gold) != 1 or gold not in letters:
            raise InputError(f"{where}: field 'answer': '{r['answer']}' is not one of the options' letters "
                             f"({', '.join(letters)})")
        language = language_field(where, r, languages, "the quiz's")
        items.append(ChoiceItem(id=new_id(where, r, seen), question=r["question"], options=options, gold=gold,
                                group=r[group], language=language))
    return items


def letters_parser(item: ChoiceItem, policy: str = "lenient") -> Callable[[str], list[str]]:
    """The request's parser: the option letters a reply chooses, or a ValueError (asked again, then a failure)."""
    read: Reader = reader(policy)

    def parse(reply: str) -> list[str]:
        chosen = read(reply, dict(zip(item.letters, item.options, strict=True)))
        if not chosen:
            raise ValueError(f"no option letter ({', '.join(item.letters)}) could be read from the reply")
        return chosen
    return parse


def answer_row(item: ChoiceItem, text: str, chosen: list[str], model: str) -> ChoiceAnswer:
    return ChoiceAnswer(item_id=item.id, model=model, group=item.group, language=item.language, text=text,
                        chosen=chosen, gold=item.gold, correct=score_letters(chosen, [item.gold], "every"))


def failure_row(stage: str, item: ChoiceItem, model: str, error: str | None) -> Failure:
    return Failure(stage=stage, model=model, item_id=item.id, kind="answer_failed", error=error)


def quiz_report(title: str, group_label: str) -> ReportSpec:
    """Accuracy with its interval, a leaderboard column per group (character) and per language."""
    return ReportSpec(title, Scoring(
        metrics=(accuracy("share of every question asked whose reply chose exactly the gold option (a question "
                          "left unanswered, or whose reply names no option, is not right)"),
                 accuracy("share of the questions asked that got a reply naming an option", column="answered",
                          name="answered")),
        groups=(GroupKey("group", group_label), GroupKey("language", "language")),
        item_column="item_id"), unit="questions")


def samples(items: Sequence[ChoiceItem], answers: Sequence[ChoiceAnswer]) -> Iterator[Sample]:
    """The viewer's: the question, its options, the reply, the letters read and the gold one."""
    by_id = {i.id: i for i in items}
    for a in answers:
        item = by_id[a.item_id]
        yield Sample(id=f"{a.model}/{a.item_id}", item=a.item_id, model=a.model,
                     title=f"{a.item_id} ({item.group}): {gist(item.question, 70)}",
                     score="right" if a.correct else "wrong" if a.answered else "unanswered",
                     parts=[Part("Question", item.question), Part("Options", item.options_text()),
                            Part(f"Reply ({a.model})", a.text), Part("Letters read", ", ".join(a.chosen)),
                            Part("Gold", item.gold)],
                     facets={"group": item.group, "language": item.language,
                             "outcome": "right" if a.correct else "wrong"})


def unanswered_rows(quiz: Sequence[ChoiceItem], rows: Sequence[ChoiceAnswer], failed: Sequence[Failure]
                    ) -> list[ChoiceAnswer]:
    """A row, not right, for each question a system got no usable reply to (its failure stays counted)."""
    by_id = {q.id: q for q in quiz}
    have = {(r.model, r.item_id) for r in rows}
    out = []
    for f in failed:
        item = by_id.get(f.item_id)
        if item is not None and (f.model, f.item_id) not in have:
            have.add((f.model, f.item_id))
            out.append(ChoiceAnswer(item_id=item.id, model=f.model, group=item.group, language=item.language,
                                    text=f.error or "", chosen=[], gold=item.gold, correct=0.0, answered=False))
    return out


def scored(items: list[str], failures: list[str], questions: str, group: str, limit: int | None) -> Scored:
    """The kit's scoring hook for a quiz: its answers' rows (every question asked, an unanswered one not right),
    the failures and the viewer's samples."""
    quiz = read_choice_items(questions, group)[:limit]
    answered = [r for p in items for r in read_records(p, CHOICE_ANSWERS)]
    failed = [f for p in failures for f in read_records(p, FAILURES)]
    rows = [*answered, *unanswered_rows(quiz, answered, failed)]
    return Scored(rows, failed, len(quiz),
                  samples=samples(quiz, rows))
