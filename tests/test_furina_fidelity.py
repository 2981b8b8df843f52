"""FURINA to the letter: one target per exchange, the judge shown the scene, every item counted, the paper's
per-language tables, and the numbers beyond it (position consistency, style control, clustered intervals)."""

from __future__ import annotations

import json
import math
import random
from collections import Counter

import numpy as np
import pytest

from rpbench.tasks.llm.structured import with_reasoning_cap
from rpbench.tasks.modes.furina.builder.build import (
    build_benchmark,
    build_stats,
    scene_queue,
    selection_counts,
    source_model_counts,
)
from rpbench.tasks.modes.furina.builder.dwrs import DIMENSIONS, dwrs_choose
from rpbench.tasks.modes.furina.builder.simulate import BuildConfig, Dialogue, simulate, spoken_part, turn_records
from rpbench.tasks.modes.furina.builder.turns import dimension_text
from rpbench.tasks.modes.furina.domain import Character, Generation, Item, Scene
from rpbench.tasks.modes.furina.evaluation.analysis import REPORT
from rpbench.tasks.modes.furina.evaluation.run import Bench, EvalConfig, JudgeVerdict, evaluate, judge_request, score
from rpbench.tasks.modes.furina.evaluation.samples import samples as furina_samples
from rpbench.tasks.modes.furina.records import ItemScore
from rpbench.tasks.reports.report import build_report
from rpbench.tasks.stats import bootstrap_ci, cluster_bootstrap_ci
from rpbench.tasks.stats.style import Comparison, style_controlled
from tests.helpers import schema_responder
from tests.test_builder import SCENE, TEST, Scripted

# -- the builder --------------------------------------------------------------------------------------------


def test_algorithm_1_worked_example_and_its_selection_counter():
    """Appendix C: counts [2, 5, 1] give weights [4, 1, 5]; d3 is drawn; its count rises on the selection."""
    counts = [2, 5, 1]
    chosen = dwrs_choose(counts, random.Random(0))
    assert chosen == 2
    counts[chosen] += 1  # Algorithm 1, line 17: every selection counts, accepted or not
    assert counts == [2, 5, 2]
    assert dwrs_choose(counts, random.Random(0)) in (0, 2)  # now a tie between d1 and d3


async def test_one_exchange_has_one_target_from_question_to_strategy():
    # Two scene turns, then the test character, repeatedly: each exchange spans several turns.
    gw = Scripted(director=lambda n: ["Starbuck", "Stubb", "Zero"][(n - 1) % 3])
    cfg = BuildConfig(tau=1, min_rounds=9, max_rounds=9, max_test_gap=3)
    d = await simulate(gw, Dialogue("z-d0", TEST, SCENE, "source"), dict.fromkeys(DIMENSIONS, 0), cfg,
                       random.Random(0))
    by_exchange: dict[int, set[str]] = {}
    for t in d.turns:
        by_exchange.setdefault(t.exchange, set()).add(t.target_dimension)
    assert len(by_exchange) == 3 and all(len(v) == 1 for v in by_exchange.values())
    # The prompts: the scene characters' question I(d) and the test character's strategy S(d) name one d.
    prompts = dict(gw.prompts)
    for t in d.turns:
        if t.is_test:
            assert dimension_text("strategy", t.target_dimension, "en") in prompts[f"z-d0:{t.index}:test:source"]
        else:
            question = dimension_text("question", t.target_dimension, "en", target="Zero")
            assert question in prompts[f"z-d0:{t.index}:scene"]
    # Three exchanges, three selections, three different dimensions (the counter steers away from repeats).
    assert sum(d.selected.values()) == 3 and len(d.selected) == 3
    assert selection_counts(turn_records(d)) == {k: d.selected.get(k, 0) for k in DIMENSIONS}


