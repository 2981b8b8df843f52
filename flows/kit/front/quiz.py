"""A multiple-choice quiz's settings and input check, as the kit gives them (Prefect-free: a suite file is
checked against the settings without importing a flow)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field
from pydantic.fields import FieldInfo

from rpbench.flows.kit.front.settings import EvalSettings, InputPath, OutputFolder, cli
from rpbench.flows.kit.front.systems import System, evaluation_systems


class QuizSettings(EvalSettings):
    """A quiz mode's settings: the quiz file, the systems that answer it, and the usual evaluation options. The
    mode's subclass names its role (``role``: the settings a model string gets), the item field the report
    breaks the quiz down by (``group_by``), and its output folder (``out``'s default)."""

    item_unit: ClassVar[str] = "questions"
    answers_layout: ClassVar[str] = "a JSONL file of {\"id\": question id, \"answer\": the reply's text}"
    answers_are: ClassVar[str] = "answers"
    role: ClassVar[str] = ""
    group_by: ClassVar[str] = "character"
    prompt: ClassVar[str] = ""  # the template a question is asked in (``<mode>/<name>``): its languages are the quiz's

    questions: InputPath = Field(json_schema_extra=cli("--questions"),
                                 description="JSONL of {id, question, options (2 to 8 texts), answer (the gold "
                                             "letter), {group_by}[, language]}.")
    out: OutputFolder = Field(default="runs/quiz", description="Folder for the answers, report and viewer.")

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if not cls.role:
            raise TypeError(f"{cls.__name__}: a quiz's settings name the role whose settings a model string given "
                            "to --model gets (role: ClassVar[str] = \"...\", one of the mode's roles)")
        if not cls.prompt:
            raise TypeError(f"{cls.__name__}: a quiz's settings name the template its questions are asked in "
                            "(prompt: ClassVar[str] = \"<mode>/<name>\"): a question's language must have one")
        # The help names the mode's own grouping field.
        description = (QuizSettings.model_fields["questions"].description or "").replace("{group_by}", cls.group_by)
        cls.model_fields["questions"] = FieldInfo.merge_field_infos(cls.model_fields["questions"],
                                                                    description=description)
        cls.model_rebuild(force=True)


def check_quiz(s: QuizSettings) -> list[System]:
    """Every input error before any call: the quiz file, the models, the answer files (their ids checked)."""
    from rpbench.prompts import languages
    from rpbench.tasks.choices.quiz import read_choice_items

    known = {q.id: q for q in read_choice_items(s.questions, s.group_by, languages(s.prompt))}
    return evaluation_systems(s, like=s.role, known=known)
