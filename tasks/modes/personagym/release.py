"""PersonaGym's released code as the source of its words, read at run time (never copied, never run).

vsamuel2003/PersonaGym at 536f705 states what every call sends in ``code/``: ``utils.py`` the persona's system
prompt (``openai_chat_gen``'s ``persona_prompt``), the sampling of every call (``run_model``'s defaults) and which
route a model takes (``run_model``'s branches, only the first of which passes the judge's system prompt);
``run.py`` the models (``EXAMPLE_MODEL``, ``EVAL_1``, ``EVAL_2``), the judges' and the example model's sampling,
how many answers one grading request holds (``score_answers``), how score examples and grades are read
(``process_examples``, ``parse_full_examples``, ``parse_evaluations``, ``parse_rubric``); ``eval_tasks.py`` the
five tasks; ``personas.py`` the 200 personas. The prompts, the rubrics, the benchmark-v1 questions and the six
released scores are files of the same commit. rpbench reads each where it stands (``prompts.python_text``) and
builds the requests as ``format_rubrics`` and ``score_rubrics`` do (``grading.py``); the tests run those
functions beside rpbench and compare every request.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rpbench.prompts import python_text
from rpbench.prompts.python_text import ReleaseLayoutError
from rpbench.prompts.releases import Release, read_text

RELEASE = Release.pinned(Path(__file__).with_name("release.toml"))
UTILS, RUN, TASKS, PERSONAS = "code/utils.py", "code/run.py", "code/eval_tasks.py", "code/personas.py"
QUESTIONS = "questions/benchmark-v1"  # the released questions (run.py's --benchmark names this folder)
SCORE_PROMPT, EXAMPLES_PROMPT = "prompts/score_examples/prompt.txt", "prompts/score_examples/parallel_examples.txt"
GRADING_PROMPT, GRADING_SYSTEM = "prompts/rubric_grading/prompt.txt", "prompts/rubric_grading/sys_prompt.txt"


def text(path: str) -> str:
    return read_text(RELEASE, path)


def _function(path: str, name: str) -> ast.FunctionDef:
    return python_text.function(text(path), name, path)


def tasks() -> list[str]:
    """``tasks``: the five evaluation tasks, in the release's order."""
    found = python_text.constant(text(TASKS), "tasks", TASKS)
    if not isinstance(found, list) or not found or not all(isinstance(t, str) for t in found):
        raise ReleaseLayoutError(f"{TASKS}: tasks is not a list of names")
    return found


def personas() -> list[str]:
    """``benchmark_personas``: the 200 personas of the benchmark."""
    return list(python_text.constant(text(PERSONAS), "benchmark_personas", PERSONAS))


def questions_of(persona: str) -> str:
    """The path of ``persona``'s released questions ({task: [question, ...]})."""
    return f"{QUESTIONS}/{persona}.json"


def rubric(task: str) -> str:
    """``task``'s rubric (``score_answers`` opens ``rubrics/<task>.txt``)."""
    return text(f"rubrics/{task}.txt")


def scale(task: str) -> tuple[int, int]:
    """The lowest and highest score ``task``'s rubric defines (its ``Score = N`` criteria)."""
    found = [int(n) for n in re.findall(r"Score\s*=\s*(\d+)", rubric(task))]
    if not found:
        raise ReleaseLayoutError(f"rubrics/{task}.txt: no 'Score = N' criteria")
    return min(found), max(found)


def persona_prompt() -> python_text.Template:
    """The system prompt the model under test is given (``openai_chat_gen``'s ``persona_prompt`` f-string)."""
    found = python_text.assignments(_function(UTILS, "openai_chat_gen"), "persona_prompt")
    if not found:
        raise ReleaseLayoutError(f"{UTILS}: openai_chat_gen assigns no persona_prompt")
    return python_text.template(found[0], UTILS)


def _defaults(fn: ast.FunctionDef, where: str) -> dict[str, Any]:
    args = fn.args.args[len(fn.args.args) - len(fn.args.defaults):]
    return {a.arg: python_text.literal(d, where) for a, d in zip(args, fn.args.defaults, strict=True)}


def answer_sampling() -> dict[str, Any]:
    """``run_model``'s defaults, what an answer is asked with (``gen_answers`` passes none of its own)."""
    found = _defaults(_function(UTILS, "run_model"), UTILS)
    return {k: found[k] for k in ("temperature", "top_p", "max_tokens")}


def _call_sampling(function: str) -> dict[str, Any]:
    """The sampling ``function`` of run.py passes ``run_model`` (over its defaults)."""
    calls = python_text.calls(_function(RUN, function), "run_model")
    if not calls:
        raise ReleaseLayoutError(f"{RUN}: {function} calls no run_model")
    given = {k.arg: python_text.literal(k.value, RUN) for k in calls[0].keywords
             if k.arg in ("temperature", "top_p", "max_tokens")}
    return {**answer_sampling(), **given}


def example_sampling() -> dict[str, Any]:
    """What ``gen_score_examples`` asks the example model with."""
    return _call_sampling("gen_score_examples")


