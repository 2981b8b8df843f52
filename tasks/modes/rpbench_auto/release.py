"""RPBench-Auto's released code as the source of its words, read at run time (never copied, never run).

boson-ai/RPBench-Auto at 01a2579 states everything a round sends in two scripts: ``run_character_eval.py`` and
``run_scene_eval.py`` each hold the candidate's system prompt (``TEMPLATE``) and the judge's (``JUDGER_TEMPLATE``)
as ``string.Template``s, and how many rounds a dialogue runs (``MAX_MESSAGES_PER_CHAR``); ``utils.py`` holds how
a judge's reply is read (``extract_and_parse_json``: a fenced JSON block if there is one, read by json_repair)
and the sampling every call is made with (``chat_completion``'s defaults). The data (80 characters, 80 scenes)
and the released leaderboard are files of the same commit. rpbench reads each where it stands
(``prompts.python_text``) and fills the templates as the scripts fill them (``dialogue.py``); the tests run the
release's scripts beside rpbench and compare every request.
"""

from __future__ import annotations

import ast
import csv
import functools
import io
import re
import string
from pathlib import Path
from typing import Any, Literal

from rpbench.prompts import python_text
from rpbench.prompts.python_text import ReleaseLayoutError
from rpbench.prompts.releases import Release, read_text

RELEASE = Release.pinned(Path(__file__).with_name("release.toml"))
Subset = Literal["character", "scene"]
SUBSETS: tuple[Subset, ...] = ("character", "scene")
SCRIPTS: dict[str, str] = {"character": "run_character_eval.py", "scene": "run_scene_eval.py"}
UTILS, LEADERBOARD = "utils.py", "results/leaderboard.csv"


def _source(path: str) -> str:
    return read_text(RELEASE, path)


@functools.lru_cache(maxsize=8)
def _template_text(source: str, name: str, where: str) -> str:
    """The text of a module-level ``NAME = Template(\"\"\"...\"\"\")``."""
    for node in python_text.parsed(source).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == name and isinstance(node.value, ast.Call) and node.value.args):
            return str(python_text.literal(node.value.args[0], where))
    raise ReleaseLayoutError(f"{where}: no module-level {name} = Template(...)")


def candidate_template(subset: Subset) -> string.Template:
    """The candidate's system prompt of ``subset`` (``TEMPLATE``)."""
    return string.Template(_template_text(_source(SCRIPTS[subset]), "TEMPLATE", SCRIPTS[subset]))


def judge_template(subset: Subset) -> string.Template:
    """The judge's system prompt of ``subset`` (``JUDGER_TEMPLATE``): the profile, the user it plays, its JSON."""
    return string.Template(_template_text(_source(SCRIPTS[subset]), "JUDGER_TEMPLATE", SCRIPTS[subset]))


def max_rounds(subset: Subset) -> int:
    """``MAX_MESSAGES_PER_CHAR``: the rounds a dialogue of ``subset`` runs (the scene subset's may end sooner)."""
    found = python_text.constant(_source(SCRIPTS[subset]), "MAX_MESSAGES_PER_CHAR", SCRIPTS[subset])
    if not isinstance(found, int) or found < 1:
        raise ReleaseLayoutError(f"{SCRIPTS[subset]}: MAX_MESSAGES_PER_CHAR is not a positive whole number")
    return found


def data_path(subset: Subset) -> str:
    """The released data file of ``subset`` (``RPBENCH_PATH``)."""
    found = python_text.constant(_source(SCRIPTS[subset]), "RPBENCH_PATH", SCRIPTS[subset])
    if found not in RELEASE.files:
        raise ReleaseLayoutError(f"{SCRIPTS[subset]}: RPBENCH_PATH names {found!r}, which rpbench does not pin")
    return str(found)


def data_text(subset: Subset) -> str:
    return _source(data_path(subset))


@functools.lru_cache(maxsize=2)
def _fence(source: str) -> re.Pattern[str]:
    fn = python_text.function(source, "extract_and_parse_json", UTILS)
    found = python_text.assignments(fn, "pattern")
    if len(found) != 1:
        raise ReleaseLayoutError(f"{UTILS}: extract_and_parse_json has no one pattern")
    return re.compile(str(python_text.literal(found[0], UTILS)), re.DOTALL)


def json_fence() -> re.Pattern[str]:
    """The pattern ``extract_and_parse_json`` finds a judge's JSON block with (searched with ``re.DOTALL``)."""
    return _fence(_source(UTILS))


@functools.lru_cache(maxsize=2)
def _sampling(source: str) -> dict[str, Any]:
    fn = python_text.function(source, "chat_completion", UTILS)
    names = [a.arg for a in fn.args.args]
    defaults = dict(zip(names[len(names) - len(fn.args.defaults):], fn.args.defaults, strict=True))
    out: dict[str, Any] = {k: python_text.literal(defaults[k], UTILS) for k in ("temperature", "max_tokens")
                           if k in defaults}
    if len(out) != 2:
        raise ReleaseLayoutError(f"{UTILS}: chat_completion has no temperature and max_tokens defaults")
    return out


def sampling() -> dict[str, Any]:
    """``chat_completion``'s temperature and max_tokens: what every candidate's and judge's call is sent with."""
    return _sampling(_source(UTILS))


def released_leaderboard() -> list[dict[str, Any]]:
    """The released leaderboard's rows: model, its name as shown, win rate per subset and their mean (0-1)."""
    rows = list(csv.DictReader(io.StringIO(_source(LEADERBOARD))))
    out: list[dict[str, Any]] = []
    for r in rows:
        try:
            out.append({"model": r["model"], "shown": r.get("beautiful_name") or r["model"],
                        **{s: float(r[f"win_rate_{s}"]) for s in SUBSETS}, "avg": float(r["win_rate_avg"])})
        except (KeyError, ValueError) as exc:
            raise ReleaseLayoutError(f"{LEADERBOARD}: a row without its win rates ({exc})") from None
    return out
