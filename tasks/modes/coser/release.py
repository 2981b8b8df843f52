"""CoSER's released code as the source of its words, read at run time (never copied, never run).

Neph0s/CoSER at 624efc5 (the release's head, the commit of its test set) states every prompt of given-circumstance
acting: the critic's template and its four dimensions (``prompts.py``), the actor's, the environment's and the
next-speaker predictor's system prompts as f-strings inside ``get_character_prompt``, ``get_environment_prompt``
and ``get_nsp_prompt`` (``utils.py``), the actor's length ask (``agent.py``), and the line that opens every
agent's conversation and the critic's replacements (``main.py``). rpbench reads each where it stands in its file
(``prompts.python_text``) and fills it as the release's code fills it (``acting.py``, ``critic.py``); the tests
run the release's ``main.py`` beside rpbench and compare every request.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rpbench.prompts import python_text
from rpbench.prompts.python_text import ReleaseLayoutError, Template
from rpbench.prompts.releases import Release, read_text

RELEASE = Release.pinned(Path(__file__).with_name("release.toml"))
PROMPTS, UTILS, AGENT, MAIN = (f"gca_evaluation/{n}.py" for n in ("prompts", "utils", "agent", "main"))
# The seed main.py gives Python's generator before anything is drawn.
RELEASE_SEED = 42


def _source(path: str) -> str:
    return read_text(RELEASE, path)


# -- the critic -----------------------------------------------------------------------------------
def critic_prompts() -> dict[str, Any]:
    """``critic_prompts``: the template (``self-play-deduct-template``) and each dimension's brief and criteria."""
    found = python_text.constant(_source(PROMPTS), "critic_prompts", PROMPTS)
    if not isinstance(found, dict):
        raise ReleaseLayoutError(f"{PROMPTS}: critic_prompts is not a table")
    return found


@functools.lru_cache(maxsize=2)
def _replacements(source: str) -> tuple[str, ...]:
    assigned = python_text.assignments(python_text.function(source, "gca_judging", MAIN), "critic_prompt")
    if not assigned:
        raise ReleaseLayoutError(f"{MAIN}: gca_judging makes no critic_prompt")
    holes: list[str] = []
    node: ast.AST = assigned[0]
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "replace":
        holes.append(str(python_text.literal(node.args[0], MAIN)))
        node = node.func.value
    return tuple(reversed(holes))  # the innermost replacement is made first


def critic_replacements() -> tuple[str, ...]:
    """The placeholders gca_judging replaces in the critic's template, in the order it replaces them (a value put
    in early is not looked into again; a placeholder inside a value put in later stays as it is)."""
    return _replacements(_source(MAIN))


def continued_note() -> Template:
    """What the critic is told when the scene's first messages are the book's (``additional_instructions``)."""
    found = python_text.assignments(python_text.function(_source(MAIN), "gca_judging", MAIN),
                                    "additional_instructions")
    notes = [n for n in found if isinstance(n, ast.JoinedStr)]
    if len(notes) != 1:
        raise ReleaseLayoutError(f"{MAIN}: gca_judging has no one note for a continued scene")
    return python_text.template(notes[0], MAIN)


# -- the actors, the environment, the next-speaker predictor --------------------------------------
@dataclass(frozen=True)
class CharacterPrompt:
    """The pieces of ``get_character_prompt``'s fixed template (what main.py asks for)."""

    output_formats: dict[tuple[bool, bool], str]  # (thoughtless, with an example) -> the requirements' text
    decorators: list[str]  # what sets each other character's profile apart (one drawn per actor)
    other_profile: Template  # one other character's profile
    motivation: Template  # the actor's inner thoughts, wrapped
    others: Template  # the other characters' profiles, wrapped
    system: Template  # the prompt's body
    requirements: Template  # its closing requirements


def _in_branch(fn: ast.AST, test: str, target: str) -> list[ast.expr]:
    return python_text.assignments(python_text.branch(fn, test), target)


@functools.lru_cache(maxsize=2)
def _character_prompt(source: str) -> CharacterPrompt:
    fn = python_text.function(source, "get_character_prompt", UTILS)
    thoughtless = python_text.branch(fn, "thoughtless")
    with_thoughts = python_text.assignments(ast.Module(body=thoughtless.orelse, type_ignores=[]), "output_format")
    example = _in_branch(fn, "add_output_example", "output_format")
    plain = python_text.assignments(ast.Module(body=thoughtless.body, type_ignores=[]), "output_format")
    if len(plain) != 1 or len(example) != 1 or not with_thoughts:
        raise ReleaseLayoutError(f"{UTILS}: get_character_prompt's output formats are not where expected")
    formats = {(True, False): python_text.literal(plain[0], UTILS),
               (False, False): python_text.literal(with_thoughts[0], UTILS),
               (False, True): python_text.literal(example[0], UTILS)}
    formats[(True, True)] = formats[(True, False)]  # no thoughts, so no example of one
    others = python_text.branch(fn, "other_character_profiles")
    draws = [c for c in python_text.calls(others, "choice") if c.args]
    each = [a for a in python_text.assignments(others, "other_character_profiles_str") if isinstance(a, ast.JoinedStr)]
    fixed = python_text.branch(fn, "fixed_template")
    system = python_text.assignments(fixed, "system_prompt")
    wrapped_motivation = _in_branch(fixed, "motivation", "motivation")
    wrapped_others = _in_branch(fixed, "other_character_profiles_str", "other_character_profiles_str")
    if len(draws) != 1 or len(each) != 1 or len(system) < 2 or len(wrapped_motivation) != 1 or len(wrapped_others) != 1:
        raise ReleaseLayoutError(f"{UTILS}: get_character_prompt's fixed template is not where expected")
    return CharacterPrompt(
        output_formats={k: str(v) for k, v in formats.items()},
        decorators=[str(d) for d in python_text.constant_value(draws[0].args[0], UTILS)],
        other_profile=python_text.template(each[0], UTILS),
        motivation=python_text.template(wrapped_motivation[0], UTILS),
        others=python_text.template(wrapped_others[0], UTILS),
        system=python_text.template(system[0], UTILS),
        requirements=python_text.template(system[-1], UTILS))