async def test_inner_thoughts_of_a_turn_do_not_reach_the_others():
    class Thinker(Scripted):
        async def run(self, req):
            if req.tag.endswith(":scene"):
                self.prompts.append((req.tag, req.messages[-1]["content"]))
                return self._ok(req, "(leans in) [SECRET-THOUGHT he suspects me] Tell me more.")
            return await super().run(req)

    gw = Thinker(director=lambda n: ["Starbuck", "Zero"][(n - 1) % 2])
    d = await simulate(gw, Dialogue("z-d0", TEST, SCENE, "source"), dict.fromkeys(DIMENSIONS, 0),
                       BuildConfig(min_rounds=4, max_rounds=4), random.Random(0))
    assert any("SECRET-THOUGHT" in t.text for t in d.turns)  # kept in the record of the dialogue...
    test_prompts = [p for tag, p in gw.prompts if tag.endswith((":source", ":base", ":judge"))]
    assert test_prompts and not any("SECRET-THOUGHT" in p for p in test_prompts)  # ...never shown to others
    assert "Tell me more." in test_prompts[-1]
    assert spoken_part("（点头）【他在撒谎】好的。") == "（点头） 好的。"


def test_a_character_is_never_dropped_into_a_scene_it_is_in():
    ishmael_scene = Scene.model_validate({**SCENE.model_dump(), "scene_id": "s2", "characters": [
        *SCENE.model_dump()["characters"], {"name": "zero", "motivation": "m", "profile": []}]})
    assert [s.scene_id for s in scene_queue(TEST, [SCENE, ishmael_scene], BuildConfig())] == ["s1"]


async def test_build_stats_describe_the_kept_dialogues_and_source_models_are_counted():
    from rpbench.tasks.modes.furina.builder.turns import DialogueGrade

    class TwoDialogues(Scripted):
        """zero-d0 ends as soon as it may (4 turns) and is graded poor; zero-d1 runs to 6 turns, graded high."""

        async def run(self, req):
            first = req.tag.startswith("zero-d0")
            if req.tag.endswith(":grade"):
                return self._ok(req, "{}", DialogueGrade(reason="r", grade="poor" if first else "high"))
            if req.tag.endswith(":director"):
                may_end = "END" in req.schema.model_fields["next"].annotation.__args__
                nxt = "END" if first and may_end else ("Starbuck" if self.n["director"] % 2 else "Zero")
                self.n["director"] += 1
                return self._ok(req, nxt, req.schema.model_validate({"reason": "r", "next": nxt}))
            return await super().run(req)

    cfg = BuildConfig(tau=50, min_rounds=4, max_rounds=6, max_test_gap=2, wave_size=2, max_dialogues_per_character=2)
    result = await build_benchmark(TwoDialogues(sigmas=(1,)), [TEST], [SCENE], cfg)
    lengths = Counter(t.dialogue_id for t in result.turns)
    assert lengths == {"zero-d0": 4, "zero-d1": 6}
    stats = build_stats(result, [TEST], [SCENE], ("high",))[-1]
    assert stats["conversations"] == 2 and stats["conversations_kept"] == 1
    assert stats["mean_conversation_length"] == 6  # the kept dialogue's, not the mean of 4 and 6
    rows = source_model_counts(result.items)
    assert result.items and [r["language"] for r in rows] == ["en", "all"]
    assert rows[-1]["items"] == len(result.items) and rows[-1]["share"] == 1.0


def test_a_two_chapter_chinese_story_of_a_thousand_characters_is_a_book(tmp_path):
    from rpbench.tasks.core.errors import InputError
    from rpbench.tasks.modes.furina.pool.ingest import read_book

    line = "“你今天去哪里了？”林妹妹问道。宝玉笑着说：“我去园子里看花了，那里的桃花开得正好。”"
    story = "第一章 花园\n\n" + line * 11 + "\n\n第二章 夜话\n\n" + line * 11
    assert 900 <= len(story) <= 1100
    path = tmp_path / "story.txt"
    path.write_text(story, encoding="utf-8")
    assert read_book(path).language == "zh"
    english = tmp_path / "short.txt"
    english.write_text('"Where were you?" she asked. "In the garden," he said.\n' * 18)
    with pytest.raises(InputError, match="a book in en needs at least 1500"):
        read_book(english)


def test_the_judges_reasoning_cap_is_generous_and_set_per_role():
    long = "x" * 3000
    assert JudgeVerdict(reasoning=long, sigma=2).reasoning == long  # a real judge's long reasoning parses
    capped = with_reasoning_cap(JudgeVerdict, 400)
    assert capped.model_json_schema()["properties"]["reasoning"]["maxLength"] == 400
    with pytest.raises(ValueError):
        capped.model_validate({"reasoning": long, "sigma": 2})


