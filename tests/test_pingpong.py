"""PingPong: settings files in both layouts, the scoring formulas, the judge's reply shape, flows end to end
against the loopback server (run, rerun, rejudge, v1), agreement with people, and the local model."""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rpbench.flows.modes.pingpong.settings import PingPongSettings, RejudgeSettings
from rpbench.samples import sample_path
from rpbench.storage.tables import read_records
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.modes.pingpong.agreement import agreement, load_ratings
from rpbench.tasks.modes.pingpong.cards import load_settings
from rpbench.tasks.modes.pingpong.judging import verdicts_schema
from rpbench.tasks.modes.pingpong.records import Grades
from rpbench.tasks.modes.pingpong.scoring import judge_score, length_factor, length_factors, pool_judges, rank_groups
from rpbench.tasks.modes.pingpong.tables import CONVERSATION_SCORES, CONVERSATIONS, TURN_JUDGMENTS
from tests.helpers import CLI, TEST_KEY_ENV, rpbench

SETTINGS = sample_path("pingpong", "settings.yaml")


def grades(ic: int, ent: int, flu: int, refusal: bool = False) -> Grades:
    return Grades(is_refusal_explanation="", is_refusal=refusal, in_character_explanation="", in_character_score=ic,
                  entertaining_explanation="", entertaining_score=ent, fluency_explanation="", fluency_score=flu)


# -- formulas ----------------------------------------------------------------------------------------
def test_length_normalisation_matches_the_papers_russian_table():
    # Median ~316 characters: Sonnet (388 chars, Agg 4.68) -> 4.62; Opus (753, 4.62) -> ~4.43; Gemini Pro 1.5
    # (213, shorter than the median) keeps its score.
    assert round(4.68 * length_factor(388, 316), 2) == 4.62
    assert round(4.62 * length_factor(753, 316), 2) == 4.43
    assert length_factor(213, 316) == 1.0
    assert length_factor(1e9, 316) == pytest.approx(0.93, abs=1e-6)  # the penalty never passes 7%
    assert length_factor(1e9, 316, adjustment=0.5) == 0.93
    factors = length_factors({"a": 100.0, "b": 200.0, "c": 400.0})  # median 200
    assert factors["a"] == factors["b"] == 1.0 and factors["c"] == pytest.approx(1 + (0.5 - 1) * 0.07)


def test_length_factors_come_from_each_languages_own_median():
    from rpbench.tasks.modes.pingpong.analysis import with_length_factors
    from rpbench.tasks.modes.pingpong.records import ConversationScore

    def row(model: str, lang: str, length: float) -> ConversationScore:
        return ConversationScore(model=model, conversation_id=f"{lang}-c", language=lang, character="x",
                                 situation_id="s", judges=["j"], refusal=False, in_character=4.0, entertaining=4.0,
                                 fluency=4.0, final=4.0, ln_score=None, length=length, messages=2)

    rows = [row("a", "en", 100), row("b", "en", 200), row("c", "en", 300),
            row("a", "ru", 1000), row("b", "ru", 100), row("c", "ru", 100)]
    scored, factors = with_length_factors(rows)
    # English median 200: c is long there. Russian median 100: a is. Pooled over both languages (a 550, b 150,
    # c 200: median 200) c would not be penalised at all, and a would be in English too.
    assert factors["en"]["c"] < 1 and factors["en"]["a"] == factors["en"]["b"] == 1.0
    assert factors["ru"]["a"] < 1 and factors["ru"]["b"] == factors["ru"]["c"] == 1.0
    by = {(r.model, r.language): r.ln_score for r in scored}
    assert by[("c", "en")] == pytest.approx(4.0 * factors["en"]["c"]) and by[("a", "en")] == 4.0


def test_judge_score_is_turn_means_then_criteria_weighted_as_pingpong_and_refusal_is_any_turn():
    s = judge_score([grades(5, 3, 4), grades(3, 3, 2)])
    assert s.criteria == {"in_character": 4.0, "entertaining": 3.0, "fluency": 3.0}
    # build_table_v2.py: 0.333 x 4 + 0.333 x 3 + 0.333 x 3, 0.1% below the mean; --exact-mean gives the mean.
    assert s.final == pytest.approx(0.333 * 10) and not s.refusal
    assert judge_score([grades(5, 3, 4), grades(3, 3, 2)], exact_mean=True).final == pytest.approx(10 / 3)
    assert judge_score([grades(5, 5, 5), grades(1, 1, 1, refusal=True)]).refusal
    weighted = judge_score([grades(5, 1, 1)], {"in_character": 0.5, "entertaining": 0.25, "fluency": 0.25})
    assert weighted.final == pytest.approx(3.0)


