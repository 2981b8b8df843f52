"""CharacterBench's released code as the source of its words, read at run time (never copied, never executed).

thu-coai/CharacterBench at f4ec56a states the reply prompt (``roleplay_prompt.py``), the judge's system prompt
(``model_generation_qwen_chat.py``, the payload CharacterJudge is asked with) and each dimension's judge prompt
(``construct_prompts/eval_prompts_<lang>/``, chosen per dimension by ``construct_prompts/data_info_<lang>.py``).
What rpbench fills them with is assembled as ``process.py`` and ``process_wo_context_<lang>_all.py`` assemble it
(``answering.py``, ``judging.py``); the tests compare both with the release's own code.
"""

from __future__ import annotations

import ast
import functools
import re
import string
from pathlib import Path, PurePosixPath

from rpbench.prompts import python_text
from rpbench.prompts.releases import Release, read_text

RELEASE = Release.pinned(Path(__file__).with_name("release.toml"))
PROMPTS = "construct_prompts"
# A scale's steps as the judge prompts write them: "1分：", "(3) 3分，", "2 points:".
_STEP = re.compile(r"(?m)^\s*(?:\(\d+\)\s*)?(\d+)\s*(?:分|points?)\s*[:：,，]")


def reply_prompt(language: str) -> str:
    """The prompt that asks a model under test for a reply (``Role_Play_PROMPT_ZH`` / ``_EN``), unfilled."""
    name = f"Role_Play_PROMPT_{'ZH' if language == 'zh' else 'EN'}"
    return str(python_text.constant(read_text(RELEASE, "roleplay_prompt.py"), name, "roleplay_prompt.py"))


def user_profile_default(language: str) -> str:
    """What the reply prompt says of a user whose item has no profile (``norm_session_<lang>``'s default)."""
    where = "process.py"
    fn = python_text.function(read_text(RELEASE, where), f"norm_session_{language}", where)
    for call in python_text.calls(fn, "get"):
        if len(call.args) == 2 and python_text.literal(call.args[0], where) == "user_profile":
            return str(python_text.literal(call.args[1], where))
    raise python_text.ReleaseLayoutError(f"{where}: norm_session_{language} has no default user profile")


def reply_cleaning() -> list[tuple[str, str]]:
    """The replacements process.py makes in a model's reply before it reads the reply's JSON, in order (they
    change the reply the judge then sees)."""
    where = "process.py"
    assigned = python_text.assignments(python_text.parsed(read_text(RELEASE, where)), "response_zh")
    for value in assigned:
        pairs: list[tuple[str, str]] = []
        node = value.args[0] if isinstance(value, ast.Call) and value.args else value
        while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "replace":
                pairs.append((python_text.literal(node.args[0], where), python_text.literal(node.args[1], where)))
            node = node.func.value
        if pairs:
            return pairs[::-1]  # the innermost call is made first
    raise python_text.ReleaseLayoutError(f"{where}: no cleaning of the reply before it is read")


def judge_system() -> str:
    """The system message of the payload CharacterJudge is asked with (``create_payload``)."""
    where = "model_generation_qwen_chat.py"
    source = read_text(RELEASE, where)
    payload = python_text.assignments(python_text.function(source, "create_payload", where), "payload")
    if not payload:
        raise python_text.ReleaseLayoutError(f"{where}: create_payload builds no payload")
    messages = python_text.dict_entry(payload[0], "messages", where)
    system = [python_text.literal(python_text.dict_entry(m, "content", where), where)
              for m in getattr(messages, "elts", [])
              if python_text.literal(python_text.dict_entry(m, "role", where), where) == "system"]
    if len(system) != 1 or not isinstance(system[0], str):
        raise python_text.ReleaseLayoutError(f"{where}: create_payload's messages hold no one system text")
    return system[0]


@functools.lru_cache(maxsize=64)
def _judge_prompt_place(dimension: str, language: str, data_info: str) -> tuple[str, str]:
    """Where data_info_<lang>.py takes the dimension's judge prompt from: (file, constant)."""
    where = f"{PROMPTS}/data_info_{language}.py"
    table = python_text.dict_of_names(data_info, "data_info", where)
    if dimension not in table:
        raise python_text.ReleaseLayoutError(f"{where}: data_info has no dimension {dimension}")
    name = table[dimension].get("base_eval_prompt")
    module = python_text.imported_names(data_info).get(name or "")
    if not name or module is None:
        raise python_text.ReleaseLayoutError(f"{where}: {dimension}'s base_eval_prompt is not an imported name")
    return str(PurePosixPath(PROMPTS, *module.split("."))) + ".py", name


def judge_prompt(dimension: str, language: str) -> str:
    """The dimension's judge prompt in ``language`` (the ``base_eval_prompt`` data_info gives it), unfilled."""
    path, name = _judge_prompt_place(dimension, language, read_text(RELEASE, f"{PROMPTS}/data_info_{language}.py"))
    return str(python_text.constant(read_text(RELEASE, path), name, path))


def holes(prompt: str) -> set[str]:
    """The names a prompt's ``str.format`` holes take."""
    return {name for _text, name, _spec, _conv in string.Formatter().parse(prompt) if name}


def scale_top(dimension: str, language: str) -> int:
    """The top of the dimension's scale as its judge prompt in ``language`` states it (its highest step)."""
    steps = [int(n) for n in _STEP.findall(judge_prompt(dimension, language))]
    if not steps:
        raise python_text.ReleaseLayoutError(f"{RELEASE.name}: {dimension}'s {language} judge prompt states no "
                                             "scale")
    return max(steps)


def criterion(dimension: str, language: str) -> str:
    """What the judge is told of the dimension, for people scoring the same replies: its judge prompt up to the
    section that shows the profile (the task and the scale, in the judge's own words)."""
    prompt = judge_prompt(dimension, language)
    head = prompt.split("{character_profile}", 1)[0].rstrip().splitlines()[:-1]  # without that section's title
    return "\n".join(head).strip()
