"""The parameters of FURINA's flows: flows take these models, the CLI makes its options from them,
deployments pass them as parameters. Defaults come from ``rpbench.tasks.modes.furina.config``, where the
stages read them too, so each is written once."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from rpbench.flows.kit.front import settings as kit
from rpbench.flows.kit.front.settings import (
    NAMES_A_PATH,
    InputPath,
    MaybeInputPath,
    OutputFile,
    OutputFolder,
    RunSettings,
    cli,
    flag_of,
    given_fields,
)
from rpbench.storage.user_files import files_in
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.core.records import LANGUAGES
from rpbench.tasks.modes.furina.config import (
    BuildConfig,
    ChunkingConfig,
    FilterConfig,
    PoolConfig,
    SynthesisConfig,
)

GRADES = ("poor", "moderate", "high")


def _language(v: str | None) -> str | None:
    if v is not None and v not in LANGUAGES:
        raise ValueError(f"unknown language '{v}' (use {' or '.join(LANGUAGES)})")
    return v


BOOK_SUFFIXES = (".txt", ".epub")


def _books_in_folders(paths: list[str]) -> list[str]:
    """Each folder replaced by the books in it (sorted); a folder without any is an error."""
    try:
        return files_in(paths, lambda f: f.suffix.lower() in BOOK_SUFFIXES, "books", ".txt or .epub")
    except InputError as exc:
        raise ValueError(str(exc)) from None


class ChunkSettings(BaseModel):
    """Books and how to cut them into chunks (no LLM)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    books: Annotated[list[str], AfterValidator(_books_in_folders), NAMES_A_PATH] = Field(
        min_length=1, json_schema_extra=cli(argument=True),
        description="Book files (.txt in any common encoding, or .epub), or folders of them: a folder stands for "
                    "the books in it when the run starts (a scheduled refresh picks up books dropped in).")
    out: OutputFolder = Field(default="runs/pool", description="Folder for the pool's tables and manifest.")
    language: str | None = Field(default=None, description="en or zh; detected per book when not given.")
    target_tokens: int = Field(default=ChunkingConfig.target_tokens, ge=64,
                               description="Chunk size aimed at when splitting.")
    min_tokens: int = Field(default=ChunkingConfig.min_tokens, ge=1,
                            description="Chapters are merged until a chunk has this many tokens.")
    max_tokens: int = Field(default=ChunkingConfig.max_tokens, ge=64,
                            description="A chunk above this is split at paragraph boundaries.")

    _check_language = field_validator("language")(_language)

    @model_validator(mode="after")
    def _sizes_in_order(self) -> ChunkSettings:
        # A size left at its default yields to those given (--max-tokens 2048 alone brings the target down to
        # it); sizes given that contradict one another are an error.
        order, given = ("min_tokens", "target_tokens", "max_tokens"), given_fields(self)
        for i, name in enumerate(order):
            if name not in given:
                value = max([getattr(self, n) for n in order[:i] if n in given] + [getattr(self, name)])
                setattr(self, name, min([getattr(self, n) for n in order[i + 1:] if n in given] + [value]))
        if not self.min_tokens <= self.target_tokens <= self.max_tokens:
            said = ", ".join(f"{flag_of(type(self), n)} {getattr(self, n)}" for n in order if n in given)
            raise ValueError(f"chunk sizes out of order: {said} (each at most the next)")
        return self

    def chunking(self) -> ChunkingConfig:
        return ChunkingConfig(self.target_tokens, self.min_tokens, self.max_tokens)


class PoolSettings(ChunkSettings, RunSettings):
    """Chunk the books, extract scenes with the `extractor` role, assemble profiles; write the pool."""

    min_utterances: int = Field(default=FilterConfig.min_utterances, ge=1,
                                description="Drop scenes with fewer utterances.")
    min_speakers: int = Field(default=FilterConfig.min_speakers, ge=1, description="Drop scenes with fewer speakers.")
    plot_aware: bool = Field(default=PoolConfig.plot_aware,
                             description="Let the LLM move unfinished chunk endings forward.")

    def pool(self) -> PoolConfig:
        return PoolConfig(self.chunking(), FilterConfig(self.min_utterances, self.min_speakers), self.plot_aware)


