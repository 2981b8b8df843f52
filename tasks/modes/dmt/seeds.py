"""Seed files (YAML or JSON: one seed or a list) and the tested model's system prompt in each format."""

from __future__ import annotations

from pathlib import Path

from rpbench import prompts
from rpbench.storage.user_files import load_records, validate_records
from rpbench.tasks.core.errors import InputError, duplicates
from rpbench.tasks.modes.dmt.records import Seed


def load_seeds(path: str | Path) -> list[Seed]:
    seeds = validate_records(path, load_records(path, "seed"), Seed, "seed",
                             name_of=lambda i, r: str(r.get("id") or f"#{i}"))
    dupes = duplicates([s.id for s in seeds])
    if dupes:
        raise InputError(f"{path}: seed {dupes[0]}: field 'id': appears more than once in the file")
    return seeds


def system_prompt(seed: Seed, prompt_format: str) -> str:
    """The role's system prompt: its name only (minimalist), name and overview, or the whole profile with
    instructions (detailed); all three from the same profile."""
    role = seed.role
    return prompts.render(f"dmt/system_{prompt_format}", seed.language, name=role.name, overview=role.overview,
                          profile=role.profile).text


def dialogue_id(seed: Seed, prompt_format: str) -> str:
    return f"{seed.id}/{prompt_format}"
