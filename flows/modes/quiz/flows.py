"""The character quiz's stage and flow: the kit's quiz bodies given this mode's prompt and names."""

from __future__ import annotations

from prefect import flow

from rpbench.flows.kit.running.quiz import answer_quiz, run_quiz, system_role
from rpbench.flows.kit.running.run import flow_body
from rpbench.flows.kit.running.stage import StageResult, StageRun, stage
from rpbench.flows.kit.running.stages import Stages
from rpbench.flows.modes.quiz.mode import CharacterQuizSettings
from rpbench.tasks.choices.quiz import quiz_report, read_choice_items

REPORT = quiz_report("rpbench character quiz", "character")


@stage("quiz-answers", templates=("quiz/",), roles=system_role, inputs=("questions", "given"), batch=True)
async def answers(run: StageRun, questions: str, limit: int | None, role: str | None, given: str | None,
                  name: str) -> StageResult:
    """System ``name``'s answers: each question asked of the model bound to ``role`` (``prompts/quiz/ask``), or
    read from the file ``given``."""
    quiz = read_choice_items(questions, CharacterQuizSettings.group_by)[:limit]
    return await answer_quiz(run, CharacterQuizSettings.prompt, quiz, role, given, name)


@flow(name="rpbench-quiz")
@flow_body
def quiz(s: CharacterQuizSettings, stages: Stages) -> dict:
    """The character quiz: every system answers every question, then one report."""
    return run_quiz(s, stages, "quiz", "quiz", answers)
