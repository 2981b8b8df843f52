"""CoSER's given-circumstance acting: released simulations judged by a critic that returns GPT-4o's released
critiques reproduce CoSER's released scores exactly, with no actor call; a live loopback run of the released
test set shows every agent in its requests, counts every next speaker drawn at random, and repeats no call
when run again."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from rpbench.flows.modes.coser.settings import CoserSettings
from rpbench.samples import sample_path
from rpbench.storage.tables import read_records
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.modes.coser.acting import decide, named_next
from rpbench.tasks.modes.coser.loader import load_circumstances, read_simulations
from rpbench.tasks.modes.coser.records import COLUMNS, DIMENSIONS, Flaw
from rpbench.tasks.modes.coser.scoring import dimension_score, without_thoughts
from rpbench.tasks.modes.coser.tables import CIRCUMSTANCE_SCORES, CRITIQUES, MESSAGES
from tests.helpers import TEST_KEY_ENV, loopback_models_file, released, rpbench

pytestmark = pytest.mark.usefixtures("harness")
RELEASED = json.loads((Path(__file__).parent / "data" / "coser_released_critiques.json").read_text())


def test_the_length_corrected_deduction_is_coser_s():
    # King Lear-17-0's Storyline Consistency as released: severities 2+3+2+3 over 11 actor turns -> 66.5.
    flaws = [Flaw(instance="", type="Storyline Consistency", severity=s) for s in (2, 3, 2, 3)]
    assert dimension_score(flaws, 11) == 66.5
    assert dimension_score(flaws * 10, 11) == 0.0 and dimension_score([], 40) == 100.0  # kept within 0-100
    assert without_thoughts("[I must not show it.] (smiles)\n\n  Fine, thank you.  ") == "(smiles)\nFine, thank you."


def test_a_next_speaker_that_cannot_be_followed_is_drawn_and_says_why():
    c = load_circumstances([str(sample_path("coser", "example.json"))])[1]
    rng = random.Random(0)
    assert named_next("The Fool spoke last.\nNext Speaker: Oskar Lind.") == "Oskar Lind"
    # Bold markers after the colon: the release's own pattern reads ":" there, so the next speaker is drawn.
    assert named_next("The Fool spoke last.\n**Next Speaker:** Oskar Lind.") == ":"
    assert decide(c, "Oskar Lind", "Ines Varga", 0, rng) == ("Oskar Lind", "model")
    assert decide(c, "<END CHAT>", "Ines Varga", 5, rng) == (None, "model")
    for said, current, round_, kind in [("random", "Ines Varga", 2, "random"), ("Narrator", "Ines Varga", 2,
                                        "off-list"), ("Ines Varga", "Ines Varga", 2, "same-speaker"),
                                       ("<END CHAT>", "Ines Varga", 4, "early-end")]:
        chosen, how = decide(c, said, current, round_, rng)
        assert how == kind and chosen in {"Oskar Lind", "Environment"}  # the main characters and the Environment


def test_every_key_character_of_the_released_test_set_gets_its_thought_and_the_length_ask():
    """The released test set writes each key character's inner thought as ``thought`` (main.py reads
    ``motivation``, which it does not have): every actor is still given its own, and the release's length ask."""
    from rpbench.tasks.modes.coser import release
    from rpbench.tasks.modes.coser.acting import agents, prompt_draws

    data = released("coser/test/test_set.json")
    raw = json.loads(data.read_text())
    circumstances = load_circumstances([str(data)])
    draws = prompt_draws(circumstances)
    assert len(circumstances) == 200
    given = 0
    shape = release.character_prompt()
    for record, c in zip(raw, circumstances, strict=True):
        cast = agents(c, draws[c.circumstance_id], "gpt-4o", "gpt-4o", "gpt-4o-mini")
        for key in record["key_characters"]:
            if key["name"] in cast:  # a key character who speaks in the scene
                assert key["thought"].strip() in cast[key["name"]].messages[0]["content"], c.circumstance_id
                given += 1
        for name in c.speaking:
            if name != "Environment":
                system = cast[name].messages[0]["content"]
                assert system.endswith(release.length_ask())
                assert shape.output_formats[(False, True)] in system  # asked for [thoughts], with an example
    assert given > 300
    first = circumstances[0]
    actor = next(n for n in first.speaking if n != "Environment")
    quiet = agents(first, draws[first.circumstance_id], "gpt-4o", "gpt-4o", "gpt-4o", thinks=False)[actor]
    assert shape.output_formats[(True, False)] in quiet.messages[0]["content"]
    assert shape.output_formats[(False, False)] not in quiet.messages[0]["content"]


