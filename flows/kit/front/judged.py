"""A judged benchmark's settings and input check, as the kit gives them (Prefect-free: a suite file is checked
against the settings without importing a flow)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator
from pydantic.fields import FieldInfo

from rpbench.flows.kit.front.registry import BenchmarkMode, load_ref, one_run
from rpbench.flows.kit.front.run_command import RunCommand
from rpbench.flows.kit.front.settings import EvalSettings, MaybeInputPath, OutputFolder, cli, flag_of
from rpbench.flows.kit.front.systems import System, evaluation_systems, judge_role
from rpbench.tasks.llm.config import Role

Rule = Literal["mean", "median", "min", "max"]  # the names of tasks.judged.rubric.RULES


class JudgedSettings(EvalSettings):
    """A judged mode's settings: the items, the systems that answer them, the judges who grade the answers and
    how their grades combine, and the usual evaluation options. The mode's subclass names its roles (``role``,
    the model under test's; ``judges_default``, the judges' roles), its templates (``actor_prompt``: the system
    prompt a persona is given; ``judge_prompt``: the grading request), the rubric's scale (``low``, ``high``), the
    item field the report breaks scores down by (``group_by``), its rubrics (``dimensions``; none: one) and the
    field its answer files hold answers in (``answer_field``)."""

    item_unit: ClassVar[str] = "items"
    answers_are: ClassVar[str] = "answers"
    judge_fields: ClassVar[tuple[str, ...]] = ("judges",)
    role: ClassVar[str] = ""
    judges_default: ClassVar[tuple[str, ...]] = ()
    actor_prompt: ClassVar[str] = ""  # <mode>/<name>: rendered with persona (and the item) as the system prompt
    judge_prompt: ClassVar[str] = ""  # <mode>/<name>: rendered with the item, its answer and the dimension
    low: ClassVar[int] = 1
    high: ClassVar[int] = 5
    group_by: ClassVar[str] = "character"
    dimensions: ClassVar[tuple[str, ...]] = ()
    # A mode reading its items its own way: "package.module:function", called with the ``item_params`` but the
    # limit (a release's layout); its fields the answers stage takes besides ``items`` (``item_fields``) and the
    # grading stage besides the answers and the judge (``grade_fields``).
    items_reader: ClassVar[str] = ""
    item_fields: ClassVar[tuple[str, ...]] = ()
    grade_fields: ClassVar[tuple[str, ...]] = ()
    # The mode's other roles (a ``Prepare`` or ``Make`` stage's) -> the setting that turns its stage on ("": always).
    helpers: ClassVar[dict[str, str]] = {}
    # The setting that has a stage write the items first (``judged_flow``'s ``make``): then none are given.
    makes_items: ClassVar[str] = ""

    # Required here; a mode whose items default to a release's gives it a default of None.
    items: MaybeInputPath = Field(json_schema_extra=cli("--items"),
                             description="JSONL of {id, persona, prompt, {group_by}[, dimension][, language]}.")
    judges: list[str] = Field(default_factory=list, json_schema_extra=cli("--judge"),
                              description="A judge who grades every answer: a role name or a model string. Repeat "
                                          "for several. Default: {judges}.")
    combine: Rule = Field(default="mean", description="How several judges' grades of one answer make its score: "
                          "mean, median, min or max.")
    out: OutputFolder = Field(default="runs/judged", description="Folder for the answers, grades, report and viewer.")

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        if "answers_layout" not in cls.__dict__:  # said from the field the answers are under, unless said
            cls.answers_layout = f"a JSONL file of {{\"id\": item id, \"{cls.answer_field}\": the reply's text}}"
        super().__pydantic_init_subclass__(**kwargs)
        if not cls.role or not cls.judges_default:
            raise TypeError(f"{cls.__name__}: a judged mode's settings name the model under test's role and the "
                            "judges' (role: ClassVar[str], judges_default: ClassVar[tuple[str, ...]]: the mode's "
                            "roles)")
        judges = FieldInfo.merge_field_infos(
            cls.model_fields["judges"], default_factory=lambda: list(cls.judges_default),
            description=(JudgedSettings.model_fields["judges"].description or "").replace(
                "{judges}", ", ".join(cls.judges_default)))
        items = FieldInfo.merge_field_infos(cls.model_fields["items"], description=(
            cls.model_fields["items"].description or "").replace("{group_by}", cls.group_by))
        cls.model_fields["judges"], cls.model_fields["items"] = judges, items
        cls.model_rebuild(force=True)

    def judge_names(self) -> list[str]:
        return list(dict.fromkeys(self.judges or self.judges_default))

    @model_validator(mode="after")
    def _items_made_or_given(self) -> JudgedSettings:
        if self.makes_items and getattr(self, self.makes_items) and (self.items is not None or self.answers):
            made, cls = flag_of(type(self), self.makes_items), type(self)
            raise ValueError(f"{made} writes the {self.item_unit.split(' (')[0]}: not with {flag_of(cls, 'items')} "
                             f"(they are written), nor with {flag_of(cls, 'answers')} (whose ids name none yet)")
        return self

    def helper_roles(self) -> list[str]:
        return [role for role, when in self.helpers.items() if not when or getattr(self, when)]

    def item_params(self) -> dict[str, Any]:
        """What the mode's answers stage (and a stage preparing its grading) is given to read its items."""
        return {"items": self.items, **{f: getattr(self, f) for f in self.item_fields}, "limit": self.limit}

    def grade_params(self) -> dict[str, Any]:
        """What the mode's grading stage is given besides the answers and the judge."""
        return {f: getattr(self, f) for f in self.grade_fields}

    def read_items(self, limited: bool = True) -> list[Any]:
        """The run's items (the first ``--limit`` unless not ``limited``)."""
        items = self.items_of(self.item_params())
        return items[:self.limit] if limited else items

    @classmethod
    def items_of(cls, params: Mapping[str, Any]) -> list[Any]:
        """Every item that ``item_params`` (a stage's parameters) name, before the limit."""
        from rpbench.prompts import languages
        from rpbench.tasks.judged.rubric import read_judged_items

        if cls.items_reader:
            return list(load_ref(cls.items_reader)(**{f: params[f] for f in ("items", *cls.item_fields)}))
        assert params["items"] is not None  # required unless a mode reads its items itself
        return read_judged_items(params["items"], cls.group_by, cls.dimensions or None, languages(cls.actor_prompt))