# -- evaluation ------------------------------------------------------------------------------------------
ESTABLISHED = Character.model_validate({**TEST.model_dump(), "name": "Holmes", "type": "established"})


def _item(item_id, character, ctype, dimension, dialogue="d0", language="en", scene="s1"):
    return Item(item_id=item_id, character=character, character_type=ctype, language=language, scene_id=scene,
                dialogue_id=dialogue, dimension=dimension, history=[{"speaker": "Starbuck", "text": "Why?"}],
                test_utterance="t", base_utterance="b", source_model="m", sigma=1)


def test_the_judge_sees_what_the_test_character_saw_and_nothing_private_of_others():
    bench = Bench([_item("i1", "Zero", "synthesized", "CR")], {"Zero": TEST}, {"s1": SCENE})
    prompt = judge_request(bench, bench.items[0], "reply a", "reply b", 1, "t").messages[0]["content"]
    assert "A whaler at sea." in prompt and "Night, storm." in prompt  # background and situation
    assert "Careful first mate." in prompt and "Jolly second mate." in prompt  # the others' public profiles
    assert dimension_text("strategy", "CR", "en") in prompt  # the reply strategy the test character was given
    assert "ZERO-SECRET" in prompt  # the test character's own full profile
    for private in ("STARBUCK-SECRET", "STUBB-SECRET", "STARBUCK-MOTIVE", "STUBB-MOTIVE", "ORIGINAL-LINE"):
        assert private not in prompt
    extras = judge_request(bench, bench.items[0], "a", "b", 1, "t", extras=True).messages[0]["content"]
    assert "STARBUCK-MOTIVE" in extras and "ORIGINAL-LINE" in extras  # shown when the test character saw them


def test_a_failed_answer_counts_zero_in_the_headline_and_is_listed():
    items = [_item("i1", "Zero", "synthesized", "CR"), _item("i2", "Zero", "synthesized", "PA")]
    bench = Bench(items, {"Zero": TEST}, {"s1": SCENE})
    base = [Generation(item_id=i.item_id, model="base", text="base reply", status="ok") for i in items]
    answers = [Generation(item_id="i1", model="m", text="(smiles) fine", status="ok"),
               Generation(item_id="i2", model="m", text=None, status="failed", error="empty reply")]
    from rpbench.tasks.modes.furina.domain import Judgment
    judgments = [Judgment(item_id="i1", model="m", order=o, sigma=s, rationale="r", status="ok")
                 for o, s in ((1, 1), (2, 5))]
    rows, failures = score(bench, base, answers, judgments, [], "m")
    assert [(r.item_id, r.answered, r.score, r.score_answered) for r in rows] == [
        ("i1", True, 3.0, 3.0), ("i2", False, 0.0, None)]
    assert [(f.item_id, f.kind) for f in failures] == [("i2", "answer_failed")]
    report = build_report(REPORT, "2 items.", rows, failures, 50, 0)
    (row,) = report.board
    assert row["score"] == 50.0 and row["answered"] == 100.0 and row["unanswered"] == 1 and row["failed"] == 1
    assert "| answered (0-100) | unanswered (items) |" in report.markdown
    # The failure rule's base is the two items asked: the failed one is among the n the score stands on, so it
    # is half of them failed, not 1 of n + failed = 3 (which read a model failing all 8 answers as 8 of 16).
    from rpbench.flows.kit.running.outcome import model_reasons

    assert report.items == {"m": 2}
    assert model_reasons(failures, {"m": row["n"]}, 0.4, report.items) == [
        "model m: 1 of 2 items failed (50%, more than 40%)"]


def _scores(model, n_dialogues=6, per_dialogue=4, sigma=(2, 4), checked=True, language="en", test_chars=100):
    out = []
    for d in range(n_dialogues):
        for k in range(per_dialogue):
            dim, ctype = (("CR", "synthesized"), ("FR", "established"), ("PA", "synthesized"))[k % 3]
            out.append(ItemScore(
                item_id=f"{language}-d{d}-t{k}", model=model, dimension=dim, language=language, character="c",
                character_type=ctype, dialogue_id=f"{language}-d{d}", answered=True, sigma1=sigma[0],
                sigma2=sigma[1], score=1.0, score_answered=1.0,
                hallucinated=(k % 2 == 0) if checked and dim in ("CR", "FR") else None,
                test_chars=test_chars, base_chars=100, test_markup=0, base_markup=0))
    return out


