"""DMT-RoleBench: the DMT-Score formulas, Table 2, seeds and prompt formats, and the flow end to end."""

from __future__ import annotations

import itertools
import json

import pytest

from rpbench.flows.modes.dmt.settings import DmtSettings
from rpbench.samples import sample_path
from rpbench.storage.schemas import FAILURES
from rpbench.storage.tables import read_records
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.modes.dmt.catalog import ALLOCATION, INTENTS, METRICS
from rpbench.tasks.modes.dmt.scoring import metric_score, prefix_scores, score_by_tau
from rpbench.tasks.modes.dmt.seeds import load_seeds, system_prompt
from rpbench.tasks.modes.dmt.tables import DIALOGUE_SCORES, LABELS, ROUNDS, STEPS
from tests.helpers import TEST_KEY_ENV

SEEDS = sample_path("dmt", "seeds.yaml")


@pytest.mark.parametrize("labels", [[1, 1, 0, 1, 1], [0, 1, 1], [1, 0, 0, 1], [1, 1, 1], [0, 0, 1, 0]])
def test_strict_never_rises_and_lenient_never_falls(labels):
    strict = prefix_scores(labels, len(labels), lenient=False)
    lenient = prefix_scores(labels, len(labels), lenient=True)
    assert all(a >= b for a, b in itertools.pairwise(strict))
    assert all(a <= b for a, b in itertools.pairwise(lenient))


def test_a_first_bad_round_r_scores_one_before_r_and_zero_from_r():
    assert prefix_scores([1, 1, 0, 1, 1], 5, lenient=False) == [1, 1, 0, 0, 0]
    assert prefix_scores([0, 0, 1, 0], 4, lenient=True) == [0, 0, 1, 1]
    assert prefix_scores([1, 1, 1], 3, lenient=False) == [1, 1, 1]


def test_short_dialogues_follow_the_stated_policy():
    assert prefix_scores([1, 1], 4, lenient=False, policy="carry") == [1, 1, 1, 1]
    assert prefix_scores([1, 1], 4, lenient=False, policy="exclude") == [1, 1, None, None]
    assert prefix_scores([1, 1], 4, lenient=False, policy="bad") == [1, 1, 0, 0]
    assert prefix_scores([0, 1], 3, lenient=True, policy="bad") == [0, 1, 1]


def test_score_m_is_the_mean_over_tau_of_the_mean_over_dialogues():
    a = prefix_scores([1, 0, 1], 3, lenient=False)  # 1 0 0
    b = prefix_scores([1, 1, 1], 3, lenient=False)  # 1 1 1
    by_tau = score_by_tau([a, b])
    assert by_tau == [100.0, 50.0, 50.0]
    assert metric_score(by_tau) == pytest.approx(200 / 3)


def test_table_two_allocation_and_the_lenient_metrics():
    assert {k: len(v) for k, v in ALLOCATION.items()} == {
        "fictional_character": 10, "historical_figure": 8, "professional_occupation": 8,
        "emotional_companionship": 9, "utility_assistant": 8, "game_npc": 1}
    assert ALLOCATION["game_npc"] == ("GCD",) and len(METRICS) == 14 and len(INTENTS) == 7
    assert {m for m, x in METRICS.items() if x.aggregation == "any"} == {"KE", "Inte"}


def test_three_formats_from_one_profile():
    seed = next(s for s in load_seeds(SEEDS) if s.id == "harbour-pilot-knowledge")
    minimal, overview, detailed = (system_prompt(seed, f) for f in ("minimalist", "overview", "detailed"))
    assert seed.role.name in minimal and seed.role.overview not in minimal
    assert seed.role.overview in overview and "tides and currents" not in overview
    assert "tides and currents" in detailed and seed.role.overview in detailed


def test_bad_seeds_name_the_seed_and_field(tmp_path):
    base = {"id": "s1", "language": "en", "role_type": "game_npc", "topic": "t", "intent": "game_interaction",
            "initial_query": "hi", "role": {"name": "K", "overview": "o", "profile": {"a": "b"}}}
    for change, message in [({"role_type": "wizard"}, "seed s1: field 'role_type': unknown role_type 'wizard'"),
                            ({"metrics": ["KA"]}, "'KA' is not judged for a game_npc"),
                            ({"formats": ["tiny"]}, "seed s1: field 'formats.0'"),
                            ({"intent": None}, "seed s1: field 'intent'")]:
        path = tmp_path / "seeds.json"
        path.write_text(json.dumps([{**base, **change}]))
        with pytest.raises(InputError, match=message):
            load_seeds(path)