def test_v1_length_normalisation_is_pingpongs_v1_rule():
    from rpbench.tasks.modes.pingpong.scoring import v1_length_shifts

    # build_table_v1.py: final + (max - min of finals) x min(0, tanh((median - length) / (3 x median))).
    shifts = v1_length_shifts({"a": 100.0, "b": 200.0, "c": 400.0}, {"a": 6.0, "b": 7.0, "c": 8.5})
    assert shifts["a"] == 0.0 and shifts["b"] == 0.0
    assert shifts["c"] == pytest.approx(2.5 * math.tanh((200 - 400) / 600))


def test_judges_are_averaged_and_a_refusing_judge_is_left_out():
    a, b = judge_score([grades(5, 4, 3)]), judge_score([grades(3, 2, 1)])
    both = pool_judges({"a": a, "b": b})
    assert both.final == pytest.approx((a.final + b.final) / 2) and both.refused_by == []
    assert both.criteria["in_character"] == 4.0
    refusing = judge_score([grades(1, 1, 1, refusal=True)])
    one = pool_judges({"a": a, "r": refusing})
    assert one.final == a.final and one.refused_by == ["r"]
    none = pool_judges({"r": refusing})
    assert none.final is None and none.criteria is None
    assert pool_judges({"a": a, "b": b}, {"a": 3.0}).final == pytest.approx((3 * a.final + b.final) / 4)


def test_rank_groups_start_a_new_rank_past_the_gap():
    assert rank_groups([4.65, 4.63, 4.60, 4.56, 4.50]) == [1, 1, 1, 4, 4]


def test_the_judge_reply_has_one_verdict_per_turn_with_constant_turn_numbers():
    schema = verdicts_schema(3)
    entry = grades(3, 3, 3).model_dump()
    ok = schema.model_validate({"scores": [{**entry, "turn": k} for k in (1, 2, 3)]})
    assert [v.turn for v in ok.scores] == [1, 2, 3]
    for bad in ([{**entry, "turn": k} for k in (1, 3, 2)], [{**entry, "turn": k} for k in (1, 2)]):
        with pytest.raises(ValueError):
            schema.model_validate({"scores": bad})
    prefix = schema.model_json_schema()["properties"]["scores"]
    assert len(prefix["prefixItems"]) == 3


# -- settings files ----------------------------------------------------------------------------------
PINGPONG_LAYOUT = {
    "en": {"version": 2, "character_prompt_path": "templates/en_character.jinja",
           "interrogator_user_prompt_path": "x", "judge_system_prompt_path": "y",
           "characters": [
               {"char_name": "Abe", "system_prompt": "A tired night guard.", "example_prompt": "User: hi\nAbe: eh",
                "summary": "a night guard", "tags": ["human"], "inital_message": "*yawns*"},
               {"char_name": "Bo", "system_prompt": "A robot.", "summary": "a robot", "initial_message": ""},
               {"char_name": "Cy", "system_prompt": "A cat.", "summary": "a cat", "greeting": "Meow."}],
           "situations": [{"text": "Ask about their life.", "tags": ["bio"], "num_turns": 8},
                          {"text": "Say ok only.", "tags": ["typical_user"]}]},
    "ru": {"characters": [{"char_name": "Юля", "system_prompt": "Студентка.", "summary": "студентка"}],
           "situations": [{"text": "Спроси о жизни.", "tags": ["bio"], "num_turns": 2}]},
}


def test_pingpongs_own_layout_is_read_unchanged(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(PINGPONG_LAYOUT, ensure_ascii=False))
    s = load_settings(path)
    assert s.languages == ["en", "ru"]
    abe, bo, cy = s.cards["en"]
    # PingPong's code reads a greeting from initial_message only: the other spellings are not sent, and listed.
    assert (abe.greeting, bo.greeting, cy.greeting) == (None, None, None)
    assert s.unread_greetings == ("en/Abe", "en/Cy")
    every = load_settings(path, any_greeting=True)
    assert [c.greeting for c in every.cards["en"]] == ["*yawns*", None, "Meow."] and not every.unread_greetings
    assert abe.example_dialogue == "User: hi\nAbe: eh"
    assert [(x.situation_id, x.num_turns) for x in s.situations["en"]] == [("bio", 8), ("typical_user", 4)]
    assert len(s.conversations()) == 3 * 2 + 1


