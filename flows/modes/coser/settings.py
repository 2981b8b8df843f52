"""The parameters of CoSER's flow (flow signature, CLI options and deployment parameters in one place)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, model_validator

from rpbench.flows.kit.front.settings import EvalSettings, InputPaths, OutputFolder, cli


class CoserSettings(EvalSettings):
    """Given-circumstance acting (CoSER): each model plays every speaking character of a scene from a book, with
    an environment (role coser-environment) and a next-speaker predictor (role coser-next-speaker), up to 20
    rounds; a critic (--judge, role coser-critic) lists flaws per dimension against the book's conversation;
    CoSER's scores (Storyline Consistency, Anthropomorphism, Character Fidelity, Storyline Quality, their
    average), BLEU and ROUGE-L."""

    item_unit: ClassVar[str] = "circumstances"
    answers_are: ClassVar[str] = "simulations"
    answers_layout: ClassVar[str] = ("in CoSER's simulation layout (a list of {book_title, i_p, i_c, simulation: "
                                     "[{role, content}]}); no actor, environment or next-speaker call")
    judge_fields: ClassVar[tuple[str, ...]] = ("judge",)
    asks_only: ClassVar[tuple[str, ...]] = ("without_thoughts",)

    def helper_roles(self) -> list[str]:
        return ["coser-environment", "coser-next-speaker"] if self.models else []

    data: InputPaths = Field(min_length=1, json_schema_extra=cli("--data"),
                             description="CoSER's test set as released (test_set.json, example_test_set.json) or a "
                                         "file in its layout. Repeat.")
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

    @model_validator(mode="after")
    def _models_act(self) -> CoserSettings:
        if self.continue_from >= self.max_rounds:
            raise ValueError(f"--continue-from {self.continue_from} with --max-rounds {self.max_rounds}: every round "
                             "would come from the book and no model would act (give fewer rounds from the book)")
        return self
