"""Evaluation: the scoring math, and the whole evaluation with a scripted LLM."""

from __future__ import annotations

import json
import math
from collections import Counter

import pytest
from scipy import stats

from rpbench.tasks.llm import NoReply, Reply
from rpbench.tasks.modes.furina.domain import Character, Item
from rpbench.tasks.modes.furina.evaluation.analysis import REPORT
from rpbench.tasks.modes.furina.evaluation.run import Bench, CheckVerdict, EvalConfig, JudgeVerdict, evaluate
from rpbench.tasks.modes.furina.evaluation.scoring import (
    hallucinated,
    item_score,
    pareto_front,
    performance,
    performance_statistic,
    position_bias,
    reliability,
)
from rpbench.tasks.reports.report import build_report
from rpbench.tasks.stats import bootstrap_ci, pearson, separability_index
from tests.test_builder import SCENE, TEST

# -- math ----------------------------------------------------------------------------------------


def test_appendix_r_case_scores_zero():
    assert item_score(4, 2) == 0.0


@pytest.mark.parametrize("s1", range(1, 6))
@pytest.mark.parametrize("s2", range(1, 6))
def test_all_25_sigma_pairs_follow_the_formula(s1, s2):
    expected = 0.5 * ({1: 3, 2: 1, 3: 0.5, 4: 0, 5: 0}[s1] + {1: 3, 2: 1, 3: 0.5, 4: 0, 5: 0}[6 - s2])
    assert item_score(s1, s2) == expected
    assert 0 <= item_score(s1, s2) <= 3


def test_performance_normalises_to_100():
    assert performance([3.0, 3.0]) == 100.0 and performance([0.0, 0.0]) == 0.0
    assert performance([1.5, 0.0]) == 25.0 and math.isnan(performance([]))


def test_bootstrap_interval_contains_the_estimate_and_narrows_with_n():
    import random

    rng = random.Random(1)
    small = [rng.choice([0, 0.5, 1, 3]) for _ in range(30)]
    large = small * 20
    def ci(values):
        return bootstrap_ci(values, performance(values), performance_statistic, seed=0)

    lo_s, hi_s = ci(small)
    lo_l, hi_l = ci(large)
    assert lo_s <= performance(small) <= hi_s and lo_l <= performance(large) <= hi_l
    assert hi_l - lo_l < hi_s - lo_s
    assert ci(small) == (lo_s, hi_s)  # seeded: the same interval twice


def test_position_bias_diagnostics():
    assert position_bias([(1, 5), (2, 4), (3, 3)]) == {"disagreement_rate": 0.0, "mean_offset": 0.0}
    biased = position_bias([(1, 1), (2, 2)])  # the judge prefers whatever is shown first
    assert biased["disagreement_rate"] == 1.0 and biased["mean_offset"] == -3.0


def test_hallucination_rule_and_reliability():
    assert hallucinated(True, True) and not hallucinated(True, False) and not hallucinated(False, False)
    assert reliability(25.0, 8) == 4.0
    assert reliability(0.0, 8) == math.inf  # checked and never hallucinated: as reliable as can be
    assert reliability(math.nan, 0) is None  # nothing checked: no evidence either way


def test_pareto_and_separability_on_known_inputs():
    points = {"a": (60.0, 2.0), "b": (50.0, 5.0), "c": (40.0, 1.0), "d": (55.0, math.inf), "e": (0.0, None)}
    assert pareto_front(points) == ["a", "d"]  # d never hallucinated: it beats b; e has no checks: not placed
    assert pareto_front({"zero": (0.0, None)}) == []  # a model scoring 0 with no checked items is off the front
    assert pareto_front({"a": (60.0, 2.0), "b": (50.0, 5.0), "c": (40.0, 1.0)}) == ["a", "b"]
    scores = [10.0, 20.0, 30.0]
    assert separability_index(scores) == pytest.approx(stats.tstd(scores, ddof=0) / 20.0)
    assert math.isnan(separability_index([5.0, 5.0]))


def test_pearson_matches_scipy():
    x, y = [1, 2, 3, 4, 5], [2, 1, 4, 3, 5]
    r, p = pearson(x, y)
    ref = stats.pearsonr(x, y)
    assert r == pytest.approx(ref.statistic) and p == pytest.approx(ref.pvalue)


# -- the evaluation, scripted ------------------------------------------------------------------------
ESTABLISHED = Character.model_validate({**TEST.model_dump(), "name": "Holmes", "type": "established"})


