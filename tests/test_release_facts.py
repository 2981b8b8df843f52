"""What rpbench sends in a live run, compared fact by fact with what each release's own code sends.

Each release's code was run once against the loopback server on the same inputs, a scripted stand-in answering;
the facts of every request it sent are kept in ``tests/data/<mode>_release_requests.json`` (no prompt text:
which agent, its limits, and what its input carried). Here rpbench runs the same inputs against the same
stand-in, and every request must carry the same facts in the same order, except the listed differences, each
stated on the benchmark's page. (CoSER's comparison is ``tests/test_coser_release.py``.)
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from tests.helpers import TEST_KEY_ENV, loopback_models_file, rpbench

pytestmark = pytest.mark.usefixtures("harness")
ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"


def _compare(ours: list[dict], theirs: list[dict], key: str, differences: dict, page: str) -> None:
    """Same requests per ``key`` group in the same order with the same facts, but for ``differences``:
    (agent, fact) -> (release's value, rpbench's value, a phrase of the page stating it)."""
    mine_by, theirs_by = defaultdict(list), defaultdict(list)
    for r in ours:
        mine_by[r[key]].append(r)
    for r in theirs:
        theirs_by[r[key]].append(r)
    assert set(mine_by) == set(theirs_by)
    seen = set()
    for group, wanted in theirs_by.items():
        got = mine_by[group]
        assert [r["agent"] for r in got] == [r["agent"] for r in wanted], group
        for mine, release in zip(got, wanted, strict=True):
            assert set(mine) == set(release), (group, release["agent"])
            for fact, value in release.items():
                known = differences.get((release["agent"], fact))
                if known and value == known[0] and mine[fact] == known[1]:
                    seen.add((release["agent"], fact))
                    continue
                assert mine[fact] == value, (group, release["agent"], fact, mine[fact], value)
    assert seen == set(differences), set(differences) - seen
    text = (ROOT / "docs" / "benchmarks" / page).read_text().lower()
    for _release, _ours, phrase in differences.values():
        assert phrase.lower() in text, phrase


ROLELLM_DIFFERENCES = {
    ("answer", "also_sent"): (["n"], ["seed"], "seed"),
}


def _opencompass_bootstrap_mid(scores: list[float]) -> float:
    """OpenCompass's English figure: Hugging Face's rouge metric aggregates rouge-score's F-measures with
    rouge-score's BootstrapAggregator (NumPy seeded 0), over the test questions in the order OpenCompass's
    dataset shuffle (seed 42) leaves them, and reports the middle of its interval."""
    import numpy as np
    from rouge_score import scoring

    order = np.random.default_rng(42).permutation(len(scores))
    state = np.random.get_state()
    np.random.seed(0)
    try:
        aggregator = scoring.BootstrapAggregator()
        # The metric scores rouge1, rouge2, rougeL and rougeLsum, resampled in that order from one generator: the
        # draws for rougeL come after those of the first two (whose values do not matter here).
        for k in order:
            mine = scoring.Score(0.0, 0.0, scores[k] / 100)
            aggregator.add_scores({"rouge1": mine, "rouge2": mine, "rougeL": mine, "rougeLsum": mine})
        return 100 * aggregator.aggregate()["rougeL"].mid.fmeasure
    finally:
        np.random.set_state(state)


def test_a_live_rolellm_run_sends_and_scores_what_opencompass_does(loopback, tmp_path, monkeypatch):
    from rpbench.samples import sample_path
    from rpbench.storage.tables import read_records
    from rpbench.tasks.modes.rolellm.tables import QUESTIONS, ROW_SCORES
    from tests.rolellm_release_facts import facts, responder

    recorded = json.loads((DATA / "rolellm_release_requests.json").read_text(encoding="utf-8"))
    bench = sample_path("rolellm", "rolebench")
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = responder
    models = loopback_models_file(tmp_path / "models.toml", loopback)
    ran = rpbench("rolellm", "eval", "--data", str(bench / "rolebench-eng" / "instruction-generalization"),
                  "--data", str(bench / "rolebench-zh"), "--model", "rolellm-player", "--out", str(tmp_path / "rl"),
                  "--models-file", str(models), "--cache", str(tmp_path / "c.sqlite"), "--resamples", "40")
    assert ran.returncode == 0, ran.stderr[-2000:]
    descs = {**json.loads((bench / "profiles-eng" / "desc.json").read_text(encoding="utf-8")),
             **json.loads((bench / "profiles-zh" / "desc.json").read_text(encoding="utf-8"))}
    questions = {r.question: r for r in read_records(tmp_path / "rl" / QUESTIONS.filename, QUESTIONS)}
    asked = [b for b in loopback.requests if b["messages"][-1]["content"] in questions]
    ours = [{**facts(b, questions[q].role, descs[questions[q].role], q), "agent": "answer"}
            for b in asked for q in [b["messages"][-1]["content"]]]
    theirs = [{**r, "agent": "answer"} for r in recorded["requests"]]
    _compare(ours, theirs, "question", ROLELLM_DIFFERENCES, "rolellm.md")
    # The same answers scored as OpenCompass scored them: Chinese, the mean of jieba Rouge-L against the first
    # reference, exactly; English, its bootstrap middle of the same per-question scores.
    scores = [s for s in read_records(tmp_path / "rl" / ROW_SCORES.filename, ROW_SCORES)
              if s.model == "rolellm-player"]
    zh = [s.rouge_l for s in scores if s.language == "zh"]
    en = [s.rouge_l for s in scores if s.language == "en"]
    assert sum(zh) / len(zh) == pytest.approx(recorded["rouge_l"]["RoleBench_instruct_zh"], abs=1e-6)
    assert _opencompass_bootstrap_mid(en) == pytest.approx(recorded["rouge_l"]["RoleBench_instruct_eng"], abs=1e-6)