def test_a_model_without_checked_items_is_off_the_frontier():
    rows = _scores("checked") + [r.model_copy(update={"score": 2.5, "score_answered": 2.5})
                                 for r in _scores("unchecked", checked=False)]
    report = build_report(REPORT, "", rows, [], 50, 0)
    board = {r["model"]: r for r in report.board}
    assert board["unchecked"]["score"] > board["checked"]["score"]  # better, but nothing says how reliable
    assert board["unchecked"]["reliability"] is None
    assert report.analysis.summary["pareto"] == ["checked"]
    assert "undefined (no checked items)" in report.markdown


def test_no_empty_pareto_chart_when_no_model_has_checked_items():
    image = "data:image/png;base64,"
    unchecked = build_report(REPORT, "", _scores("m", checked=False), [], 20, 0)
    checked = build_report(REPORT, "", _scores("m"), [], 20, 0)
    assert checked.html.count(image) == unchecked.html.count(image) + 1
    assert "Pareto frontier, all items: - (left out, no checked items: m)" in unchecked.markdown


async def test_per_language_and_per_type_tables_on_a_two_language_loopback_benchmark(make_gateway, loopback):
    loopback.responder = schema_responder
    zh_test = Character.model_validate({**TEST.model_dump(), "name": "零", "language": "zh"})
    zh_holmes = Character.model_validate({**ESTABLISHED.model_dump(), "name": "福尔摩斯", "language": "zh"})
    zh_scene = Scene.model_validate({**SCENE.model_dump(), "scene_id": "s-zh", "language": "zh"})
    items = []
    for lang, (syn, est), scene in (("en", ("Zero", "Holmes"), "s1"), ("zh", ("零", "福尔摩斯"), "s-zh")):
        items += [_item(f"{lang}{k}", name, ctype, dim, f"{lang}-d{k // 2}", lang, scene)
                  for k, (name, ctype, dim) in enumerate([(syn, "synthesized", "CR"), (est, "established", "FR"),
                                                          (syn, "synthesized", "PA"), (est, "established", "CA")])]
    bench = Bench(items, {c.name: c for c in (TEST, ESTABLISHED, zh_test, zh_holmes)},
                  {"s1": SCENE, "s-zh": zh_scene})
    gateway = make_gateway()
    gateway.config.roles["m2"] = gateway.config.default.model_copy(update={"temperature": 0.5})
    tables = await evaluate(gateway, bench, {"m1": "test", "m2": "m2"}, EvalConfig(resamples=50))
    report = build_report(REPORT, "", tables.item_scores, tables.failures, 50, 0, {"judge": "openai/loopback"})
    md = report.markdown
    assert "### en" in md and "### zh" in md  # Table 4: a leaderboard per language
    table14 = md.split("## Hallucination (Table 14)")[1].split("##")[0]
    assert all(f"| {m} | {lang} |" in table14 for m in ("m1", "m2") for lang in ("en", "zh", "all"))
    assert set(report.analysis.summary["pareto_by_slice"]) == {
        "en/established", "en/synthesized", "zh/established", "zh/synthesized"}
    assert "| m1 | openai/loopback |" in md  # position consistency, per model and judge
    assert report.html.count("data:image/png;base64,") == 3


def test_position_consistency_counts_slot_wins():
    first_slot_lover = _scores("m", sigma=(1, 1))  # A wins in both orders: whoever is shown first
    report = build_report(REPORT, "", first_slot_lover, [], 20, 0)
    (row,) = report.board
    assert row["order_disagreement"] == 1.0 and row["slot_a_share"] == 1.0
    fair = build_report(REPORT, "", _scores("m", sigma=(2, 4)), [], 20, 0).board[0]
    assert fair["order_disagreement"] == 0.0 and fair["slot_a_share"] == 0.5