def _respond(body):
    """The generator asks to regenerate each first draft and passes the second; it stops after round 3. The
    judge finds every reply of model 'weak' bad on Coh from round 2 on, and good otherwise."""
    fmt = (body.get("response_format") or {}).get("json_schema") or {}
    text = json.dumps(body["messages"], ensure_ascii=False)
    name = fmt.get("name")
    if name == "Termination":
        return json.dumps({"reason": "r", "done": text.count("User:") + text.count("用户：") >= 3})
    if name == "NextQuery":
        second = "rejected" in text or "没有通过" in text
        return json.dumps({"sub_topic": "st", "sub_intent": "si", "query": "second draft" if second else "first"})
    if name == "QualityCheck":
        return json.dumps({"reason": "r", "verdict": "pass" if 'Draft: \\"second draft' in text else "regenerate",
                           "revised_query": ""})
    if name == "BinaryVerdict":
        bad = "WEAK" in text and ("Coherence" in text or "连贯性" in text) and "second draft" in text
        return json.dumps({"explanation": "e", "label": "bad" if bad else "good"})
    return "WEAK reply" if body["model"] == "weak" else "a fine reply"


def test_dmt_flow_end_to_end(harness, loopback, tmp_path, monkeypatch):
    from rpbench.flows.modes.dmt.flows import dmt

    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = _respond
    models = tmp_path / "models.toml"
    models.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{loopback.base_url}"\nschema_rules = "vllm"\n'
                      f'api_key_env = "{TEST_KEY_ENV}"\nstructured = "json_schema"\ntimeout = 5\n'
                      '[roles.weak]\nmodel = "openai/weak"\n[roles.fine]\nmodel = "openai/fine"\n')
    out = tmp_path / "dmt"
    manifest = dmt(DmtSettings(seeds=str(SEEDS), models=["weak", "fine"], only_seeds=["harbour-pilot-knowledge"],
                               formats=["detailed"], max_rounds=4, out=str(out), resamples=200,
                               models_file=str(models), cache=str(tmp_path / "c.sqlite")))
    rounds = read_records(out / ROUNDS.filename, ROUNDS)
    assert [r.round for r in rounds if r.model == "weak"] == [1, 2, 3]  # purpose served after three rounds
    assert rounds[0].query == "What do you actually do when you climb aboard a container ship?"
    assert all(r.query == "second draft" and r.query_attempts == 2 for r in rounds if r.round > 1)
    steps = read_records(out / STEPS.filename, STEPS)
    assert {(s.step, s.attempt) for s in steps if s.round == 2} == {("terminate", 1), ("query", 1), ("verify", 1),
                                                                   ("query", 2), ("verify", 2)}
    tested = [r for r in loopback.requests if r["model"] in ("weak", "fine")]
    assert all("professional_skill" not in json.dumps(r["messages"]) and "expertise" in r["messages"][0]["content"]
               for r in tested)  # the tested model sees its system prompt and the chat, not the intent
    labels = read_records(out / LABELS.filename, LABELS)
    assert {lb.metric for lb in labels} == set(ALLOCATION["professional_occupation"])
    t4 = manifest["dmt"]["table4"]
    # weak: Coh good at round 1, bad from round 2 -> prefixes 1,0,0,0 (carried) -> 25; everything else 100
    assert t4["weak"]["Coh"] == pytest.approx(25.0) and t4["fine"]["Coh"] == 100.0
    assert t4["weak"]["KA"] == 100.0
    board = {r["model"]: r for r in manifest["dmt"]["leaderboard"]}
    assert board["fine"]["score"] > board["weak"]["score"]
    assert (out / "report.md").read_text().count("By number of rounds") == 1


