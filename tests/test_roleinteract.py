"""RoleInteract: option letters read from tricky replies, the scoring formulas and the nine-column average,
the released layout read without loss (CRLF, Windows-1252 bytes, C1 characters, other models' answers), the
analyses, the flow end to end against the loopback server, and the local model."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from rpbench.flows.modes.roleinteract.settings import RoleInteractSettings
from rpbench.samples import sample_path
from rpbench.storage.tables import read_records
from rpbench.tasks.choices.letters import option_letters
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.modes.roleinteract.analysis import by_key, drift, item_scores, nine_columns, preference_matrix
from rpbench.tasks.modes.roleinteract.answering import prompt_text
from rpbench.tasks.modes.roleinteract.catalog import NAMES, PAPER_AVG, PAPER_TABLE
from rpbench.tasks.modes.roleinteract.loader import load_file, readable
from rpbench.tasks.modes.roleinteract.records import Answer, ItemScore
from rpbench.tasks.modes.roleinteract.scoring import (
    choice_score,
    cover,
    covered_average,
    multiple,
    single,
    table_average,
)
from rpbench.tasks.modes.roleinteract.tables import ANSWERS, ITEM_SCORES, ITEMS
from rpbench.tasks.reports.scores import model_scores
from rpbench.tasks.reports.spec import GroupKey, MetricSpec, Scoring
from tests.helpers import CLI, TEST_KEY_ENV, released, rpbench

EXAMPLE = sample_path("roleinteract", "example.json")
EMOTIONS = {"A": "neutral", "B": "non-neutral", "C": "joy", "D": "fear"}


# -- option letters ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("reply", "letters"), [
    ("B", ["B"]),
    ("答案是C。", ["C"]),
    ("我选择A和C", ["A", "C"]),
    ("答案：A、C、D", ["A", "C", "D"]),
    ("（B）", ["B"]),
    ("**C**", ["C"]),
    ("Ｂ", ["B"]),  # full width
    ("A good choice here is D.", ["D"]),  # the article is not an option
    ("As a detective, I'd pick C", ["C"]),  # nor is the A of a word
    ("I think the answer is B, not A.", ["B"]),  # an answer phrase wins over other letters
    ("I choose A and C", ["A", "C"]),  # the a and d of "and" are not letters
    ("My choice is a difficult one: B", ["B"]),
    ("The best option is (b).", ["B"]),
    ("AB", ["A", "B"]),
    ("A、B、D、B", ["A", "B", "D"]),  # each once, in order
    ("选项D：很好", ["D"]),
    ("E", []),  # not an option of this item
    ("hmm", []),
])
def test_option_letters_are_read_whatever_surrounds_them(reply, letters):
    assert option_letters(reply, "ABCD") == letters


def test_an_option_quoted_without_its_letter_counts_only_when_unambiguous():
    assert option_letters("I would say non-neutral.", EMOTIONS) == ["B"]  # not also "neutral" inside it
    assert option_letters("neutral, I think", EMOTIONS) == ["A"]
    assert option_letters("joy or fear", EMOTIONS) == []  # two options quoted: nothing chosen


# -- formulas ------------------------------------------------------------------------------------------
def test_single_multiple_and_cover():
    assert single(["B", "A"], ["B"]) == 1.0 and single(["A", "B"], ["B"]) == 0.0 and single([], ["B"]) == 0.0
    # The paper's example: gold {A, B}.
    assert multiple(["A"], ["A", "B"]) == 0.5 and multiple(["A", "B"], ["A", "B"]) == 1.0
    assert multiple(["A", "C"], ["A", "B"]) == 0.0 and multiple([], ["A", "B"]) == 0.0
    # One gold option: the paper's rule gives 0 for any wrong option chosen; the released code's rule lets the
    # first choice decide.
    assert choice_score(["A", "C"], ["A"]) == 0.0 and choice_score(["A", "C"], ["A"], "paper") == 0.0
    assert choice_score(["A", "C"], ["A"], "released") == 1.0 and choice_score(["C", "A"], ["A"], "released") == 0.0
    assert choice_score(["A"], ["A"]) == choice_score(["A"], ["A"], "released") == 1.0
    # Several gold options: the same under both.
    assert choice_score(["A"], ["A", "B"], "released") == choice_score(["A"], ["A", "B"]) == 0.5
    assert cover("Smoked HERRING and bread", ["herring", "rye"]) == 0.5
    assert cover("一碟桂花糕，配一杯碧螺春", ["桂花糕", "碧螺春"]) == 1.0


def test_the_average_is_the_unweighted_mean_of_the_nine_columns():
    for model, columns in PAPER_TABLE.items():  # every published row
        assert round(table_average(dict(zip(NAMES, columns, strict=True))), 2) == pytest.approx(PAPER_AVG[model])

    def row(column: str, score: float | None, status: str = "scored") -> ItemScore:
        return ItemScore(model="m", item_id=f"{column}:{score}", column=column, language="en", category="c",
                         status=status, score=score, utterances=3, group_size=None, target_preference=None,
                         polarity=None)

    # SA Style has three items (100, 100, 0), EP Emo. one (0), Neg. one unreadable (skipped): a mean of
    # columns, not of items -> (66.67 + 0) / 2, where the mean of items would be 50.
    rows = [row("SA Style", 100.0), row("SA Style", 100.0), row("SA Style", 0.0), row("EP Emo.", 0.0),
            row("Neg.", None, "unparsed")]
    table = nine_columns(rows)["m"]
    assert table["SA Style"] == pytest.approx(200 / 3) and table["EP Emo."] == 0.0 and table["Neg."] is None
    # Avg is the paper's: the mean of all nine columns, undefined while any has no score; the mean of the
    # columns present is named as such.
    assert table["Avg"] is None
    assert covered_average({k: v for k, v in table.items() if k != "Avg"}) == pytest.approx(100 / 3)
    full = nine_columns([row(c, 50.0) for c in NAMES] + [row("SA Style", 100.0)])["m"]
    assert full["Avg"] == pytest.approx((75 + 50 * 8) / 9)
    # The leaderboard's headline is the mean of the columns present, with an interval that resamples within
    # each column (its description says so).
    scoring = Scoring(metrics=(MetricSpec("Avg", "", column="score", macro_over="column"),),
                      groups=(GroupKey("column", "column", order=NAMES),))
    overall = next(s for s in model_scores([r.model_dump() for r in rows], scoring, 500, 0)
                   if s["column"] == "all")
    assert overall["score"] == pytest.approx(100 / 3) and overall["ci_low"] <= 100 / 3 <= overall["ci_high"]
    assert overall["ci_high"] - overall["ci_low"] > 0


# -- the released layout -------------------------------------------------------------------------------
def test_the_shipped_example_covers_every_column_in_both_languages():
    items = load_file(EXAMPLE).items
    assert {(i.column, i.language) for i in items} == {(c, lang) for c in NAMES for lang in ("en", "zh")}
    memory = {i.column: len(i.dialogue) for i in items if i.column.startswith("CM")}
    assert all(n >= 40 for c, n in memory.items() if c == "CM Long")
    zh_short = next(i for i in items if i.column == "CM Short" and i.language == "zh")
    assert zh_short.dialogue[0].speaker == "读者"  # the {speaker: text} form of an utterance
    group = next(i for i in items if i.column == "Pos." and i.language == "en")
    assert group.group_size == 3 and group.target_preference == "positive" and group.polarity == "negative"


def test_memory_items_named_short_and_long_as_the_current_release_names_them(tmp_path):
    """SocialBench's current conversation_memory.json calls its memory items Individual-MEM-Short and
    Individual-MEM-Long (commit "rename category"): read, each in the column its name says."""
    items = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    memory = [i for i in items if i["meta"]["category"] == "Individual-MEM"]
    renamed = [{**memory[0], "meta": {**memory[0]["meta"], "category": "Individual-MEM-Long"}},
               {**memory[1], "meta": {**memory[1]["meta"], "category": "Individual-MEM-Short"}}]
    path = tmp_path / "conversation_memory.json"
    path.write_text(json.dumps(renamed, ensure_ascii=False), encoding="utf-8")
    read = load_file(path).items
    assert [i.column for i in read] == ["CM Long", "CM Short"]
    assert len(read[0].dialogue) < 40  # the name decides, not the length


def test_items_share_their_identical_parts_and_read_as_when_parsed_alone(tmp_path):
    """Profiles, options and dialogue lines that repeat across items are made once (memory at 100,000 items);
    every item still reads exactly as it does parsed on its own."""
    from rpbench.tasks.modes.roleinteract.loader import load_files, parse_item

    records = json.loads(sample_path("roleinteract", "example.json").read_text(encoding="utf-8"))
    twice = tmp_path / "twice.json"
    twice.write_text(json.dumps(records + records, ensure_ascii=False), encoding="utf-8")
    items = load_files([str(twice)])[0]
    n = len(records)
    first, second = items[:n], items[n:]
    for a, b in zip(first, second, strict=True):
        assert a is not b and a.item_id != b.item_id
        assert all(x is y for x, y in zip(a.profiles, b.profiles, strict=True))
        assert all(x is y for x, y in zip(a.choices, b.choices, strict=True))
        assert all(x is y for x, y in zip(a.dialogue, b.dialogue, strict=True))
    for k, item in enumerate(items):
        alone = parse_item(records[k % n], twice, k)
        assert item.model_dump() == alone.model_dump()


def test_crlf_windows_1252_bytes_and_other_models_answers_are_read_without_loss(tmp_path):
    record = {"dialogue": [{"from": "Monica", "value": "I didn\u0092t make it!"}],
              "instruction": "Select the option that best matches the mood of the speaker in the last utterance:",
              "choices": {"A": "joy", "B": "sadness"}, "label": ["B"],
              "meta": {"lang": "en", "category": "Individual-EP-DialogueEmotionDetect", "emotion": "sadness",
                       "gpt4": ["A"], "source": "friends"}}
    text = json.dumps([record], indent=2).replace("\n", "\r\n")
    raw = text.encode("utf-8").replace(b"the speaker", b"the speaker\x92s")  # a stray Windows-1252 byte
    path = tmp_path / "emotional_perception.json"
    path.write_bytes(raw)
    loaded = load_file(path)
    item = loaded.items[0]
    assert loaded.repaired_bytes == 1
    assert item.instruction.startswith("Select the option that best matches the mood of the speaker’s")
    assert item.dialogue[0].text == "I didn\x92t make it!"  # kept exactly as the file has it
    assert readable(item.dialogue[0].text) == "I didn’t make it!"  # as it was meant, in the report and viewer
    assert "I didn\x92t make it!" in prompt_text(item)  # and sent as SocialBench's code sends it, as the file has it
    kept = json.loads(item.raw)
    assert kept["meta"]["gpt4"] == ["A"] and kept["meta"]["source"] == "friends"  # other models' answers kept
    assert item.label == ["B"] and item.item_id == "emotional_perception:00000"


@pytest.mark.parametrize(("change", "message"), [
    (lambda r: r["meta"].update(category="Individual-SA-Mood"), "item 0: field 'meta.category': unknown category"),
    (lambda r: r["meta"].update(lang="fr"), "item 0: field 'meta.lang': unknown language 'fr'"),
    (lambda r: r.update(label=["E"]), "item 0: field 'label': 'E' is not one of the options"),
    (lambda r: r["meta"].pop("name"), "item 0: field 'meta.name': missing"),
    (lambda r: r.update(dialogue=[{"from": "a", "text": "b"}]), "item 0: field 'dialogue.0'"),
    (lambda r: r["dialogue"][0].pop("value"), "item 0: field 'dialogue.0.value': missing"),  # not a speaker "from"
    (lambda r: r["dialogue"][0].pop("from"), "item 0: field 'dialogue.0.from': missing"),
    (lambda r: r.pop("choices"), "item 0: field 'choices': missing"),
    (lambda r: r["meta"].update(member_preferences={"x": "friendly"}), "field 'meta.member_preferences'"),
    (lambda r: r.update(dialogue=[], instruction=" "), "item 0: field 'dialogue': empty, and so is 'instruction'"),
])
def test_a_bad_item_names_the_file_item_and_field(tmp_path, change, message):
    record = {"dialogue": [{"from": "Ada", "value": "hi"}], "instruction": "", "choices": {"A": "x", "B": "y"},
              "label": ["A"], "meta": {"lang": "en", "category": "Group-SAP-Positive", "name": "Ada",
                                       "profile": {"Ada": "kind"}}}
    change(record)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([record]))
    with pytest.raises(InputError, match=message) as err:
        load_file(path)
    assert str(err.value).startswith(str(path)) and "\n" not in str(err.value)


def test_polarity_leaves_the_target_out_and_calls_a_tie_mixed(tmp_path):
    base = {"dialogue": [{"from": "A", "value": "x"}], "instruction": "", "choices": {"A": "x", "B": "y"},
            "label": ["A"], "meta": {"lang": "en", "category": "Group-SAP-Neutral", "name": "T",
                                     "profile": {"T": "t", "B": "b", "C": "c"}}}
    tie = json.loads(json.dumps(base))
    tie["meta"]["member_preferences"] = {"T": "neutral", "B": "positive", "C": "negative"}
    given = json.loads(json.dumps(base))
    given["meta"]["polarity"] = "negative"
    path = tmp_path / "group.json"
    path.write_text(json.dumps([tie, given, base]))
    assert [i.polarity for i in load_file(path).items] == ["mixed", "negative", None]


# -- analyses ------------------------------------------------------------------------------------------
def _group(model: str, target: str, polarity: str | None, score: float, size: int = 3) -> ItemScore:
    column = {"positive": "Pos.", "neutral": "Neu.", "negative": "Neg."}[target]
    return ItemScore(model=model, item_id=f"{target}{polarity}{score}{size}", column=column, language="en",
                     category="c", status="scored", score=score, utterances=5, group_size=size,
                     target_preference=target, polarity=polarity)


def test_preference_matrix_and_drift():
    rows = [_group("m", "neutral", "neutral", 100.0), _group("m", "neutral", "neutral", 100.0),
            _group("m", "neutral", "positive", 0.0), _group("m", "neutral", "positive", 100.0),
            _group("m", "positive", "negative", 100.0), _group("m", "positive", "positive", 0.0),
            _group("m", "negative", None, 100.0)]
    matrix = preference_matrix(rows)["m"]
    assert matrix["neutral"] == {"neutral": (100.0, 2), "positive": (50.0, 2)}
    assert "negative" not in matrix  # its polarity is unknown
    assert drift(matrix) == {"neutral": {"positive": 50.0}, "positive": {"negative": -100.0}}
    sizes = by_key(rows, lambda r: True, lambda r: r.group_size)
    assert sizes["m"]["3"] == (pytest.approx(500 / 7), 7)


def test_unreadable_answers_and_failed_calls_follow_the_policy_and_failed_calls_are_failures():
    items = load_file(EXAMPLE).items[:3]
    answers = [Answer(item_id=items[0].item_id, model="m", text="B", letters=["B"], status="ok"),
               Answer(item_id=items[1].item_id, model="m", text="hmm", letters=[], status="unparsed", error="x"),
               Answer(item_id=items[2].item_id, model="m", text=None, letters=None, status="failed", error="timeout")]
    skipped, failures = item_scores(items, answers, "skip")
    assert [r.score for r in skipped] == [100.0, None, None] and [f.item_id for f in failures] == [items[2].item_id]
    zeroed, failed = item_scores(items, answers, "zero")
    # --policy zero: accuracy over every item, a failed call not right (a model that fails is never ranked
    # above one answering wrongly), and still a counted failure.
    assert [r.score for r in zeroed] == [100.0, 0.0, 0.0] and [f.item_id for f in failed] == [items[2].item_id]
    assert [r.status for r in zeroed] == ["scored", "unparsed", "failed"]
    wrong = [a.model_copy(update={"text": "Z", "letters": ["Z"], "status": "ok", "error": None})
             if a.status == "failed" else a for a in answers]
    assert [r.score for r in item_scores(items, wrong, "zero")[0]] == [r.score for r in zeroed]


def test_the_scoring_rule_decides_a_single_gold_item_with_an_extra_option():
    items = [i for i in load_file(EXAMPLE).items if i.choices and len(i.label) == 1][:1]
    gold = items[0].label[0]
    other = next(c.letter for c in items[0].choices if c.letter != gold)
    hedged = [Answer(item_id=items[0].item_id, model="m", text=f"{gold} or {other}", letters=[gold, other],
                     status="ok")]
    assert [r.score for r in item_scores(items, hedged, "skip")[0]] == [0.0]  # the paper's rule, the default
    assert [r.score for r in item_scores(items, hedged, "skip", "released")[0]] == [100.0]


async def test_an_empty_reply_is_a_failure_never_an_answer(make_gateway, loopback):
    from rpbench.tasks.modes.roleinteract.answering import answer_all

    items = load_file(EXAMPLE).items
    picked = [next(i for i in items if i.choices), next(i for i in items if not i.choices)]
    loopback.responder = lambda body: ""
    made = await answer_all(make_gateway(), picked, "judge", "m")
    assert [a.status for a in made] == ["failed", "failed"] and all("empty" in (a.error or "") for a in made)
    rows, failures = item_scores(picked, made, "skip")
    assert [r.score for r in rows] == [None, None] and len(failures) == 2  # left out, as the release leaves it


# -- the flow ------------------------------------------------------------------------------------------
def _respond(body: dict) -> str:
    prompt = body["messages"][-1]["content"]
    if body["model"] == "mumbler":
        return "hmm, hard to say"
    if not re.search(r"(?m)^[A-H]\. ", prompt):  # no options: a memory question
        return "I remember: herring, rye, Biscuit, 桂花糕, 团子"
    return "I choose B."


def _models(tmp_path: Path, loopback) -> str:
    path = tmp_path / "models.toml"
    path.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{loopback.base_url}"\nschema_rules = "vllm"\n'
                    f'api_key_env = "{TEST_KEY_ENV}"\ntimeout = 5\n'
                    '[roles.always-b]\nmodel = "openai/always-b"\n[roles.mumbler]\nmodel = "openai/mumbler"\n')
    return str(path)


def test_flow_end_to_end_policies_and_a_cached_rerun(harness, loopback, tmp_path, monkeypatch):
    from rpbench.flows.modes.roleinteract.flows import roleinteract

    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = _respond
    models, cache, out = _models(tmp_path, loopback), str(tmp_path / "c.sqlite"), tmp_path / "run"
    s = RoleInteractSettings(data=[str(EXAMPLE)], models=["always-b", "mumbler"], out=str(out), resamples=200,
                             models_file=models, cache=cache)
    manifest = roleinteract(s)
    table = manifest["roleinteract"]["table"]
    # Worked out from the example's gold answers for a model that always answers B and recalls every keyword
    # but 碧螺春: SA Style (100+0)/2, SA Know. (0+100)/2, EP Situ. (0+100+0)/3, EP Emo. (0+0+0+100)/4,
    # CM Short (100+50)/2, CM Long 100, Pos. 50, Neu. 0, Neg. 0.
    expected = {"SA Style": 50, "SA Know.": 50, "EP Situ.": 100 / 3, "EP Emo.": 25, "CM Short": 75,
                "CM Long": 100, "Pos.": 50, "Neu.": 0, "Neg.": 0}
    assert table["always-b"] == pytest.approx({**expected, "Avg": sum(expected.values()) / 9})
    board = {r["model"]: r for r in manifest["roleinteract"]["leaderboard"]}
    assert board["always-b"]["Avg"] == pytest.approx(sum(expected.values()) / 9)
    # The mumbler never names an option: each question was asked once, as SocialBench's code asks it, then
    # recorded as unreadable and left out (skip); its memory answers are words, scored 0.
    answers = read_records(out / ANSWERS.filename, ANSWERS)
    mumbled = [a for a in answers if a.model == "mumbler"]
    assert sum(a.status == "unparsed" for a in mumbled) == 17 and board["mumbler"]["unreadable"] == 17
    assert sum(r["model"] == "mumbler" for r in loopback.requests) == 17 + 4
    # Only its memory columns have scores: no Avg (the paper's needs all nine columns).
    assert table["mumbler"]["SA Style"] is None and table["mumbler"]["Avg"] is None
    assert table["mumbler"]["CM Short"] == 0.0 and board["mumbler"]["Avg"] == 0.0  # the mean of those present
    assert len(read_records(out / ITEMS.filename, ITEMS)) == 21
    report = (out / "report.md").read_text()
    assert "| CM Long | 2 | 42.0 |" in report  # the questions, as the paper's Table 1 counts them
    assert "## Unreadable answers" in report and "| mumbler | 2 | 2 | 3 | 4 | 0 | 0 | 2 | 2 | 2 | 17 |" in report
    # Group polarity from the members' labels: the English positive agent sits in a negative group, the Chinese
    # one in a tied (mixed) group.
    assert "| positive | - | - | 0.0 (1) | 100.0 (1) |" in report

    # A rerun heals: each question no option could be read in gets one fresh round of attempts (an earlier
    # run's unreadable replies come from the cache); --keep-failures would replay them as they were.
    sent = len(loopback.requests)
    kept = roleinteract(s.model_copy(update={"keep_failures": True}))
    assert len(loopback.requests) == sent and kept["this_run"]["calls_sent"] == 0
    healed = roleinteract(s)
    assert len(loopback.requests) == sent + 17 and healed["this_run"]["calls_sent"] == 17
    # --reask 2: a reply with no option is shown back twice more (three asks in all), then kept as unreadable.
    sent = len(loopback.requests)
    reasked = roleinteract(s.model_copy(update={"reask": 2, "out": str(tmp_path / "reask")}))
    assert len(loopback.requests) - sent == 17 * 3 - 17 and reasked["roleinteract"]["leaderboard"]
    assert {r["model"] for r in loopback.requests[sent:]} == {"mumbler"}
    sent = len(loopback.requests)
    again = roleinteract(s)  # that fresh round is in the cache now: nothing more is sent
    assert len(loopback.requests) == sent and again["this_run"]["calls_sent"] == 0

    # Counting unreadable answers as wrong changes only the report: no call is sent.
    zero = roleinteract(s.model_copy(update={"policy": "zero"}))
    assert len(loopback.requests) == sent
    assert zero["roleinteract"]["table"]["mumbler"]["SA Style"] == 0.0
    rows = read_records(out / ITEM_SCORES.filename, ITEM_SCORES)
    assert all(r.score == 0.0 for r in rows if r.model == "mumbler" and r.status == "unparsed")
    # So does the released code's scoring rule, and the report names the rule it used.
    released = roleinteract(s.model_copy(update={"scoring": "released"}))
    assert len(loopback.requests) == sent and released["roleinteract"]["scoring"] == "released"
    assert "scored by the `released` rule" in (out / "report.md").read_text()


def test_cli_errors_are_one_line(tmp_path):
    for args, message in [
        (["--data", str(tmp_path / "none.json"), "--model", "roleinteract-player"], "none.json: no such file"),
        (["--data", str(EXAMPLE), "--model", "roleinteract-player", "--column", "SA Mood"],
         "--column: unknown column 'SA Mood'"),
        (["--data", str(EXAMPLE), "--model", "roleinteract-playr"], "--model: unknown model 'roleinteract-playr'"),
    ]:
        p = rpbench("roleinteract", "run", *args, "--out", str(tmp_path / "o"))
        assert p.returncode == 2 and message in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_the_released_file_with_a_gold_letter_among_no_options(harness, loopback, tmp_path, monkeypatch):
    """SocialBench's own emotional_perception.json has one item (758) whose gold letter D is none of its
    options A-C: the command refuses the file naming that item and the way out; --drop-unanswerable runs the
    rest and the report names what was left out."""
    from rpbench.flows.modes.roleinteract.flows import roleinteract

    data = released("socialbench/emotional_perception.json")
    refused = rpbench("roleinteract", "run", "--data", str(data), "--model", "roleinteract-player",
                      "--out", str(tmp_path / "o"))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "emotional_perception.json: item 758: field 'label': 'D' is not one of the options (A, B, C)" \
        in refused.stderr and "--drop-unanswerable" in refused.stderr
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = _respond
    out = tmp_path / "run"
    s = RoleInteractSettings(data=[str(data)], models=["always-b"], out=str(out), resamples=50, limit=1,
                             drop_unanswerable=True, models_file=_models(tmp_path, loopback),
                             cache=str(tmp_path / "c.sqlite"))
    roleinteract(s)
    items = read_records(out / ITEMS.filename, ITEMS)
    assert items and "emotional_perception:00758" not in {i.item_id for i in items}
    report = (out / "report.md").read_text()
    assert "Left out because no answer can be right (--drop-unanswerable): 1." in report
    assert "- emotional_perception.json item 758: field 'label': 'D' is not one of the options" in report


@pytest.mark.local_model
def test_roleinteract_runs_on_the_local_model(tmp_path):
    out = tmp_path / "run"
    p = subprocess.run([*CLI, "roleinteract", "run", "--data", str(EXAMPLE), "--model", "roleinteract-player",
                        "--column", "SA Style", "--column", "EP Emo.", "--language", "en", "--limit", "1",
                        "--out", str(out), "--cache", str(tmp_path / "c.sqlite"), "--resamples", "100"],
                       capture_output=True, text=True, env={**os.environ, "PREFECT_HOME": str(tmp_path / "ph")})
    assert p.returncode == 0, p.stderr[-2000:]
    answers = read_records(out / ANSWERS.filename, ANSWERS)
    assert len(answers) == 2
    # Every answer is read, or kept with its text as unreadable, or a recorded failure: never a guessed option.
    assert all((a.status == "ok" and a.letters) or (a.status == "unparsed" and a.text) or a.error for a in answers)
    assert "Avg" in p.stdout


def test_answers_given_as_a_file_score_exactly_as_live_ones(harness, loopback, tmp_path, monkeypatch):
    from rpbench.flows.modes.roleinteract.flows import roleinteract

    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = _respond
    models, cache = _models(tmp_path, loopback), str(tmp_path / "c.sqlite")
    live = roleinteract(RoleInteractSettings(data=[str(EXAMPLE)], models=["always-b"], out=str(tmp_path / "live"),
                                             resamples=50, models_file=models, cache=cache))
    replies = read_records(tmp_path / "live" / ANSWERS.filename, ANSWERS)
    path = tmp_path / "always-b.jsonl"
    path.write_text("\n".join(json.dumps({"id": a.item_id, "answer": a.text}, ensure_ascii=False) for a in replies))
    sent = len(loopback.requests)
    given = roleinteract(RoleInteractSettings(data=[str(EXAMPLE)], answers=[f"always-b={path}"],
                                              out=str(tmp_path / "given"), resamples=50, models_file=models,
                                              cache=cache))
    assert len(loopback.requests) == sent  # no call
    for table in (ANSWERS, ITEM_SCORES):
        assert read_records(tmp_path / "given" / table.filename, table) == \
            read_records(tmp_path / "live" / table.filename, table), table.name
    assert given["roleinteract"]["table"] == live["roleinteract"]["table"]
    # A file naming an item the data does not have is one line naming the file, the line and the field.
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "example:99999", "answer": "B"}\n')
    ran = rpbench("roleinteract", "run", "--data", str(EXAMPLE), "--answers", str(bad), "--out",
                  str(tmp_path / "bad"))
    assert ran.returncode == 2 and f"{bad}: line 1: field 'id': 'example:99999' is no item" in ran.stderr