def test_a_key_character_with_no_thought_is_an_error_and_an_empty_one_is_counted(tmp_path):
    records = json.loads(sample_path("coser", "example.json").read_text())
    del records[1]["key_characters"][0]["motivation"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(records))
    ran = rpbench("coser", "run", "--data", str(bad), "--model", "coser-actor", "--out", str(tmp_path / "o"))
    assert ran.returncode == 2 and "bad.json: record 1: field 'key_characters.0.thought': missing" in ran.stderr
    records[1]["key_characters"][0]["thought"] = ""
    bad.write_text(json.dumps(records))
    c = load_circumstances([str(bad)])[1]
    assert c.motivations[0].text == ""
    from rpbench.flows.modes.coser.checks import check_run

    got = check_run(CoserSettings(data=[str(bad)], models=["coser-actor"], out=str(tmp_path / "o")))
    assert got.empty_thoughts == 1


def test_a_chinese_circumstance_is_asked_in_the_release_s_words_too(tmp_path):
    """CoSER's release has one set of prompts, in English, for every book: a Chinese circumstance gets them."""
    from rpbench.tasks.modes.coser import release
    from rpbench.tasks.modes.coser.acting import agents, prompt_draws
    from rpbench.tasks.modes.coser.critic import critic_prompt

    records = json.loads(sample_path("coser", "example.json").read_text())
    zh = records[0]
    zh["scenario"] = "黄昏时分，盐滩边缘的驿站。马车围成一圈，水车上只点着一盏灯。"
    zh["dialogues"] = [{"character": "Mara", "message": "[别慌。] (敲了敲空桶) 叔叔，水去哪儿了？"},
                       {"character": "Teodor", "message": "卖给那个商人了。我们剩下的够走六天。"}]
    path = tmp_path / "zh.json"
    path.write_text(json.dumps([zh], ensure_ascii=False), encoding="utf-8")
    c = load_circumstances([str(path)])[0]
    assert c.language == "zh" and load_circumstances([str(sample_path("coser", "example.json"))])[0].language == "en"
    cast = agents(c, prompt_draws([c])[c.circumstance_id], "gpt-4o", "gpt-4o", "gpt-4o-mini")
    assert c.scenario in cast["Mara"].messages[0]["content"]
    assert cast["Mara"].messages[1]["content"] == release.conversation_opening()
    critic = critic_prompt(c, "Anthropomorphism", 0)
    assert release.critic_prompts()["dimension_details"]["Anthropomorphism"]["dimension_criteria"] in critic


def _critic_replaying_the_release(circumstances):
    by_scenario = {c.scenario: c.circumstance_id for c in circumstances}

    def respond(body: dict) -> str:
        system = body["messages"][0]["content"]
        dimension = next(d for d in DIMENSIONS if f"### {d}\n" in system)  # the dimension's criteria
        case = next(cid for scenario, cid in by_scenario.items() if scenario in system)
        flaws = [{"instance": "(as released)", **f} for f in RELEASED["cases"][case]["dimensions"][dimension]["flaws"]]
        return json.dumps({dimension: {"flaws": flaws}})

    return respond