@pytest.mark.local_model
def test_dmt_runs_on_the_local_model(tmp_path):
    """A shipped seed on the embedded model (the game NPC: one metric, so few judge calls), two rounds: every
    round is labelled or its failure recorded, never a made-up label."""
    import os
    import subprocess

    from rpbench.storage.schemas import FAILURES
    from tests.helpers import CLI

    out = tmp_path / "run"
    p = subprocess.run([*CLI, "dmt", "run", "--seeds", str(SEEDS), "--model", "dmt-player", "--seed-id",
                        "dungeon-keeper-game", "--format", "minimalist", "--max-rounds", "2", "--out", str(out),
                        "--cache", str(tmp_path / "c.sqlite"), "--resamples", "100"],
                       capture_output=True, text=True, env={**os.environ, "PREFECT_HOME": str(tmp_path / "ph")})
    assert p.returncode == 0, p.stderr[-2000:]
    rounds = read_records(out / ROUNDS.filename, ROUNDS)
    assert rounds and rounds[0].query.startswith("I light my torch") and all(r.response for r in rounds if r.status == "ok")
    labels = read_records(out / LABELS.filename, LABELS)
    failed = {f.item_id for f in read_records(out / FAILURES.filename, FAILURES)}
    assert all(lb.label in ("good", "bad") for lb in labels if lb.status == "ok")
    assert all(lb.error for lb in labels if lb.status == "failed") and (labels or failed)
    assert "DMT-Score" in p.stdout


def _respond_with_failures(body):
    """As ``_respond``, but: the generator answers garbage once model 'crash' has replied (its dialogue ends on
    a failed generator call), model 'mute' replies with nothing from round 2 on, and the judge answers garbage
    for model 'fine' on Coherence in round 1 (one failed label)."""
    fmt = (body.get("response_format") or {}).get("json_schema") or {}
    text = json.dumps(body["messages"], ensure_ascii=False)
    if fmt.get("name") == "Termination" and "CRASH reply" in text:
        return "not json at all"
    if fmt.get("name") == "BinaryVerdict" and "a fine reply" in text and "Coherence" in text \
            and "second draft" not in text:
        return "not json at all"
    if body["model"] == "crash":
        return "CRASH reply"
    if body["model"] == "mute" and "second draft" in text:
        return ""
    return _respond(body)


def test_failed_dialogues_are_failures_and_each_failure_is_counted_once(harness, loopback, tmp_path, monkeypatch):
    """A dialogue cut short by a failed generator call, or by an empty reply of the tested model, is a failure
    (not scored, not judged); each stage writes its own failures table; the report counts each failure row once."""
    from rpbench.flows.modes.dmt.flows import dmt

    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = _respond_with_failures
    models = tmp_path / "models.toml"
    models.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{loopback.base_url}"\nschema_rules = "vllm"\n'
                      f'api_key_env = "{TEST_KEY_ENV}"\nstructured = "json_schema"\ntimeout = 5\n'
                      '[retry]\nparse_attempts = 2\n'
                      '[roles.fine]\nmodel = "openai/fine"\n[roles.crash]\nmodel = "openai/crash"\n'
                      '[roles.mute]\nmodel = "openai/mute"\n')
    out = tmp_path / "dmt"
    manifest = dmt(DmtSettings(seeds=str(SEEDS), models=["fine", "crash", "mute"],
                               only_seeds=["harbour-pilot-knowledge"], formats=["detailed"], max_rounds=4,
                               out=str(out), resamples=50, max_failure_share=1.0, models_file=str(models),
                               cache=str(tmp_path / "c.sqlite")))
    failures = read_records(out / "failures.parquet", FAILURES)
    by_model = {m: sorted((f.stage, f.kind) for f in failures if f.model == m) for m in ("fine", "crash", "mute")}
    assert by_model["crash"] == [("dmt-dialogues", "generator")]
    assert by_model["mute"] == [("dmt-dialogues", "reply")]
    assert by_model["fine"] == [("dmt-labels", "label"), ("dmt-scores", "unlabelled")]
    assert not any(f.scored for f in failures)
    assert "the reply is empty" in next(f.error for f in failures if f.model == "mute")
    # Failed dialogues are neither judged nor scored.
    judged = [r for r in loopback.requests if ((r.get("response_format") or {}).get("json_schema") or {})
              .get("name") == "BinaryVerdict"]
    assert judged and not any("CRASH reply" in json.dumps(r["messages"]) for r in judged)
    assert {lb.model for lb in read_records(out / LABELS.filename, LABELS)} == {"fine"}
    scores = read_records(out / DIALOGUE_SCORES.filename, DIALOGUE_SCORES)
    assert {s.model for s in scores} == {"fine"} and set(manifest["dmt"]["table4"]) == {"fine"}
    # Each stage's own failures in its own folder of the shard's (neither overwrites the other's); the report
    # counts each row once.
    assert (out / "stages" / "fine" / "dmt-dialogues" / "failures.parquet").is_file()
    assert (out / "stages" / "fine" / "dmt-labels" / "failures.parquet").is_file()
    report = (out / "report.md").read_text()
    assert "- fine: label 1, unlabelled 1" in report and "- crash: generator 1" in report, report
    assert "- mute: reply 1" in report
    board = {r["model"]: r for r in manifest["dmt"]["leaderboard"]}
    assert board["fine"]["failed"] == 1  # one (dialogue, metric) item lost to the failed label