@pytest.mark.parametrize("change, message", [
    (lambda d: d["en"]["characters"][1].update(colour="red"), "character 'Bo': unknown field 'colour'"),
    (lambda d: d["en"]["characters"][0].pop("summary"), "character 'Abe': field 'summary': missing"),
    (lambda d: d["en"]["situations"][0].update(num_turns=0), "situation 'bio': field 'num_turns'"),
    (lambda d: d["en"].update(judges=[]), "language 'en': unknown field 'judges'"),
    (lambda d: d["ru"]["characters"].append(dict(d["ru"]["characters"][0])), "character 'Юля' appears more than once"),
    (lambda d: d.update(xx=d.pop("ru")), "language 'xx': not a language code \\(use one such as en, ru, zh"),
    (lambda d: d.update({"klingon-nonsense-42": d.pop("ru")}), "language 'klingon-nonsense-42': not a language code"),
])
def test_a_bad_settings_file_names_the_language_record_and_field(tmp_path, change, message):
    data = json.loads(json.dumps(PINGPONG_LAYOUT))
    change(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data, ensure_ascii=False))
    with pytest.raises(InputError, match=message):
        load_settings(path)


def test_the_shipped_settings_hold_english_and_chinese():
    s = load_settings(SETTINGS)
    assert s.languages == ["en", "zh"] and all(s.cards[lang] and s.situations[lang] for lang in s.languages)


# -- flows ---------------------------------------------------------------------------------------------
def _respond(body):
    """Judges score by how long the player's replies are and flag the fight situation as a refusal; the
    interrogator and players say something that depends on the request."""
    import hashlib

    fmt = (body.get("response_format") or {}).get("json_schema") or {}
    text = json.dumps(body["messages"], ensure_ascii=False)
    digest = hashlib.sha256(text.encode()).hexdigest()[:6]
    if fmt.get("name") == "NextUtterance":
        rude = "lowercase" in text  # the rude situation's text
        return json.dumps({"next_utterance": f"{'u r dumb' if rude else 'tell me more'} {digest}"})
    if fmt.get("name") == "PingPongVerdicts":
        n = len(fmt["schema"]["properties"]["scores"]["prefixItems"])
        refuse = "u r dumb" in text
        judge = 5 if body.get("temperature", 0) == 0 else 3
        return json.dumps({"scores": [
            {"turn": t, "is_refusal_explanation": "no", "is_refusal": refuse and t == n,
             "in_character_explanation": "'x'", "in_character_score": judge, "entertaining_explanation": "'x'",
             "entertaining_score": 4, "fluency_explanation": "'x'", "fluency_score": 3} for t in range(1, n + 1)]})
    if fmt.get("name") in ("TesterOpening", "TesterTurn"):
        out = {"next_user_utterance": f"go on {digest}"}
        if fmt["name"] == "TesterTurn":
            out |= {"is_refusal_explanation": "", "is_refusal": False, "stay_in_character_explanation": "",
                    "stay_in_character_score": 8, "language_fluency_explanation": "",
                    "language_fluency_score": 6, "entertainment_explanation": "", "entertainment_score": 7}
        return json.dumps(out)
    long = "long" in json.dumps(body.get("model"))
    return ("*smiles* " + "words " * (40 if long else 5) + digest).strip()


def _models(tmp_path: Path, server) -> str:
    path = tmp_path / "models.toml"
    path.write_text(
        f'[default]\nmodel = "openai/loopback"\napi_base = "{server.base_url}"\nschema_rules = "vllm"\napi_key_env = "{TEST_KEY_ENV}"\n'
        'structured = "json_schema"\ntimeout = 5\n'
        '[roles.short]\nmodel = "openai/short"\n[roles.long]\nmodel = "openai/long"\n'
        '[roles.strict-judge]\ntemperature = 0.0\n[roles.soft-judge]\ntemperature = 0.5\n')
    return str(path)


