"""The parameters of RPBench-Auto's flow (flow signature, CLI options and deployment parameters in one place)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, field_validator, model_validator

from rpbench.flows.kit.front.settings import EvalSettings, MaybeInputPath, OutputFolder, cli


class RpbenchAutoSettings(EvalSettings):
    """RPBench-Auto: a judge (--judge, role rpbench-auto-judge) plays the user against two NPCs at once, a model
    under test and the baseline (--baseline, role rpbench-auto-baseline), and picks the better reply each round:
    80 characters (5 rounds each) and 80 scenes (up to 10, until the winner ends the scene). Win rate against the
    baseline per subset, and the arena's Bradley-Terry Elo with 95% intervals; `rpbench leaderboard` fits one
    table over several runs."""

    item_unit: ClassVar[str] = "characters and scenes of each subset"
    answers_are: ClassVar[str] = "answers"
    answers_layout: ClassVar[str] = ("not taken: the judge writes the user's turns as each dialogue goes, so a "
                                     "file of replies cannot take part")
    judge_fields: ClassVar[tuple[str, ...]] = ("judge",)

    def helper_roles(self) -> list[str]:
        return ["rpbench-auto-baseline"] if self.baseline == "rpbench-auto-baseline" else []

    subsets: list[str] = Field(
        default=["character", "scene"], min_length=1, json_schema_extra=cli("--subset"),
        description="The subsets to run (character, scene). Repeat. Default: both, as the release runs them.")
    judge: str = Field(default="rpbench-auto-judge", json_schema_extra=cli("--judge"),
                       description="The judge who plays the user: a role name or a model string.")
    baseline: str = Field(default="rpbench-auto-baseline", json_schema_extra=cli("--baseline"),
                          description="The model every candidate is judged against: a role name or a model string "
                                      "(RPBench-Auto's leaderboard: gpt-4o).")
    character_data: MaybeInputPath = Field(
        default=None, json_schema_extra=cli("--character-data"),
        description="Characters of your own in the release's layout (JSONL: id, background, npc_profile, "
                    "conversation). Default: the release's 80.")
    scene_data: MaybeInputPath = Field(
        default=None, json_schema_extra=cli("--scene-data"),
        description="Scenes of your own in the release's layout (JSONL: id, npc_profile, background, plot_recap, "
                    "objectives, progression, npc_status, conversation). Default: the release's 80.")
    max_rounds: int | None = Field(default=None, ge=1, description="At most this many rounds a dialogue (a quick "
                                   "run; its battles are then kept apart from full runs'). Default: the release's, "
                                   "5 a character and 10 a scene.")
    judge_asks: int = Field(default=5, ge=1, le=20, description="How often a judge reply that cannot be read is "
                            "asked for again before the round counts as failed (the release asks until one can).")
    out: OutputFolder = Field(default="runs/rpbench-auto",
                              description="Folder for the rounds, battles, arena, report and viewer.")

    @field_validator("subsets")
    @classmethod
    def _known_subsets(cls, value: list[str]) -> list[str]:
        unknown = [v for v in value if v not in ("character", "scene")]
        if unknown:
            raise ValueError(f"--subset: no subset {unknown[0]!r} (RPBench-Auto's: character, scene)")
        return list(dict.fromkeys(value))

    @model_validator(mode="after")
    def _no_answer_files(self) -> RpbenchAutoSettings:
        if self.answers:
            raise ValueError("--answers: RPBench-Auto's user turns are written by the judge as each dialogue goes, "
                             "so a file of replies cannot take part; give a --model")
        return self