@dataclass(frozen=True)
class JudgedInputs:
    systems: list[System]
    judges: dict[str, str]  # the name given -> the judge's role


def check_judged(s: JudgedSettings) -> JudgedInputs:
    """Every input error before any call: the items, the models, the answer files (their ids checked), the
    judges."""
    known = {i.id: i for i in s.read_items(limited=False)}
    systems = evaluation_systems(s, like=s.role, known=known)
    judges = {name: judge_role(s, name, like=s.judges_default[0]) for name in s.judge_names()}
    return JudgedInputs(systems, judges)


def judged_mode(name: str, description: str, roles: Mapping[str, Role], settings: type[JudgedSettings],
                **more: Any) -> BenchmarkMode:
    """A judged mode's spec: the kit's item table and scoring hook, its flow ``flows:<name>`` (made by
    ``judged_flow``) checked by ``check_judged``, ``rpbench <name> run`` from ``settings`` (in the mode's
    ``mode`` module), one run in a suite; ``more``: any other field (``report``, by default the mode's
    ``analysis:REPORT``; ``smoke``; ``releases``), or these overridden."""
    return BenchmarkMode(**{
        "name": name, "description": description, "roles": roles,
        "item_table": "rpbench.tasks.judged.rubric:JUDGED_SCORES", "score": "rpbench.tasks.judged.rubric:scored",
        "flows": {name: f"flows:{name}"}, "settings": {name: f"mode:{settings.__name__}"},
        "checks": {name: "rpbench.flows.kit.front.judged:check_judged"}, "commands": RunCommand(name),
        "suite": one_run(name), **more})