def test_run_rerun_and_rejudge(harness, loopback, tmp_path, monkeypatch):
    from rpbench.flows.modes.pingpong.flows import pingpong, rejudge

    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = _respond
    models, cache, out = _models(tmp_path, loopback), str(tmp_path / "c.sqlite"), str(tmp_path / "run")
    s = PingPongSettings(settings=str(SETTINGS), models=["short", "long"], judges=["strict-judge"], out=out,
                         max_turns=2, characters=["Captain Mirela Voss", "林晚照"], resamples=200,
                         models_file=models, cache=cache)
    manifest = pingpong(s)
    turns = read_records(Path(out) / CONVERSATIONS.filename, CONVERSATIONS)
    # en: 1 card x 3 situations, zh: 1 card x 2 situations, 2 turns each, for 2 players
    assert len({(t.model, t.conversation_id) for t in turns}) == 10 and len(turns) == 20
    assert all(t.status == "ok" and t.user and t.player for t in turns)
    # the interrogator saw the summary and the situation's language, never the card itself
    asks = [r for r in loopback.requests if "next_utterance" in json.dumps(r.get("response_format"))]
    assert asks and all("gruff airship captain" in json.dumps(r["messages"]) or "茶馆" in json.dumps(
        r["messages"], ensure_ascii=False) for r in asks)
    assert not any("Thirty years flying" in json.dumps(r["messages"]) for r in asks)
    # Each conversation draws its own opening: the same first prompt for both players, each with its own
    # sample (seed); with one shared index the call cache handed every player the very same first message.
    first = [r for r in asks if r["messages"] == asks[0]["messages"]]
    assert len(first) == 2 and first[0]["seed"] != first[1]["seed"], [r.get("seed") for r in first]
    assert len({r["seed"] for r in asks}) == 10  # one sample per (player, situation)
    # (the release's interrogator prompt asks for the situation's language itself: no language is named)
    # the player saw its card as the system prompt
    player = [r for r in loopback.requests if r["model"] in ("short", "long")]
    assert all(r["messages"][0]["role"] == "system" for r in player)
    judged = read_records(Path(out) / TURN_JUDGMENTS.filename, TURN_JUDGMENTS)
    assert {j.turn for j in judged} == {1, 2} and len(judged) == 20
    rows = {(r.model, r.conversation_id): r for r in read_records(Path(out) / CONVERSATION_SCORES.filename,
                                                                    CONVERSATION_SCORES)}
    refused = [r for r in rows.values() if r.refusal]
    assert {r.situation_id for r in refused} == {"rude"} and all(r.final is None for r in refused)
    board = {r["model"]: r for r in manifest["pingpong"]["leaderboard"]}
    assert board["short"]["refusal_ratio"] == pytest.approx(1 / 5)
    assert board["short"]["final"] == pytest.approx(0.333 * (5 + 4 + 3))  # PingPong's weights, 0.333 each
    # the long player is above the median length: penalised, the short one is not
    assert board["long"]["ln_score"] < board["long"]["final"] and board["short"]["ln_score"] == board["short"]["final"]
    assert (Path(out) / "report.md").read_text().count("| long |") >= 1
    # One leaderboard per language beside the pooled one, as the paper publishes them.
    report = (Path(out) / "report.md").read_text()
    assert "## Leaderboard per language" in report and "**English (en)**" in report and "**Chinese (zh)**" in report

    sent = len(loopback.requests)
    again = pingpong(s)
    assert len(loopback.requests) == sent and again["this_run"]["calls_sent"] == 0

    # A second judge: only judge calls, the conversations are not touched; scores are averaged.
    pooled = rejudge(RejudgeSettings(run=out, judges=["soft-judge"], resamples=200, models_file=models, cache=cache))
    new = loopback.requests[sent:]
    assert new and all("PingPongVerdicts" in json.dumps(r.get("response_format")) for r in new)
    board = {r["model"]: r for r in pooled["pingpong"]["leaderboard"]}
    assert pooled["pingpong"]["judges"] == ["strict-judge", "soft-judge"]
    assert board["short"]["in_character"] == pytest.approx((5 + 3) / 2)
    assert read_records(Path(out) / CONVERSATIONS.filename, CONVERSATIONS) == turns
    # The rescored run still accounts for every call behind its tables: the run's own and the new judge's.
    assert pooled["totals"]["calls_sent"] == len(loopback.requests) == manifest["totals"]["calls_sent"] + len(new)
    # Given again, a judge's earlier calls are replaced, not counted twice.
    again = rejudge(RejudgeSettings(run=out, judges=["soft-judge"], resamples=200, models_file=models, cache=cache))
    assert again["totals"]["calls"] == pooled["totals"]["calls"]

    # --limit: a new judge tries each model's first conversation only; the others keep their earlier judges.
    sent = len(loopback.requests)
    trial_out = str(tmp_path / "trial")
    rejudge(RejudgeSettings(run=out, judges=["openai/third"], limit=1, resamples=50, out=trial_out,
                            models_file=models, cache=cache))
    assert {r["model"] for r in loopback.requests[sent:]} == {"third"}
    scored = read_records(Path(trial_out) / CONVERSATION_SCORES.filename, CONVERSATION_SCORES)
    tried = [r for r in scored if "openai/third" in r.judges]
    assert len(tried) == 2 and {r.model for r in tried} == {"short", "long"}
    assert len(scored) == len(rows)  # every conversation still scored, by its earlier judges


