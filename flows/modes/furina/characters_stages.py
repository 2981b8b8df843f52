"""Prefect tasks for test characters: thin wrappers over ``tasks.characters``."""

from __future__ import annotations

from pathlib import Path

from prefect import task

from rpbench.samples import sample_path

from rpbench.storage.characters import write_characters, write_scene_file
from rpbench.storage.pool import read_scenes
from rpbench.storage.schemas import SCENES
from rpbench.tasks.modes.furina.characters.profile import full_profile
from rpbench.tasks.modes.furina.characters.schema import load_characters
from rpbench.tasks.modes.furina.characters.synthesis import OriginalityIndex, SynthesisConfig, SynthesisFailed, synthesize
from rpbench.flows.kit.progress import run_logger
from rpbench.flows.kit.runtime import get_runtime

STARTERS = sample_path("characters")


def known_characters(pool: str | None) -> list[tuple[str, str]]:
    known = [(c.name, full_profile(c)) for f in sorted(STARTERS.glob("*.yaml")) for c in load_characters(f)]
    if pool and (Path(pool) / SCENES.filename).is_file():
        for scene in read_scenes(Path(pool) / SCENES.filename):
            known += [(c.name, full_profile(c)) for c in scene.characters]
    return known


@task(name="synthesize-characters")
async def synthesize_characters_task(out: str, n: int, language: str, groups: int, pool: str | None,
                                     seed_roles: list[str], run_dir: str, models: str | None,
                                     cache: str | None, max_refine: int = 2) -> dict:
    """Run ``groups`` independent syntheses of ``n`` characters each; write the characters and their scenes."""
    rt = get_runtime(run_dir, models, cache)
    index = OriginalityIndex(known_characters(pool))
    cfg = SynthesisConfig(n_characters=n, language=language, seed_roles=tuple(seed_roles), max_refine=max_refine)
    characters, scenes, failures, reports = [], [], [], []
    logger = run_logger()
    async with rt.calls() as gateway:
        for g in range(groups):
            try:
                cast, scene, report = await synthesize(
                    gateway, cfg, index, run_id=f"{language}-{n}-{g}",
                    on_step=lambda step, g=g: logger.info("synthesis, world %d/%d: %s", g + 1, groups, step))
            except SynthesisFailed as exc:
                failures.append(str(exc))
                continue
            characters += cast
            scenes.append(scene)
            reports.append(report.__dict__)
            index = OriginalityIndex(known_characters(pool) + [(c.name, full_profile(c)) for c in characters])
    write_characters(out, characters)
    scenes_path = str(Path(out).with_suffix("")) + ".scenes.json"
    write_scene_file(scenes_path, scenes)
    return {"characters": len(characters), "scenes": len(scenes), "scenes_file": scenes_path,
            "failed_groups": failures, "reports": reports}
