"""The parameters of RoleLLM's flows (flow signatures, CLI options and deployment parameters in one place)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from rpbench.flows.kit.front import settings as kit
from rpbench.flows.kit.front.settings import InputPath, InputPaths, MaybeInputPath, OutputFolder, RunSettings, cli


class EvalSettings(kit.EvalSettings):
    """Models answer RoleBench questions in role (RoleGPT prompting: zsp, fsp or fsd with BM25-retrieved
    examples from the role's script); Rouge-L against the references per split (CUS, RAW, SPE, avg); with
    --judge, a ranking judge and win rates against a reference system."""

    item_unit: ClassVar[str] = "questions of each role in each file"
    answers_layout: ClassVar[str] = "JSONL of answer with the row's id, or with role and question"
    judge_fields: ClassVar[tuple[str, ...]] = ("judges",)

    data: InputPaths = Field(min_length=1, json_schema_extra=cli("--data"),
                            description="A RoleBench file (role, question, generated[, type]) or a folder in its "
                                        "released layout (rolebench-eng/..., rolebench-zh/...). Repeat.")
    out: OutputFolder = Field(default="runs/rolellm", description="Folder for answers, scores and report.")
    profiles: InputPaths = Field(default_factory=list, json_schema_extra=cli("--profiles"),
                                description="Role profiles: role files (YAML), folders of them, or RoleBench profile "
                                            "folders (desc.json and the role scripts). Repeat. Default: the "
                                            "profiles-*/desc.json that the released layout keeps beside the data.")
    mode: Literal["opencompass", "zsp", "fsp", "fsd"] = Field(
        default="opencompass", description="How a model under test is asked: opencompass (as OpenCompass's RoleBench "
                                           "configuration asks it, the prompting RoleLLM's authors point to: its "
                                           "words, read from its pinned files, with the role's name and "
                                           "description and the question in one user message), or RoleGPT's, in "
                                           "rpbench's words: zsp (zero-shot: the role's description as the system "
                                           "prompt, then the question), fsp (retrieved examples written in the "
                                           "prompt), fsd (retrieved examples as earlier chat turns).")
    top_k: int = Field(default=5, ge=1, le=20, description="Examples retrieved (BM25) from the role's script.")
    part: str = Field(default="test", description="Which files of a folder to read: test, train, ...")
    raw: MaybeInputPath = Field(default=None, description="RAW references: JSONL of question and the original answer "
                                                      "(answer, output, response or generated), for the RAW score.")
    combine: Literal["first", "max"] = Field(
        default="first", description="Several references (RoleBench's general rows have up to five): score against "
                                     "the first only, as OpenCompass (RoleLLM's scorer) does, or the best match "
                                     "(max).")
    zh_tokens: Literal["jieba", "chars"] = Field(
        default="jieba", description="Chinese Rouge-L tokens: jieba words after OpenCompass's clean-up, scored by "
                                     "rouge-chinese, as OpenCompass does; or chars, one token per character with "
                                     "nothing dropped (rpbench's own).")
    judges: list[str] = Field(default_factory=list, json_schema_extra=cli("--judge"),
                              description="Ranking judge: a role name or a model string. Repeat. Default: none.")
    reference: str = Field(default="rolegpt-baseline",
                           description="The system win rates are counted against: rolegpt-baseline (the answers in "
                                       "rolegpt_baseline.jsonl beside the test files) or one of the --model names.")
    judge_per_role: int = Field(default=20, ge=1, description="Questions per role and file the judge ranks.")

    @model_validator(mode="after")
    def _judge_options_need_a_judge(self) -> EvalSettings:
        # Given alone it would change nothing, and the user would believe the judge ran on that many.
        if "judge_per_role" in kit.given_fields(self) and not self.judges:
            raise ValueError("--judge-per-role: how many questions the ranking judge ranks; give a judge with --judge")
        return self


class ContextInstructSettings(RunSettings):
    """Role-specific questions with answers in the role's voice, generated from each role's script segments
    (completeness) and description (factualness); only High confidence kept, cleaned, de-duplicated with
    BM25; written in RoleBench's layout with instruction- and role-generalisation splits."""

    roles: InputPaths = Field(min_length=1, json_schema_extra=cli("--role"),
                             description="A role file (YAML: name, language, description, catchphrases, script), a "
                                         "folder of them, or a RoleBench profile folder. Repeat.")
    out: OutputFolder = Field(default="runs/context-instruct", description="Folder for the RoleBench-layout files, "
                                                                           "the triplets table and a summary.")
    min_turns: int = Field(default=25, ge=0, description="Roles with fewer turns of their own are left out.")
    per_segment: int = Field(default=3, ge=1, description="Script-based questions asked per segment.")
    per_description_call: int = Field(default=10, ge=1, description="Questions per call from the description.")
    description_calls: int = Field(default=20, ge=0, description="Calls on the description per role.")
    min_candidates: int = Field(default=400, ge=0, description="More description calls until a role has this "
                                                               "many candidates ...")
    max_topup_calls: int = Field(default=20, ge=0, description="... but at most this many more.")
    max_segments: int = Field(default=100, ge=1, description="Segments per role (chosen at random, seeded, if more).")
    duplicate_share: float = Field(default=0.6, gt=0, le=1, description="A question whose BM25 score against a kept "
                                   "one reaches this share of that one's own score is a duplicate.")
    max_test: int = Field(default=50, ge=0, description="Test questions per role (duplicates least like the kept).")
    limit: int | None = Field(default=None, ge=1, description="Only the first N roles kept (by name), for a trial "
                              "run.")
    seed: int = Field(default=0, ge=0, description="Seed for sampling segments and holding out roles.")


class GeneralSettings(RunSettings):
    """RoleBench-general: short general instructions (BM25 de-duplicated) answered six times by every role in
    role (RoleGPT prompting): five answers are references, the sixth the RoleGPT baseline; the original answers
    are the RAW references. Written in RoleBench's layout with both splits."""

    instructions: InputPath = Field(json_schema_extra=cli("--instructions"),
                              description="General instructions: JSONL of instruction (or question), optional "
                                          "input, and the original answer (output, response or answer).")
    roles: InputPaths = Field(min_length=1, json_schema_extra=cli("--role"),
                             description="Role files (YAML), folders of them, or RoleBench profile folders. Repeat.")
    out: OutputFolder = Field(default="runs/rolebench-general", description="Folder for the RoleBench-layout files, "
                                                                            "raw.jsonl and the responses table.")
    mode: Literal["zsp", "fsp", "fsd"] = Field(default="fsd", description="RoleGPT prompting for the answers.")
    top_k: int = Field(default=5, ge=1, le=20, description="Examples retrieved (BM25) from the role's script.")
    duplicate_share: float = Field(default=0.6, gt=0, le=1, description="An instruction this close (BM25 share of "
                                   "an earlier one's own score) to an earlier one is a duplicate.")
    limit: int | None = Field(default=None, ge=1, description="At most this many instructions (after the length "
                                                              "and duplicate filters, in file order).")
    seed: int = Field(default=0, ge=0, description="Seed for the 4:1 instruction split and the held-out roles.")


class ProfileSettings(RunSettings):
    """A role file for context-instruct, general and eval: the generator describes the role in the third person
    (without its name), turns that into the second person, and lists its catchphrases."""

    name: str = Field(min_length=1, json_schema_extra=cli("--name"), description="The role's name.")
    script_name: str = Field(min_length=1, json_schema_extra=cli("--script-name"),
                             description="The film, show or book it comes from.")
    language: Literal["en", "zh"] = Field(default="en", description="The role's language (en, zh).")
    script: MaybeInputPath = Field(default=None, description="The role's script (text, one SPEAKER: line per line), "
                                                         "copied into the role file and shown to the generator.")
    aliases: list[str] = Field(default_factory=list, json_schema_extra=cli("--alias"),
                               description="How the script names the role (VANE for Captain Vane). Repeat.")
    out: OutputFolder = Field(default="runs/role-profile", description="Folder for the role file.")


class SelectSettings(RunSettings):
    """Role selection: for each script, its main character and how distinct that character's speech is
    (not, somewhat, very, extremely); the top two levels are listed for auditing."""

    scripts: InputPath = Field(json_schema_extra=cli("--scripts"),
                         description="A text file, one script per line: its name, or 'name | character' to judge a "
                                     "given character.")
    language: Literal["en", "zh"] = Field(default="en", description="The prompt's language (en, zh).")
    out: OutputFolder = Field(default="runs/role-selection", description="Folder for selection.parquet and .md.")
