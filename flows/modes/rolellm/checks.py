"""RoleLLM's input checks, run by the commands before any flow starts (and by the flows themselves).

Nothing here imports Prefect or the gateway, so a bad data file or an unknown model is one line at once."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rpbench.flows.kit.front.systems import System, evaluation_systems, judge_role
from rpbench.flows.modes.rolellm.settings import (
    ContextInstructSettings,
    EvalSettings,
    GeneralSettings,
    SelectSettings,
)
from rpbench.prompts.releases import require
from rpbench.storage.user_files import read_user_text
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.modes.rolellm.answering import load_raw, read_rolebench_answers
from rpbench.tasks.modes.rolellm.context_instruct import Plan
from rpbench.tasks.modes.rolellm.general import (
    Instruction,
    load_instructions,
    select_instructions,
)
from rpbench.tasks.modes.rolellm.judging import JUDGE
from rpbench.tasks.modes.rolellm.profiles import (
    discover_profiles,
    filter_roles,
    load_profiles,
    pairs,
    profile_files,
)
from rpbench.tasks.modes.rolellm.records import BenchRow, RoleProfile
from rpbench.tasks.modes.rolellm.release import RELEASE
from rpbench.tasks.modes.rolellm.rolebench import baseline_files, data_files, first_rows


# -- eval -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Inputs:
    data: list[str]
    baselines: list[str]
    profiles: list[str]
    players: dict[str, str]
    judges: dict[str, str]
    systems: list[System]  # the models asked, then the answer files

BASELINE = "rolegpt-baseline"  # the RoleGPT answers RoleBench ships, scored as a system of their own


def check_eval(s: EvalSettings) -> Inputs:
    """Every input error before any call: the data, the profiles each question's role needs (and, with
    examples, a script to take them from), the RAW file, the models, the judges and the reference system."""
    files = data_files(s.data, [s.part])
    found = profile_files(s.profiles) if s.profiles else discover_profiles(s.data)
    if not found:
        raise InputError("--profiles: none given, and no profiles-*/desc.json beside the data (RoleBench keeps them "
                         "next to rolebench-eng/ and rolebench-zh/)")
    rows = first_rows(files, s.limit)
    profiles = load_profiles(found)
    missing = sorted({r.role for r in rows} - set(profiles))
    if missing:
        raise InputError(f"--profiles: no profile for role '{missing[0]}' ({len(missing)} roles without one)")
    if s.mode == "opencompass" and s.models:
        require([RELEASE])  # OpenCompass's words come from its configuration files
    if s.mode in ("fsp", "fsd"):
        bare = sorted(r for r in {r.role for r in rows} if not pairs(profiles[r]))
        if bare:
            raise InputError(f"--mode {s.mode}: role '{bare[0]}' has no script to take examples from (use --mode "
                             "opencompass or zsp, or give its dialogue)")
    if s.raw:
        load_raw(s.raw)
    systems = evaluation_systems(s, "rolellm-player", rows, read=_answers_some_question,
                                 reserved={BASELINE: "RoleGPT's released answers"})
    players = {x.name: x.role for x in systems if x.role}
    judges = {name: judge_role(s, name, like=JUDGE) for name in s.judges}
    baselines = baseline_files(files)
    if judges and s.reference == BASELINE and not baselines:
        raise InputError("--reference: no rolegpt_baseline.jsonl beside the test files; name one of the --model "
                         "values instead")
    if s.reference not in (BASELINE, *players):
        raise InputError(f"--reference: '{s.reference}' is neither {BASELINE} nor one of the models "
                         f"({', '.join(players)})")
    return Inputs(files, baselines, found, players, judges, systems)


def _answers_some_question(path: str, rows: Sequence[BenchRow]) -> None:
    """A file of answers of which no row answers a question asked (another benchmark's ids, the Chinese
    baseline given with English data, an unknown role) is a mistake: it would only score as all missing. A
    file may answer more than is asked (a whole split run with --limit)."""
    answered = read_rolebench_answers(path)
    asked = {r.row_id for r in rows} | {f"{r.role}\n{r.question.strip()}" for r in rows}
    if answered and not asked & answered.keys():
        first = next(iter(answered))
        role, newline, question = first.partition("\n")
        what = f"role '{role}', question '{question[:60]}'" if newline else f"id '{first}'"
        raise InputError(f"{path}: line 1: answers none of the {len(rows)} questions of the data given (its "
                         f"{what} is not among them, nor is any other line's)")


# -- context-instruct -------------------------------------------------------------------------------
def _plan(s: ContextInstructSettings) -> dict[str, Any]:
    return dataclasses.asdict(Plan(s.per_segment, s.per_description_call, s.description_calls, s.min_candidates,
                                   s.max_topup_calls, s.duplicate_share, s.max_test))


def check_roles(s: ContextInstructSettings) -> tuple[list[str], dict[str, RoleProfile], list[str]]:
    """The role files, the roles kept and the names of those with too few turns (an error if none is left)."""
    files = profile_files(s.roles)
    kept, dropped = filter_roles(load_profiles(files), s.min_turns)
    if not kept:
        raise InputError(f"--role: no role has {s.min_turns} turns of its own or more (--min-turns); "
                         + ", ".join(f"{n}" for n in dropped))
    if s.limit is not None:  # a trial run: the first roles by name
        kept = {name: kept[name] for name in sorted(kept)[: s.limit]}
    return files, kept, dropped


# -- RoleBench-general ------------------------------------------------------------------------------
def check_general(s: GeneralSettings) -> tuple[list[str], dict[str, RoleProfile], list[Instruction]]:
    files = profile_files(s.roles)
    profiles = load_profiles(files)
    kept = select_instructions(load_instructions(s.instructions), s.duplicate_share)
    if s.limit is not None:
        kept = kept[:s.limit]
    if not kept:
        raise InputError(f"{s.instructions}: no instruction is short enough (under 100 words with its answer; 200 "
                         "characters for Chinese)")
    languages = {i.language for i in kept}
    idle = sorted(n for n, p in profiles.items() if p.language not in languages)
    if idle:
        raise InputError(f"--role: no instruction in {profiles[idle[0]].language} for role '{idle[0]}'")
    if s.mode != "zsp":
        bare = sorted(n for n, p in profiles.items() if not pairs(p))
        if bare:
            raise InputError(f"--mode {s.mode}: role '{bare[0]}' has no script to take examples from")
    return files, profiles, kept


# -- role selection ---------------------------------------------------------------------------------
def read_scripts(path: str) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = []
    for line in read_user_text(path, "a list of scripts").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            script, _, character = line.partition("|")
            out.append((script.strip(), character.strip() or None))
    if not out:
        raise InputError(f"{path}: no script names in the file")
    return out


def check_select(s: SelectSettings) -> None:
    read_scripts(s.scripts)