def test_style_control_removes_a_win_that_only_length_explains():
    """The longer reply always wins; `verbose` is always longer than the base, `plain` as often shorter."""
    rng = np.random.default_rng(0)
    rows = []
    for k in range(240):
        base = int(rng.integers(80, 300))
        for model, chars in (("verbose", base + int(rng.integers(40, 200))), ("plain", int(rng.integers(80, 300)))):
            win = chars > base
            rows.append(ItemScore(
                item_id=f"i{k}", model=model, dimension="CA", language="en", character="c",
                character_type="synthesized", dialogue_id=f"d{k // 3}", answered=True, sigma1=1 if win else 5,
                sigma2=5 if win else 1, score=3.0 if win else 0.0, score_answered=3.0 if win else 0.0,
                hallucinated=None, test_chars=chars, base_chars=base, test_markup=0, base_markup=0))
    report = build_report(REPORT, "", rows, [], 50, 0)
    board = {r["model"]: r for r in report.board}
    assert board["verbose"]["score"] == 100.0  # raw: it always wins
    controlled = board["verbose"]["style_controlled"]
    assert abs(controlled - 50.0) < 10  # at equal length it is no better than the base...
    assert abs(controlled - board["plain"]["style_controlled"]) < 15  # ...nor than a model like the base
    assert "Style-controlled win rate" in report.markdown


def test_style_control_keeps_a_win_that_length_does_not_explain():
    comps = [Comparison("good", 1.0 if k % 4 else 0.0, f"d{k // 2}", {"chars": (100 + k % 7, 100)})
             for k in range(200)]
    comps += [Comparison("equal", 0.5, f"d{k // 2}", {"chars": (100 + k % 5, 100)}) for k in range(200)]
    by = {s.model: s for s in style_controlled(comps, resamples=30)}
    assert by["good"].controlled_win_rate > 65 and by["good"].ci_low > 50


def test_clustered_intervals_are_wider_than_item_intervals_on_clustered_data():
    rng = np.random.default_rng(1)
    values, clusters = [], []
    for c in range(40):
        level = rng.normal(0, 1)  # items of one dialogue share most of their value
        for _ in range(6):
            values.append(level + 0.1 * rng.normal())
            clusters.append(c)
    point = float(np.mean(values))
    lo, hi = bootstrap_ci(values, point, resamples=500)
    clo, chi = cluster_bootstrap_ci(values, clusters, point, resamples=500)
    assert clo <= point <= chi and (chi - clo) > 1.8 * (hi - lo)
    # One item per cluster: it is the ordinary bootstrap again, up to resampling noise.
    single = cluster_bootstrap_ci(values, list(range(len(values))), point, resamples=500)
    assert single[1] - single[0] == pytest.approx(hi - lo, rel=0.2)


def test_an_interval_over_one_unit_is_undefined_and_equal_values_have_zero_width():
    from rpbench.tasks.stats import stratified_bootstrap_ci

    assert all(math.isnan(x) for x in bootstrap_ci([3.0], 3.0))
    assert all(math.isnan(x) for x in cluster_bootstrap_ci([1.0, 2.0, 4.0], ["d1"] * 3, 7 / 3))  # one dialogue
    assert all(math.isnan(x) for x in stratified_bootstrap_ci([1.0, 5.0], ["a", "b"], 3.0))  # a value per stratum
    assert bootstrap_ci([2.0, 2.0], 2.0) == (2.0, 2.0)
    assert cluster_bootstrap_ci([2.0, 2.0, 2.0], ["d1", "d1", "d2"], 2.0) == (2.0, 2.0)
    low, high = stratified_bootstrap_ci([1.0, 5.0, 2.0], ["a", "b", "a"], 3.25, resamples=200)
    assert low < 3.25 < high  # one stratum of two values still varies


def test_the_report_says_its_intervals_resample_dialogues():
    assert "resamples whole dialogues" in build_report(REPORT, "", _scores("m"), [], 20, 0).markdown


