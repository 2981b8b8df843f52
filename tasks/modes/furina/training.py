"""FURINA's training source: built benchmarks (`rpbench furina build` folders).

A benchmark's accepted test turn gives one sample prompted exactly as the test character was prompted when the
builder wrote it (profile, scene background, dialogue so far); its judged pair of candidates gives a
preference pair (chosen: the reply the judge preferred; ties dropped and counted).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from rpbench.storage.tables import read_records
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.modes.furina.builder.turns import history_lines, test_turn_messages
from rpbench.tasks.modes.furina.character_files import load_characters
from rpbench.tasks.modes.furina.characters.profile import full_profile
from rpbench.tasks.modes.furina.domain import Character, Line, Scene
from rpbench.tasks.modes.furina.evaluation.bench import shows_scene_extras
from rpbench.tasks.modes.furina.records import DialogueTurn
from rpbench.tasks.modes.furina.scene_files import read_scenes
from rpbench.tasks.modes.furina.tables import DIALOGUES
from rpbench.tasks.training.data import chat_turns
from rpbench.tasks.training.records import PreferencePair, SftSample
from rpbench.tasks.training.sources import TrainingRequest, TrainingSource

BENCH_FILES = ("dialogues.parquet", "scenes.parquet", "characters.yaml")
TIE = 3  # sigma 3: the judge preferred neither reply


def is_bench(path: str | Path) -> bool:
    """A folder written by ``rpbench furina build`` (its dialogues, scenes and characters)."""
    return Path(path).is_dir() and (Path(path) / "dialogues.parquet").is_file()


# -- a built FURINA benchmark -------------------------------------------------------------------------------
class _Bench:
    def __init__(self, folder: Path) -> None:
        for name in BENCH_FILES:
            if not (folder / name).is_file():
                raise InputError(f"{folder}: no {name} (a benchmark folder, as rpbench furina build writes it)")
        self.folder = folder
        self.characters: dict[str, Character] = {c.name: c for c in load_characters(folder / "characters.yaml")}
        self.scenes: dict[str, Scene] = {s.scene_id: s for s in read_scenes(folder / "scenes.parquet")}
        self.turns = read_records(folder / "dialogues.parquet", DIALOGUES)
        self.extras = shows_scene_extras(folder)

    def judged(self) -> list[tuple[DialogueTurn, list[Line], list[dict[str, str]]]]:
        """Every test turn the judge compared, with the history before it and the prompt its writer saw."""
        by_dialogue: dict[str, list[DialogueTurn]] = defaultdict(list)
        for t in self.turns:
            by_dialogue[t.dialogue_id].append(t)
        out = []
        for dialogue_id in sorted(by_dialogue):
            turns = sorted(by_dialogue[dialogue_id], key=lambda t: t.turn)
            for k, t in enumerate(turns):
                if not (t.is_test and t.judge_status == "ok"):
                    continue
                where = f"{self.folder / 'dialogues.parquet'}: turn {dialogue_id}:{t.turn}"
                character, scene = self.characters.get(t.character), self.scenes.get(t.scene_id)
                if character is None or scene is None:
                    raise InputError(f"{where}: field 'character'/'scene_id' refers to nothing in the benchmark")
                dim = t.target_dimension or t.dimension
                if dim is None:
                    raise InputError(f"{where}: field 'target_dimension': missing on a judged test turn")
                history = [Line(speaker=h.speaker, text=h.text) for h in turns[:k]]
                others = [c for c in scene.characters if c.name != t.character]
                out.append((t, history, test_turn_messages(scene, character, others, history, dim, scene.language,
                                                           self.extras)))
        return out

    def system_of(self, t: DialogueTurn) -> str:
        scene = self.scenes[t.scene_id]
        return f"{full_profile(self.characters[t.character], scene.language)}\n\n{scene.background}"


def bench_samples(folder: str) -> list[SftSample]:
    """Each accepted test-character turn (the reply the judge let into the dialogue) as a sample."""
    bench = _Bench(Path(folder))
    return [SftSample(sample_id=f"{t.dialogue_id}:{t.turn}", source=folder, kind="dialogue",
                      language=bench.scenes[t.scene_id].language, role=t.character, prompt=chat_turns(prompt),
                      response=t.text, system=bench.system_of(t), input="\n".join(history_lines(history)))
            for t, history, prompt in bench.judged() if t.text.strip()]


def preference_pairs(folder: str) -> tuple[list[PreferencePair], int]:
    """Pairs from the judged test turns (chosen: the reply the judge preferred); ties dropped and counted."""
    bench = _Bench(Path(folder))
    pairs, ties = [], 0
    for t, _, prompt in bench.judged():
        if t.sigma is None or t.source_reply is None or t.base_reply is None:
            raise InputError(f"{folder}/dialogues.parquet: turn {t.dialogue_id}:{t.turn}: field 'sigma': a judged "
                             "test turn without its verdict or both replies")
        if t.sigma == TIE:
            ties += 1
            continue
        source_won = t.sigma < TIE
        chosen, rejected = (t.source_reply, t.base_reply) if source_won else (t.base_reply, t.source_reply)
        if not chosen.strip() or not rejected.strip():
            continue  # an empty candidate loses in the builder and teaches nothing as a pair
        pairs.append(PreferencePair(pair_id=f"{t.dialogue_id}:{t.turn}", source=folder,
                                    language=bench.scenes[t.scene_id].language, role=t.character,
                                    prompt=chat_turns(prompt), chosen=chosen, rejected=rejected,
                                    chosen_side="source" if source_won else "base", sigma=t.sigma,
                                    margin=abs(t.sigma - TIE)))
    return pairs, ties


def _check(paths: Sequence[str], _request: TrainingRequest) -> list[str]:
    return [str(Path(b) / f) for b in paths for f in (*BENCH_FILES, "manifest.json") if (Path(b) / f).is_file()]


def _samples(paths: Sequence[str], _request: TrainingRequest) -> list[SftSample]:
    return [s for b in paths for s in bench_samples(b)]


def _pairs(paths: Sequence[str]) -> tuple[list[PreferencePair], int]:
    pairs: list[PreferencePair] = []
    ties = 0
    for b in paths:
        got, tied = preference_pairs(b)
        pairs, ties = pairs + got, ties + tied
    return pairs, ties


BENCHMARKS = TrainingSource(what="benchmark folders (rpbench furina build)", claims=lambda p, _r: is_bench(p),
                            check=_check, samples=_samples, pairs=_pairs,
                            templates=("furina/builder/test_turn", "furina/dims/"),
                            evaluate="rpbench.flows.modes.furina.evaluate:evaluate_side_by_side")
