"""The one typed model of a flow's parameters: the flow signature, the CLI options and the deployment
parameters are all made from it, so no default is written twice."""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any, ClassVar, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic.fields import FieldInfo

from rpbench.storage.recorded_paths import recorded_path
from rpbench.storage.user_files import check_cache_file, check_output_file, check_output_folder
from rpbench.tasks.llm.config import presets


class _NamesAPath:
    """Marks a settings field whose value is a file or folder: the manifest records it relative to itself."""


NAMES_A_PATH = _NamesAPath()
InputPath = Annotated[str, NAMES_A_PATH]
InputPaths = Annotated[list[str], NAMES_A_PATH]
MaybeInputPath = Annotated[str | None, NAMES_A_PATH]
# Paths a run writes to, checked when the settings are made (before any flow starts): a folder that is a
# file, an unwritable place or a cache that is not SQLite is one line, not a traceback halfway through.
OutputFolder = Annotated[str, AfterValidator(check_output_folder), NAMES_A_PATH]
OutputFile = Annotated[str, AfterValidator(check_output_file), NAMES_A_PATH]


def _carries(metadata: Any, annotation: Any, found: Callable[[Any], bool]) -> bool:
    """Whether a field's metadata, or any type inside its annotation (``list[InputPath]``, ``OutputFolder |
    None``), has a mark ``found`` recognises."""
    if any(found(m) for m in metadata):
        return True
    return any(_carries(getattr(arg, "__metadata__", ()), arg, found) for arg in get_args(annotation))


def path_fields(model: type[BaseModel]) -> list[str]:
    """The fields of a settings model that name files or folders."""
    return [name for name, f in model.model_fields.items()
            if _carries(f.metadata, f.annotation, lambda m: m is NAMES_A_PATH)]


def output_fields(model: type[BaseModel], folders_only: bool = False) -> list[str]:
    """The fields of a settings model naming a folder (or file, unless ``folders_only``) the command writes."""
    checks = (check_output_folder,) if folders_only else (check_output_folder, check_output_file)
    return [name for name, f in model.model_fields.items()
            if _carries(f.metadata, f.annotation, lambda m: getattr(m, "func", None) in checks)]


CacheFile = Annotated[str | None, AfterValidator(check_cache_file)]


def cli(flag: str | None = None, *, argument: bool = False, hidden: bool = False,
        deprecated: tuple[str, ...] = (), also_argument: bool = False) -> dict[str, Any]:
    """How a settings field appears on the command line (``json_schema_extra`` of the field); ``deprecated``
    flags still work for a release, with a warning naming the new one; ``also_argument``: an option that may
    also be given as the command's (optional) argument, as a user who has just saved the file types it
    (``rpbench suite run my-suite.toml``)."""
    out: dict[str, Any] = {}
    if also_argument:
        out["also_argument"] = True
    if flag:
        out["cli"] = flag
    if deprecated:
        out["deprecated_flags"] = list(deprecated)
    if argument:
        out["argument"] = True
    if hidden:
        out["hidden"] = True
    return out


class ModelsFileSettings(BaseModel):
    """What every command that reads the models file takes (``rpbench models`` and ``prepare`` take only this)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    models_file: str | None = Field(
        default=None, json_schema_extra=cli("--models-file", deprecated=("--models",)),
        description="Models config (TOML or YAML), or a shipped preset by name (" + ", ".join(presets()) + "), "
        "binding model roles to model strings and sampling settings. Default: every role uses the embedded local "
        "model. Env overrides: RPBENCH_<ROLE>_<FIELD>. (--models is the old name of this option.)")


class RunSettings(ModelsFileSettings):
    """What every flow that calls models takes: the models file, the call cache, the budget and failure bounds."""

    cache: CacheFile = Field(
        default=None, description="SQLite call cache; a rerun repeats no call found here. "
        "Default: .rpbench/calls.sqlite")
    releases: str | None = Field(
        default=None, description="A folder holding the benchmarks' released code (the words their prompts are read "
        "from) in the layout <owner>__<name>@<commit>/<path>. Default: RPBENCH_RELEASES, else rpbench's own copy, "
        "which `rpbench releases fetch` downloads.")
    keep_failures: bool = Field(
        default=False, description="Replay the failures of an earlier run of the same stages exactly. By default a "
        "rerun heals: calls that got no usable reply are sent again, and a reply that could not be read gets fresh "
        "attempts.")
    max_cost: float | None = Field(
        default=None, gt=0, description="USD the run may spend on model calls (calls answered from the cache are "
        "free): it stops before a request could take the spend past it, keeps what it has, ends Failed and exits "
        "3; the same command with a larger budget continues. Also per role: max_cost in the models file.")
    batch: bool = Field(
        default=False, description="Send every role's independent calls (judging, checking, answering a fixed "
        "question) through its provider's batch API, as batch = true in the models file does for one role: about "
        "half the price, replies within hours. Dialogue stages stay interactive.")
    max_failure_share: float = Field(
        default=0.1, ge=0, le=1,
        description="The run fails (Failed in Prefect, exit status 3, after writing everything it made) when a "
        "model has more than this share of its items failed, or a stage got no usable reply to any call.")

    def judging(self) -> tuple[list[str], list[str]]:
        """The names (roles or model strings) of this run's models under test and of its judges (checkers,
        critics): a judge bound to the same model as a model under test scores its own answers, which the
        command and the manifest point out. A run with no judge gives none."""
        return [], []

    def helper_roles(self) -> list[str]:
        """The built-in roles this run calls by their own name besides the models under test and the judges
        (a user emulator, an environment, a generator): a run that leaves one of them on the embedded model
        beside real models says so before it starts."""
        return []

    def recorded(self, out: str | Path) -> dict[str, Any]:
        """These settings as the manifest in ``out`` records them: without the models file and cache (the
        manifest records those itself), and every file or folder relative to ``out``, so that a run folder
        copied together with what it read still finds it."""
        values = self.model_dump(exclude={"models_file", "cache"})
        for name in path_fields(type(self)):
            value = values.get(name)
            if isinstance(value, str):
                values[name] = recorded_path(value, out)
            elif isinstance(value, list):
                values[name] = [recorded_path(v, out) for v in value]
        return values


def flag_of(model: type[BaseModel], name: str) -> str:
    """The command-line option of ``model``'s field ``name``."""
    extra = model.model_fields[name].json_schema_extra
    flag = extra.get("cli") if isinstance(extra, dict) else None
    return str(flag) if flag else "--" + name.replace("_", "-")