def _item(item_id, character, character_type, dimension, speaker, text):
    return Item(item_id=item_id, character=character, character_type=character_type, language="en", scene_id="s1",
                dialogue_id="d0", dimension=dimension, history=[{"speaker": speaker, "text": text}],
                test_utterance="t", base_utterance="b", source_model="m", sigma=1)


def _items():
    return [
        _item("i1", "Zero", "synthesized", "CR", "Starbuck", "Why are you here?"),
        _item("i2", "Holmes", "established", "FR", "Stubb", "Who are you?"),
        _item("i3", "Zero", "synthesized", "PA", "Stubb", "Tell me a joke."),
    ]


def _bench():
    return Bench(_items(), {"Zero": TEST, "Holmes": ESTABLISHED}, {"s1": SCENE})


class EvalScripted:
    def __init__(self, fail_judge_for=(), fail_checks_for=()):
        self.tags: list[str] = []
        self.fail_judge_for = set(fail_judge_for)
        self.fail_checks_for = set(fail_checks_for)

    async def run(self, req):
        self.tags.append(req.tag)
        parts = req.tag.split(":")
        item, who = parts[1], parts[2]
        if len(parts) == 3:  # an answer
            return Reply(req.role, "fake", f"{who} answers {item}", None, 1, False)
        if parts[3] == "judge":
            if (item, who) in self.fail_judge_for:
                return NoReply(req.role, "fake", "garbage", "no JSON", 3)
            order = int(parts[4][-1])
            good = who == "good/model"
            sigma = (1 if good else 4) if order == 1 else (5 if good else 2)
            verdict = JudgeVerdict(reasoning=f"{who} {'is fine' if good else 'hallucinates'}", sigma=sigma)
            return Reply(req.role, "fake", "{}", verdict, 1, False)
        if parts[3].startswith("check"):
            if (item, who) in self.fail_checks_for:
                return NoReply(req.role, "fake", "maybe", "the JSON does not match the schema", 3)
            says = "model hallucinates" in req.messages[0]["content"]
            return Reply(req.role, "fake", "{}", CheckVerdict(answer="Yes" if says else "No"), 1, False)
        raise AssertionError(req.tag)

    async def run_all(self, requests, on_done=None):
        return [await self.run(r) for r in requests]


async def _evaluate(gw, models):
    return await evaluate(gw, _bench(), {m: f"test@{m}" for m in models}, EvalConfig())


async def test_evaluation_scores_checks_and_reports():
    gw = EvalScripted(fail_judge_for={("i3", "bad/model")})
    tables = await _evaluate(gw, ["good/model", "bad/model"])
    good = [s for s in tables.item_scores if s.model == "good/model"]
    assert [s.score for s in good] == [3.0, 3.0, 3.0]
    bad = [s for s in tables.item_scores if s.model == "bad/model"]
    assert [s.item_id for s in bad] == ["i1", "i2"]  # the failed judgment left i3 out...
    assert [(f.model, f.item_id, f.kind) for f in tables.failures] == [("bad/model", "i3", "judgment_failed")]
    assert all(s.hallucinated for s in bad) and not any(s.hallucinated for s in good)
    failed = [j for j in tables.judgments if j.status == "failed"]
    assert len(failed) == 2 and all(j.sigma is None and j.raw == "garbage" for j in failed)
    # checks run only on CR (synthesized) and FR (established) items, both orders
    assert Counter(c.item_id for c in tables.checks) == {"i1": 4, "i2": 4}

    report = build_report(REPORT, "3 benchmark items.", tables.item_scores, tables.failures, 200, 0)
    board = report.board
    assert [r["model"] for r in board] == ["good/model", "bad/model"]
    assert board[0]["score"] == 100.0 and board[1]["score"] == 0.0
    assert board[0]["reliability"] == math.inf and board[1]["reliability"] == 1.0
    assert report.analysis.summary["pareto"] == ["good/model"]
    bad_row = board[1]
    assert bad_row["established"] == 0.0 and bad_row["synthesized"] == 0.0 and bad_row["gap"] == 0.0
    assert bad_row["failed"] == 1 and bad_row["RR"] is None  # no RR item: a missing value, not 0
    assert "| inf |" in report.markdown and "judgment_failed 1" in report.markdown
    assert report.html.count("data:image/png;base64,") == 3 and "<table>" in report.html


async def test_a_failed_check_of_a_scored_item_is_reported_but_is_not_a_failed_item():
    gw = EvalScripted(fail_checks_for={("i1", "good/model"), ("i2", "good/model")})
    tables = await _evaluate(gw, ["good/model"])
    assert len(tables.item_scores) == 3  # every item still scored
    checks = [f for f in tables.failures if f.kind == "check_failed"]
    assert len(checks) == 2 and all(f.scored and f.error for f in checks)
    board = build_report(REPORT, "3 items.", tables.item_scores, tables.failures, 200, 0).board
    assert board[0]["failed"] == 0  # it counted 2 before: the checks of items that were scored