def test_the_samples_show_scene_history_both_replies_and_judgments():
    from rpbench.tasks.modes.furina.domain import Judgment
    from rpbench.tasks.reports.viewer import viewer_html

    items = [_item("i1", "Zero", "synthesized", "CR"), _item("i2", "Zero", "synthesized", "PA")]
    bench = Bench(items, {"Zero": TEST}, {"s1": SCENE})
    gens = [Generation(item_id=i.item_id, model="base", text="<b>base</b> reply", status="ok") for i in items]
    gens += [Generation(item_id="i1", model="m", text="under test", status="ok"),
             Generation(item_id="i2", model="m", text=None, status="failed", error="timeout")]
    judgments = [Judgment(item_id="i1", model="m", order=o, sigma=s, rationale=f"because {o}", status="ok")
                 for o, s in ((1, 2), (2, 4))]
    rows, _ = score(bench, gens[:2], gens[2:], judgments, [], "m")
    shown = furina_samples(bench, rows, gens, judgments)
    assert [(s.id, s.facets["outcome"]) for s in shown] == [("m/i1", "win"), ("m/i2", "unanswered")]
    first = "\n".join(f"{p.label}: {p.text}" for p in shown[0].parts)
    assert "A whaler at sea." in first and "Why?" in first and "because 1" in first and "because 2" in first
    assert "Base reply: <b>base</b> reply" in first and "Reply under test (m): under test" in first
    assert "(no reply: timeout)" in "\n".join(p.text for p in shown[1].parts)
    html = viewer_html("t", shown)
    assert "<b>base" not in html and "\\u003cb\\u003ebase" in html  # model text travels as data, never as markup


def test_undefined_values_are_not_drawn_as_numbers():
    from rpbench.tasks.modes.furina.evaluation.charts import panel_layout, pareto_grid

    points = {"a": (40.0, None), "b": (50.0, math.inf), "c": (45.0, 2.0), "d": (45.2, 2.1)}
    layout = panel_layout(points)
    assert layout.undefined == ["a"]  # named under the panel, not plotted
    assert [p.model for p in layout.placed] == ["c", "d", "b"]
    inf_row = next(p for p in layout.placed if p.model == "b")
    assert inf_row.y == layout.infinity_line > 2.1  # infinity has a line of its own above every finite value
    c, d = (p for p in layout.placed if p.model in ("c", "d"))
    assert c.label_offset != d.label_offset  # close neighbours get labels on different sides
    assert pareto_grid({("en", "synthesized"): points}, {"en/synthesized": ["b"]})


def test_empty_answers_are_failures_not_replies():
    from rpbench.tasks.llm import Reply
    from rpbench.tasks.modes.furina.evaluation.run import _generation

    g = _generation("i1", "m", Reply("test", "fake", "   ", None, 1, False))
    assert g.status == "failed" and g.text is None and g.error == "empty reply"


def test_evaluation_shows_the_scene_extras_when_the_benchmark_was_built_with_them(tmp_path):
    from rpbench.tasks.modes.furina.evaluation.bench import shows_scene_extras

    assert shows_scene_extras(tmp_path) is False  # a hand-made benchmark folder: no manifest
    (tmp_path / "manifest.json").write_text(json.dumps({"build_settings": {"test_sees_scene_extras": True}}))
    assert shows_scene_extras(tmp_path) is True
    (tmp_path / "manifest.json").write_text(json.dumps({"build_settings": {"test_sees_scene_extras": False}}))
    assert shows_scene_extras(tmp_path) is False


def test_the_paper_preset_binds_the_papers_roles_with_prices():
    from rpbench.tasks.core.errors import InputError
    from rpbench.tasks.llm import load_models_config
    from rpbench.tasks.llm.config import presets

    assert "furina-paper" in presets()
    config = load_models_config("furina-paper", environ={})
    assert config.for_role("judge").model == config.for_role("base").model == "openai/gpt-4.1"
    assert config.for_role("director").model == config.for_role("scene").model == "openrouter/qwen/qwen3-235b-a22b"
    roles = ("judge", "base", "director", "scene", "checker", "extractor", "source", "source-claude-4-sonnet")
    for role in roles:
        spec = config.for_role(role)
        assert spec.input_cost_per_token and spec.output_cost_per_token, role
        assert spec.api_key_env and spec.api_key_env.endswith("_API_KEY"), role
    with pytest.raises(InputError, match="neither a file nor a preset; presets: characterjudge, coser-paper, dmt-paper, furina-paper, personagym-paper, "
                                         "pingpong-paper, roleinteract-paper, rolellm-paper"):
        load_models_config("no-such-preset", environ={})
    with pytest.raises(InputError, match="neither a file nor a preset; did you mean 'furina-paper'\\? presets: "):
        load_models_config("furina-papers", environ={})