def test_conversations_given_as_a_file_are_judged_exactly_as_live_ones(harness, loopback, tmp_path, monkeypatch):
    from rpbench.flows.modes.pingpong.flows import pingpong

    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = _respond
    models, cache = _models(tmp_path, loopback), str(tmp_path / "c.sqlite")
    common = {"settings": str(SETTINGS), "judges": ["strict-judge"], "max_turns": 2, "characters": ["林晚照"],
              "resamples": 50, "models_file": models, "cache": cache}
    live = pingpong(PingPongSettings(models=["short"], out=str(tmp_path / "live"), **common))
    turns = read_records(tmp_path / "live" / CONVERSATIONS.filename, CONVERSATIONS)
    by_id: dict[str, list] = {}
    for t in turns:
        by_id.setdefault(t.conversation_id, []).append({"user": t.user, "player": t.player})
    path = tmp_path / "short.jsonl"
    path.write_text("\n".join(json.dumps({"id": k, "turns": v}, ensure_ascii=False) for k, v in by_id.items()))
    asked = len([r for r in loopback.requests if r["model"] == "short"])
    given = pingpong(PingPongSettings(answers=[f"short={path}"], out=str(tmp_path / "given"), **common))
    assert len([r for r in loopback.requests if r["model"] == "short"]) == asked  # the player is not asked
    for table in (CONVERSATIONS, TURN_JUDGMENTS, CONVERSATION_SCORES):
        assert read_records(tmp_path / "given" / table.filename, table) == \
            read_records(tmp_path / "live" / table.filename, table), table.name
    assert given["pingpong"]["leaderboard"] == live["pingpong"]["leaderboard"]
    # --limit 1: the first conversation only, though the file holds more (they are not an error)
    assert len(by_id) > 1
    limited = pingpong(PingPongSettings(answers=[f"short={path}"], out=str(tmp_path / "limited"), limit=1, **common))
    assert {t.conversation_id for t in read_records(tmp_path / "limited" / CONVERSATIONS.filename, CONVERSATIONS)} \
        == {turns[0].conversation_id}
    assert limited["pingpong"]["conversations"] == 1


def test_v1_tester_talks_and_grades_on_ten_points(harness, loopback, tmp_path, monkeypatch):
    from rpbench.flows.modes.pingpong.flows import pingpong

    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = _respond
    out = tmp_path / "v1"
    manifest = pingpong(PingPongSettings(settings=str(SETTINGS), models=["short"], version="v1", out=str(out),
                                         characters=["Tobias Fenn"], situations=["bio"], max_turns=3,
                                         resamples=200, models_file=_models(tmp_path, loopback),
                                         cache=str(tmp_path / "c.sqlite")))
    judged = read_records(out / TURN_JUDGMENTS.filename, TURN_JUDGMENTS)
    # turns 1..3 graded by the calls after them (the first call only opens the conversation)
    assert [j.turn for j in judged] == [1, 2, 3] and {j.judge for j in judged} == {"tester"}
    assert judged[0].in_character_score == 8
    assert manifest["pingpong"]["leaderboard"][0]["final"] == pytest.approx(7.0)


