"""RoleBench as OpenCompass runs it, the prompting RoleLLM's authors point to, read from OpenCompass's own
configuration files at run time (never copied, never run).

open-compass/opencompass at a5acc4b states the prompt of each RoleBench split in its dataset configurations
(``configs/datasets/rolebench/*.py``): a SYSTEM turn (falling back to HUMAN) with the role's name and description,
then the question as the HUMAN turn, filled by OpenCompass's ``safe_format`` in the reader's column order. For an
API model of OpenCompass's OpenAI configurations (HUMAN and BOT rounds, no SYSTEM role), the SYSTEM turn falls back
to HUMAN and the two turns, now of one side, become one, joined by a line break: one user message.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

from rpbench.prompts import python_text
from rpbench.prompts.python_text import ReleaseLayoutError
from rpbench.prompts.releases import Release, read_text

RELEASE = Release.pinned(Path(__file__).with_name("release.toml"))
CONFIGS = "opencompass/configs/datasets/rolebench"
# The configuration of each RoleBench split (as rpbench names the splits); a file of another name is read by its
# language.
BY_SPLIT = {"eng-instruction-generalization": "instruction_generalization_eng",
            "eng-role-generalization": "role_generalization_eng", "zh": "instruction_generalization_zh"}
BY_LANGUAGE = {"en": "instruction_generalization_eng", "zh": "instruction_generalization_zh"}


@dataclass(frozen=True)
class Template:
    """One split's prompt: the turns in order as (OpenCompass role, fallback role, prompt), and the reader's
    columns (the order ``safe_format`` fills them in)."""

    turns: tuple[tuple[str, str | None, str], ...]
    columns: tuple[str, ...]


def _keywords(node: ast.AST, where: str) -> dict[str, ast.expr]:
    if not isinstance(node, ast.Call):
        raise ReleaseLayoutError(f"{where}: `{ast.unparse(node)[:60]}` is not a dict(...)")
    return {k.arg: k.value for k in node.keywords if k.arg}


@functools.lru_cache(maxsize=8)
def _template(source: str, where: str) -> Template:
    found: dict[str, ast.expr] = {}
    for node in python_text.parsed(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            for part in ("reader_cfg", "infer_cfg"):  # <split>_reader_cfg, <split>_infer_cfg
                if node.targets[0].id.endswith(f"_{part}"):
                    found[part] = node.value
    if "infer_cfg" not in found or "reader_cfg" not in found:
        raise ReleaseLayoutError(f"{where}: no reader_cfg and infer_cfg")
    template = _keywords(_keywords(_keywords(found["infer_cfg"], where)["prompt_template"], where)["template"], where)
    turns = []
    for part in ("begin", "round"):
        for turn in getattr(template.get(part), "elts", []):
            fields = _keywords(turn, where)
            turns.append((str(python_text.literal(fields["role"], where)),
                          str(python_text.literal(fields["fallback_role"], where)) if "fallback_role" in fields
                          else None, str(python_text.literal(fields.get("prompt", ast.Constant("")), where))))
    columns = python_text.literal(_keywords(found["reader_cfg"], where)["input_columns"], where)
    return Template(tuple(turns), tuple(str(c) for c in columns))


def template(split: str, language: str) -> Template:
    name = BY_SPLIT.get(split) or BY_LANGUAGE[language]
    path = f"{CONFIGS}/{name}.py"
    return _template(read_text(RELEASE, path), path)


def user_message(split: str, language: str, role: str, description: str, question: str) -> str:
    """The one user message OpenCompass sends an API model with HUMAN and BOT rounds for a RoleBench question: each
    turn filled as ``safe_format`` fills it, the SYSTEM turn as HUMAN (its fallback), the HUMAN turns up to the
    BOT's (whose answer is asked for) joined by a line break."""
    shape = template(split, language)
    values = {"role": role, "desc": description, "question": question}
    said = []
    for turn_role, fallback, prompt in shape.turns:
        if (fallback or turn_role) != "HUMAN" and turn_role != "HUMAN":
            break  # the BOT's turn: what the model is asked to write
        for column in shape.columns:
            prompt = prompt.replace(f"{{{column}}}", values.get(column, ""))
        said.append(prompt)
    return "\n".join(said)
