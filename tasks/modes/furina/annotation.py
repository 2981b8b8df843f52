"""FURINA's annotation kinds: tasks from an evaluation folder, a seeded sample of its items stratified by
dimension and language, each made into the data one Label Studio task shows (FURINA section 4.4, appendices
K-M), and the answers read back as rows ``rpbench furina validate`` reads.

Two kinds: ``dimension`` (one task per item: which dimension does the reply test) and ``pairwise`` (one task
per item and model under test: the model's reply against the base's, in a random order recorded in the
task, scored 1-5). Every task carries ``rpbench_key`` = item|model|kind, which makes a second push of the same
items add nothing. Pairwise scores are read back un-randomised: annotators score reply A against reply B
(1 = A much better); when the base's reply was shown first the score is mirrored (6 - score), so every row
reads 1 = the reply under test much better, as the judge's first order does.
"""

from __future__ import annotations

import functools
import json
import random
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rpbench import prompts
from rpbench.storage.recorded_paths import recorded_location
from rpbench.storage.tables import read_records
from rpbench.tasks.annotation.kinds import (
    LAYOUT,
    AnnotationKind,
    Answer,
    Read,
    choice,
    dialogue_text,
    task_key,
    text,
)
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.modes.furina.dimensions import DIMENSIONS
from rpbench.tasks.modes.furina.domain import Character, Item
from rpbench.tasks.modes.furina.evaluation.bench import Bench, bench_files, load_bench
from rpbench.tasks.modes.furina.evaluation.run import BASE
from rpbench.tasks.modes.furina.tables import GENERATIONS, JUDGMENTS


@dataclass(frozen=True)
class Evaluation:
    """What an evaluation folder holds that annotators need: its benchmark and the replies of every model."""

    folder: Path
    bench: Bench
    replies: dict[tuple[str, str], str]  # (model, item_id) -> text, ok generations only
    models: list[str]  # models under test (not the base), in the order evaluated


def load_evaluation(folder: str | Path) -> Evaluation:
    """The evaluation in ``folder`` and the benchmark it was run on; one clear line when it is not one."""
    root = Path(folder)
    manifest = root / "manifest.json"
    if not manifest.is_file():
        raise InputError(f"{root}: not an evaluation folder (no manifest.json; run rpbench furina eval first)")
    for table in (GENERATIONS, JUDGMENTS):
        if not (root / table.filename).is_file():
            raise InputError(f"{root}: no {table.filename}: an evaluation without judgments cannot be validated "
                             f"(run rpbench furina eval to the end)")
    try:
        recorded = json.loads(manifest.read_text(encoding="utf-8"))
        bench_dir = recorded_location(manifest, recorded, str(recorded["evaluation_settings"]["bench"]))
    except (ValueError, KeyError, TypeError):
        raise InputError(f"{manifest}: field 'evaluation_settings.bench': missing (not an rpbench furina eval "
                         f"manifest?)") from None
    if not bench_dir.is_dir():
        raise InputError(f"{manifest}: field 'evaluation_settings.bench': the benchmark folder it names, "
                         f"{bench_dir}, is not there (copy or move the benchmark together with its evaluation)")
    bench = load_bench(**bench_files(bench_dir))
    replies = {(g.model, g.item_id): g.text for g in read_records(root / GENERATIONS.filename, GENERATIONS)
               if g.status == "ok" and g.text}
    judged = read_records(root / JUDGMENTS.filename, JUDGMENTS)
    if not judged:
        raise InputError(f"{root / JUDGMENTS.filename}: no judgments in it: nothing to validate")
    models = list(dict.fromkeys(j.model for j in judged if j.model != BASE))
    return Evaluation(root, bench, replies, models)


def stratified_sample(items: list[Item], limit: int | None, seed: int) -> list[Item]:
    """Up to ``limit`` items, spread evenly over (dimension, language) strata, the same for the same seed.

    Strata take turns (each shuffled with the seed), so a small limit still reaches every dimension and
    language before any gets a second item.
    """
    rng = random.Random(seed)
    strata: dict[tuple[str, str], list[Item]] = defaultdict(list)
    for item in sorted(items, key=lambda it: it.item_id):
        strata[(item.dimension, item.language)].append(item)
    queues = []
    for key in sorted(strata):
        members = strata[key][:]
        rng.shuffle(members)
        queues.append(members)
    out: list[Item] = []
    while any(queues) and (limit is None or len(out) < limit):
        for queue in queues:
            if queue and (limit is None or len(out) < limit):
                out.append(queue.pop(0))
    return out


