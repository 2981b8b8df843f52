"""The parameters of CharacterBench's flow (flow signature, CLI options and deployment parameters in one place)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from rpbench.flows.kit.front.settings import EvalSettings, InputPaths, OutputFolder, cli


class CharacterBenchSettings(EvalSettings):
    """CharacterBench: each model replies in character to the last user turn of every item (with no --model and
    no --answers, the released systems' replies are judged as they stand); the judge (--judge, role
    characterbench-judge) scores each reply on its dimension with the dimension's reference; the score per
    dimension and model as the release computes it, and the judge's agreement with the released human scores."""

    item_unit: ClassVar[str] = "items of each dimension file"
    answers_are: ClassVar[str] = "replies"
    answers_layout: ClassVar[str] = 'JSONL of {"id": "<dimension>:<id>", "answer": the reply}'
    needs_systems: ClassVar[bool] = False  # with neither, the released systems' replies are judged
    judge_fields: ClassVar[tuple[str, ...]] = ("judge",)

    data: InputPaths = Field(min_length=1, json_schema_extra=cli("--data"),
                             description="CharacterBench's files as released, one per dimension and named by it "
                                         "(memory_consistency_test.json, engagement_test.json, ...), files in "
                                         "their layout, or a folder of them. Repeat.")
    language: Literal["zh", "en"] = Field(default="zh", description="Chinese as released, or English from each "
                                          "item's translation_en (the release scores each language apart).")
    judge: str = Field(default="characterbench-judge", json_schema_extra=cli("--judge"),
                       description="The judge: a role name or a model string (the characterjudge preset binds "
                                   "CharacterJudge).")
    judge_output: Literal["json", "number"] = Field(
        default="json", description="json: the judge is asked for its reasoning and score as JSON. number: the "
                                    "judge prompt ends at the reference and the reply must be the score alone, as "
                                    "CharacterJudge was trained to answer.")
    judge_released: bool = Field(
        default=False, description="Also judge the released systems' replies, each under its own name, beside the "
                                   "models': the judge checked against the people who scored those replies "
                                   "(agreement.parquet, the report). On in a suite. With no --model and no "
                                   "--answers, the released replies are all the run judges.")
    out: OutputFolder = Field(default="runs/characterbench", description="Folder for replies, judgments, scores, "
                              "the judge's agreement with people and the report.")