async def test_adding_a_model_reuses_base_answers_and_earlier_judgments(tmp_path, make_gateway, loopback):
    """Against the loopback server with a real call cache: the second evaluation sends only the new model's calls."""
    import hashlib
    import json

    def respond(body):
        fmt = body.get("response_format") or {}
        name = (fmt.get("json_schema") or {}).get("name")
        if name == "JudgeVerdict":
            # A rationale that depends on the prompt, as a real judge's would.
            digest = hashlib.md5(json.dumps(body["messages"]).encode()).hexdigest()[:8]
            return json.dumps({"reasoning": f"fine {digest}", "sigma": 2})
        if name == "CheckVerdict":
            return json.dumps({"answer": "No"})
        return f"(nods) an answer at temperature {body.get('temperature')}"

    loopback.responder = respond
    gateway = make_gateway()
    models_a = {"m1": "role-m1"}
    await evaluate(gateway, _bench(), models_a, EvalConfig())
    first = len(loopback.requests)
    gateway = make_gateway()
    gateway.config.roles["role-m2"] = gateway.config.default.model_copy(update={"temperature": 0.5})
    tables = await evaluate(gateway, _bench(), {**models_a, "m2": "role-m2"}, EvalConfig())
    new = len(loopback.requests) - first
    # m2: 3 answers + 6 judgments + 4 checks (CR and FR items, both orders); nothing for the base or m1.
    assert new == 3 + 6 + 4
    assert len(tables.item_scores) == 6


# -- human validation ---------------------------------------------------------------------------------
def test_validation_accuracy_correlation_and_agreement(tmp_path):
    from rpbench.tasks.modes.furina.dimensions import DIMENSIONS
    from rpbench.tasks.modes.furina.evaluation.validation import load_annotations, validate, validation_markdown

    sigma1 = [1, 2, 4, 5, 3, 2]
    sigma2 = [5, 5, 1, 1, 3, 4]  # the second order, reply under test shown second
    item_scores = [{"item_id": f"i{k}", "model": "m", "dimension": "CR" if k < 4 else "PA", "sigma1": s1,
                    "sigma2": s2} for k, (s1, s2) in enumerate(zip(sigma1, sigma2, strict=True))]
    lines = []
    human = [("CR", 1), ("CR", 2), ("FR", 4), ("CR", 5), ("PA", 2), ("PA", 3)]
    for k, (dim, score) in enumerate(human):
        lines.append(json.dumps({"item_id": f"i{k}", "annotator": "ann1", "dimension": dim, "score": score}))
        lines.append(json.dumps({"item_id": f"i{k}", "annotator": "ann2", "dimension": "CR", "score": score}))
    path = tmp_path / "labels.jsonl"
    path.write_text("\n".join(lines))
    result = validate(load_annotations(path), item_scores)
    assert result["dimension_accuracy"]["CR"]["n"] == 9  # ann1: 3, ann2: 6
    assert result["dimension_accuracy"]["CR"]["accuracy"] == pytest.approx(7 / 9)
    # Overall: ann1 is right on 5 of 6 (FR on a CR item is wrong), ann2 on 4 of 6 (CR on the PA items).
    assert result["dimension_accuracy"]["all"] == {"n": 12, "accuracy": pytest.approx(9 / 12)}
    corr = result["correlation"]["all"]
    humans = [h for _, h in human] * 2
    both = [(a + 6 - b) / 2 for a, b in zip(sigma1, sigma2, strict=True)] * 2
    assert corr["n"] == 12 and corr["r"] == pytest.approx(stats.pearsonr(both, humans).statistic)
    assert corr["r_order1"] == pytest.approx(stats.pearsonr(sigma1 * 2, humans).statistic)
    assert corr["r_order2"] == pytest.approx(stats.pearsonr([6 - b for b in sigma2] * 2, humans).statistic)
    assert corr["r_order1"] != corr["r_order2"]
    (pair,) = result["agreement"]
    assert pair["dimension_agreement"] == pytest.approx(3 / 6) and pair["score_r"] == pytest.approx(1.0)
    assert "| all | 12 | 0.750 |" in validation_markdown(result)
    # The same piece every benchmark reports a judge against people with: Pearson as above, with intervals.
    shared = next(j for j in result["judges"] if j["group"] == "all")
    assert shared["n"] == 12 and shared["pearson"] == pytest.approx(corr["r"])
    assert shared["spearman"] == pytest.approx(stats.spearmanr(both, humans).statistic)
    assert shared["pearson_low"] <= shared["pearson"] <= shared["pearson_high"]
    # The command adds that table once, as every benchmark's agreement command does (validation_markdown
    # leaves it out so it is not shown twice).
    assert "| judge | all | all | 12 |" not in validation_markdown(result)
    # Krippendorff's alpha (the krippendorff package): the same scores from both annotators agree fully; their
    # dimension choices agree on half the items.
    import krippendorff
    import numpy as np

    dims = np.array([[DIMENSIONS.index(d) for d, _ in human], [DIMENSIONS.index("CR")] * 6], dtype=float)
    expected = krippendorff.alpha(reliability_data=dims, level_of_measurement="nominal")
    assert result["alpha"]["score"] == pytest.approx(1.0)
    assert result["alpha"]["dimension"] == pytest.approx(expected) and result["alpha"]["dimension"] < 0.5
    assert f"dimension (nominal) {expected:.3f}, score (ordinal) 1.000" in validation_markdown(result)


