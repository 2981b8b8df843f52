"""The model roles PersonaGym calls, with the release's sampling (utils.py's run_model defaults for the persona's
answers; run.py's temperature 0 and top_p 0 for the score examples and the evaluators; a test reads them from the
release and compares)."""

from __future__ import annotations

from rpbench.tasks.llm.config import Role

ANSWERING = {"temperature": 0.9, "top_p": 0.9, "max_tokens": 3000}
GRADING = {"temperature": 0.0, "top_p": 0.0, "max_tokens": 3000}

ROLES: dict[str, Role] = {
    "personagym-actor": Role("personagym: the settings a model under test (--model given as a model string) "
                             "answers a persona's questions with", ANSWERING, {"max_tokens": 128}),
    "personagym-questions": Role("personagym: picks each persona's settings and writes its questions, with "
                                 "--generate-questions (PersonaGym: gpt-4o-2024-05-13)", ANSWERING,
                                 {"max_tokens": 512}),
    "personagym-examples": Role("personagym: writes score examples for each question and rubric (PersonaGym: "
                                "gpt-4o-2024-05-13)", GRADING, {"max_tokens": 512}),
    "personagym-evaluator-1": Role("personagym: the first evaluator, grading five answers a request (PersonaGym: "
                                   "gpt-4o-2024-05-13)", GRADING, {"max_tokens": 512}),
    "personagym-evaluator-2": Role("personagym: the second evaluator (PersonaGym: "
                                   "meta-llama/Llama-3-70b-chat-hf)", GRADING, {"max_tokens": 512}),
}
