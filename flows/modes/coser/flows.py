"""CoSER's flow: scenes (per system) -> critiques (per system, one call per dimension) -> the kit's report stage,
scored by ``analysis.scored``."""

from __future__ import annotations

from prefect import flow

from rpbench.flows.kit.front.checking import checked
from rpbench.flows.kit.running.finish import finish_run
from rpbench.flows.kit.running.run import flow_body
from rpbench.flows.kit.running.stage import StageResult, StageRun, stage
from rpbench.flows.kit.running.stages import Stages
from rpbench.flows.kit.scale.runners import stage_runner
from rpbench.flows.modes.coser.checks import check_run
from rpbench.flows.modes.coser.settings import CoserSettings
from rpbench.storage.tables import read_records
from rpbench.tasks.llm.gather import gather_counted
from rpbench.tasks.modes.coser.acting import act, given_scene, prompt_draws
from rpbench.tasks.modes.coser.critic import criticise
from rpbench.tasks.modes.coser.loader import load_circumstances, read_simulations
from rpbench.tasks.modes.coser.tables import CRITIQUES, MESSAGES, SCENE_ENDS

WORKERS = 4
ENVIRONMENT_ROLE, NEXT_SPEAKER_ROLE = "coser-environment", "coser-next-speaker"


@stage("coser-scenes", roles=lambda p: [p["role"], ENVIRONMENT_ROLE, NEXT_SPEAKER_ROLE] if p["role"] else [],
       inputs=("data", "given"))
async def scenes(run: StageRun, data: list[str], limit: int | None, continue_from: int, max_rounds: int,
                 seed: int, role: str | None, given: str | None, name: str, thinks: bool = True) -> StageResult:
    """``name``'s scenes: acted by the model bound to ``role`` (with the environment and the next-speaker
    predictor), or read from the released simulations in ``given``."""
    every = load_circumstances(data)
    circumstances = every[:limit]
    if given is not None:
        released = read_simulations(given)
        made = [given_scene(c, released.get(c.circumstance_id), name, given) for c in circumstances]
    else:
        assert role is not None
        draws = prompt_draws(every)  # made over the whole file, as the release makes them
        async with run.gateway() as gateway:
            made = await gather_counted(
                [act(gateway, c, name, role, ENVIRONMENT_ROLE, NEXT_SPEAKER_ROLE, continue_from, seed,
                     draws[c.circumstance_id], max_rounds, thinks) for c in circumstances],
                run.progress.track(f"scenes of {name}", len(circumstances)))
    run.write(MESSAGES, [m for messages, _ in made for m in messages])
    run.write(SCENE_ENDS, [end for _, end in made])
    return run.result(scenes=len(made), failed=sum(end.status == "failed" for _, end in made),
                      drawn=sum(m.drawn for messages, _ in made for m in messages),
                      kept_empty=sum(end.kept_empty for _, end in made))


@stage("coser-critiques", batch=True, roles=lambda p: [p["critic"]], inputs=("data", "messages", "ends"))
async def critiques(run: StageRun, data: list[str], limit: int | None, continue_from: int, messages: str,
                    ends: str, critic: str, name: str) -> StageResult:
    """The critic on every scene of ``name`` that was acted to its end, one call per dimension."""
    circumstances = {c.circumstance_id: c for c in load_circumstances(data)[:limit]}
    acted = {e.circumstance_id for e in read_records(ends, SCENE_ENDS) if e.status == "ok"}
    by_scene: dict[str, list] = {}
    for m in read_records(messages, MESSAGES):
        by_scene.setdefault(m.circumstance_id, []).append(m)
    todo = [(circumstances[cid], by_scene.get(cid, [])) for cid in circumstances if cid in acted]
    async with run.gateway() as gateway:
        made = await criticise(gateway, todo, name, critic, continue_from)
    return run.written(CRITIQUES, made)


@flow(name="rpbench-coser", log_prints=True, task_runner=stage_runner(WORKERS))
@flow_body
def coser(s: CoserSettings, stages: Stages) -> dict:
    """CoSER: each system acts every circumstance (or its simulations are read), the critic judges each
    dimension, and CoSER's scores with intervals."""
    got = checked(check_run, s)
    common = {"data": s.data, "limit": s.limit, "continue_from": s.continue_from}
    acted = stages.map(scenes, [{**common, "seed": s.seed, "max_rounds": s.max_rounds,
                                 "thinks": not s.without_thoughts, **x.params()} for x in got.systems])
    judged = stages.map(critiques, [{**common, "messages": a.path("messages"), "ends": a.path("scene_ends"),
                                     "critic": got.critic, "name": x.name, "shard": x.shard}
                                    for a, x in zip(acted, got.systems, strict=True)])
    tables = {"messages": [a.path("messages") for a in acted], "ends": [a.path("scene_ends") for a in acted],
              "critiques": [j.path("critiques") for j in judged]}
    done = stages.score("coser", {**common, **tables}, systems=[x.name for x in got.systems])
    summary = done.scores("draws", circumstances=got.circumstances, empty_thoughts=got.empty_thoughts)
    return finish_run(s.out, stages, s, "coser", coser=summary, coser_settings=s.recorded(s.out))
