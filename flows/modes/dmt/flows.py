"""DMT-RoleBench's flow: dialogues (per model) -> per-round labels (per model) -> the kit's report stage, scored by
``analysis.scored``."""

from __future__ import annotations

from prefect import flow

from rpbench.flows.kit.front.checking import checked
from rpbench.flows.kit.running.finish import finish_run
from rpbench.flows.kit.running.run import flow_body
from rpbench.flows.kit.running.stage import StageResult, StageRun, stage
from rpbench.flows.kit.running.stages import Stages
from rpbench.flows.kit.scale.runners import stage_runner
from rpbench.flows.modes.dmt.checks import check_run, select
from rpbench.flows.modes.dmt.settings import DmtSettings
from rpbench.storage.schemas import FAILURES
from rpbench.storage.tables import read_records
from rpbench.tasks.core.records import Failure
from rpbench.tasks.modes.dmt.catalog import allocated
from rpbench.tasks.modes.dmt.dialogue import GENERATOR, Dialogue, DialogueConfig, run_all
from rpbench.tasks.modes.dmt.given import given_dialogues, read_dialogues
from rpbench.tasks.modes.dmt.judging import JUDGE, label_all, to_judge
from rpbench.tasks.modes.dmt.records import GENERATOR_FAILED
from rpbench.tasks.modes.dmt.seeds import dialogue_id, load_seeds
from rpbench.tasks.modes.dmt.tables import ENDS, LABELS, ROUNDS, SEEDS, STEPS

WORKERS = 4


@stage("dmt-dialogues", templates=("dmt/",), roles=lambda p: [p["role"], GENERATOR] if p["role"] else [],
       inputs=("seeds_file", "given"))
async def dialogues(run: StageRun, seeds_file: str, only_seeds: list[str], formats: list[str],
                    limit: int | None, role: str | None, given: str | None, name: str, max_rounds: int,
                    max_regenerations: int, merge_system: bool) -> StageResult:
    """``name``'s dialogues: held with the model bound to ``role``, or read from the file ``given``."""
    seeds = load_seeds(seeds_file)
    picked = select(seeds, only_seeds, formats, seeds_file)
    known = [dialogue_id(s, f) for s, f in picked]  # a given file may hold dialogues past the limit
    picked = picked[:limit]
    cfg = DialogueConfig(max_rounds, max_regenerations, merge_system)
    if given is not None:
        made = given_dialogues(picked, read_dialogues(given, known), name, max_rounds, given)
    else:
        assert role is not None
        async with run.gateway() as gateway:
            made = await run_all(gateway, picked, role, name, cfg,
                                 run.progress.track(f"dialogues of {name}", len(picked)))
    failures = [Failure(stage="dmt-dialogues", model=name, item_id=d.end.dialogue_id,
                        kind="generator" if d.end.reason.startswith(GENERATOR_FAILED) else "reply",
                        error=_last_error(d) or d.end.reason)
                for d in made if d.end.failed]
    run.write(ROUNDS, [r for d in made for r in d.rounds])
    run.write(STEPS, [s for d in made for s in d.steps])
    run.write(ENDS, [d.end for d in made])
    run.write(SEEDS, [s for s in seeds if any(s.id == p.id for p, _ in picked)])
    run.write(FAILURES, failures)
    return run.result(dialogues=len(made), rounds=sum(len(d.rounds) for d in made), failed=len(failures))


def _last_error(d: Dialogue) -> str | None:
    """What the failed call that ended a dialogue said."""
    errors = [x.error for x in d.steps if x.status != "ok" and x.error]
    errors += [r.error for r in d.rounds if r.status != "ok" and r.error]
    return f"{d.end.reason}: {errors[-1]}" if errors else None


@stage("dmt-labels", batch=True, templates=("dmt/",), roles=(JUDGE,), inputs=("rounds", "seeds", "ends"))
async def labels(run: StageRun, rounds: str, seeds: str, ends: str, name: str) -> StageResult:
    failed = {e.dialogue_id for e in read_records(ends, ENDS) if e.failed}
    made_rounds = to_judge(read_records(rounds, ROUNDS), failed, name)
    by_id = {s.id: s for s in read_records(seeds, SEEDS)}
    async with run.gateway() as gateway:
        n = sum(len(allocated(by_id[r.seed_id].role_type, by_id[r.seed_id].metrics)) for r in made_rounds)
        made = await label_all(gateway, by_id, made_rounds, name, run.progress.track(f"labels of {name}", n))
    # Keyed like the scores' items (dialogue:metric), which a failed label leaves unscored: one failed item.
    failures = [Failure(stage="dmt-labels", model=name, item_id=f"{lb.dialogue_id}:{lb.metric}",
                        kind="label", error=f"round {lb.round}: {lb.error}") for lb in made if lb.status == "failed"]
    run.write(LABELS, made)
    run.write(FAILURES, failures)
    return run.result(labels=len(made), failed=len(failures))


@flow(name="rpbench-dmt", log_prints=True, task_runner=stage_runner(WORKERS))
@flow_body
def dmt(s: DmtSettings, stages: Stages) -> dict:
    """DMT-RoleBench: dialogues steered by topic and intent (role `dmt-generator`), labels (role `dmt-judge`)."""
    systems, n = checked(check_run, s)
    made = stages.map(dialogues, [
        {"seeds_file": s.seeds, "only_seeds": s.only_seeds, "formats": list(s.formats), "limit": s.limit,
         "max_rounds": s.max_rounds, "max_regenerations": s.max_regenerations, "merge_system": s.no_system_role,
         **system.params()} for system in systems])
    labelled = stages.map(labels, [{"rounds": m.path("rounds"), "seeds": m.path("seeds"),
                                    "ends": m.path("dialogue_ends"), "name": x.name, "shard": x.shard}
                                   for m, x in zip(made, systems, strict=True)])
    tables = {"rounds": [m.path("rounds") for m in made], "steps": [m.path("steps") for m in made],
              "ends": [m.path("dialogue_ends") for m in made], "seeds": [m.path("seeds") for m in made],
              "labels": [lb.path("labels") for lb in labelled],
              "failures": [m.path(FAILURES.name) for m in made] + [lb.path(FAILURES.name) for lb in labelled]}
    done = stages.score("dmt", {**tables, "max_rounds": s.max_rounds, "policy": s.policy, "n_dialogues": n},
                        systems=[x.name for x in systems])
    summary = done.scores("table4", "round_curve", policy=s.policy, dialogues=n)
    return finish_run(s.out, stages, s, "dmt", dmt=summary, dmt_settings=s.recorded(s.out))
