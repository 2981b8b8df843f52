"""RoleLLM's records: role profiles and their scripts, RoleBench rows as published, Context-Instruct's
question-confidence-answer triplets, models' answers and their Rouge-L scores, and the ranking judge's
verdicts."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rpbench.tasks.core.records import Record, Status

Kind = Literal["general", "role_specific"]
Mode = Literal["opencompass", "zsp", "fsp", "fsd"]


class ScriptTurn(Record):
    """One turn of a role's script, as RoleLLM's profiles hold them: ``role`` is the speaker (``narrator`` for
    stage directions); ``diag_id`` groups the turns of one dialogue round, which ends with the role's line."""

    act_id: int
    diag_id: int
    role: str
    content: str


class RoleProfile(Record):
    name: str = Field(min_length=1)
    language: Literal["en", "zh"]
    script_name: str = ""
    description: str = Field(min_length=1)  # description with catchphrases, in the second person
    catchphrases: list[str] = Field(default_factory=list)
    turns: list[ScriptTurn] = Field(default_factory=list)


class BenchRow(Record):
    """A RoleBench row (``role``, ``question``, ``generated``, optional ``type``) and where it came from."""

    row_id: str  # <split>/<kind>/<part>:<line>
    split: str  # eng-instruction-generalization, eng-role-generalization, zh, or the file's name
    kind: Kind
    part: str  # test, train, rolegpt_baseline, ...
    role: str
    question: str
    generated: list[str]
    type: list[str] = Field(default_factory=list)
    language: Literal["en", "zh"]


class Triplet(Record):
    """A question for a role, the generator's confidence in it and the answer in the role's voice."""

    role: str
    origin: Literal["script_based", "script_agnostic"]
    segment: int  # the script segment it came from (-1: the description)
    call: int
    question: str
    confidence: Literal["High", "Low"]
    rationale: str
    answer: str
    outcome: Literal["kept", "low", "duplicate", "unclean", "test"]
    reason: str | None = None


class RoleAnswer(Record):
    """A model's answer, in role, to one RoleBench row."""

    row_id: str
    model: str
    mode: Mode
    text: str | None
    status: Status
    error: str | None = None


class RowScore(Record):
    """One model's Rouge-L (x100) on one row against one reference set: CUS (general rows, the role-play
    references), RAW (general rows, the original answers) or SPE (role-specific rows)."""

    model: str
    row_id: str
    split: str
    reference: Literal["CUS", "RAW", "SPE"]
    role: str
    language: str
    rouge_l: float


class Ranking(Record):
    """The ranking judge on one row: every system's rank (1 = best), answers shown anonymised and shuffled."""

    row_id: str
    judge: str
    order: list[str]  # the systems in the order the judge saw them
    ranks: dict[str, int] | None
    status: Status
    error: str | None = None


class GeneralResponse(Record):
    """One of the six answers in role to a general instruction: five reference candidates, then the baseline."""

    role: str
    question: str
    index: int  # 0-4 reference candidates, 5 the baseline
    text: str | None
    status: Status
    outcome: Literal["reference", "baseline", "unclean", "failed"]
    error: str | None = None


class ScriptChoice(Record):
    """Role selection: a script's main character and how distinct its way of speaking is."""

    script: str
    character: str | None
    distinctness: Literal["not distinct", "somewhat distinct", "very distinct", "extremely distinct"] | None
    reason: str | None
    status: Status
    error: str | None = None