def test_cli_errors_are_one_line(tmp_path):
    bad = tmp_path / "s.json"
    data = json.loads(json.dumps(PINGPONG_LAYOUT))
    data["en"]["characters"][0]["colour"] = "red"
    bad.write_text(json.dumps(data))
    cases = [
        (["pingpong", "run", "--settings", str(bad), "--model", "player"], "character 'Abe': unknown field 'colour'"),
        (["pingpong", "run", "--settings", str(SETTINGS), "--model", "no-such-model"], "--model: unknown model"),
        (["pingpong", "run", "--settings", str(SETTINGS), "--model", "player", "--judge", "nobody"],
         "--judge: unknown model"),
        (["pingpong", "run", "--settings", str(SETTINGS), "--model", "player", "--character", "Nobody"],
         "unknown character 'Nobody'"),
        (["pingpong", "rejudge", str(tmp_path), "--judge", "pingpong-judge"], "not a finished PingPong run"),
    ]
    for args, message in cases:
        p = rpbench(*args, "--out", str(tmp_path / "o")) if args[1] == "run" else rpbench(*args)
        assert p.returncode == 2, (args, p.stderr)
        assert message in p.stderr and "Traceback" not in p.stderr, p.stderr


# -- agreement with people -----------------------------------------------------------------------------
def test_agreement_spearman_per_judge_and_krippendorff_between_annotators(tmp_path):
    from rpbench.tasks.modes.pingpong.records import TurnJudgment

    judgments, lines = [], []
    for k in range(8):
        for judge, shift in (("a", 0), ("b", 1 if k % 2 else 0)):
            judgments.append(TurnJudgment(conversation_id=f"c{k}", model="m", judge=judge, turn=1,
                                          **grades(1 + k % 5, 1 + k % 5, min(5, 1 + (k + shift) % 5)).model_dump()))
        for who, noise in (("ann1", 0), ("ann2", k % 2)):
            v = min(5, 1 + k % 5 + noise)
            lines.append(json.dumps({"model": "m", "conversation_id": f"c{k}", "annotator": who,
                                     "in_character": v, "entertaining": v, "fluency": ""}))
    path = tmp_path / "ann.jsonl"
    path.write_text("\n".join(lines))
    result = agreement(load_ratings(path), judgments, path)
    ic = {r["judge"]: r for r in result["correlations"] if r["criterion"] == "in_character"}
    assert set(ic) == {"a", "b", "average"} and ic["a"]["n"] == 8
    assert ic["a"]["spearman"] > 0.8 and ic["a"]["p_value"] < 0.05
    assert 0 < result["alpha"]["in_character"] <= 1 and result["alpha"]["fluency"] is None
    assert result["annotators"] == 2 and result["annotator_pairs"] == []  # no final: nobody rated all three
    with pytest.raises(InputError, match="record 0: field 'in_character': 7 is outside 1-5"):
        (tmp_path / "bad.jsonl").write_text(json.dumps({"model": "m", "conversation_id": "c", "annotator": "x",
                                                        "in_character": 7}))
        load_ratings(tmp_path / "bad.jsonl")
    # A rating is a whole number: 3.5 is not read as 3, nor true as 1 (int() would take both without a word).
    for value in (3.5, True, "3.5"):
        (tmp_path / "half.jsonl").write_text(json.dumps({"model": "m", "conversation_id": "c", "annotator": "x",
                                                         "in_character": value}))
        with pytest.raises(InputError, match="record 0: field 'in_character': not an integer 1-5"):
            load_ratings(tmp_path / "half.jsonl")
    (tmp_path / "whole.jsonl").write_text(json.dumps({"model": "m", "conversation_id": "c", "annotator": "x",
                                                      "in_character": 4.0, "fluency": " 2 "}))
    assert load_ratings(tmp_path / "whole.jsonl")["in_character"] == {"x": {("m", "c"): 4.0}}
    # One person's second rating of one conversation replaced the first without a word; an id that is a list
    # was read as its text.
    record = {"model": "m", "conversation_id": "c", "annotator": "x", "in_character": 4}
    (tmp_path / "twice.jsonl").write_text("\n".join(json.dumps(r) for r in (
        record, {**record, "annotator": "y"}, {**record, "in_character": 2})))
    with pytest.raises(InputError, match="record 2: annotator 'x' already rated conversation 'c' of model 'm' in "
                                         "record 0"):
        load_ratings(tmp_path / "twice.jsonl")
    (tmp_path / "list.jsonl").write_text(json.dumps({**record, "conversation_id": ["c"]}))
    with pytest.raises(InputError, match="record 0: field 'conversation_id': not text"):
        load_ratings(tmp_path / "list.jsonl")