def profile_text(character: Character) -> str:
    """The character's whole profile as annotators read it (hidden attributes too: they judge the reply)."""
    return "\n".join(f"{a.key}: {a.value}" for a in character.attributes)


def dimension_text(dim: str, language: str) -> tuple[str, str]:
    """A dimension's name and its whole definition, from the prompt the judge reads."""
    text = prompts.render("furina/dims/definition", language, dim=dim).text
    name, _, rest = text.partition("\n")
    return name.strip(), rest.strip()


def dimension_choices(language: str) -> list[tuple[str, str, str]]:
    """(code, label, hint) for each dimension: its name, and the first paragraph of its definition."""
    out = []
    for dim in DIMENSIONS:
        name, definition = dimension_text(dim, language)
        out.append((dim, name, definition.splitlines()[0]))
    return out


def _context(item: Item, bench: Bench) -> dict[str, Any]:
    scene = bench.scenes[item.scene_id]
    return {"item_id": item.item_id, "character": item.character, "language": item.language,
            "dimension": item.dimension, "profile": profile_text(bench.characters[item.character]),
            "background": f"{scene.background}\n\n{scene.situation}",
            "history": dialogue_text([(line.speaker, line.text) for line in item.history])}


def annotation_tasks(evaluation: Evaluation, kind: str, limit: int | None, seed: int) -> list[dict[str, Any]]:
    """The task data for a sample of the evaluation's items (see the module's docstring)."""
    items = stratified_sample(evaluation.bench.items, limit, seed)
    tasks: list[dict[str, Any]] = []
    if kind == "dimension":
        for item in items:
            tasks.append({**_context(item, evaluation.bench), "model": "", "task": kind,
                          "response": item.test_utterance, "rpbench_key": task_key(item.item_id, "", kind)})
        return tasks
    for item in items:
        base = evaluation.replies.get((BASE, item.item_id))
        for model in evaluation.models:
            reply = evaluation.replies.get((model, item.item_id))
            if base is None or reply is None:
                continue  # a failed generation has no reply to show; it is counted as failed in the eval
            # The order shown, drawn per task from the seed and the task's key (the same on every push).
            test_first = random.Random(f"{seed}|{task_key(item.item_id, model, kind)}").random() < 0.5
            name, criteria = dimension_text(item.dimension, item.language)
            tasks.append({**_context(item, evaluation.bench), "model": model, "task": kind,
                          "dimension_name": name, "criteria": criteria,
                          "response_a": reply if test_first else base, "response_b": base if test_first else reply,
                          "shown_first": "test" if test_first else "base",
                          "rpbench_key": task_key(item.item_id, model, kind)})
    return tasks


def labeling_config(kind: str, language: str) -> str:
    """The project's Label Studio labeling config for ``kind`` (dimension or pairwise), in ``language``."""
    return prompts.render(f"annotation/{kind}", language, dimensions=dimension_choices(language), layout=LAYOUT).text


def _answered(data: Mapping[str, Any], result: Answer, kind: str) -> dict[str, Any]:
    return {"item_id": data["item_id"], "model": data.get("model") or None, "task": kind,
            "language": data.get("language"), "explanation": text(result, "explanation")}


def read_dimension(data: Mapping[str, Any], result: Answer) -> Read:
    raw = choice(result, "dimension")
    if raw in (None, "unsure"):
        return "unsure", {}
    return "ok", {**_answered(data, result, "dimension"), "dimension": raw, "score": None}


def read_pairwise(data: Mapping[str, Any], result: Answer) -> Read:
    raw = choice(result, "score")
    if raw in (None, "unsure"):
        return "unsure", {}
    shown_first, as_shown = data.get("shown_first"), int(str(raw))
    return "ok", {**_answered(data, result, "pairwise"), "dimension": None,
                  "score": as_shown if shown_first == "test" else 6 - as_shown,
                  "score_as_shown": as_shown, "shown_first": shown_first}


def _tasks(kind: str) -> Callable[[Path, int | None, int], list[dict[str, Any]]]:
    return lambda folder, limit, seed: annotation_tasks(load_evaluation(folder), kind, limit, seed)


DIMENSION = AnnotationKind("dimension", "dimension", _tasks("dimension"),
                           functools.partial(labeling_config, "dimension"), read_dimension)
PAIRWISE = AnnotationKind("pairwise", "score", _tasks("pairwise"),
                          functools.partial(labeling_config, "pairwise"), read_pairwise)