def judge_sampling() -> dict[str, Any]:
    """What ``score_rubrics`` asks each evaluator with."""
    return _call_sampling("score_rubrics")


def models() -> dict[str, str]:
    """run.py's model constants: the example model and the two evaluators (and the question writers)."""
    found = python_text.module_constants(text(RUN))
    return {k: str(found[k]) for k in ("SETTINGS_MODEL", "QUESTION_MODEL", "EXAMPLE_MODEL", "EVAL_1", "EVAL_2")}


@functools.cache
def _routes(source: str) -> tuple[tuple[str, bool], ...]:
    """``run_model``'s branches in order: the text its model name must hold, and whether that branch passes the
    ``system`` prompt on."""
    routes = []
    node: ast.stmt | None = next((s for s in python_text.function(source, "run_model", UTILS).body
                                  if isinstance(s, ast.If)), None)
    while isinstance(node, ast.If):
        test = node.test
        if not (isinstance(test, ast.Compare) and isinstance(test.left, ast.Constant)
                and isinstance(test.ops[0], ast.In)):
            raise ReleaseLayoutError(f"{UTILS}: run_model branches on `{ast.unparse(test)[:60]}`")
        called = python_text.calls(node.body[0], node.body[0].value.func.id)  # type: ignore[attr-defined]
        routes.append((str(test.left.value), any(k.arg == "system" for c in called for k in c.keywords)))
        node = node.orelse[0] if node.orelse else None
    if not routes:
        raise ReleaseLayoutError(f"{UTILS}: run_model has no branches")
    return tuple(routes)


def sends_system(model: str) -> bool:
    """Whether ``run_model`` passes a judge's system prompt to ``model`` (its branch holds the text it routes
    by). A model none of its branches routes is sent as the first one sends (the OpenAI client's)."""
    routes = _routes(text(UTILS))
    return next((system for needle, system in routes if needle in model), routes[0][1])


def _regex(function: str, call: str, where: str = RUN) -> str:
    """The pattern ``function`` passes to ``re.<call>`` (a literal, or the name it assigned one to)."""
    fn = _function(where, function)
    for c in python_text.calls(fn, call):
        arg = c.args[0]
        if isinstance(arg, ast.Name):
            (value, *_) = python_text.assignments(fn, arg.id)
            return str(python_text.literal(value, where))
        return str(python_text.literal(arg, where))
    raise ReleaseLayoutError(f"{where}: {function} calls no re.{call}")


def grades_per_request() -> int:
    """How many answers one grading request holds (``score_answers`` steps its answers by this)."""
    steps = [c.args[2] for c in python_text.calls(_function(RUN, "score_answers"), "range") if len(c.args) == 3]
    if not steps:
        raise ReleaseLayoutError(f"{RUN}: score_answers steps through its answers by no range(..., N)")
    return int(python_text.literal(steps[0], RUN))


def score_pattern() -> str:
    """``parse_rubric``'s pattern: an evaluation's score is its first group."""
    return _regex("parse_rubric", "search")


def evaluation_pattern() -> str:
    """``parse_evaluations``'s pattern: each match one evaluation of a grading reply."""
    return _regex("parse_evaluations", "findall")


def examples_reader() -> Callable[[str], str]:
    """``process_examples``: a score-example reply as the grader's prompt takes it (each ``Score N: Response -``
    match written again by the release's f-string, then only the lines that start as its ``startswith`` says)."""
    fn = _function(RUN, "process_examples")
    pattern = re.compile(_regex("process_examples", "findall"), re.S)
    line = python_text.template(next(n for n in ast.walk(fn) if isinstance(n, ast.JoinedStr)), RUN)
    (starts, *_) = [python_text.literal(c.args[0], RUN) for c in python_text.calls(fn, "startswith")] or [None]
    if len(line.holes) != 2 or not isinstance(starts, str):
        raise ReleaseLayoutError(f"{RUN}: process_examples is not laid out as rpbench reads it")
    score, response = line.holes

    def processed(reply: str) -> str:
        joined = "\n\n".join(line.fill({score: s, response: r.strip()}) for s, r in pattern.findall(reply))
        return "\n\n".join(x for x in joined.split("\n") if x.startswith(starts))
    return processed


def split_examples(reply: str) -> list[str]:
    """``parse_full_examples``: a score-example reply cut into one part per question (which the release never
    uses: the paper's intent)."""
    parts = re.split(_regex("parse_full_examples", "split"), reply)
    if parts and not parts[0].strip():
        parts.pop(0)
    return [p.strip() for p in parts]


def released_scores() -> dict[str, dict[str, float]]:
    """The released evaluations (``evaluations/<date>_<model>/scores.json``): model -> task -> score."""
    out = {}
    for path in sorted(p for p in RELEASE.files if p.startswith("evaluations/") and p.endswith("/scores.json")):
        name = path.split("/")[1].split("_", 1)[-1]
        out[name] = {k: float(v) for k, v in json.loads(text(path)).items()}
    return out
