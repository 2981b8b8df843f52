"""Character synthesis with a scripted LLM: every step, the refine loop, the originality check."""

from __future__ import annotations

import yaml

from rpbench.tasks.llm import Reply
from rpbench.tasks.modes.furina.character_files import load_characters, write_characters
from rpbench.tasks.modes.furina.characters.synthesis import (
    Cast,
    DialogueDraft,
    OriginalityIndex,
    Review,
    SceneDraft,
    Seeds,
    SynthesisConfig,
    Worldview,
    synthesize,
)
from rpbench.tasks.modes.furina.scene_files import load_scene_file, write_scene_file


def profile(name: str, persona: str = "A quiet cartographer of drowned streets.") -> dict:
    return {"name": name, "gender": "female", "age": "31", "appearance": "ink-stained hands", "persona": persona,
            "beliefs": "maps are promises", "memories": "the night the tide took her street",
            "formative_experiences": "apprenticed to a blind surveyor", "relationships": "rival of Tamsin Oakes",
            "hobbies": "collecting bells", "speech_pattern": "short, exact sentences",
            "background_public": "guild mapmaker", "background_private": "forged a map once"}


class Scripted:
    """Answers by the step named in each request's tag; counts review rounds."""

    def __init__(self):
        self.tags: list[str] = []
        self.reviews = 0

    async def run(self, req):
        self.tags.append(req.tag)
        step = req.tag.split(":")[1]
        if req.tag.endswith("review0") and step == "world":
            parsed = Review(problems=["the world copies an existing novel"], passes=False)
        elif "review" in req.tag:
            parsed = Review(problems=[], passes=True)
        elif step == "seeds":
            parsed = Seeds(themes=["sunken cities", "debt of memory"])
        elif step == "world":
            desc = "A drowned archipelago where debts are paid in memories."
            if "revise" in req.tag:
                desc = "An archipelago of bell towers above a drowned city, where debts are paid in memories."
            parsed = Worldview(name="Bellwater", description=desc)
        elif step.startswith("cast"):
            if step == "cast0":
                parsed = Cast(characters=[profile("Sherlok Holmes"), profile("Ysolde Marrow")])
            else:
                parsed = Cast(characters=[profile("Tamsin Oakes", "A bell-ringer who hears lies.")])
        elif step.startswith("profile"):
            parsed = None  # reviews only, handled above
        elif step == "scene":
            parsed = SceneDraft(situation="Night in the bell tower; the debt is due.",
                                participants=[{"name": "Ysolde Marrow", "motivation": "I want my map back."},
                                              {"name": "Tamsin Oakes",
                                               "motivation": "I want the truth about the forgery."}])
        elif step == "dialogue":
            parsed = DialogueDraft(lines=[{"speaker": "Ysolde Marrow", "text": "You rang for me."},
                                          {"speaker": "Tamsin Oakes", "text": "(pulls the rope) I rang for the truth."}])
        return Reply(req.role, "fake", "{}", parsed, 1, False)


async def test_synthesis_runs_every_step_refines_and_rejects_copies(tmp_path):
    index = OriginalityIndex([("Sherlock Holmes", "consulting detective in London, violin, Baker Street")])
    gateway = Scripted()
    steps: list[str] = []
    cast, scene, report = await synthesize(gateway, SynthesisConfig(n_characters=2), index, run_id="t",
                                           on_step=steps.append)
    assert [c.name for c in cast] == ["Ysolde Marrow", "Tamsin Oakes"]
    # Progress: one line per finished step, in order.
    assert [s.split(":")[0] for s in steps] == ["themes", "world", "character 1/2", "character 2/2",
                                                "scene with Ysolde Marrow, Tamsin Oakes", "dialogue of 2 lines"]
    assert report.rejected_as_unoriginal == ["Sherlok Holmes"]  # fuzzy name match with a known character
    assert report.refine_rounds["worldview"] == 1 and "t:world:revise0" in gateway.tags
    assert scene.background.startswith("An archipelago of bell towers")  # the revised world was kept
    assert all(c.type == "synthesized" for c in cast)
    private = {a.key for a in cast[0].attributes if a.visibility == "private"}
    assert {"memories", "relationships", "background_private", "speech_pattern"} <= private

    chars_path = write_characters(tmp_path / "synth.yaml", cast)
    assert load_characters(chars_path) == cast  # `rpbench furina characters check` accepts it
    scenes_path = write_scene_file(tmp_path / "synth.scenes.json", [scene])
    (loaded,) = load_scene_file(scenes_path)  # `rpbench furina pool add` accepts it
    assert loaded.source == "synthesized" and [c.name for c in loaded.characters] == ["Ysolde Marrow", "Tamsin Oakes"]
    assert yaml.safe_load(chars_path.read_text())[0]["type"] == "synthesized"


def test_bm25_flags_a_profile_that_copies_a_known_one():
    known = [("Ahab", "captain of the whaler pequod obsessed with the white whale that took his leg"),
             ("Alice", "a curious girl who fell down a rabbit hole into wonderland")]
    index = OriginalityIndex(known)
    assert index.too_close("Captain Brand", "captain of the whaler pequod obsessed with the white whale") == "Ahab"
    assert index.too_close("Mira Vell", "a glassblower who trades songs for salt in a desert market") is None


def test_a_synthesis_whose_worlds_all_fail_ends_failed_not_completed(loopback, tmp_path):
    """Every reply unusable (the loopback server's default answer fits no synthesis step): the run writes an
    empty characters file, says which world failed, and exits 3 (Failed), not 0 with nothing made."""
    from tests.helpers import TEST_KEY_ENV, loopback_models_file, rpbench

    models = loopback_models_file(tmp_path / "models.toml", loopback)
    ran = rpbench("furina", "characters", "synthesize", "--n", "2", "--max-refine", "0", "--out",
                  str(tmp_path / "c.yaml"), "--run-dir", str(tmp_path / "run"), "--models-file", str(models),
                  "--cache", str(tmp_path / "calls.sqlite"),
                  env={TEST_KEY_ENV: "sk-synth-test", "PREFECT_HOME": str(tmp_path / "prefect")})
    assert ran.returncode == 3, ran.stdout[-2000:] + ran.stderr[-2000:]
    assert "1 of 1 worlds failed (100%, more than 10%)" in ran.stderr
    assert "failed: en-2-0:" in ran.stderr and yaml.safe_load((tmp_path / "c.yaml").read_text()) == []
