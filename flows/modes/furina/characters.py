"""Flow: synthesize original test characters (and a scene for each group of them).

One stage per world, in order: each world's originality check also counts
the characters of the worlds before it. Then collect writes the characters
file and, beside it, the scenes file for `rpbench furina pool add`.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from rpbench.flows.kit.front.registry import run_models
from rpbench.flows.kit.running.finish import finish_run
from rpbench.flows.kit.running.run import flow_body
from rpbench.flows.kit.running.stage import StageResult, StageRun, stage
from rpbench.flows.kit.running.stages import Stages
from rpbench.flows.modes.furina.settings import SynthesisSettings
from rpbench.samples import sample_path
from rpbench.storage.tables import read_records
from rpbench.tasks.llm.names import resolve_all
from rpbench.tasks.modes.furina.character_files import load_characters, write_characters
from rpbench.tasks.modes.furina.characters.profile import full_profile
from rpbench.tasks.modes.furina.characters.synthesis import (
    OriginalityIndex,
    SynthesisConfig,
    SynthesisFailed,
    synthesize,
)
from rpbench.tasks.modes.furina.domain import Scene
from rpbench.tasks.modes.furina.roles import ROLES
from rpbench.tasks.modes.furina.scene_files import read_scenes, write_scene_file
from rpbench.tasks.modes.furina.tables import CHARACTERS, SCENES


def starter_files() -> list[str]:
    return [str(p) for p in sorted(sample_path("characters").glob("*.yaml"))]


def known_characters(starters: list[str], pool: str | None, earlier: list[str]) -> list[tuple[str, str]]:
    """Names and profiles an original character must not copy: starters, the pool's, earlier worlds'."""
    known = [(c.name, full_profile(c)) for f in starters for c in load_characters(f)]
    if pool:
        known += [(c.name, full_profile(c)) for s in read_scenes(pool) for c in s.characters]
    known += [(c.name, full_profile(c)) for p in earlier for c in read_records(p, CHARACTERS)]
    return known


@stage("synthesize-world", templates=("furina/synth/",),
       roles=lambda p: ["synthesizer", *p["seed_roles"]], inputs=("starters", "pool", "earlier"))
async def world(run: StageRun, group: int, n: int, language: str, seed_roles: list[str], max_refine: int,
                starters: list[str], pool: str | None, earlier: list[str]) -> StageResult:
    """One world with ``n`` characters, a scene and its dialogue, each step reviewed and revised."""
    index = OriginalityIndex(known_characters(starters, pool, earlier))
    cfg = SynthesisConfig(n_characters=n, language=language, seed_roles=tuple(seed_roles), max_refine=max_refine)
    steps = run.progress.track(f"world {group + 1}", 1)
    failure: str | None
    async with run.gateway() as gateway:
        try:
            cast, scene, report = await synthesize(
                gateway, cfg, index, run_id=f"{language}-{n}-{group}",
                on_step=lambda step: run.progress.logger.info("%s: %s", run.label, step))
        except SynthesisFailed as exc:
            cast, scenes, failure = [], [], str(exc)
        else:
            scenes, failure = [scene], None
            run.progress.logger.info("%s: refine rounds %s", run.label, report.refine_rounds)
    steps(1, 1)
    run.write(CHARACTERS, cast)
    run.write(SCENES, scenes)
    return run.result(characters=len(cast), failed=failure)


@stage("synthesize-collect", inputs=("characters", "scenes"))
async def collect(run: StageRun, characters: list[str], scenes: list[str], characters_file: str) -> StageResult:
    """The characters file (YAML) and beside it the scenes file that `rpbench furina pool add` takes."""
    cast = [c for p in characters for c in read_records(p, CHARACTERS)]
    made: list[Scene] = [s for p in scenes for s in read_scenes(p)]
    run.write(CHARACTERS, cast, final=True)
    run.tables["characters_file"] = str(write_characters(characters_file, cast))
    scenes_file = str(Path(characters_file).with_suffix("")) + ".scenes.json"
    run.tables["scenes_file"] = str(write_scene_file(scenes_file, made))
    return run.result(characters=len(cast), scenes=len(made), scenes_file=scenes_file)


@flow(name="rpbench-synthesize-characters", log_prints=True)
@flow_body
def synthesize_characters(settings: SynthesisSettings) -> dict:
    """Synthesize original characters (role `synthesizer`): seeds, world, profiles, scene, dialogue, each reviewed."""
    s, stages = settings, Stages(settings, out=settings.run_dir)
    roles = resolve_all(run_models(s.models_file), s.seed_roles, ROLES, like="synthesizer",
                        option="--seed-role")
    pool = str(Path(s.pool) / SCENES.filename) if s.pool else None
    worlds: list[StageResult] = []
    for g in range(s.groups):
        worlds.append(stages.run(
            world, group=g, n=s.n, language=s.language, seed_roles=[roles[r] for r in s.seed_roles],
            max_refine=s.max_refine, starters=starter_files(), pool=pool,
            earlier=[w.path("characters") for w in worlds], shard=f"world-{g}"))
    done = stages.run(collect, characters=[w.path("characters") for w in worlds],
                      scenes=[w.path("scenes") for w in worlds], characters_file=s.out)
    failed = [w.summary["failed"] for w in worlds if w.summary["failed"]]
    summary = {"characters": done.summary["characters"], "scenes": done.summary["scenes"],
               "scenes_file": done.summary["scenes_file"], "failed_groups": failed}
    # A world is this flow's item: more of them failed than the run allows fails the run, as failed items do
    # elsewhere (a run that made no character at all must not end Completed).
    too_many = ([f"{len(failed)} of {s.groups} worlds failed ({len(failed) / s.groups:.0%}, more than "
                 f"{s.max_failure_share:.0%})"] if len(failed) / s.groups > s.max_failure_share else [])
    return finish_run(s.run_dir, stages, s, "synthesize-characters", failed_parts=too_many, synthesis=summary,
                      synthesis_settings=s.recorded(s.run_dir))