class BuildSettings(RunSettings):
    """Simulate dialogues (director, DWRS, source vs base judged), keep winning turns as benchmark items."""

    characters: InputPath = Field(description="Test characters file (JSON or YAML).")
    pool: InputPath = Field(description="Pool folder (from `rpbench furina pool build`).")
    out: OutputFolder = Field(default="runs/bench", description="Folder for dialogues, items, stats and manifest.")
    only: list[str] = Field(default_factory=list, description="Use only these characters from the file (repeat).")
    limit: int | None = Field(default=None, ge=1, description="Only the first N characters (after --only), for a "
                              "trial run.")
    tau: int = Field(default=BuildConfig.tau, ge=1, json_schema_extra=cli("--threshold"),
                     description="tau: items wanted per dimension per character.")
    min_rounds: int = Field(default=BuildConfig.min_rounds, ge=0,
                            description="The director may not end a scene before this round (at most "
                                        "--max-rounds; left at its default, it comes down to a shorter "
                                        "--max-rounds).")
    max_rounds: int = Field(default=BuildConfig.max_rounds, ge=1, description="A scene ends at this round.")
    max_test_gap: int = Field(default=BuildConfig.max_test_gap, ge=1,
                              description="The test character speaks at least once every this many turns.")
    budget: int = Field(default=BuildConfig.max_dialogues_per_character, ge=1,
                        description="Most dialogues per character.")
    sources: list[str] = Field(default_factory=lambda: list(BuildConfig.sources), json_schema_extra=cli("--source"),
                               description="Source role or model string (repeat: round-robin per dialogue).")
    keep_grades: list[str] = Field(default_factory=lambda: list(BuildConfig.keep_grades),
                                   json_schema_extra=cli("--keep-grade"),
                                   description="Dialogue grades kept (poor, moderate, high).")
    wave_size: int = Field(default=BuildConfig.wave_size, ge=1,
                           description="Dialogues of one character that start together from the same item counts "
                           "(one wave); they run at once. Part of the benchmark's definition, like the seed.")
    seed: int = Field(default=BuildConfig.seed, ge=0, description="Seed for scene order and DWRS tie-breaks.")
    test_sees_scene_extras: bool = Field(
        default=BuildConfig.test_sees_scene_extras,
        description="Also show the test character the scene's motivations and original dialogue.")
    dimension_by: Literal["judge", "target"] = Field(
        default="judge",
        description="Who names an item's dimension: the selection judge, as in the paper (judge), or the "
        "exchange's DWRS target, which the judge then only scores on (target; for a weak judge that "
        "otherwise names one dimension for nearly every turn).")

    @field_validator("keep_grades")
    @classmethod
    def _known_grades(cls, grades: list[str]) -> list[str]:
        unknown = sorted(set(grades) - set(GRADES))
        if unknown or not grades:
            raise ValueError(f"unknown grade {unknown[0] if unknown else 'none given'} (use {', '.join(GRADES)})")
        return grades

    @model_validator(mode="after")
    def _rounds_in_order(self) -> BuildSettings:
        if self.min_rounds > self.max_rounds and "min_rounds" not in given_fields(self):
            self.min_rounds = self.max_rounds  # the default yields to a shorter --max-rounds (a quick run)
        if self.min_rounds > self.max_rounds:
            raise ValueError(f"--min-rounds {self.min_rounds} is above --max-rounds {self.max_rounds}: every scene "
                             "would end before the director may end it")
        return self

    def build(self, sources: tuple[str, ...]) -> BuildConfig:
        """The builder's configuration, with the source names already resolved to roles."""
        return BuildConfig(tau=self.tau, min_rounds=self.min_rounds, max_rounds=self.max_rounds,
                           max_test_gap=self.max_test_gap, max_dialogues_per_character=self.budget,
                           keep_grades=tuple(self.keep_grades), test_sees_scene_extras=self.test_sees_scene_extras,
                           dimension_by=self.dimension_by,
                           wave_size=self.wave_size, seed=self.seed, sources=sources)


class EvalSettings(kit.EvalSettings):
    """Evaluate models: answers, judgments in both orders (role `judge`), hallucination checks (role `checker`)."""

    item_unit: ClassVar[str] = "items of the benchmark (in its own order), for every model"
    answers_are: ClassVar[str] = "replies"
    answers_layout: ClassVar[str] = "JSONL of {\"id\": item id, \"answer\": reply}"
    judge_roles: ClassVar[tuple[str, ...]] = ("judge", "checker")

    def helper_roles(self) -> list[str]:
        return ["base"]

    bench: InputPath = Field(description="Benchmark folder (from `rpbench furina build`).")
    out: OutputFolder = Field(default="runs/eval", description="Folder for generations, judgments, scores and reports.")


class SynthesisSettings(RunSettings):
    """Synthesize original characters (role `synthesizer`): seeds, world, profiles, scene, dialogue, each
    reviewed."""

    out: OutputFile = Field(description="Characters file to write (YAML); its scenes go beside it: "
                                 "chars.yaml -> chars.scenes.json.")
    n: int = Field(default=SynthesisConfig.n_characters, ge=2, le=6,
                   description="Characters per group (they share a world and a scene, and a scene takes two or "
                               "more).")
    language: str = Field(default=SynthesisConfig.language, json_schema_extra=cli("--lang"),
                          description="en or zh.")
    groups: int = Field(default=1, ge=1, description="Independent worlds to synthesize.")
    pool: MaybeInputPath = Field(default=None, description="A pool whose characters count as known.")
    seed_roles: list[str] = Field(default_factory=lambda: list(SynthesisConfig.seed_roles),
                                  json_schema_extra=cli("--seed-role"),
                                  description="Roles or model strings that propose themes (repeat for diversity).")
    max_refine: int = Field(default=SynthesisConfig.max_refine, ge=0,
                            description="Review-and-revise rounds per step.")
    run_dir: OutputFolder = Field(default="runs/characters", description="Folder for call accounting and manifest.")

    _check_language = field_validator("language")(_language)


class DemoSettings(RunSettings):
    """The whole pipeline on the embedded local model (no keys, no network): pool, benchmark, evaluation."""

    out: OutputFolder = Field(default="runs/demo", description="Folder for the run's tables and manifest.")
