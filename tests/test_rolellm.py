"""RoleLLM: BM25 examples from a role's own script, RoleGPT's three prompt modes, Context-Instruct's segment rules
and filters, the cleaning rules, Rouge-L against rouge-score's own numbers, RoleBench files read as published,
the ranking judge, both flows end to end against the loopback server, and the local model."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from rouge_score import rouge_scorer

from rpbench.flows.modes.rolellm.settings import (
    ContextInstructSettings,
    EvalSettings,
    GeneralSettings,
    ProfileSettings,
    SelectSettings,
)
from rpbench.samples import sample_path
from rpbench.storage.tables import read_records
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.modes.rolellm.analysis import row_scores, split_table
from rpbench.tasks.modes.rolellm.answering import load_raw, read_rolebench_answers
from rpbench.tasks.modes.rolellm.cleaning import unclean
from rpbench.tasks.modes.rolellm.context_instruct import Plan, batch_schema, filter_triplets, layout
from rpbench.tasks.modes.rolellm.general import general_layout, load_instructions, select_instructions
from rpbench.tasks.modes.rolellm.judging import ranks_schema, shown_order, win_rates
from rpbench.tasks.modes.rolellm.profiles import (
    discover_profiles,
    filter_roles,
    load_profiles,
    load_role_file,
    pairs,
    parse_script,
    profile_files,
)
from rpbench.tasks.modes.rolellm.records import (
    GeneralResponse,
    Ranking,
    RoleAnswer,
    RoleProfile,
    ScriptTurn,
    Triplet,
)
from rpbench.tasks.modes.rolellm.rolebench import read_rolebench
from rpbench.tasks.modes.rolellm.rolegpt import Retriever, messages
from rpbench.tasks.modes.rolellm.rouge import rouge_l
from rpbench.tasks.modes.rolellm.segments import Rules, segments, size
from rpbench.tasks.modes.rolellm.tables import (
    ANSWERS,
    GENERAL_RESPONSES,
    QUESTIONS,
    RANKINGS,
    ROW_SCORES,
    SELECTION,
    TRIPLETS,
)
from tests.helpers import CLI, TEST_KEY_ENV

ROLES = sample_path("rolellm", "roles")
BENCH = sample_path("rolellm", "rolebench")
RAW = sample_path("rolellm", "rolebench", "raw-eng.jsonl")
INSTRUCTIONS = sample_path("rolellm", "instructions.jsonl")

TOY = """\
ACT ONE
JUNE: The kettle is whistling again.
ROSA: Then the tea is ready. Pour it slowly, June.
(Thunder outside.)
JUNE: There's a storm coming over the hills.
ROSA: Storms pass. Close the shutters and bring the lamp.
JUNE: Where did you hide the old sword?
ROSA: Under the floorboards, wrapped in oilcloth, where nobody looks.
JUNE: Goodnight.
"""


def _toy() -> RoleProfile:
    return RoleProfile(name="Rosa", language="en", description="You keep a farmhouse.", turns=parse_script(TOY, "Rosa",
                                                                                                           ["ROSA"]))


# -- profiles, examples and prompts --------------------------------------------------------------------
def test_a_script_is_parsed_into_rounds_that_end_with_the_role():
    profile = _toy()
    assert [t.role for t in profile.turns] == ["JUNE", "Rosa", "narrator", "JUNE", "Rosa", "JUNE", "Rosa", "JUNE"]
    assert {t.act_id for t in profile.turns} == {1}
    found = pairs(profile)
    assert [p.answer.split()[0] for p in found] == ["Then", "Storms", "Under"]  # the last JUNE line ends no round
    assert found[1].question == "narrator: (Thunder outside.)\nJUNE: There's a storm coming over the hills."


def test_bm25_retrieves_the_rounds_about_the_question():
    retriever = Retriever({"Rosa": _toy()})
    assert retriever.examples("Rosa", "is a storm coming?", 1)[0].answer.startswith("Storms pass")
    assert retriever.examples("Rosa", "where is the sword hidden", 1)[0].answer.startswith("Under the floorboards")
    assert retriever.examples("Rosa", "pour the tea from the kettle", 2)[0].answer.startswith("Then the tea")


def test_the_three_prompt_modes():
    profiles = {"Rosa": _toy()}
    retriever = Retriever(profiles)
    zsp = messages(profiles["Rosa"], "Where is the sword?", "zsp", retriever, 2)
    # Zero-shot: the question as it stands, as OpenCompass's RoleBench configuration asks it.
    assert [m["role"] for m in zsp] == ["system", "user"] and zsp[1]["content"] == "Where is the sword?"
    assert "You are Rosa. You keep a farmhouse." in zsp[0]["content"]
    fsd = messages(profiles["Rosa"], "Where is the sword?", "fsd", retriever, 2)
    assert [m["role"] for m in fsd] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert fsd[2]["content"].startswith("Under the floorboards")  # the nearest example first
    fsp = messages(profiles["Rosa"], "Where is the sword?", "fsp", retriever, 2)
    assert [m["role"] for m in fsp] == ["system", "user"]
    assert "Under the floorboards" in fsp[1]["content"] and fsp[1]["content"].endswith('User: "Where is the sword?"')


def test_shipped_roles_and_released_profiles_and_the_turn_filter():
    mine = load_profiles(profile_files([str(ROLES)]))
    released = load_profiles(discover_profiles([str(BENCH)]))
    assert set(mine) == set(released) == {"Captain Vane", "柳云"}
    assert len(pairs(mine["Captain Vane"])) == len(pairs(released["Captain Vane"])) == 33
    assert "Salt keeps, lies don't" in mine["Captain Vane"].description  # catchphrases join the description
    kept, dropped = filter_roles(mine, 30)
    assert set(kept) == {"Captain Vane"} and dropped == ["柳云"]  # 26 turns of its own


# -- segments ------------------------------------------------------------------------------------------
def _turns(sizes: list[tuple[str, int]]) -> list[ScriptTurn]:
    return [ScriptTurn(act_id=0, diag_id=i, role=who, content=" ".join(["word"] * n)) for i, (who, n) in
            enumerate(sizes)]


def test_segment_rules():
    # Rounds of two turns, 130 words each: a segment closes at the first role line with >= 500 words (its text,
    # speaker labels included) and >= 4 turns.
    profile = RoleProfile(name="R", language="en", description="d",
                          turns=_turns([("X", 130), ("R", 130)] * 6 + [("X", 600), ("R", 10)]))
    cut = segments(profile)
    assert [size(s, "en") for s in cut] == [524, 524, 524]  # the 600-word turn dropped; the leftover too short
    assert all(s.splitlines()[-1].startswith("R:") for s in cut)
    big = RoleProfile(name="R", language="en", description="d", turns=_turns([("X", 450), ("R", 450)] * 3))
    assert [size(s, "en") for s in segments(big)] == [1804]  # two rounds for four turns; the third is left over
    assert [size(s, "en") for s in segments(big, Rules(max_size_en=600))] == [600]  # cut at the cap
    few = RoleProfile(name="R", language="en", description="d", turns=_turns([("X", 300), ("R", 300)] * 4))
    assert [s.count("\n") + 1 for s in segments(few)] == [4, 4]  # 600 words after two turns, but four are needed
    many = RoleProfile(name="R", language="en", description="d", turns=_turns([("X", 260), ("R", 260)] * 30))
    assert len(segments(many)) == 15 and len(segments(many, Rules(max_segments=4), seed=1)) == 4
    assert segments(many, Rules(max_segments=4), seed=1) == segments(many, Rules(max_segments=4), seed=1)
    zh = load_profiles(profile_files([str(ROLES)]))["柳云"]
    assert [size(s, "zh") >= 1000 for s in segments(zh)] == [True]  # Chinese counts characters


# -- cleaning and Context-Instruct filters -------------------------------------------------------------
@pytest.mark.parametrize(("answer", "reason"), [
    ("Steady as she goes, lad.", None),
    ("Steady as she goes", "no final punctuation"),
    ("As an AI, I have no ship. But here goes.", "reveals an AI identity"),
    ("作为一个人工智能，我不能喝茶。", "reveals an AI identity"),
    ("Captain Vane: Salt keeps.", "starts with the role's name as a speaker label"),
    ("I'm sorry, but I can't help with that.", "refuses"),
    ("抱歉，我无法回答。", "refuses"),
])
def test_cleaning_rules(answer, reason):
    assert unclean(answer, "Captain Vane") == reason


def _t(q: str, confidence: str = "High", answer: str = "Aye, that's right.", role: str = "R") -> Triplet:
    return Triplet(role=role, origin="script_agnostic", segment=-1, call=0, question=q, confidence=confidence,
                   rationale="r", answer=answer, outcome="kept")


def test_only_high_clean_and_distinct_questions_are_kept_and_duplicates_make_the_test_set():
    made = filter_triplets([
        _t("R, why did you fly into the storm over Fennick?"),
        _t("R, why did you fly into the storm above Fennick harbour?"),  # near copy of the first
        _t("R, what do you eat for breakfast on the ship?"),
        _t("R, who taught you to navigate by the stars?", confidence="Low"),
        _t("R, how many crew sail the Gull?", answer="As an AI I cannot know."),
    ], Plan(max_test=50))
    assert [t.outcome for t in made] == ["kept", "test", "kept", "low", "unclean"]
    capped = filter_triplets([_t("R, why did you fly into the storm?")] * 4, Plan(max_test=2))
    assert [t.outcome for t in capped] == ["kept", "test", "test", "duplicate"]


def test_layout_writes_both_splits_and_says_when_one_cannot_be_made():
    made = [_t(f"question {k} for {r}?", role=r) for r in ("A", "B", "C") for k in range(2)]
    made[1] = made[1].model_copy(update={"outcome": "test"})
    files, _ = layout(made, {"A": "en", "B": "en", "C": "zh"}, seed=0)
    assert sorted(files) == ["rolebench-eng/instruction-generalization/role_specific/test.jsonl",
                             "rolebench-eng/instruction-generalization/role_specific/train.jsonl",
                             "rolebench-eng/role-generalization/role_specific/test.jsonl",
                             "rolebench-eng/role-generalization/role_specific/train.jsonl",
                             "rolebench-zh/role_specific/test.jsonl", "rolebench-zh/role_specific/train.jsonl"]
    held = {r["role"] for r in files["rolebench-eng/role-generalization/role_specific/test.jsonl"]}
    trained = {r["role"] for r in files["rolebench-eng/role-generalization/role_specific/train.jsonl"]}
    assert len(held) == 1 and not held & trained and held | trained == {"A", "B"}
    assert files["rolebench-eng/instruction-generalization/role_specific/test.jsonl"][0]["type"] == [
        "script_agnostic"]
    _, one = layout(made[:2], {"A": "en"})
    assert one == ["role generalization: needs two English roles or more (one given), so it is not written"]


def test_the_triplet_schema_asks_for_exactly_n():
    schema = batch_schema(2)
    one = {"question": "R, why?", "reason": "clear", "confidence": "High", "answer": "Because."}
    assert len(schema.model_validate({"triplets": [one, one]}).triplets) == 2
    with pytest.raises(ValueError):
        schema.model_validate({"triplets": [one]})


# -- Rouge-L -------------------------------------------------------------------------------------------
def test_rouge_l_is_rouge_scores_own_number():
    own = rouge_scorer.RougeScorer(["rougeL"])
    pred, refs = "the cat sat on the red mat", ["a cat sat on a mat", "the cat sat on the red mat today"]
    assert rouge_l(pred, refs[:1], "en") == pytest.approx(100 * own.score(refs[0], pred)["rougeL"].fmeasure)
    # OpenCompass scores the first reference only (the default); max keeps the best match.
    assert rouge_l(pred, refs, "en") == rouge_l(pred, refs[:1], "en")
    assert rouge_l(pred, refs, "en", "max") == pytest.approx(
        100 * max(own.score(r, pred)["rougeL"].fmeasure for r in refs))
    # Chinese, one token per character (rpbench's chars): LCS of 我喜欢喝茶 / 我爱喝茶 is 我喝茶: P 3/5, R 3/4, F 2/3.
    assert rouge_l("我喜欢喝茶", ["我爱喝茶"], "zh", zh="chars") == pytest.approx(100 * 2 / 3)
    assert rouge_l("我喜欢喝茶", ["我爱喝茶"], "en") == 0.0  # what rouge-score's own tokenizer makes of it


def test_chinese_rouge_l_is_opencompass_s_jieba_rouge():
    """OpenCompass's JiebaRougeEvaluator: the text up to its first newline, ASCII period or comma, punctuation and
    English articles dropped, cut by jieba, scored by rouge-chinese."""
    import jieba
    from rouge_chinese import Rouge

    from rpbench.tasks.modes.rolellm.rouge import opencompass_clean

    assert opencompass_clean("Hello, the world.\nmore") == "Hello"
    assert opencompass_clean("我是一个好人！真的吗？") == "我是一个好人真的吗"
    pred, ref = "我喜欢喝绿茶，也喜欢红茶。", "我最爱喝的是绿茶。"
    words = lambda t: " ".join(jieba.cut(opencompass_clean(t)))  # noqa: E731
    want = 100 * Rouge().get_scores(words(pred), words(ref))[0]["rouge-l"]["f"]
    assert rouge_l(pred, [ref, "别的参考"], "zh") == pytest.approx(want)
    # An answer the clean-up empties scores against a placeholder that matches nothing, as in OpenCompass.
    assert rouge_l("...", [ref], "zh") == 0.0


def test_scores_per_reference_set_and_split():
    rows = [r for r in read_rolebench([str(BENCH)]) if r.split == "eng-instruction-generalization"]
    answers = [RoleAnswer(row_id=r.row_id, model="m", mode="zsp", text=r.generated[0], status="ok") for r in rows]
    answers[0] = answers[0].model_copy(update={"status": "failed", "text": None, "error": "timeout"})
    raw = {"What is the capital of France?": ["The capital of France is Paris."]}
    scores, failures = row_scores(rows, answers, raw, "max")
    assert [f.item_id for f in failures] == [rows[0].row_id]  # a failed answer is a failure, not a 0
    by = {(s.row_id, s.reference): s.rouge_l for s in scores}
    general = [r for r in rows if r.kind == "general"]
    assert by[(general[1].row_id, "CUS")] == 100.0 and (general[1].row_id, "RAW") in by
    assert (general[2].row_id, "RAW") not in by  # no RAW reference for that question
    table = split_table(scores)["eng-instruction-generalization"]["m"]
    assert table["SPE"] == 100.0 and table["avg"] == pytest.approx((table["CUS"] + table["RAW"] + 100.0) / 3)


# -- RoleBench files -----------------------------------------------------------------------------------
def test_rolebench_files_are_read_as_published():
    rows = read_rolebench([str(BENCH)])
    assert len(rows) == 14
    spec = [r for r in rows if r.split == "eng-role-generalization" and r.kind == "role_specific"]
    assert spec and all(r.type == ["script_based"] for r in spec)  # type given as a string in that file
    zh = [r for r in rows if r.split == "zh" and r.kind == "general"]
    assert zh[0].question == "请推荐一种适合秋天喝的茶。" and zh[0].language == "zh"  # written with \\u escapes
    baseline = read_rolebench([str(BENCH)], parts=["rolegpt_baseline"])
    assert {r.part for r in baseline} == {"rolegpt_baseline"}
    one = read_rolebench([str(BENCH / "rolebench-eng/instruction-generalization/role_specific/test.jsonl")])
    assert {(r.split, r.kind) for r in one} == {("eng-instruction-generalization", "role_specific")}
    # A mistyped part names what the folder holds.
    with pytest.raises(InputError, match=r"no tset.jsonl in this folder \(did you mean test.jsonl\? its files: "):
        read_rolebench([str(BENCH)], parts=["tset"])


@pytest.mark.parametrize(("line", "message"), [
    ('{"role": "R", "question": "q"}', "line 1: field 'generated': missing"),
    ('{"role": "R", "question": "q", "generated": []}', "field 'generated': expected a non-empty list"),
    ('{"role": "R", "question": "q", "generated": ["a"], "extra": 1}', "line 1: unknown field 'extra'"),
    ('{"role": "", "question": "q", "generated": ["a"]}', "field 'role'"),
    ('{"role": "R", "question": "q", "generated": ["a"], "type": {}}', "field 'type': expected text or a list"),
    ("not json", "line 1: not JSON"),
    ('{"role": "R", "question": "q", "generated": ["a"]}', "cannot tell whether this is a general"),
])
def test_a_bad_rolebench_row_names_the_file_line_and_field(tmp_path, line, message):
    path = tmp_path / "mine.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(InputError, match=message) as err:
        read_rolebench([str(path)])
    assert str(err.value).startswith(str(path))


# -- the ranking judge ---------------------------------------------------------------------------------
def test_answers_are_shown_shuffled_the_same_way_each_time_and_ranks_must_cover_every_answer():
    systems = ["alpha", "beta", "gamma", "delta"]
    orders = {tuple(shown_order(f"row{k}", systems)) for k in range(20)}
    assert len(orders) > 1 and shown_order("row3", systems) == shown_order("row3", list(reversed(systems)))
    schema = ranks_schema(2)
    place = {"reason": "r"}
    assert schema.model_validate({"ranking": [{**place, "answer": 2, "rank": 1}, {**place, "answer": 1, "rank": 2}]})
    with pytest.raises(ValueError, match="exactly once"):
        schema.model_validate({"ranking": [{**place, "answer": 1, "rank": 1}, {**place, "answer": 1, "rank": 2}]})
    with pytest.raises(ValueError, match="ranks go from 1"):
        schema.model_validate({"ranking": [{**place, "answer": 1, "rank": 1}, {**place, "answer": 2, "rank": 3}]})


def test_win_rates_count_ties_as_half():
    def r(**ranks: int) -> Ranking:
        return Ranking(row_id="x", judge="j", order=list(ranks), ranks=ranks, status="ok")

    rates = win_rates([r(m=1, ref=2), r(m=2, ref=1), r(m=1, ref=1), r(m=1, ref=2)], "ref")
    assert rates["m"]["win_rate"] == pytest.approx(100 * 2.5 / 4) and rates["m"]["compared"] == 4
    assert rates["m"]["first"] == 75.0 and rates["m"]["mean_rank"] == 1.25
    assert rates["ref"]["win_rate"] is None  # not compared with itself


# -- the flows -----------------------------------------------------------------------------------------
def _respond(body: dict) -> str:
    fmt = (body.get("response_format") or {}).get("json_schema") or {}
    name, prompt = fmt.get("name", ""), body["messages"][-1]["content"]
    if name.startswith("Ranking"):
        n = len(re.findall(r"\n(?:Answer |回答)\d+[:：]\n", prompt))
        # the echo model's answer ranks first, whatever order it is shown in
        best = int(re.search(r"\n(?:Answer |回答)(\d+)[:：]\nCaptain Vane says", prompt).group(1))
        order = [best, *(k for k in range(1, n + 1) if k != best)]
        return json.dumps({"ranking": [{"answer": a, "reason": "r", "rank": i + 1} for i, a in enumerate(order)]})
    if name.startswith("Triplets"):
        n = fmt["schema"]["properties"]["triplets"]["minItems"]
        low = "Excerpt" in prompt or "剧本片段" in prompt
        digest = abs(hash(prompt)) % 1000
        return json.dumps({"triplets": [{"question": f"Captain, question {digest}-{k} about the salt road?",
                                         "reason": "it names the ship", "confidence": "Low" if low and k == 0
                                         else "High", "answer": "Salt keeps, lies don't."} for k in range(n)]})
    if body["model"] == "echo":
        return "Captain Vane says: " + prompt
    return "I have no idea."


def _models(tmp_path: Path, loopback) -> str:
    path = tmp_path / "models.toml"
    path.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{loopback.base_url}"\nschema_rules = "vllm"\n'
                    f'api_key_env = "{TEST_KEY_ENV}"\ntimeout = 5\nstructured = "json_schema"\n'
                    '[roles.echo]\nmodel = "openai/echo"\n[roles.blank]\nmodel = "openai/blank"\n')
    return str(path)


def test_eval_flow_scores_ranks_and_reruns_from_cache(harness, loopback, tmp_path, monkeypatch):
    from rpbench.flows.modes.rolellm.flows import rolellm_eval

    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = _respond
    out = tmp_path / "run"
    s = EvalSettings(data=[str(BENCH)], models=["echo", "blank"], judges=["rolellm-judge"], raw=str(RAW),
                     out=str(out), resamples=200, models_file=_models(tmp_path, loopback),
                     cache=str(tmp_path / "c.sqlite"))
    manifest = rolellm_eval(s)
    answers = read_records(out / ANSWERS.filename, ANSWERS)
    asked_answers = [a for a in answers if a.model != "rolegpt-baseline"]
    assert len(asked_answers) == 28 and all(a.status == "ok" for a in answers)
    # The RoleGPT answers RoleBench ships beside the test files are scored as a system of their own, on the
    # questions they cover (the instruction-generalization and Chinese files here), with no call.
    baseline = [a for a in answers if a.model == "rolegpt-baseline"]
    assert baseline and all("role-generalization" not in a.row_id for a in baseline)
    board = {r["model"]: r for r in manifest["rolellm"]["leaderboard"]}
    assert set(board) == {"echo", "blank", "rolegpt-baseline"} and board["rolegpt-baseline"]["failed"] == 0
    # as OpenCompass asks by default: the role's name and description, then the question, in one user message
    asked = [r for r in loopback.requests if r["model"] == "echo"]
    assert all([m["role"] for m in r["messages"]] == ["user"] for r in asked)
    from rpbench.tasks.modes.rolellm.tables import QUESTIONS

    questions = {q.question for q in read_records(out / QUESTIONS.filename, QUESTIONS)}
    assert asked and all(r["messages"][0]["content"].rsplit("\n", 1)[-1] in questions for r in asked)
    scores = read_records(out / ROW_SCORES.filename, ROW_SCORES)
    assert {s.reference for s in scores} == {"CUS", "RAW", "SPE"}
    # the three questions, twice in role-generalization, for each model asked
    assert sum(s.reference == "RAW" and s.model != "rolegpt-baseline" for s in scores) == 2 * 5
    by_split = manifest["rolellm"]["by_split"]
    assert set(by_split) == {"eng-instruction-generalization", "eng-role-generalization", "zh"}
    assert by_split["zh"]["echo"]["RAW"] is None  # no RAW references for Chinese
    # the judge put the echo model first everywhere: it beats the RoleGPT baseline each time, "blank" never
    wins = manifest["rolellm"]["win_rates"]["rolellm-judge"]
    assert wins["echo"]["win_rate"] == 100.0 and wins["blank"]["win_rate"] < 100.0
    ranked = read_records(out / RANKINGS.filename, RANKINGS)
    assert len(ranked) == 14
    for r in ranked:  # the baseline's answers exist beside the instruction-generalization and Chinese files only
        assert set(r.order) == {"echo", "blank", *(["rolegpt-baseline"] if "role-gen" not in r.row_id else [])}
    assert len({tuple(r.order) for r in ranked}) > 1  # shuffled per question
    report = (out / "report.md").read_text()
    assert "**eng-instruction-generalization**" in report and "## Ranking judge" in report

    sent = len(loopback.requests)
    again = rolellm_eval(s)
    assert len(loopback.requests) == sent and again["this_run"]["calls_sent"] == 0


def test_answers_given_as_a_file_score_exactly_as_live_ones(harness, loopback, tmp_path, monkeypatch):
    from rpbench.flows.modes.rolellm.flows import rolellm_eval

    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = _respond
    models, cache = _models(tmp_path, loopback), str(tmp_path / "c.sqlite")
    live = rolellm_eval(EvalSettings(data=[str(BENCH)], models=["echo"], out=str(tmp_path / "live"), resamples=50,
                                     models_file=models, cache=cache))
    questions = {q.row_id: q for q in read_records(tmp_path / "live" / QUESTIONS.filename, QUESTIONS)}
    replies = [a for a in read_records(tmp_path / "live" / ANSWERS.filename, ANSWERS) if a.model == "echo"]
    path = tmp_path / "echo.jsonl"  # keyed as RoleBench keys its rows: role and question
    path.write_text("\n".join(json.dumps({"role": questions[a.row_id].role, "question": questions[a.row_id].question,
                                          "answer": a.text}, ensure_ascii=False) for a in replies))
    sent = len(loopback.requests)
    given = rolellm_eval(EvalSettings(data=[str(BENCH)], answers=[f"echo={path}"], out=str(tmp_path / "given"),
                                      resamples=50, models_file=models, cache=cache))
    assert len(loopback.requests) == sent  # no call
    for table in (ANSWERS, ROW_SCORES):
        assert read_records(tmp_path / "given" / table.filename, table) == \
            read_records(tmp_path / "live" / table.filename, table), table.name
    assert given["rolellm"]["leaderboard"] == live["rolellm"]["leaderboard"]


def test_a_released_baseline_file_is_an_answers_file_as_it_stands(harness, tmp_path):
    """RoleBench's answer files keep the answer in ``generated`` (a list of one); given as --answers, they score
    exactly as the baseline found beside the test files does, with no model to call."""
    from rpbench.flows.modes.rolellm.flows import rolellm_eval

    split = BENCH / "rolebench-eng" / "instruction-generalization" / "role_specific"
    released = split / "rolegpt_baseline.jsonl"
    rolellm_eval(EvalSettings(data=[str(split)], answers=[f"released={released}"], out=str(tmp_path / "o"),
                              resamples=50, cache=str(tmp_path / "c.sqlite")))
    scores = read_records(tmp_path / "o" / ROW_SCORES.filename, ROW_SCORES)
    mine = {(s.row_id, s.reference): s.rouge_l for s in scores if s.model == "released"}
    shipped = {(s.row_id, s.reference): s.rouge_l for s in scores if s.model == "rolegpt-baseline"}
    assert mine and mine == shipped
    assert {s.split for s in scores} == {"eng-instruction-generalization"}

    bad = tmp_path / "two.jsonl"
    bad.write_text(json.dumps({"role": "Captain Vane", "question": "q", "generated": ["a", "b"]}) + "\n")
    with pytest.raises(InputError, match=r"two.jsonl: line 1: field 'generated': expected one answer.*a list of 2"):
        read_rolebench_answers(bad)


def test_context_instruct_writes_rolebench_files_that_eval_and_training_read(harness, loopback, tmp_path,
                                                                            monkeypatch):
    from rpbench.flows.modes.rolellm.flows import context_instruct

    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = _respond
    out = tmp_path / "ci"
    manifest = context_instruct(ContextInstructSettings(
        roles=[str(ROLES)], per_segment=2, per_description_call=3, description_calls=2, min_candidates=20,
        max_topup_calls=1, out=str(out), models_file=_models(tmp_path, loopback), cache=str(tmp_path / "c.sqlite")))
    made = read_records(out / TRIPLETS.filename, TRIPLETS)
    vane = [t for t in made if t.role == "Captain Vane"]
    # two segments x 2 + 2 description calls x 3 + one top-up call x 3 (20 wanted, 10 made)
    assert len(vane) == 13 and {t.origin for t in vane} == {"script_based", "script_agnostic"}
    assert sum(t.outcome == "low" for t in vane) == 2  # the first question of each segment was Low
    written = read_rolebench([str(out)], parts=["train"])
    assert {r.role for r in written} == {"Captain Vane", "柳云"} and all(r.kind == "role_specific" for r in written)
    assert {r.split for r in written} == {"eng-instruction-generalization", "zh"}
    assert manifest["context_instruct"]["notes"] == [
        "role generalization: needs two English roles or more (one given), so it is not written"]
    assert (out / "summary.md").is_file()


def test_cli_errors_are_one_line(tmp_path):
    for args, message in [
        (["eval", "--data", str(BENCH), "--model", "rolellm-player", "--profiles", str(tmp_path)],
         "no role files (*.yaml) and no RoleBench desc.json"),
        (["eval", "--data", str(tmp_path / "nope"), "--model", "rolellm-player"], "nope: no such file or folder"),
        (["eval", "--data", str(BENCH), "--model", "rolellm-player", "--reference", "gpt-9"],
         "--reference: 'gpt-9' is neither rolegpt-baseline nor one of the models"),
        (["eval", "--data", str(BENCH), "--model", "rolellm-player", "--mode", "fsq"], "fsq"),
        (["eval", "--data", str(BENCH), "--model", "rolellm-player", "--judge-per-role", "5"],
         "--judge-per-role: how many questions the ranking judge ranks; give a judge with --judge"),
        (["context-instruct", "--role", str(ROLES), "--min-turns", "100"], "--role: no role has 100 turns"),
    ]:
        # In a process of its own: in this module's process, an error line written in-process once took pytest's
        # own stderr down (a closed capture file some library had kept); each case is a second of start-up.
        p = subprocess.run([*CLI, "rolellm", *args, "--out", str(tmp_path / "o")], capture_output=True, text=True)
        assert p.returncode == 2 and message in p.stderr and "Traceback" not in p.stderr, (args, p.stderr)


@pytest.mark.local_model
def test_rolellm_runs_on_the_local_model(tmp_path):
    # One short triplet per call is all this checks: a shorter budget keeps the small model quick.
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "ph"), "RPBENCH_ROLELLM_GENERATOR_MAX_TOKENS": "320"}
    cache = str(tmp_path / "c.sqlite")
    p = subprocess.run([*CLI, "rolellm", "eval", "--data", str(BENCH / "rolebench-zh"), "--model", "rolellm-player",
                        "--limit", "1", "--mode", "fsd", "--top-k", "2", "--out", str(tmp_path / "eval"), "--cache",
                        cache, "--resamples", "100"], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    answers = [a for a in read_records(tmp_path / "eval" / ANSWERS.filename, ANSWERS) if a.model != "rolegpt-baseline"]
    assert len(answers) == 2 and all((a.status == "ok" and a.text) or a.error for a in answers)
    p = subprocess.run([*CLI, "rolellm", "context-instruct", "--role", str(ROLES / "liu_yun.zh.yaml"),
                        "--per-segment", "1", "--description-calls", "1", "--per-description-call", "1",
                        "--min-candidates", "0", "--out", str(tmp_path / "ci"), "--cache", cache],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    made = read_records(tmp_path / "ci" / TRIPLETS.filename, TRIPLETS)
    failed = (tmp_path / "ci" / "failures.parquet").is_file()
    assert made or failed  # triplets, or their failure on record: never invented ones


def test_the_papers_avg_is_the_mean_of_cus_raw_and_spe():
    from rpbench.tasks.modes.rolellm.catalog import PAPER_TABLES, PRINTED_OTHERWISE

    checked = 0
    for table, rows in PAPER_TABLES.items():
        for model, (cus, raw, spe, avg) in rows.items():
            if (table, model) in PRINTED_OTHERWISE:
                assert abs((cus + raw + spe) / 3 - avg) > 1  # the paper's own inconsistency, kept as printed
            else:
                assert (cus + raw + spe) / 3 == pytest.approx(avg, abs=0.1)  # each printed to one decimal, (table, model)
                checked += 1
    assert checked == 31


# -- RoleBench-general, role profiles and role selection ---------------------------------------------------
def test_general_instructions_are_short_and_distinct():
    found = load_instructions(INSTRUCTIONS)
    kept = select_instructions(found)
    assert len(found) == 11 and len(kept) == 9  # the long one and the near-copy of the first are gone
    assert not any("history of maritime navigation" in i.question for i in kept)
    assert [i.question for i in kept].count("Give three tips for packing a suitcase.") == 1
    assert "Translate the sentence into French.\nThe sea is calm tonight." in [i.question for i in kept]
    assert {i.language for i in kept} == {"en", "zh"}


def test_general_layout_keeps_clean_references_and_splits_by_instruction_and_role():
    def resp(role: str, q: str, n: int, outcome: str) -> GeneralResponse:
        return GeneralResponse(role=role, question=q, index=n, text=f"{role} {q} {n}.", status="ok", outcome=outcome)

    made = [resp(r, q, n, "baseline" if n == 5 else "unclean" if n == 0 else "reference")
            for r in ("A", "B", "C") for q in ("q1", "q2", "q3", "q4", "q5") for n in range(6)]
    files = general_layout(made, {"A": "en", "B": "en", "C": "en"}, seed=0)
    train = files["rolebench-eng/instruction-generalization/general/train.jsonl"]
    test = files["rolebench-eng/instruction-generalization/general/test.jsonl"]
    assert len({r["question"] for r in test}) == 1 and len({r["question"] for r in train}) == 4  # 4:1
    assert all(len(r["generated"]) == 4 for r in train + test)  # the unclean candidate left out
    base = files["rolebench-eng/instruction-generalization/general/rolegpt_baseline.jsonl"]
    assert [r["generated"][0].endswith(" 5.") for r in base] == [True] * len(test)
    held = {r["role"] for r in files["rolebench-eng/role-generalization/general/test.jsonl"]}
    assert len(held) == 1 and held.isdisjoint(r["role"] for r in files[
        "rolebench-eng/role-generalization/general/train.jsonl"])


_COUNT = {"n": 0}


def _author(body: dict) -> str:
    fmt = (body.get("response_format") or {}).get("json_schema") or {}
    name, prompt = fmt.get("name", ""), body["messages"][-1]["content"]
    if name == "_Text":
        first = "Your description is:" if "second person" in prompt or "第二人称" in prompt else "The character's"
        return json.dumps({"text": f"{first} a gruff airship captain who never leaves crew behind."})
    if name == "_Catchphrases":
        return json.dumps({"catchphrases": ["Steady as she goes.", "Salt keeps"]})
    if name == "_Choice":
        level = "extremely distinct" if "Captain Vane" in prompt else "not distinct"
        return json.dumps({"reason": "r", "character": "Captain Vane" if "Vane" in prompt else "Someone",
                           "distinctness": level})
    _COUNT["n"] += 1
    return "As an AI language model, I cannot." if _COUNT["n"] % 3 == 0 else "Steady as she goes, lad."


def test_general_profile_and_select_flows(harness, loopback, tmp_path, monkeypatch):
    from rpbench.flows.modes.rolellm.flows import role_profile, role_selection, rolebench_general

    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = _author
    models, cache = _models(tmp_path, loopback), str(tmp_path / "c.sqlite")
    out = tmp_path / "general"
    manifest = rolebench_general(GeneralSettings(instructions=str(INSTRUCTIONS), roles=[str(ROLES)], out=str(out),
                                                 models_file=models, cache=cache))
    made = read_records(out / GENERAL_RESPONSES.filename, GENERAL_RESPONSES)
    assert len(made) == 9 * 6  # each role answers the instructions of its language six times
    counts = manifest["general"]["counts"]
    assert counts["unclean"] + counts["reference"] == 45 and counts["unclean"] > 0 and counts["baseline"] == 9
    rows = read_rolebench([str(out)], parts=["train", "test"])
    assert {r.split for r in rows} == {"eng-instruction-generalization", "zh"} and all(r.kind == "general"
                                                                                        for r in rows)
    assert "Give three tips for packing a suitcase." in load_raw(out / "raw.jsonl")

    (tmp_path / "script.txt").write_text("MARA: Wind's turning.\nVANE: Then we turn with it.\n")
    prof = role_profile(ProfileSettings(name="Captain Vane", script_name="The Salt Road", aliases=["VANE"],
                                        script=str(tmp_path / "script.txt"), out=str(tmp_path / "profile"),
                                        models_file=models, cache=cache))
    written = load_role_file(prof["profile"]["role_file"])
    assert written.description.startswith("Your description is:") and written.catchphrases == [
        "Steady as she goes", "Salt keeps"]
    assert [t.role for t in written.turns] == ["MARA", "Captain Vane"]

    chosen = role_selection(SelectSettings(scripts=str(sample_path("rolellm", "scripts.txt")),
                                           out=str(tmp_path / "select"), models_file=models, cache=cache))
    table = read_records(tmp_path / "select" / SELECTION.filename, SELECTION)
    assert [c.script for c in table] == ["The Salt Road", "雨巷茶馆", "The Lighthouse Ledger"]
    assert chosen["selection"]["chosen"] == ["Captain Vane"]
    assert "Worth auditing (very distinct or extremely distinct): Captain Vane (The Salt Road)" in (
        tmp_path / "select" / "selection.md").read_text()


def test_a_question_asked_twice_takes_its_answers_in_order(tmp_path):
    """RoleBench's English role-specific test file asks 25 questions twice and RoleGPT's file answers each twice,
    differently: the answers go to the rows in order, never the last one to both."""
    from rpbench.tasks.modes.rolellm.answering import paired, read_rolebench_answers

    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [
        {"role": "Ann", "question": " Why? ", "generated": ["first"]},
        {"role": "Ann", "question": "Why?", "generated": ["second"]},
        {"role": "Bo", "question": "Who?", "answer": "only"}]))
    by_key = read_rolebench_answers(path)
    assert by_key["Ann\nWhy?"] == ["first", "second"]
    assert paired(["Ann\nWhy?", "Bo\nWho?", "Ann\nWhy?", "Bo\nWho?", "Cy\nHow?"], by_key) == \
        ["first", "only", "second", "only", None]
    twice = tmp_path / "ids.jsonl"
    twice.write_text('{"id": "r1", "answer": "a"}\n{"id": "r1", "answer": "b"}\n')
    with pytest.raises(InputError, match="'r1' is answered twice, differently"):
        read_rolebench_answers(twice)
