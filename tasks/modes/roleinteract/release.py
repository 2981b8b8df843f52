"""SocialBench's released code as the source of RoleInteract's words, read at run time (never copied, never run).

X-PLUG/SocialBench at 1287b67 states its prompts in ``dataset.py`` (``PROMPT_EN``, ``PROMPT_DIALOGUE_EMOTION_ZH``,
...), how many lines of each member's profile a group prompt keeps (``make_group_profiles``), and the pattern its
scorer reads option letters with (``format_predict``). rpbench lays the prompts out as ``format_prompt`` does
(``answering.py``) and, under ``--scoring released``, reads and scores as ``format_predict`` and ``compute_score``
do (``scoring.py``); the tests compare both with the release's own code.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from rpbench.prompts import python_text
from rpbench.prompts.releases import Release, read_text
from rpbench.tasks.choices.letters import pattern_reader

RELEASE = Release.pinned(Path(__file__).with_name("release.toml"))
WHERE = "dataset.py"


def prompt(name: str, language: str) -> str:
    """``PROMPT{name}_EN`` or ``_ZH`` (``name``: "", "_DIALOGUE_EMOTION", "_OPEN", "_GROUP"), unfilled."""
    constant = f"PROMPT{name}_{'EN' if language == 'en' else 'ZH'}"
    return str(python_text.constant(read_text(RELEASE, WHERE), constant, WHERE))


def group_profile_lines() -> int:
    """How many lines of each member's profile a group prompt keeps (``make_group_profiles``' default ``n``)."""
    fn = python_text.function(read_text(RELEASE, WHERE), "make_group_profiles", WHERE)
    names = [a.arg for a in fn.args.args]
    defaults = dict(zip(names[len(names) - len(fn.args.defaults):], fn.args.defaults, strict=True))
    if "n" not in defaults:
        raise python_text.ReleaseLayoutError(f"{WHERE}: make_group_profiles has no default n")
    return int(python_text.literal(defaults["n"], WHERE))


@functools.lru_cache(maxsize=4)
def _letter_pattern(source: str) -> re.Pattern[str]:
    fn = python_text.function(source, "format_predict", WHERE)
    found = python_text.calls(fn, "findall")
    if len(found) != 1 or not found[0].args:
        raise python_text.ReleaseLayoutError(f"{WHERE}: format_predict reads letters with no one findall")
    return re.compile(str(python_text.literal(found[0].args[0], WHERE)))


def letters_as_released(reply: str) -> list[str]:
    """The option letters ``format_predict`` reads in ``reply``: each letter A-H its pattern finds (the middle
    group), in order, each once; whether or not the item offers it."""
    return pattern_reader(_letter_pattern(read_text(RELEASE, WHERE)), group=1)(reply, "")
