"""The parameters of CoSER's flow (flow signature, CLI options and deployment parameters in one place)."""

from __future__ import annotations

from pydantic import Field, model_validator

from rpbench.flows.kit.front.settings import InputPaths, OutputFolder, RunSettings, cli


class CoserSettings(RunSettings):
    """Models act CoSER's given circumstances; a critic lists flaws per dimension against the book."""

    def judging(self) -> tuple[list[str], list[str]]:
        return list(self.models), [self.judge]

    def helper_roles(self) -> list[str]:
        return ["coser-environment", "coser-next-speaker"] if self.models else []

    data: InputPaths = Field(min_length=1, json_schema_extra=cli("--data"),
                             description="CoSER's test set as released (test_set.json, example_test_set.json) or a "
                                         "file in its layout. Repeat.")
    models: list[str] = Field(default_factory=list, json_schema_extra=cli("--model"),
                              description="Model under test, playing every character: a litellm model string, or a "
                                          "role name. Repeat.")
    answers: list[str] = Field(default_factory=list, json_schema_extra=cli("--answers"),
                               description="Simulations you already have, judged as a model's with no actor, "
                                           "environment or next-speaker call: NAME=FILE (or FILE, named by its "
                                           "stem) in CoSER's simulation layout (a list of {book_title, i_p, i_c, "
                                           "simulation: [{role, content}]}). Repeat; combine with --model.")
    judge: str = Field(default="coser-critic", json_schema_extra=cli("--judge"),
                       description="The critic: a role name or a model string.")
    out: OutputFolder = Field(default="runs/coser", description="Folder for scenes, critiques, scores and report.")
    continue_from: int = Field(default=0, ge=0, le=19, description="The first N rounds come from the book's own "
                               "conversation; the models act from round N+1 (the critic is told so).")
    max_rounds: int = Field(default=20, ge=1, le=20, description="The most rounds a scene runs (CoSER: 20; fewer "
                            "for a quick run, whose scores are then not CoSER's).")
    without_thoughts: bool = Field(default=False, description="Actors write actions and speech only, no "
                                   "[thoughts] (CoSER's wo_thought setting; each still reads its character's inner "
                                   "thought, as in CoSER).")
    limit: int | None = Field(default=None, ge=1, description="Only the first N circumstances (a quick run).")
    seed: int = Field(default=0, description="Seed of the next-speaker draws and the bootstrap.")
    resamples: int = Field(default=1000, ge=1, description="Bootstrap resamples for the 95% intervals.")

    @model_validator(mode="after")
    def _something_to_judge(self) -> CoserSettings:
        if not self.models and not self.answers:
            raise ValueError("give a model to act (--model) or simulations to judge (--answers)")
        return self
