"""The parameters of RoleInteract's flow (flow signature, CLI options and deployment parameters in one place)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator

from rpbench.flows.kit.front.settings import EvalSettings, InputPaths, OutputFolder, cli
from rpbench.tasks.modes.roleinteract.catalog import NAMES


class RoleInteractSettings(EvalSettings):
    """Each model answers RoleInteract's questions in role (single and multiple choice, and memory questions
    answered in words): self-awareness, emotional perception, memory, group preference; the paper's nine-column
    table with its unweighted average, and the analyses."""

    item_unit: ClassVar[str] = "items of each column and language, in file order"
    asks_only: ClassVar[tuple[str, ...]] = ("reask", "with_instruction")

    data: InputPaths = Field(min_length=1, json_schema_extra=cli("--data"),
                            description="A RoleInteract JSON file as released (self_awareness.json, "
                                        "emotional_perception.json, conversation_memory.json, social_preference.json) "
                                        "or one in that layout. Repeat.")
    out: OutputFolder = Field(default="runs/roleinteract", description="Folder for answers, scores and report.")
    policy: Literal["skip", "zero"] = Field(
        default="skip", description="An answer in which no option can be read, or a failed call: skip it (left "
                                    "out of the averages, as the released code does) or count it as not right "
                                    "(accuracy over every item). Counted and reported either way.")
    reask: int = Field(default=0, ge=0, le=5, description="Ask again up to N times when a reply holds no option "
                       "letter (or is empty); SocialBench's code takes one reply (0).")
    with_instruction: bool = Field(default=False, description="Put each item's own instruction in its prompt, "
                                   "before the options; SocialBench's code never sends it (its prompts say what "
                                   "to do).")
    scoring: Literal["paper", "released"] = Field(
        default="paper", description="How a choice item scores. paper (Appendix C): any chosen option that is not "
                                     "gold gives 0, single-gold items included. released: as SocialBench's "
                                     "dataset.py scores, its own letter pattern reading each answer (an answer it "
                                     "reads no letter in is skipped) and a single-gold item right when the first "
                                     "letter read is gold.")
    drop_unanswerable: bool = Field(
        default=False, description="Leave out items whose gold letter is none of their options (no answer can be "
                                   "right; SocialBench's emotional_perception.json has one) and name each in the "
                                   "report. Without it such an item is an error.")
    columns: list[str] = Field(default_factory=list, json_schema_extra=cli("--column"),
                               description="Only these columns (SA Style, SA Know., EP Situ., EP Emo., CM Short, "
                                           "CM Long, Pos., Neu., Neg.). Repeat. Default: all.")
    languages: list[str] = Field(default_factory=list, json_schema_extra=cli("--language"),
                                 description="Only items in these languages (en, zh). Repeat.")

    @field_validator("columns")
    @classmethod
    def _known_columns(cls, v: list[str]) -> list[str]:
        unknown = [c for c in v if c not in NAMES]
        if unknown:
            raise ValueError(f"unknown column '{unknown[0]}' (use {', '.join(NAMES)})")
        return v

    @field_validator("languages")
    @classmethod
    def _known_languages(cls, v: list[str]) -> list[str]:
        unknown = [x for x in v if x not in ("en", "zh")]
        if unknown:
            raise ValueError(f"unknown language '{unknown[0]}' (use en, zh)")
        return v
