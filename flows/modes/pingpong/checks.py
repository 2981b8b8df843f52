"""PingPong's input checks, run by the commands before any flow starts (and by the flows themselves).

Nothing here imports Prefect or the gateway, so a bad settings file or an unknown model is one line at once."""

from __future__ import annotations

from pathlib import Path

from rpbench.flows.kit.front.registry import builtin_roles, run_models
from rpbench.flows.kit.front.systems import System, evaluation_systems
from rpbench.flows.modes.pingpong.settings import PingPongSettings, RejudgeSettings, Scoring
from rpbench.prompts.releases import require
from rpbench.storage.schemas import FAILURES
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.llm.names import resolve_all
from rpbench.tasks.modes.pingpong.cards import Settings, conversation_id, load_settings
from rpbench.tasks.modes.pingpong.given import read_conversations
from rpbench.tasks.modes.pingpong.records import Card, Situation
from rpbench.tasks.modes.pingpong.release import RELEASE
from rpbench.tasks.modes.pingpong.tables import CARDS, CONVERSATIONS, TURN_JUDGMENTS


def select(settings: Settings, characters: list[str], situations: list[str], max_turns: int | None,
           path: str) -> list[tuple[Card, Situation]]:
    """The grid a run covers; a name that matches nothing is an input error."""
    grid = settings.conversations()
    for given, known, what in ((characters, {c.name for c, _ in grid}, "character"),
                               (situations, {s.situation_id for _, s in grid}, "situation")):
        for name in given:
            if name not in known:
                raise InputError(f"--{what} in {path}: unknown {what} '{name}' (known: {', '.join(sorted(known))})")
    grid = [(c, s) for c, s in grid if (not characters or c.name in characters)
            and (not situations or s.situation_id in situations)]
    if max_turns is not None:
        grid = [(c, s.model_copy(update={"num_turns": min(s.num_turns, max_turns)})) for c, s in grid]
    return grid


def _judge_roles(s: Scoring, judges: list[str]) -> dict[str, str]:
    roles = resolve_all(run_models(s.models_file), judges, builtin_roles(), like="pingpong-judge",
                        option="--judge")
    unknown = sorted(set(s.judge_weight_map()) - set(roles))
    if unknown:
        raise InputError(f"--judge-weight: '{unknown[0]}' is not one of the judges ({', '.join(roles)})")
    return roles


def check_run(s: PingPongSettings) -> tuple[list[System], dict[str, str]]:
    """The systems (players resolved to roles, conversation files read) and the judges resolved to roles, the
    settings file read: every input error before any call."""
    require([RELEASE])  # every prompt's words come from PingPong's templates
    grid = select(load_settings(s.settings, s.any_greeting), s.characters, s.situations, None, s.settings)
    turns = {conversation_id(c, situation): situation.num_turns for c, situation in grid}
    systems = evaluation_systems(s, "player", turns, "conversations", _read_conversations)
    return systems, ({} if s.version == "v1" else _judge_roles(s, s.judges))


def _read_conversations(path: str, turns: dict[str, int]) -> None:
    """A file of conversations, each of a situation of the run and no longer than it."""
    for cid, exchanges in read_conversations(path, turns).items():
        # Fewer is a conversation that ended early; more cannot be this situation's (--max-turns cuts a run
        # short, not the file): scoring only the first turns would hide that.
        if len(exchanges) > turns[cid]:
            raise InputError(f"--answers {path}: conversation '{cid}': {len(exchanges)} turns, but its "
                             f"situation has {turns[cid]}; give at most that many")


def stored_run(folder: str) -> dict[str, str]:
    """The tables of a finished PingPong run, or an input error saying what is missing."""
    found = {t.name: str(Path(folder) / t.filename) for t in (CONVERSATIONS, CARDS, TURN_JUDGMENTS, FAILURES)}
    missing = [p for p in found.values() if not Path(p).is_file()]
    if missing:
        raise InputError(f"{folder}: not a finished PingPong run (no {Path(missing[0]).name}; run "
                         "`rpbench pingpong run --out` into it first)")
    return found


def check_rejudge(s: RejudgeSettings) -> None:
    """A rejudge's input errors before any call: the stored run's tables, the judges and their weights."""
    require([RELEASE])  # the judge's words come from PingPong's templates
    stored_run(s.run)
    _judge_roles(s, s.judges)
