"""PingPong's flows: conversations (per player) -> judgments (per player and judge) -> the kit's report stage,
scored by ``analysis.scored``.

Each stage is a cached Prefect task: adding a player or a judge to an earlier
run in the same folder runs only the new stages and the report; a rerun of a
finished run sends nothing. ``rejudge`` scores a run's stored conversations
with more judges, without talking to any player again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from prefect import flow

from rpbench.flows.kit.front.checking import checked
from rpbench.flows.kit.running.finish import finish_run
from rpbench.flows.kit.running.run import flow_body
from rpbench.flows.kit.running.stage import StageResult, StageRun, slug, stage
from rpbench.flows.kit.running.stages import Stages
from rpbench.flows.kit.scale.runners import stage_runner
from rpbench.flows.modes.pingpong.checks import _judge_roles, check_run, select, stored_run
from rpbench.flows.modes.pingpong.settings import PingPongSettings, RejudgeSettings, Scoring
from rpbench.storage.schemas import CALLS, FAILURES
from rpbench.storage.tables import read_records
from rpbench.tasks.core.records import CallRecord, Failure
from rpbench.tasks.modes.pingpong.cards import conversation_id, load_settings
from rpbench.tasks.modes.pingpong.conversation import ConversationConfig, converse_all, tester_judgments
from rpbench.tasks.modes.pingpong.given import given_turns, read_conversations
from rpbench.tasks.modes.pingpong.judging import judge_all
from rpbench.tasks.modes.pingpong.tables import CARDS, CONVERSATIONS, TURN_JUDGMENTS

WORKERS = 4
TESTER = "tester"


def _conversation_roles(p: Mapping[str, Any]) -> list[str]:
    if p["role"] is None:  # a conversation read from a file: nobody is asked
        return []
    return [p["role"], TESTER if p["version"] == "v1" else "interrogator"]


@stage("pingpong-conversations", templates=("pingpong/player",), roles=_conversation_roles,
       inputs=("settings_file", "given"))
async def conversations(run: StageRun, settings_file: str, characters: list[str], situations: list[str],
                        max_turns: int | None, limit: int | None, role: str | None, given: str | None, name: str,
                        version: str, merge_system: bool, symmetric: bool, any_greeting: bool = False) -> StageResult:
    """``name``'s conversations: played by the model bound to ``role``, or read from the file ``given``."""
    read = load_settings(settings_file, any_greeting)
    grid = select(read, characters, situations, max_turns, settings_file)
    known = [conversation_id(c, s) for c, s in grid]  # a given file may hold conversations past the limit
    grid = grid[:limit]
    cfg = ConversationConfig(version="v1" if version == "v1" else "v2", merge_system=merge_system,
                             symmetric=symmetric)
    if given is not None:
        turns = given_turns(grid, read_conversations(given, known), name, given)
    else:
        assert role is not None
        async with run.gateway() as gateway:
            turns = await converse_all(gateway, grid, role, name, cfg,
                                       run.progress.track(f"conversations of {name}", len(grid)))
    failures = [Failure(stage="pingpong-conversations", model=name, item_id=t.conversation_id,
                        kind=(t.error or "failed").split(":")[0], error=t.error) for t in turns if t.status == "failed"]
    run.write(CONVERSATIONS, turns)
    run.write(CARDS, sorted({(c.language, c.name): c for c, _ in grid}.values(), key=lambda c: (c.language, c.name)))
    run.write(FAILURES, failures)
    if version == "v1":
        run.write(TURN_JUDGMENTS, tester_judgments(turns, TESTER))
    played = {f"{c.language}/{c.name}" for c, _ in grid}
    return run.result(conversations=len(grid), failed=len(failures),
                      unread_greetings=[c for c in read.unread_greetings if c in played])


@stage("pingpong-judgments", batch=True, templates=("pingpong/player",), roles=lambda p: [p["judge_role"]],
       inputs=("conversations", "cards"))
async def judgments(run: StageRun, conversations: str, cards: str, model: str, judge: str, judge_role: str,
                    limit: int | None = None) -> StageResult:
    turns = read_records(conversations, CONVERSATIONS)
    if limit is not None:  # the model's first N conversations only (a rejudge's trial of a judge)
        first = list(dict.fromkeys(t.conversation_id for t in turns if t.model == model))[:limit]
        turns = [t for t in turns if t.model != model or t.conversation_id in first]
    by_key = {(c.language, c.name): c for c in read_records(cards, CARDS)}
    async with run.gateway() as gateway:
        n = len({t.conversation_id for t in turns if t.model == model})
        made, failed = await judge_all(gateway, by_key, turns, model, judge, judge_role,
                                       run.progress.track(f"judgments of {model} by {judge}", n))
    run.write(TURN_JUDGMENTS, made)
    run.write(FAILURES, failed)
    return run.result(judged_turns=len(made), failed=len(failed))