def character_prompt() -> CharacterPrompt:
    return _character_prompt(_source(UTILS))


@functools.lru_cache(maxsize=2)
def _environment(source: str) -> tuple[list[str], Template]:
    fn = python_text.function(source, "get_environment_prompt", UTILS)
    roles = python_text.assignments(fn, "model_roles")
    prompt = python_text.assignments(fn, "prompt")
    if len(roles) != 1 or len(prompt) != 1:
        raise ReleaseLayoutError(f"{UTILS}: get_environment_prompt is not laid out as expected")
    return [str(r) for r in python_text.literal(roles[0], UTILS)], python_text.template(prompt[0], UTILS)


def environment_roles() -> list[str]:
    """What the environment agent is called, one drawn per scene (``model_roles``)."""
    return _environment(_source(UTILS))[0]


def environment_prompt() -> Template:
    return _environment(_source(UTILS))[1]


@functools.lru_cache(maxsize=2)
def _nsp(source: str) -> Template:
    prompt = python_text.assignments(python_text.function(source, "get_nsp_prompt", UTILS), "prompt")
    if len(prompt) != 1:
        raise ReleaseLayoutError(f"{UTILS}: get_nsp_prompt is not laid out as expected")
    return python_text.template(prompt[0], UTILS)


def next_speaker_prompt() -> Template:
    return _nsp(_source(UTILS))


@functools.lru_cache(maxsize=2)
def _next_speaker_pattern(source: str) -> re.Pattern[str]:
    fn = python_text.function(source, "extract_nsp", UTILS)
    pattern = python_text.assignments(fn, "pattern")
    flags = python_text.calls(fn, "findall")
    if len(pattern) != 1 or len(flags) != 1:
        raise ReleaseLayoutError(f"{UTILS}: extract_nsp is not laid out as expected")
    ignore_case = any(ast.unparse(a).endswith("IGNORECASE") for a in flags[0].args[2:])
    return re.compile(str(python_text.literal(pattern[0], UTILS)), re.IGNORECASE if ignore_case else 0)


def next_speaker_pattern() -> re.Pattern[str]:
    """The pattern ``extract_nsp`` reads a "Next Speaker: <name>" line with."""
    return _next_speaker_pattern(_source(UTILS))


@functools.lru_cache(maxsize=2)
def _agent_asks(source: str) -> tuple[str, Template]:
    init = python_text.method(source, "Agent", "__init__", AGENT)
    concise = _in_branch(init, "self.name not in special_characters", "self.system_prompt")
    prefix = _in_branch(init, "self.model.startswith('llama') or self.model.startswith('step')", "self.system_prompt")
    if len(concise) != 1 or len(prefix) != 1 or not isinstance(concise[0], ast.BinOp) \
            or not isinstance(prefix[0], ast.BinOp):
        raise ReleaseLayoutError(f"{AGENT}: Agent.__init__'s additions to the system prompt are not as expected")
    return str(python_text.literal(concise[0].right, AGENT)), python_text.template(prefix[0].right, AGENT)


def length_ask() -> str:
    """What every actor's system prompt gets at its end (not the environment's or the predictor's)."""
    return _agent_asks(_source(AGENT))[0]


def name_prefix_ask() -> Template:
    """What a llama or step model's system prompt gets: to start with its name and speak for no one else."""
    return _agent_asks(_source(AGENT))[1]


@functools.lru_cache(maxsize=2)
def _opening(source: str) -> str:
    for call in python_text.calls(python_text.function(source, "gca_simulation", MAIN), "update"):
        if len(call.args) == 2 and isinstance(call.args[1], ast.Constant) \
                and python_text.literal(call.args[0], MAIN) == "user":
            return str(call.args[1].value)
    raise ReleaseLayoutError(f"{MAIN}: gca_simulation opens no agent's conversation")


def conversation_opening() -> str:
    """The user message that opens every agent's conversation in gca_simulation."""
    return _opening(_source(MAIN))