def test_released_simulations_and_critiques_give_coser_s_released_scores(loopback, tmp_path, monkeypatch):
    from rpbench.flows.modes.coser.flows import coser

    data = released("coser/test/example_test_set.json")
    simulations = released("coser/simulation/test_set_gpt-4o.json")
    circumstances = load_circumstances([str(data)])
    # The profiles each circumstance's characters get are built as CoSER built them for this simulation.
    for raw, c in zip(json.loads(simulations.read_text()), circumstances, strict=True):
        assert {p.speaker: p.text for p in c.profiles} == raw["involved_character_profiles"]
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = _critic_replaying_the_release(circumstances)
    models = loopback_models_file(tmp_path / "models.toml", loopback)
    out = tmp_path / "run"
    manifest = coser(CoserSettings(data=[str(data)], answers=[f"gpt-4o={simulations}"], out=str(out),
                                   models_file=str(models), cache=str(tmp_path / "c.sqlite"), resamples=100))
    assert len(loopback.requests) == 3 * 4  # one critic call per dimension; no actor, environment or predictor
    rows = {r.item_id: r for r in read_records(out / CIRCUMSTANCE_SCORES.filename, CIRCUMSTANCE_SCORES)}
    assert set(rows) == set(RELEASED["cases"])
    for case, wanted in RELEASED["cases"].items():
        got = {d: getattr(rows[case], COLUMNS[d]) for d in DIMENSIONS}
        assert got == {d: wanted["dimensions"][d]["score"] for d in DIMENSIONS}, case
        assert rows[case].score == wanted["score"], case
    board = manifest["coser"]["leaderboard"][0]
    assert board["model"] == "gpt-4o" and board["n"] == 3
    assert board["avg"] == pytest.approx(RELEASED["scores"]["avg"], abs=1e-9)
    for d in DIMENSIONS:
        assert board[d] == pytest.approx(RELEASED["scores"][d], abs=1e-9), d
    # BLEU and ROUGE-L as CoSER computes them give CoSER's released means: 0.0252748 and 0.0839 (the latter through
    # rouge-chinese's Rouge, what CoSER's `from rouge import Rouge` gave where its figures were made; the rouge
    # package itself scores higher).
    assert board["BLEU"] == pytest.approx(RELEASED["scores"]["bleu"], abs=1e-9)
    assert board["BLEU"] == pytest.approx(0.0252748, abs=1e-6)
    assert board["ROUGE-L"] == pytest.approx(RELEASED["scores"]["rouge_l"], abs=1e-9)
    assert read_simulations(simulations)  # the released layout reads as it is
    report = (out / "report.md").read_text()
    assert "length" not in report or "0.3 x" in report


def _actors(body: dict) -> str:
    """The agents of a scene, told apart by the model each role is bound to (tests' models file)."""
    system = body["messages"][0]["content"]
    model = body["model"].rsplit("/", 1)[-1]
    if model == "predictor":
        n = sum(m["role"] == "assistant" for m in body["messages"])
        if n % 3 == 2:
            return "Hard to say.\nNext Speaker: The Narrator"  # off the list: drawn at random, counted
        names = [x for x in re.findall(r"'([^']+)'", re.search(r"\[[^\]]*\]", system)[0]) if x != "Environment"]
        if n >= 6:
            return "It has run its course.\nNext Speaker: <END CHAT>"
        return f"Someone else should answer.\nNext Speaker: {names[n % len(names)]}"
    if model == "environment":
        return "Rain needles the windows; somewhere below, a door bangs."
    if model == "critic":
        dimension = next(d for d in DIMENSIONS if f"### {d}\n" in system)
        return json.dumps({dimension: {"flaws": [{"instance": "a stiff line", "type": "Flow & Progression",
                                                  "severity": 2}]}})
    return "[I weigh the moment.] (looks up) I hear you, and I have my answer."


ROLES = ('[roles.coser-environment]\nmodel = "openai/environment"\n[roles.coser-next-speaker]\nmodel = '
         '"openai/predictor"\n[roles.coser-critic]\nmodel = "openai/critic"\n')


def test_a_live_run_of_the_released_test_set_shows_every_agent_and_counts_every_draw(loopback, tmp_path,
                                                                                    monkeypatch):
    data = released("coser/test/test_set.json")
    first = load_circumstances([str(data)])[:2]
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = _actors
    models = loopback_models_file(tmp_path / "models.toml", loopback, rest=ROLES)
    args = ["coser", "run", "--data", str(data), "--model", "coser-actor", "--limit", "2", "--out",
            str(tmp_path / "run"), "--models-file", str(models), "--cache", str(tmp_path / "c.sqlite"),
            "--resamples", "50"]
    ran = rpbench(*args)
    assert ran.returncode == 0, ran.stderr[-2000:]
    actors = [b["messages"][0]["content"] for b in loopback.requests if b["model"].endswith("loopback")]
    for c in first:  # every speaking character of each circumstance was played
        for name in [s for s in c.speaking if s != "Environment"]:
            assert any(s.split("\n", 1)[0].count(name) and c.book in s.split("\n", 1)[0] for s in actors), name
    assert any(b["model"].endswith("environment") for b in loopback.requests)
    assert any(b["model"].endswith("predictor") for b in loopback.requests)
    messages = read_records(tmp_path / "run" / MESSAGES.filename, MESSAGES)
    said_off_list = sum(m.role == "NSP" and m.content == "The Narrator" for m in messages)
    off_list = sum(m.role == "NSP" and m.decided_by == "off-list" for m in messages)
    assert said_off_list > 0 and off_list == said_off_list
    drawn = sum(m.role == "NSP" and m.decided_by not in ("model", "original") for m in messages)
    assert f"next speakers drawn={drawn}" in ran.stdout, ran.stdout
    assert "Next speakers drawn at random" in (tmp_path / "run" / "report.md").read_text()
    critiques = read_records(tmp_path / "run" / CRITIQUES.filename, CRITIQUES)
    assert len(critiques) == 2 * 4 and all(c.status == "ok" for c in critiques)
    sent = len(loopback.requests)
    again = rpbench(*args)
    assert again.returncode == 0 and len(loopback.requests) == sent  # nothing repeated
    _annotation_round_trip(tmp_path / "run")