def _report(stages: Stages, s: Scoring, tables: dict[str, list[str]], judges: list[str], scale: str,
            systems: Sequence[str]) -> StageResult:
    """The kit's report stage on the conversations, cards, judgments and failures in ``tables``."""
    return stages.score("pingpong", {**tables, "judges": judges, "judge_weights": s.judge_weight_map(),
                                     "criterion_weights": s.criterion_weight_map(), "scale": scale,
                                     "exact_mean": s.exact_mean}, systems=systems)


def _finish(s: Scoring, stages: Stages, out: str, flow_name: str, done: StageResult, judges: list[str],
            inherited: Sequence[CallRecord] = (), unread_greetings: Sequence[str] = (),
            **sections: Any) -> dict[str, Any]:
    summary = done.scores("conversations", "scored", "refusals", judges=judges,
                          unread_greetings=list(unread_greetings))
    return finish_run(out, stages, s, flow_name, inherited, pingpong=summary,
                      pingpong_settings=s.recorded(out), **sections)


def carried_calls(folder: str, judges: Sequence[str]) -> list[CallRecord]:
    """The calls behind the stored run's tables that a rejudge keeps: all but those of the judges given again
    (their verdicts are replaced, so are their calls)."""
    path = Path(folder) / CALLS.filename
    if not path.is_file():
        return []
    again = tuple(f":judge:{j}" for j in judges)
    return [c for c in read_records(path, CALLS) if not (c.tag or "").endswith(again)]


@flow(name="rpbench-pingpong", log_prints=True, task_runner=stage_runner(WORKERS))
@flow_body
def pingpong(s: PingPongSettings, stages: Stages) -> dict:
    """PingPong: players chat with an emulated user (role `interrogator`); judges score every turn."""
    systems, judges = checked(check_run, s)
    made = stages.map(conversations, [
        {"settings_file": s.settings, "characters": s.characters, "situations": s.situations,
         "max_turns": s.max_turns, "limit": s.limit, "version": s.version, "merge_system": s.no_system_role,
         "symmetric": s.symmetric, "any_greeting": s.any_greeting, **system.params()} for system in systems])
    pairs = [(m, x.name, judge, role) for m, x in zip(made, systems, strict=True) for judge, role in judges.items()]
    judged = stages.map(judgments, [
        {"conversations": m.path("conversations"), "cards": m.path("cards"), "model": name,
         "judge": judge, "judge_role": role, "shard": f"{slug(name)}--{slug(judge)}"}
        for m, name, judge, role in pairs])
    v1 = s.version == "v1"
    done = _report(stages, s, {
        "conversations": [m.path("conversations") for m in made], "cards": [m.path("cards") for m in made],
        "judgments": [m.path("judgments") for m in made] if v1 else [j.path("judgments") for j in judged],
        "failures": [m.path("failures") for m in made] + [j.path("failures") for j in judged]},
        [TESTER] if v1 else list(judges), "1-10" if v1 else "1-5", [x.name for x in systems])
    unread = sorted({c for m in made for c in m.summary.get("unread_greetings", [])})
    return _finish(s, stages, s.out, "pingpong", done, [TESTER] if v1 else list(judges), unread_greetings=unread)


@flow(name="rpbench-pingpong-rejudge", log_prints=True, task_runner=stage_runner(WORKERS))
@flow_body
def rejudge(s: RejudgeSettings, stages: Stages) -> dict:
    """Score a run's stored conversations with more judges; the report pools them with the run's own."""
    tables = stored_run(s.run)
    out = s.out or s.run  # the settings make the run folder itself the default
    judges = _judge_roles(s, s.judges)
    carried = carried_calls(s.run, list(judges))  # read now: finishing this run replaces the file
    turns = read_records(tables["conversations"], CONVERSATIONS)
    earlier = sorted({j.judge for j in read_records(tables["judgments"], TURN_JUDGMENTS)} - set(judges))
    models = sorted({t.model for t in turns})
    judged = stages.map(judgments, [
        {"conversations": tables["conversations"], "cards": tables["cards"], "model": model,
         "judge": judge, "judge_role": role, "shard": f"{slug(model)}--{slug(judge)}", "limit": s.limit}
        for model in models for judge, role in judges.items()])
    scale = "1-10" if earlier == [TESTER] else "1-5"
    done = _report(stages, s, {
        "conversations": [tables["conversations"]], "cards": [tables["cards"]],
        "judgments": [tables["judgments"], *(j.path("judgments") for j in judged)],
        "failures": [tables["failures"], *(j.path("failures") for j in judged)]}, [*earlier, *judges], scale, models)
    return _finish(s, stages, out, "pingpong-rejudge", done, [*earlier, *judges], carried, rejudged_from=s.run)
