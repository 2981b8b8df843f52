"""FURINA's input checks, run by the commands before any flow starts (and by the flows themselves).

Nothing here imports Prefect or the gateway, so a missing pool or an unknown model is one line at once."""

from __future__ import annotations

from pathlib import Path

from rpbench.flows.kit.front.registry import run_models
from rpbench.flows.kit.front.systems import System, read_systems
from rpbench.flows.modes.furina.settings import BuildSettings, EvalSettings, PoolSettings, SynthesisSettings
from rpbench.storage.tables import run_table
from rpbench.tasks.core.errors import InputError, close_match
from rpbench.tasks.llm.given import read_answers
from rpbench.tasks.llm.keys import require_keys
from rpbench.tasks.llm.names import resolve_all
from rpbench.tasks.modes.furina.builder.build import (
    scene_queue,
)
from rpbench.tasks.modes.furina.character_files import load_characters
from rpbench.tasks.modes.furina.domain import Character
from rpbench.tasks.modes.furina.evaluation.bench import bench_files, load_bench
from rpbench.tasks.modes.furina.evaluation.run import BASE
from rpbench.tasks.modes.furina.pool.ingest import read_book
from rpbench.tasks.modes.furina.roles import ROLES
from rpbench.tasks.modes.furina.scene_files import read_scenes
from rpbench.tasks.modes.furina.tables import SCENES


def selected_characters(s: BuildSettings) -> list[Character]:
    """The characters to build for; a name in ``--only`` that is not in the file is an input error."""
    characters = load_characters(s.characters)
    names = [c.name for c in characters]
    unknown = sorted(set(s.only) - set(names))
    if unknown:
        near = close_match(unknown[0], names, cutoff=0.6)
        raise InputError(f"{s.characters}: no character named {', '.join(unknown)}"
                         f"{f' (did you mean {near!r}?)' if near else ''}")
    return [c for c in characters if not s.only or c.name in s.only]


def check(s: BuildSettings) -> tuple[list[Character], tuple[str, ...]]:
    """Everything a build needs, checked before any work: characters, the pool, the source names."""
    characters = selected_characters(s)[: s.limit]  # --limit: the first N (a trial run)
    scenes_path = Path(s.pool) / SCENES.filename
    if not scenes_path.is_file():
        raise InputError(f"{s.pool}: no scenes.parquet (build a pool first: rpbench furina pool build)")
    scenes = read_scenes(scenes_path)
    config = s.build(("source",))
    for c in characters:
        scene_queue(c, scenes, config)  # every character has a scene to play in
    roles = resolve_all(run_models(s.models_file), s.sources, ROLES, like="source", option="--source")
    return characters, tuple(roles[name] for name in s.sources)


def check_models(s: EvalSettings) -> list[System]:
    """The systems: the base (the reference every model is compared with) first, then the models (a name that
    is neither a role nor a model string is an input error), then the answer files (--answers), read and their
    ids checked against the benchmark's items."""
    if BASE in s.models:
        raise InputError(f"--model: '{BASE}' is the reference every model is compared with, not a model under test")
    config = run_models(s.models_file)
    require_keys(config, ["judge"], "--models-file")  # the judge of every item: no run without its key
    roles = resolve_all(config, s.models, ROLES, like="test", option="--model")
    systems = read_systems({BASE: BASE, **roles}, s.answers, model_option="--model (or the base)")
    bench = load_bench(**bench_files(s.bench))  # a bad benchmark folder is one line before any flow starts
    items = {i.item_id: i for i in bench.items}
    for path in (x.answers for x in systems if x.answers):
        read_answers(path, items)
    return systems


def book_shards(books: list[str]) -> list[str]:
    """A shard name per book (its file name's stem); two books of the same name are an input error."""
    names = [Path(b).name.split(".")[0] for b in books]
    for name in names:
        if names.count(name) > 1:
            raise InputError(f"two books are named '{name}': give them different file names")
    return names


def check_books(s: PoolSettings) -> None:
    """A pool's books: distinct names, each readable, before Prefect or the gateway is even imported."""
    book_shards(s.books)
    for path in s.books:
        read_book(path, s.language)


def check_synthesis(s: SynthesisSettings) -> None:
    """The seed roles resolve and the pool (if given) has scenes."""
    resolve_all(run_models(s.models_file), s.seed_roles, ROLES, like="synthesizer", option="--seed-role")
    if s.pool:
        read_scenes(run_table(s.pool, SCENES, "rpbench furina pool build"))