def _annotation_round_trip(run: Path) -> None:
    """The run's scenes as Label Studio tasks of kind `coser`, its labeling config, and an answer read back."""
    import xml.etree.ElementTree as ET

    from rpbench.flows.kit.front.registry import annotation_kinds, load_ref

    kind = load_ref(annotation_kinds()["coser"][1])
    tasks = kind.tasks(run, 5, 0)
    assert len(tasks) == 2 and {t["rpbench_key"].split("|")[2] for t in tasks} == {"coser"}
    assert all(t["scene"] and "NSP:" not in t["scene"] and t["original"] for t in tasks)  # no predictor lines
    config = ET.fromstring(kind.config("en"))
    assert [c.get("name") for c in config.iter("Choices")] == list(COLUMNS.values())
    answer = [{"from_name": "anthropomorphism", "value": {"choices": ["4"]}},
              {"from_name": "storyline_quality", "value": {"choices": ["unsure"]}}]
    status, row = kind.read(tasks[0], answer)
    assert status == "ok" and row["anthropomorphism"] == 4 and row["storyline_quality"] is None
    assert kind.read(tasks[0], [])[0] == "unsure"


def test_bad_input_is_one_line_naming_the_record_and_field(tmp_path):
    bad = json.loads(sample_path("coser", "example.json").read_text())
    del bad[1]["dialogues"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    ran = rpbench("coser", "run", "--data", str(path), "--model", "coser-actor", "--out", str(tmp_path / "o"))
    assert ran.returncode == 2 and "bad.json: record 1: field 'dialogues': missing" in ran.stderr
    assert "Traceback" not in ran.stderr
    # What becomes an actor's profile must be text, never a number or an object rendered by Python.
    for change, field in ((lambda r: r["character_profiles"].update(Mara={"age": 30}), "character_profiles.Mara"),
                          (lambda r: r["plot"]["key_characters"].__setitem__(1, None), "plot.key_characters.1"),
                          (lambda r: r["plot"]["key_characters"][0].update(description=3.5),
                           "plot.key_characters.0.description")):
        records = json.loads(sample_path("coser", "example.json").read_text())
        change(records[0])
        path.write_text(json.dumps(records))
        with pytest.raises(InputError, match=f"bad.json: record 0: field '{re.escape(field)}': expected"):
            load_circumstances([str(path)])
    wrong = rpbench("coser", "run", "--data", str(sample_path("coser", "example.json")), "--model", "coser-acter",
                    "--out", str(tmp_path / "o"))
    assert wrong.returncode == 2 and "unknown model 'coser-acter'" in wrong.stderr


def test_a_sample_is_titled_by_its_place_in_the_book_and_its_speakers():
    """The viewer's list: the circumstance id repeats the book (a column of its own), so a sample is named by
    its plot and conversation numbers and who speaks in it."""
    from rpbench.tasks.modes.coser.records import Message
    from rpbench.tasks.modes.coser.samples import samples

    c = load_circumstances([str(sample_path("coser", "example.json"))])[0]
    said = Message(circumstance_id=c.circumstance_id, model="m", index=0, role=c.speaking[0], content="Hello.")
    (sample,) = samples([c], [said], [])
    people = [p for p in c.speaking if p != "Environment"]
    assert sample.title.startswith(f"plot {c.i_p}, conversation {c.i_c}: {people[0]}")
    assert c.book not in sample.title and "Environment" not in sample.title
    assert sample.facets["book"] == c.book