def test_dialogues_given_as_a_file_are_labelled_exactly_as_live_ones(harness, loopback, tmp_path, monkeypatch):
    from rpbench.flows.modes.dmt.flows import dmt

    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = _respond
    models = tmp_path / "models.toml"
    models.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{loopback.base_url}"\nschema_rules = "vllm"\n'
                      f'api_key_env = "{TEST_KEY_ENV}"\nstructured = "json_schema"\ntimeout = 5\n'
                      '[roles.weak]\nmodel = "openai/weak"\n')
    common = {"seeds": str(SEEDS), "only_seeds": ["harbour-pilot-knowledge"], "formats": ["detailed"],
              "max_rounds": 4, "resamples": 50, "models_file": str(models), "cache": str(tmp_path / "c.sqlite")}
    live = dmt(DmtSettings(models=["weak"], out=str(tmp_path / "live"), **common))
    rounds = read_records(tmp_path / "live" / ROUNDS.filename, ROUNDS)
    by_id: dict[str, list] = {}
    for r in rounds:
        by_id.setdefault(r.dialogue_id, []).append({"query": r.query, "response": r.response})
    path = tmp_path / "weak.jsonl"
    path.write_text("\n".join(json.dumps({"id": k, "rounds": v}) for k, v in by_id.items()))
    asked = sum(r["model"] == "weak" for r in loopback.requests)
    given = dmt(DmtSettings(answers=[f"weak={path}"], out=str(tmp_path / "given"), **common))
    assert sum(r["model"] == "weak" for r in loopback.requests) == asked  # the model is not asked
    for table in (LABELS, DIALOGUE_SCORES):
        assert read_records(tmp_path / "given" / table.filename, table) == \
            read_records(tmp_path / "live" / table.filename, table), table.name
    assert given["dmt"]["table4"] == live["dmt"]["table4"]
    # --limit 1: the first dialogue only, though the file holds one for every format (they are not an error)
    from rpbench.flows.modes.dmt.checks import select
    from rpbench.tasks.modes.dmt.seeds import dialogue_id, load_seeds

    ids = [dialogue_id(s, f) for s, f in select(load_seeds(SEEDS), ["harbour-pilot-knowledge"], [], "")]
    assert len(ids) > 1
    path.write_text("\n".join(json.dumps({"id": i, "rounds": next(iter(by_id.values()))}) for i in ids))
    limited = dmt(DmtSettings(answers=[f"weak={path}"], out=str(tmp_path / "limited"), limit=1,
                              **{**common, "formats": []}))
    assert {r.dialogue_id for r in read_records(tmp_path / "limited" / ROUNDS.filename, ROUNDS)} == {ids[0]}
    assert limited["dmt"]["dialogues"] == 1


