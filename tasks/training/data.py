"""Training data from what rpbench already has: RoleBench-layout files (RoleLLM's own, or Context-Instruct's
output) and built FURINA benchmarks.

A RoleBench row gives one sample per reference answer, prompted as RoleGPT prompts a role zero-shot (the
role's description as the system message, the question as the user turn): RoleLLM's RoCIT. A benchmark's
accepted test turn gives one sample prompted exactly as the test character was prompted when the builder
wrote it (profile, scene background, dialogue so far); its judged pair of candidates gives a preference pair.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from rpbench.storage.characters import load_characters
from rpbench.storage.scenes import read_scenes
from rpbench.storage.tables import read_records
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.core.records import Character, Line, Scene
from rpbench.tasks.modes.furina.builder.turns import history_lines, test_turn_messages
from rpbench.tasks.modes.furina.characters.profile import full_profile
from rpbench.tasks.modes.furina.evaluation.bench import shows_scene_extras
from rpbench.tasks.modes.furina.records import DialogueTurn
from rpbench.tasks.modes.furina.tables import DIALOGUES
from rpbench.tasks.modes.rolellm.profiles import discover_profiles, load_profiles, profile_files
from rpbench.tasks.modes.rolellm.records import RoleProfile
from rpbench.tasks.modes.rolellm.rolebench import data_files, read_file
from rpbench.tasks.modes.rolellm.rolegpt import Retriever, messages
from rpbench.tasks.training.records import ChatTurn, PreferencePair, SampleKind, SftSample

BENCH_FILES = ("dialogues.parquet", "scenes.parquet", "characters.yaml")
KINDS: tuple[SampleKind, ...] = ("general", "role_specific", "dialogue")
TIE = 3  # sigma 3: the judge preferred neither reply
T = TypeVar("T", SftSample, PreferencePair)


def is_bench(path: str | Path) -> bool:
    """A folder written by ``rpbench build`` (its dialogues, scenes and characters)."""
    return Path(path).is_dir() and (Path(path) / "dialogues.parquet").is_file()


def _turns(prompt: Sequence[Mapping[str, str]]) -> list[ChatTurn]:
    return [ChatTurn(role=m["role"], content=m["content"]) for m in prompt]  # type: ignore[arg-type]


# -- RoleBench layout ---------------------------------------------------------------------------------------
def rolebench_samples(paths: Sequence[str], parts: Sequence[str], profiles: Sequence[str]) -> list[SftSample]:
    """One sample per reference answer of every row in ``paths`` (files, or folders read for ``parts``)."""
    files = data_files(paths, parts)
    found = profile_files(profiles) if profiles else discover_profiles(paths)
    if not found:
        raise InputError("--profiles: none given, and no profiles-*/desc.json beside the RoleBench data (the "
                         "role descriptions make the system prompt each sample is trained with)")
    known: dict[str, RoleProfile] = load_profiles(found)
    retriever = Retriever(known)
    out: list[SftSample] = []
    for f in files:
        for row in read_file(Path(f)):
            profile = known.get(row.role)
            if profile is None:
                raise InputError(f"{f}: row {row.row_id}: field 'role': no profile for role '{row.role}' (give it "
                                 "with --profiles)")
            prompt = messages(profile, row.question, "zsp", retriever, language=row.language)
            for k, reference in enumerate(row.generated):
                if not reference.strip():
                    raise InputError(f"{f}: row {row.row_id}: field 'generated': reference {k + 1} is empty")
                out.append(SftSample(sample_id=f"{row.row_id}#{k}", source=f, kind=row.kind, language=row.language,
                                     role=row.role, prompt=_turns(prompt), response=reference,
                                     system=prompt[0]["content"], input=row.question))
    return out


# -- a built FURINA benchmark -------------------------------------------------------------------------------
class _Bench:
    def __init__(self, folder: Path) -> None:
        for name in BENCH_FILES:
            if not (folder / name).is_file():
                raise InputError(f"{folder}: no {name} (a benchmark folder, as rpbench build writes it)")
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
                      language=bench.scenes[t.scene_id].language, role=t.character, prompt=_turns(prompt),
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
                                    prompt=_turns(prompt), chosen=chosen, rejected=rejected,
                                    chosen_side="source" if source_won else "base", sigma=t.sigma,
                                    margin=abs(t.sigma - TIE)))
    return pairs, ties


# -- mixing and holding out ---------------------------------------------------------------------------------
def parse_mix(specs: Sequence[str]) -> dict[str, float]:
    """``kind=weight`` options (general=1, role_specific=2, dialogue=0.5) as weights by kind."""
    out: dict[str, float] = {}
    for spec in specs:
        kind, sep, value = spec.partition("=")
        if not sep or kind not in KINDS:
            raise InputError(f"--mix: '{spec}' is not kind=weight with kind one of {', '.join(KINDS)}")
        try:
            weight = float(value)
        except ValueError:
            raise InputError(f"--mix: '{spec}': the weight is not a number") from None
        if weight < 0:
            raise InputError(f"--mix: '{spec}': a weight cannot be negative")
        out[kind] = weight
    return out


def mix(samples: Sequence[SftSample], weights: Mapping[str, float], seed: int) -> list[SftSample]:
    """Downsample kinds to the ratio of ``weights`` (the largest set that keeps it, no sample twice); kinds
    without a weight are kept whole, weight 0 drops a kind. Which samples stay is seeded."""
    by_kind: dict[str, list[SftSample]] = defaultdict(list)
    for s in samples:
        by_kind[s.kind].append(s)
    weighted = {k: w for k, w in weights.items() if w > 0 and by_kind.get(k)}
    absent = sorted(k for k, w in weights.items() if w > 0 and not by_kind.get(k))
    if absent:
        raise InputError(f"--mix: no {absent[0]} samples in the data to mix")
    unit = min((len(by_kind[k]) / w for k, w in weighted.items()), default=0.0)
    rng = random.Random(seed)
    out: list[SftSample] = []
    for kind in sorted(by_kind):
        group = sorted(by_kind[kind], key=lambda s: s.sample_id)
        if kind in weights:
            keep = round(unit * weights[kind]) if kind in weighted else 0
            group = sorted(rng.sample(group, min(keep, len(group))), key=lambda s: s.sample_id)
        out += group
    return out


def hold_out(rows: Sequence[T], share: float, seed: int) -> list[T]:
    """The same rows with a seeded ``share`` of them (at least one when there are two or more) marked
    held out: their loss is measured, never trained on."""
    if share <= 0 or len(rows) < 2:
        return list(rows)
    ids = sorted(r.pair_id if isinstance(r, PreferencePair) else r.sample_id for r in rows)
    n = min(len(ids) - 1, max(1, round(share * len(ids))))
    held = set(random.Random(seed).sample(ids, n))
    return [r.model_copy(update={"split": "heldout"})
            if (r.pair_id if isinstance(r, PreferencePair) else r.sample_id) in held else r for r in rows]


def main_language(rows: Sequence[SftSample] | Sequence[PreferencePair]) -> str:
    """The language most rows are in (the Alpaca template's headings follow it)."""
    counts: dict[str, int] = defaultdict(int)
    for r in rows:
        counts[r.language] += 1
    return max(sorted(counts), key=lambda k: counts[k]) if counts else "en"