def test_annotations_that_would_match_nothing_or_count_twice_are_errors(tmp_path):
    """A score naming no judged model, a score without a model where several were judged, a second answer by one
    annotator to one question, and a field of the wrong type: each was left out or counted twice in silence."""
    from rpbench.tasks.core.errors import InputError
    from rpbench.tasks.modes.furina.evaluation.validation import check_models, load_annotations

    path = tmp_path / "labels.jsonl"

    def write(*records: dict) -> None:
        path.write_text("\n".join(json.dumps(r) for r in records))

    write({"item_id": "i1", "annotator": "a", "score": 2, "model": "m1"},
          {"item_id": "i1", "annotator": "a", "score": 2, "model": "m2"},  # another model's reply: fine
          {"item_id": "i1", "annotator": "b", "score": 4, "model": "m1"},  # another annotator: fine
          {"item_id": "i1", "annotator": "a", "dimension": "CR"})
    labels = load_annotations(path)
    assert [a["model"] for a in labels] == ["m1", "m2", "m1", None]
    check_models(labels, ["m1", "m2"], path)
    with pytest.raises(InputError, match=r"record 1: field 'model': 'm2' is not a model of this evaluation "
                                         r"\(it has m1, m3\)"):
        check_models(labels, ["m1", "m3"], path)
    write({"item_id": "i1", "annotator": "a", "score": 2})
    check_models(load_annotations(path), ["m1"], path)  # one model: the score is its reply's
    with pytest.raises(InputError, match=r"record 0: field 'model': missing; this evaluation judged 2 models"):
        check_models(load_annotations(path), ["m1", "m2"], path)
    write({"item_id": "i1", "annotator": "a", "dimension": "CR"}, {"item_id": "i1", "annotator": "a",
                                                                   "dimension": "PA"})
    with pytest.raises(InputError, match=r"record 1: field 'dimension': annotator 'a' already gave item 'i1' a "
                                         r"dimension in record 0"):
        load_annotations(path)
    write({"item_id": "i1", "annotator": "a", "score": 2, "model": "m"}, {"item_id": "i1", "annotator": "a",
                                                                          "score": 2, "model": "m"})
    with pytest.raises(InputError, match=r"record 1: field 'score': .* a score \(model 'm'\) in record 0"):
        load_annotations(path)
    write({"item_id": "i1", "annotator": ["a"], "score": 2})
    with pytest.raises(InputError, match=r"record 0: field 'annotator': not text"):
        load_annotations(path)
    write({"item_id": "i1", "annotator": "a", "dimension": 3})  # was a traceback ('int' has no strip)
    with pytest.raises(InputError, match=r"record 0: field 'dimension': unknown dimension '3'"):
        load_annotations(path)


def test_bad_annotations_name_the_record_and_field(tmp_path):
    from rpbench.tasks.core.errors import InputError
    from rpbench.tasks.modes.furina.evaluation.validation import load_annotations

    path = tmp_path / "labels.csv"
    path.write_text("item_id,annotator,dimension,score\ni1,a,CR,7\n")
    with pytest.raises(InputError, match=r"labels.csv: record 0: field 'score': 7 is outside 1-5"):
        load_annotations(path)
    path.write_text("item_id,annotator,dimension,score\ni1,a,XX,2\n")
    with pytest.raises(InputError, match="field 'dimension': unknown dimension 'XX'"):
        load_annotations(path)
    path.write_text("item_id,annotator,dimension,score\ni1,a,CR,3.5\n")  # not read as 3
    with pytest.raises(InputError, match=r"record 0: field 'score': not an integer 1-5"):
        load_annotations(path)
