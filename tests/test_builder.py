"""The benchmark builder with a scripted LLM: DWRS, director, selection, visibility, coverage, post-filters."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from pydantic import ValidationError

from rpbench.tasks.llm import ModelsConfig, NoReply, Reply
from rpbench.tasks.modes.furina.builder.build import build_benchmark, build_stats
from rpbench.tasks.modes.furina.builder.dwrs import DIMENSIONS, covered, dwrs_choose, dwrs_probabilities, dwrs_weights
from rpbench.tasks.modes.furina.builder.rules import rule_flags
from rpbench.tasks.modes.furina.builder.simulate import BuildConfig, Dialogue, simulate
from rpbench.tasks.modes.furina.builder.turns import DialogueGrade, SelectionVerdict
from rpbench.tasks.modes.furina.domain import Character, Scene

# -- DWRS ----------------------------------------------------------------------------------------


def test_dwrs_reproduces_the_papers_example():
    assert dwrs_weights([2, 5, 1]) == [4, 1, 5]
    assert dwrs_probabilities([2, 5, 1]) == pytest.approx([0.4, 0.1, 0.5])
    assert all(dwrs_choose([2, 5, 1], random.Random(s)) == 2 for s in range(50))


def test_dwrs_breaks_ties_uniformly():
    picks = Counter(dwrs_choose([0, 0, 0, 0, 0], random.Random(seed)) for seed in range(5000))
    assert set(picks) == set(range(5))
    assert all(900 <= n <= 1100 for n in picks.values()), picks  # 1000 expected each; 1100 is > 6 sigma away
    picks = Counter(dwrs_choose([3, 1, 1, 3, 2], random.Random(seed)) for seed in range(2000))
    assert set(picks) == {1, 2} and abs(picks[1] - picks[2]) < 200


@pytest.mark.parametrize("tau", [1, 3, 10])
def test_algorithm_1_stops_exactly_when_the_minimum_reaches_tau(tau):
    counts, rng, steps = [0] * 5, random.Random(0), 0
    while not covered(counts, tau):
        counts[dwrs_choose(counts, rng)] += 1
        steps += 1
    assert min(counts) == tau and steps == 5 * tau  # balanced: every pick goes to a least-used dimension


# -- a scripted world ------------------------------------------------------------------------------
TEST = Character.model_validate({
    "name": "Zero", "language": "en", "type": "synthesized",
    "attributes": [{"key": "persona", "value": "Calm and logical.", "visibility": "public"},
                   {"key": "background_private", "value": "ZERO-SECRET escaped the crèche", "visibility": "private"}],
})
SCENE = Scene.model_validate({
    "scene_id": "s1", "book_id": "b", "language": "en", "summary": "A storm.", "background": "A whaler at sea.",
    "situation": "Night, storm.",
    "original_dialogue": [{"speaker": "Starbuck", "text": "ORIGINAL-LINE the sea warns us."}],
    "characters": [
        {"name": "Starbuck", "motivation": "STARBUCK-MOTIVE I want to turn back.",
         "profile": [{"key": "persona", "value": "Careful first mate.", "visibility": "public"},
                     {"key": "hobbies", "value": "STARBUCK-SECRET carving", "visibility": "private"}]},
        {"name": "Stubb", "motivation": "STUBB-MOTIVE I want a laugh.",
         "profile": [{"key": "persona", "value": "Jolly second mate.", "visibility": "public"},
                     {"key": "speech_pattern", "value": "STUBB-SECRET rhymes", "visibility": "private"}]},
    ],
})


class Scripted:
    """Answers by the kind of call in each tag; records every prompt."""

    def __init__(self, sigmas=(2,), dims=("CR",), director=None, grade="high", director_fails=False):
        self.sigmas, self.dims = list(sigmas), list(dims)
        self.director = director
        self.grade, self.director_fails = grade, director_fails
        self.prompts: list[tuple[str, str]] = []
        self.requests: list = []
        self.n = Counter()
        self.config = ModelsConfig()

    def _ok(self, req, text, parsed=None):
        return Reply(req.role, "fake", text, parsed, 1, False)

    def model_of(self, role):
        return self.config.for_role(role).model

    async def run(self, req):
        kind = req.tag.rsplit(":", 1)[1]
        self.prompts.append((req.tag, req.messages[-1]["content"]))
        self.requests.append(req)
        self.n[kind] += 1
        if kind == "director":
            if self.director_fails:
                return NoReply(req.role, "fake", "??", "unparseable", 1)
            nxt = self.director(self.n[kind]) if self.director else "Starbuck"
            try:
                parsed = req.schema.model_validate({"reason": "r", "next": nxt})
            except ValidationError:  # off the schema, as the gateway ends it after its retries
                return NoReply(req.role, "fake", nxt, "unparseable", 3)
            return self._ok(req, nxt, parsed)
        if kind == "scene":
            return self._ok(req, f"(nods) scene line {self.n[kind]}")
        if kind in ("source", "base"):
            return self._ok(req, f"{kind} reply {self.n[kind]}")
        if kind == "judge":
            i = self.n[kind] - 1
            v = SelectionVerdict(reasoning="A is sharper", dimension=self.dims[i % len(self.dims)],
                                 sigma=self.sigmas[i % len(self.sigmas)])
            return self._ok(req, v.model_dump_json(), v)
        if kind == "grade":
            return self._ok(req, "{}", DialogueGrade(reason="fine", grade=self.grade))
        raise AssertionError(req.tag)


def _cfg(**kw):
    return BuildConfig(**{"tau": 1, "min_rounds": 4, "max_rounds": 6, "max_test_gap": 2, "wave_size": 2, **kw})


async def test_sigma_at_most_3_keeps_the_source_reply_and_above_keeps_base():
    gw = Scripted(sigmas=(3, 4))
    d = await simulate(gw, Dialogue("z-d0", TEST, SCENE, "source"), dict.fromkeys(DIMENSIONS, 0), _cfg(),
                       random.Random(0))
    tests = [t for t in d.turns if t.is_test]
    assert len(tests) >= 2
    assert tests[0].sigma == 3 and tests[0].text == tests[0].source_reply
    assert tests[1].sigma == 4 and tests[1].text == tests[1].base_reply


async def test_no_prompt_leaks_another_characters_private_attributes_motives_or_original():
    gw = Scripted(director=lambda n: ["Starbuck", "Stubb", "Zero"][n % 3])
    chars = [TEST]
    await build_benchmark(gw, chars, [SCENE], _cfg(tau=2, max_dialogues_per_character=2))
    secrets = {"Zero": ["ZERO-SECRET"], "Starbuck": ["STARBUCK-SECRET", "STARBUCK-MOTIVE"],
               "Stubb": ["STUBB-SECRET", "STUBB-MOTIVE"]}
    seen_kinds = Counter()
    for tag, prompt in gw.prompts:
        kind = tag.rsplit(":", 1)[1]
        seen_kinds[kind] += 1
        if kind in ("source", "base"):  # the test character's prompt
            me = "Zero"
            assert "ORIGINAL-LINE" not in prompt  # no original dialogue by default
        elif kind == "scene":
            me = "Starbuck" if "You are Starbuck." in prompt else "Stubb"
        else:
            continue
        for owner, values in secrets.items():
            if owner != me:
                for v in values:
                    assert v not in prompt, (tag, owner, v)
    assert seen_kinds["source"] > 0 and seen_kinds["scene"] > 0


async def test_director_failures_and_early_ends_use_a_recorded_fallback():
    gw = Scripted(director_fails=True)
    d = await simulate(gw, Dialogue("z-d0", TEST, SCENE, "source"), dict.fromkeys(DIMENSIONS, 0), _cfg(),
                       random.Random(0))
    assert d.failures["director"] >= 1 and all(t.director in ("fallback", "forced") for t in d.turns)
    # END is not on offer before min_rounds: a director that answers it anyway is off its schema, a counted
    # failure with a recorded fallback; from min_rounds on END ends the scene.
    gw = Scripted(director=lambda n: "END")
    d = await simulate(gw, Dialogue("z-d1", TEST, SCENE, "source"), dict.fromkeys(DIMENSIONS, 0), _cfg(),
                       random.Random(0))
    assert len(d.turns) == 4 and d.failures["director"] >= 1
    assert {t.director for t in d.turns} <= {"fallback", "forced"}
    offered = [r.schema.model_fields["next"].annotation.__args__ for r in gw.requests if r.role == "director"]
    assert all("END" not in o for o in offered[:-1]) and "END" in offered[-1]


async def test_build_stops_when_every_dimension_reaches_tau_and_items_are_source_wins():
    gw = Scripted(sigmas=(1, 2, 5), dims=DIMENSIONS)
    result = await build_benchmark(gw, [TEST], [SCENE], _cfg(tau=1, max_dialogues_per_character=10, wave_size=1))
    assert result.coverage["Zero"] and min(result.coverage["Zero"].values()) >= 1
    assert result.budget_exhausted == []
    assert len({t.dialogue_id for t in result.turns}) < 10  # stopped by coverage, not by budget
    assert result.items and all(i.sigma < 3 for i in result.items)
    assert all(i.test_utterance.startswith("source reply") for i in result.items)
    stats = build_stats(result, [TEST], [SCENE])
    assert stats[-1]["language"] == "all" and stats[-1]["items"] == len(result.items)


async def test_a_dialogue_not_graded_high_gives_no_items_and_gives_its_counts_back():
    gw = Scripted(sigmas=(1,), grade="moderate")
    result = await build_benchmark(gw, [TEST], [SCENE], _cfg(tau=1, max_dialogues_per_character=2))
    assert result.items == [] and result.budget_exhausted == ["Zero"]
    assert sum(result.coverage["Zero"].values()) == 0


def test_rule_flags():
    names = ["Zero", "Stubb"]
    assert rule_flags("Zero: hello there", "Zero", names, "en", []) == ["speaker_prefix"]
    assert "several_speakers" in rule_flags("hello\nStubb: and me", "Zero", names, "en", [])
    assert rule_flags("你好，我是零。", "Zero", names, "en", []) == ["wrong_language"]
    assert rule_flags("As an AI language model I cannot", "Zero", names, "en", []) == ["refusal"]
    assert rule_flags("(nods slowly. Fine.", "Zero", names, "en", []) == ["unbalanced_brackets"]
    assert rule_flags("We go on.", "Zero", names, "en", ["We  go on."]) == ["repeats_earlier_line"]
    assert rule_flags("", "Zero", names, "en", []) == ["empty"]
    assert rule_flags("(smiles) Fine, let us go.", "Zero", names, "en", []) == []


class Deterministic:
    """Answers that depend only on the prompt (as a seeded real model's would), after a random delay."""

    def __init__(self, delays: random.Random, max_delay: float):
        self.delays, self.max_delay = delays, max_delay
        self.config = ModelsConfig()

    def model_of(self, role):
        return self.config.for_role(role).model

    async def run(self, req):
        import asyncio
        import hashlib

        await asyncio.sleep(self.delays.random() * self.max_delay)
        h = int(hashlib.sha256((req.tag.rsplit(":", 1)[1] + req.messages[-1]["content"]).encode()).hexdigest(), 16)
        kind = req.tag.rsplit(":", 1)[1]
        if kind == "director":
            choices = [c for c in req.schema.model_fields["next"].annotation.__args__ if c != "END"]
            nxt = choices[h % len(choices)]
            return Reply(req.role, "fake", nxt, req.schema.model_validate({"reason": "r", "next": nxt}), 1, False)
        if kind == "judge":
            v = SelectionVerdict(reasoning="r", dimension=DIMENSIONS[h % 5], sigma=1 + h % 4)
            return Reply(req.role, "fake", "{}", v, 1, False)
        if kind == "grade":
            return Reply(req.role, "fake", "{}", DialogueGrade(reason="r", grade=("high", "moderate")[h % 2]), 1, False)
        return Reply(req.role, "fake", f"{kind} line {h % 1000}", None, 1, False)


async def test_the_same_inputs_and_seed_give_the_same_tables_whatever_the_timing():
    """Calls finish in a different order each run (random delays); dialogues, grades and items stay the same."""
    other = Character.model_validate({**TEST.model_dump(), "name": "Nil"})
    cfg = _cfg(tau=2, max_dialogues_per_character=6, wave_size=3)
    first = await build_benchmark(Deterministic(random.Random(1), 0.0), [TEST, other], [SCENE], cfg)
    second = await build_benchmark(Deterministic(random.Random(2), 0.01), [TEST, other], [SCENE], cfg)
    assert len(first.turns) > 10 and first.items
    assert first.turns == second.turns and first.grades == second.grades and first.items == second.items
    assert first.coverage == second.coverage