# Whether the settings being read are what a user typed (a command line, a suite file): then every field set is a
# choice, a default typed out included. Elsewhere (a Prefect form, a deployment's parameters) every field comes set.
_typed: ContextVar[bool] = ContextVar("rpbench_settings_typed", default=False)


@contextlib.contextmanager
def typed_settings() -> Iterator[None]:
    """Settings validated inside are what the user typed: only the options given are set (``given_fields``)."""
    token = _typed.set(True)
    try:
        yield
    finally:
        _typed.reset(token)


def given_fields(settings: BaseModel) -> set[str]:
    """The fields a user chose. Typed on a command line or in a suite file (``typed_settings``): every field set.
    Otherwise: set, and not to their default. A Prefect UI form fills in every default and submits it, so being
    set alone would make each default a choice that can contradict the one option the user changed."""
    if _typed.get():
        return set(settings.model_fields_set)
    fields = type(settings).model_fields
    return {name for name in settings.model_fields_set if fields[name].is_required()
            or getattr(settings, name) != fields[name].get_default(call_default_factory=True)}


# A 95% percentile interval reads its ends from the 2.5% tails of the resamples: with fewer than 40 a tail holds
# no resample, and the "interval" (from one resample, say) need not even contain the score.
MIN_RESAMPLES = 40


class EvalSettings(RunSettings):
    """What every evaluation takes besides its data: the systems it ranks (models asked through their roles,
    answers a user already has), how many items, and the intervals' resamples and seed. A mode says in its
    class variables what its answer files hold and what it counts (they fill in the help), and adds its own."""

    # What one item of this benchmark is (for --limit) and what an --answers file holds, in the mode's words.
    item_unit: ClassVar[str] = "items"
    answers_layout: ClassVar[str] = "a JSONL file of {\"id\": item id, \"answer\": text}"
    answers_are: ClassVar[str] = "answers"
    # The field of an --answers line holding the answer, as the kit's readers read it (given.read_answers).
    answer_field: ClassVar[str] = "answer"
    # False for a benchmark that scores replies of its own (released ones) when given no system.
    needs_systems: ClassVar[bool] = True
    # The run's judges (``judging``): built-in roles it calls by their own name, and its fields that name one
    # judge (a role or model string) or several.
    judge_roles: ClassVar[tuple[str, ...]] = ()
    judge_fields: ClassVar[tuple[str, ...]] = ()
    # Its fields that only shape how a model under test is asked: set with no --model (answers alone), they
    # would change nothing, and the user would believe they had.
    asks_only: ClassVar[tuple[str, ...]] = ()

    models: list[str] = Field(default_factory=list, json_schema_extra=cli("--model"),
                              description="Model under test: a litellm model string, or a role name. Repeat.")
    answers: list[str] = Field(default_factory=list, json_schema_extra=cli("--answers"),
                               description="{answers_are} you already have, scored as a model's with no call: "
                                           "NAME=FILE (or FILE, named by its stem), {answers_layout}. Repeat; "
                                           "combine with --model.")
    limit: int | None = Field(default=None, ge=1, description="Only the first N {item_unit} (a quick run, as "
                              "lm-evaluation-harness's --limit). Default: all.")
    resamples: int = Field(default=1000, ge=MIN_RESAMPLES, description="Bootstrap resamples for the 95% intervals "
                           f"(at least {MIN_RESAMPLES}: fewer leave a 2.5% tail with no resample in it).")
    seed: int = Field(default=0, ge=0, description="Seed of the bootstrap (and of every draw the run makes).")

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        words = {"item_unit": cls.item_unit, "answers_layout": cls.answers_layout,
                 "answers_are": cls.answers_are.capitalize()}
        for name in ("answers", "limit"):
            if name in inspect.get_annotations(cls):
                continue  # the mode declares the field itself, help and all
            template = EvalSettings.model_fields[name].description or ""
            cls.model_fields[name] = FieldInfo.merge_field_infos(cls.model_fields[name],
                                                                 description=template.format(**words))
        cls.model_rebuild(force=True)

    @model_validator(mode="after")
    def _something_to_score(self) -> EvalSettings:
        if self.needs_systems and not self.models and not self.answers:
            raise ValueError(f"give a model to ask (--model) or {self.answers_are} to score (--answers)")
        return self

    @model_validator(mode="after")
    def _asking_needs_a_model(self) -> EvalSettings:
        chosen = given_fields(self)
        changed = [n for n in self.asks_only if n in chosen]
        if changed and not self.models:
            raise ValueError(f"{flag_of(type(self), changed[0])}: shapes how a model under test is asked, and no "
                             f"--model is given ({self.answers_are} are scored as they stand)")
        return self

    def judging(self) -> tuple[list[str], list[str]]:
        judges = list(self.judge_roles)
        for name in self.judge_fields:
            value = getattr(self, name)  # one judge's name, or a list of them
            judges += [value] if isinstance(value, str) else value
        return list(self.models), judges