def test_the_agreement_command_writes_the_table_every_benchmark_reports(tmp_path):
    """`rpbench pingpong agreement` writes agreement.parquet (the suite's and reports' judge-vs-people table)
    beside PingPong's own Spearman: per judge, criterion and language, each figure as scipy computes it on the
    judge's conversation score against the annotators' mean."""
    from scipy.stats import kendalltau, pearsonr, spearmanr

    from rpbench.storage.tables import write_records
    from rpbench.tasks.modes.pingpong.records import TurnJudgment

    run = tmp_path / "run"
    judged, lines, pairs = [], [], []
    for k in range(10):
        cid = f"{'en' if k < 6 else 'ru'}/Abe/s{k}"
        turns = [1 + k % 5, 1 + (k * 3) % 5]  # two turns: the conversation's score is their mean
        judged += [TurnJudgment(conversation_id=cid, model="m", judge="a", turn=t + 1,
                                **grades(v, v, v).model_dump()) for t, v in enumerate(turns)]
        people = [1 + (k + 1) % 5, 1 + k % 5]
        lines += [json.dumps({"model": "m", "conversation_id": cid, "annotator": who, "in_character": v,
                              "entertaining": v, "fluency": v}) for who, v in zip(("p1", "p2"), people, strict=True)]
        if k < 6:
            pairs.append((sum(people) / 2, sum(turns) / 2))
    write_records(run / TURN_JUDGMENTS.filename, judged, TURN_JUDGMENTS)
    (tmp_path / "ratings.jsonl").write_text("\n".join(lines))
    ran = rpbench("pingpong", "agreement", "--annotations", str(tmp_path / "ratings.jsonl"), "--run", str(run))
    assert ran.returncode == 0, ran.stderr
    assert "Krippendorff" in ran.stdout and "as every benchmark reports it" in ran.stdout
    rows = {(r["judge"], r["group"], r["language"]): r
            for r in pq.read_table(run / "agreement.parquet").to_pylist()}
    assert {lang for _, _, lang in rows} == {"en", "ru"} and rows[("a", "final", "en")]["n"] == 6
    row = rows[("a", "in_character", "en")]
    human, judge = [h for h, _ in pairs], [j for _, j in pairs]
    assert row["pearson"] == pytest.approx(pearsonr(human, judge)[0])
    assert row["spearman"] == pytest.approx(spearmanr(human, judge)[0])
    assert row["kendall"] == pytest.approx(kendalltau(human, judge)[0])
    assert row["exact"] == pytest.approx(sum(h == j for h, j in pairs) / len(pairs))
    assert row["pearson_low"] <= row["pearson"] <= row["pearson_high"]
    # A rated conversation the run has no judgment of is left out and said so, not dropped without a word.
    (tmp_path / "ratings.jsonl").write_text("\n".join([*lines, json.dumps(
        {"model": "m", "conversation_id": "en/Abe/s99", "annotator": "p1", "in_character": 3, "entertaining": 3,
         "fluency": 3})]))
    ran = rpbench("pingpong", "agreement", "--annotations", str(tmp_path / "ratings.jsonl"), "--run", str(run))
    assert ran.returncode == 0 and "note: 1 of 11 annotated conversations are not in this run" in ran.stderr
    assert "left out: 1 (first: model m, conversation en/Abe/s99)" in (run / "agreement.md").read_text()
    again = {(r["judge"], r["group"], r["language"]): r for r in pq.read_table(run / "agreement.parquet").to_pylist()}
    assert again[("a", "final", "en")]["n"] == 6  # the figures stand on the same conversations as before


@pytest.mark.local_model
def test_pingpong_runs_on_the_local_model(tmp_path):
    p = subprocess.run([*CLI, "pingpong", "run", "--settings", str(SETTINGS), "--model", "player",
                        "--character", "Captain Mirela Voss", "--situation", "rude", "--max-turns", "1",
                        "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "c.sqlite"), "--resamples", "100"],
                       capture_output=True, text=True, env={**os.environ, "PREFECT_HOME": str(tmp_path / "ph")})
    assert p.returncode == 0, p.stderr[-2000:]
    turns = read_records(tmp_path / "run" / CONVERSATIONS.filename, CONVERSATIONS)
    assert len(turns) == 1 and turns[0].user and turns[0].player
    judged = read_records(tmp_path / "run" / TURN_JUDGMENTS.filename, TURN_JUDGMENTS)
    failures = (tmp_path / "run" / "failures.parquet").exists()
    assert judged or failures  # a judgment, or its failure recorded: never a made-up score
    assert all(1 <= j.in_character_score <= 5 for j in judged)
    assert not math.isnan(len(judged))