def test_the_agreement_command_writes_the_table_every_benchmark_reports(tmp_path):
    """`rpbench dmt agreement` keeps DMT's consistency and recalls and writes agreement.parquet, the table the
    suite and reports read: good 1 and bad 0, so exact agreement is the consistency rate and Pearson the phi
    coefficient (scipy's pearsonr on the same 0/1 pairs); the judge named as the run's manifest bound it."""
    import pyarrow.parquet as pq
    from scipy.stats import pearsonr

    from rpbench.storage.tables import write_records
    from rpbench.tasks.modes.dmt.records import Label
    from tests.helpers import rpbench

    run = tmp_path / "run"
    judge = ["good", "bad", "good", "good", "bad", "bad", "good", "bad", "good", "good"]
    people = ["good", "bad", "bad", "good", "bad", "good", "good", "bad", "good", "bad"]
    write_records(run / LABELS.filename, [
        Label(dialogue_id=f"d{k}", model="m", round=1, metric="Flu", label=v, explanation="", source="judge",
              status="ok") for k, v in enumerate(judge)], LABELS)
    (run / "manifest.json").write_text(json.dumps({"config": {"roles": {"dmt-judge": {"model": "openai/judge-x"}}}}))
    (tmp_path / "labels.jsonl").write_text("\n".join(json.dumps(
        {"model": "m", "dialogue_id": f"d{k}", "round": 1, "metric": "Flu", "label": v, "annotator": "p"})
        for k, v in enumerate(people)))
    ran = rpbench("dmt", "agreement", "--labels", str(tmp_path / "labels.jsonl"), "--run", str(run))
    assert ran.returncode == 0, ran.stderr
    rows = {r["group"]: r for r in pq.read_table(run / "agreement.parquet").to_pylist()}
    assert set(rows) == {"Flu", "all"} and rows["Flu"]["judge"] == "openai/judge-x" and rows["Flu"]["n"] == 10
    consistency = json.loads((run / "agreement.json").read_text())["metrics"][0]["consistency"]
    assert rows["Flu"]["exact"] == pytest.approx(consistency) == pytest.approx(0.7)
    as_numbers = [[float(x == "good") for x in side] for side in (people, judge)]
    assert rows["Flu"]["pearson"] == pytest.approx(pearsonr(*as_numbers)[0])
    # Labels of rounds this run did not judge are left out, and said so (not dropped without a word); a metric
    # that is not text is the record's error (it was a TypeError traceback).
    with (tmp_path / "labels.jsonl").open("a") as f:
        f.write("\n" + json.dumps({"model": "m", "dialogue_id": "d99", "round": 1, "metric": "Flu", "label": "bad"}))
    ran = rpbench("dmt", "agreement", "--labels", str(tmp_path / "labels.jsonl"), "--run", str(run))
    assert ran.returncode == 0 and "note: 1 of 11 labelled rounds were not judged in this run" in ran.stderr
    assert "left out: 1 (first: model m, dialogue d99, round 1, metric Flu)" in (run / "agreement.md").read_text()
    assert json.loads((run / "agreement.json").read_text())["left_out"] == 1
    assert pq.read_table(run / "agreement.parquet").to_pylist()[0]["n"] == 10
    (tmp_path / "bad.jsonl").write_text(json.dumps({"model": "m", "dialogue_id": "d1", "round": 1,
                                                    "metric": {"Flu": 1}, "label": "bad"}))
    ran = rpbench("dmt", "agreement", "--labels", str(tmp_path / "bad.jsonl"), "--run", str(run))
    assert ran.returncode == 2 and "bad.jsonl: record 0: field 'metric': unknown metric" in ran.stderr
    # One annotator's second label of a round was a second vote in its majority.
    (tmp_path / "twice.jsonl").write_text("\n".join(json.dumps(
        {"model": "m", "dialogue_id": "d1", "round": 1, "metric": "Flu", "label": v, "annotator": "p"})
        for v in ("bad", "good")))
    ran = rpbench("dmt", "agreement", "--labels", str(tmp_path / "twice.jsonl"), "--run", str(run))
    assert ran.returncode == 2 and "twice.jsonl: record 1: annotator 'p' already labelled this round's Flu in " \
        "record 0" in ran.stderr


def test_human_labels_take_whole_rounds_and_keep_each_round_s_majority(tmp_path):
    from rpbench.tasks.modes.dmt.agreement import load_human_labels

    metric = sorted(METRICS)[0]
    path = tmp_path / "labels.csv"
    path.write_text(f"model,dialogue_id,round,metric,label\nm,d,2.0,{metric},good\nm,d,2,{metric},good\n"
                    f"m,d,2,{metric},bad\n")
    assert load_human_labels(path) == ({("m", "d", 2, metric): "good"}, 0)
    path.write_text(f"model,dialogue_id,round,metric,label\nm,d,2.5,{metric},good\n")  # not round 2
    with pytest.raises(InputError, match="record 0: field 'round': not an integer"):
        load_human_labels(path)
