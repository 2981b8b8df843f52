"""`rpbench suite run`: every mode for three scripted models whose quality is known, the profile that ranks
them so, Kendall's tau between the benchmarks as constructed, a rerun that sends nothing, a mode that fails
without stopping the others, and one-line errors for a bad suite file."""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rpbench.samples import sample_path
from rpbench.tasks.reports.viewer import read_viewer
from rpbench.tasks.stats.rank_agreement import (
    RankedBenchmark,
    kendall_tau,
    most_disagreeing,
    percentiles,
    rank_agreement,
)
from tests.helpers import TEST_KEY_ENV, any_mode_responder, rpbench

QUALITY = {"good": 1.0, "fair": 0.5, "poor": 0.0}
MODELS = ("good", "fair", "poor")
MARK = re.compile(r"\[\[q=(good|fair|poor)\]\]")
ACTED = re.compile(r"\(q=(good|fair|poor)\)")  # CoSER's critic never sees [thoughts]: an action carries the mark


# -- the scripted models ----------------------------------------------------------------------------------
def _roleinteract_items() -> list[dict]:
    return json.loads(sample_path("roleinteract", "example.json").read_text(encoding="utf-8"))


def _utterances(item: dict) -> list[str]:
    return [v.strip() for turn in item["dialogue"] for k, v in turn.items() if k != "from"]


def _rolellm_rows() -> list[dict]:
    rows = []
    for path in sorted(sample_path("rolellm", "rolebench").rglob("test.jsonl")):
        rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows


ITEMS, ROWS = _roleinteract_items(), _rolellm_rows()


def _half(key: str) -> bool:
    """A fair model's coin: right on about half of the items, the same half every time."""
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % 2 == 0


def _player(model: str, text: str) -> str:
    q = QUALITY[model]
    # RoleInteract: the item whose whole dialogue is in the prompt. Right on every item, half, or none.
    found = [i for i in ITEMS if all(u in text for u in _utterances(i))]
    if found:
        item = max(found, key=lambda i: len(_utterances(i)))
        right = q == 1.0 or (q == 0.5 and _half(json.dumps(item["dialogue"])))
        if "choices" not in item:  # a memory question: its keywords, or none of them
            return " ".join(item["label"]) if right else "I cannot recall, friend."
        wrong = next(k for k in item["choices"] if k not in item["label"])
        return ", ".join(item["label"]) if right else wrong
    # RoleLLM: the reference answer, half of it, or nothing like it. Built upside down on purpose (the poor
    # model is best here), so that one benchmark disagrees with the others.
    asked = [r for r in ROWS if r["question"] in text and r["role"] in text]
    if asked:
        words = max(asked, key=lambda r: len(r["question"]))["generated"][0].split()
        q = 1.0 - q
        return " ".join(words) if q == 1.0 else " ".join(words[: max(1, len(words) // 2)]) if q else "zzz qqq"
    from rpbench.tasks.modes.coser.release import length_ask

    if length_ask().strip() in text:  # a CoSER actor (its mark outside [thoughts], which others never see)
        return f"(q={model}) I answer as my character would, plainly."
    return f"[[q={model}]] (nods) I answer as my character would, plainly."


def _judged(model: str, key: str) -> float:
    q = QUALITY[model]
    return q if q != 0.5 else (1.0 if _half(key) else 0.0)


def quality_responder(body: dict) -> str:
    """The models under test answer by their quality; the judges of PingPong, DMT and FURINA score a reply by
    the quality mark its model left in it; every other request is answered as any_mode_responder does."""
    text = "\n".join(str(m.get("content")) for m in body["messages"])
    model = str(body.get("model"))
    fmt = (body.get("response_format") or {}).get("json_schema") or {}
    name, marks = fmt.get("name"), MARK.findall(text)
    if model in QUALITY:
        said = _player(model, text)
        return json.dumps({"response": said}) if name == "ActorReply" else said  # CharacterBench's JSON reply
    if str(name).startswith("Verdict") and marks:  # CharacterBench: the top of the scale, its middle, or 1
        top = fmt["schema"]["properties"]["score"]["maximum"]
        return json.dumps({"reasoning": "scored", "score": {1.0: top, 0.5: (top + 1) // 2, 0.0: 1}[QUALITY[marks[-1]]]})
    acted = ACTED.findall(text)
    if str(name).startswith("CoserCritique") and acted:  # CoSER: the worse the actor, the more and worse flaws
        dimension = next(iter(fmt["schema"]["properties"]))
        count, severity = {1.0: (0, 1), 0.5: (2, 3), 0.0: (5, 5)}[QUALITY[acted[-1]]]
        return json.dumps({dimension: {"flaws": [{"instance": "a line", "type": "t", "severity": severity}] * count}})
    if not marks or name not in ("PingPongVerdicts", "BinaryVerdict", "JudgeVerdict"):
        return any_mode_responder(body)
    if name == "JudgeVerdict":  # FURINA: is the marked reply A or B? The better reply gets 1 (A) or 5 (B).
        in_a = bool(MARK.search(text.split("Reply A:", 1)[1].split("Reply B:", 1)[0]))
        q = QUALITY[marks[-1]]
        sigma = 3 if q == 0.5 else (1 if (q == 1.0) == in_a else 5)
        return json.dumps({"reasoning": "compared", "sigma": sigma})
    if name == "BinaryVerdict":  # DMT: the judged reply's label
        label = "good" if _judged(marks[-1], text) == 1.0 else "bad"
        return json.dumps({"explanation": "checked", "label": label})
    score = {1.0: 5, 0.5: 3, 0.0: 1}[QUALITY[marks[-1]]]  # PingPong: every criterion of every turn
    verdicts = json.loads(any_mode_responder(body))
    for turn in verdicts["scores"]:
        turn.update({k: score for k in turn if k.endswith("_score")}, is_refusal=False)
    return json.dumps(verdicts)


@pytest.fixture
def scripted(tmp_path, monkeypatch, loopback):
    loopback.responder = quality_responder
    body = f'api_base = "{loopback.base_url}"\nschema_rules = "vllm"\napi_key_env = "{TEST_KEY_ENV}"\nstructured = "json_schema"\n'
    text = f'[default]\nmodel = "openai/loopback"\n{body}'
    text += "".join(f'\n[roles.{name}]\nmodel = "openai/{name}"\n{body}' for name in MODELS)
    models = tmp_path / "models.toml"
    models.write_text(text, encoding="utf-8")
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    return models


def _suite(tmp_path: Path, models: Path, *extra: str, out: str = "suite"):
    args = [a for m in MODELS for a in ("--model", m)]
    return rpbench("suite", "run", *args, "--models-file", str(models), "--cache", str(tmp_path / "calls.sqlite"),
                   "--out", str(tmp_path / out), "--resamples", "200", *extra)


def test_a_suite_of_every_mode_profiles_three_models_as_they_were_made(tmp_path, scripted, loopback):
    ran = _suite(tmp_path, scripted)
    assert ran.returncode == 0, ran.stderr[-3000:]
    out = tmp_path / "suite"
    profile = pq.read_table(out / "profile.parquet").to_pylist()
    benchmarks = {"furina", "pingpong", "dmt", "roleinteract", "rolellm", "coser", "characterbench"}
    assert {p["benchmark"] for p in profile} == benchmarks
    assert {p["model"] for p in profile} == set(MODELS)  # RoleLLM's own RoleGPT reference is not profiled
    for b in benchmarks:
        score = {p["model"]: p["score"] for p in profile if p["benchmark"] == b}
        pct = {p["model"]: p["percentile"] for p in profile if p["benchmark"] == b}
        order = ["poor", "fair", "good"] if b == "rolellm" else ["good", "fair", "poor"]
        assert score[order[0]] > score[order[1]] > score[order[2]], (b, score)
        assert [round(pct[m], 1) for m in order] == [83.3, 50.0, 16.7], (b, pct)
    # Constructed: six benchmarks rank good > fair > poor, RoleLLM the other way round.
    taus = {(a["first"], a["second"]): a["tau"] for a in pq.read_table(out / "agreement.parquet").to_pylist()}
    assert len(taus) == 21
    for (a, b), tau in taus.items():
        assert tau == pytest.approx(-1.0 if "rolellm" in (a, b) else 1.0), (a, b)
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["outcome"]["status"] == "ok" and manifest["suite"]["least_agreeing"] == "rolellm"
    assert "least in agreement with the other benchmarks: rolellm" in ran.stdout
    sub = pq.read_table(out / "subscores.parquet").to_pylist()
    assert {s["column"] for s in sub if s["benchmark"] == "roleinteract"} >= {"SA Style", "CM Long", "Neg."}
    assert {s["column"] for s in sub if s["benchmark"] == "rolellm"} >= {"CUS", "RAW", "SPE"}
    report = (out / "report.md").read_text(encoding="utf-8")
    # Sub-scores as each benchmark's report shows them: CoSER's split under a readable heading, and BLEU
    # with its four digits (one digit showed CoSER's released 0.0253 as 0.0).
    coser = {s["column"]: s for s in sub if s["benchmark"] == "coser" and s["model"] == "good"}
    assert "seen books (id)" in coser and coser["BLEU"]["digits"] == 4
    assert f"| {coser['BLEU']['value']:.4f} |" in report.split("**coser**")[1].split("**")[0]
    assert "## Agreement between benchmarks" in report and "**rolellm**" in report
    # Each judge against people where a benchmark has human scores: CharacterBench's samples carry them, for
    # their own released replies (two per dimension), which a suite has the judge score beside the models'.
    judges = pq.read_table(out / "judges.parquet").to_pylist()
    assert {j["benchmark"] for j in judges} == {"characterbench"} and all(j["n"] == 2 for j in judges)
    assert {j["group"] for j in judges} == {"memory_consistency", "engagement", "fact_accuracy"}
    assert "## Judges against people" in report and "| characterbench | openai/loopback |" in report
    for mode in benchmarks:  # each mode's own run folder, linked from the report
        assert (out / mode).is_dir() and f"({mode}" in report
    samples = read_viewer(out / "samples.html")["samples"]
    assert {s["facets"]["run"] for s in samples} == benchmarks
    assert {s["model"].split(" @ ")[0] for s in samples} >= set(MODELS)
    html = (out / "report.html").read_text(encoding="utf-8")
    assert html.count("data:image/png;base64") == 3  # a percentile chart per model

    # The models under test got a usable reply for every item, so a rerun finds every one of their stages
    # cached. (Helper roles answered by the generic responder left a few replies unusable in FURINA's build;
    # --keep-failures replays those rather than asking again, so nothing at all is sent.)
    answers = pq.read_table(out / "roleinteract" / "answers.parquet").to_pylist()
    assert {a["status"] for a in answers} == {"ok"}
    sent = len(loopback.log)
    again = _suite(tmp_path, scripted, "--keep-failures")
    assert again.returncode == 0, again.stderr[-2000:]
    assert len(loopback.log) == sent
    assert pq.read_table(out / "profile.parquet").to_pylist() == profile


def test_a_mode_that_fails_leaves_the_others_profiled_and_the_suite_failed(tmp_path, scripted, loopback):
    text = scripted.read_text(encoding="utf-8")
    scripted.write_text(text + f'\n[roles.dmt-judge]\nmodel = "openai/broken"\napi_base = "{loopback.base_url}"\nschema_rules = "vllm"\n'
                        f'api_key_env = "{TEST_KEY_ENV}"\nstructured = "json_schema"\ntimeout = 2.0\n',
                        encoding="utf-8")
    loopback.model_faults["broken"] = "500"
    ran = _suite(tmp_path, scripted, "--mode", "dmt", "--mode", "roleinteract")
    assert ran.returncode == 3, ran.stderr[-2000:]
    assert "mode dmt:" in ran.stderr and "Traceback" not in ran.stderr
    out = tmp_path / "suite"
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["outcome"]["status"] == "failed"
    assert manifest["suite"]["modes"]["dmt"]["status"] == "failed"
    assert manifest["suite"]["modes"]["roleinteract"]["status"] == "ok"
    # DMT wrote its tables (every label failed), so it stands in the profile, marked failed in the report.
    profiled = pq.read_table(out / "profile.parquet").to_pylist()
    assert {p["benchmark"] for p in profiled} >= {"roleinteract"}
    assert "- dmt: failed" in (out / "report.md").read_text(encoding="utf-8")
    # What was measured is printed before why the suite failed, as a mode's own command does.
    assert "roleinteract: ok" in ran.stdout and "report: " in ran.stdout
    assert any(line.startswith(f"{MODELS[0]} roleinteract: ") for line in ran.stdout.splitlines())
    # The same command again finds every stage cached: DMT fails the same way, and its leaderboard (kept from
    # its cached report stage) is this run's, not an earlier run's to leave out.
    again = _suite(tmp_path, scripted, "--mode", "dmt", "--mode", "roleinteract")
    assert again.returncode == 3, again.stderr[-2000:]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert not any("earlier run" in r for r in manifest["suite"]["modes"]["dmt"]["reasons"])
    assert pq.read_table(out / "profile.parquet").to_pylist() == profiled


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "suite.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("text, message", [
    ("[roleinteractt]\ndata = ['x.json']\n", "[roleinteractt]: unknown benchmark mode 'roleinteractt'"),
    ("[roleinteract]\ndat = ['x.json']\n", "[roleinteract] 'dat': "),
    ("[roleinteract]\ndata = ['x.json']\ncache = 'c.sqlite'\n", "[roleinteract] 'cache': set by the suite command"),
    ("[roleinteract]\ndata = ['x.json']\nmodels = ['a']\n", "'models': the models under test come from the suite"),
    # A near name the suite sets itself is not offered as the fix (it would be the next error).
    ("[roleinteract]\ndata = ['x.json']\nmodel = ['a']\n", "'model': no such setting of roleinteract ('models' is "
     "set by the suite command for every mode (--model), not in a suite file)"),
    ("[roleinteract]\ndata = ['x.json']\nmax_cst = 1\n", "'max_cst': no such setting of roleinteract ('max_cost' is "
     "set by the suite command"),
    ("[roleinteract]\ndata = ['x.json']\n[weights]\ndmt = 1\n", "[weights] 'dmt': not a mode of this suite"),
    ("[roleinteract]\ndata = ['x.json']\n[weights]\nroleinteract = 'high'\n", "[weights] 'roleinteract': a weight"),
    ("[roleinteract\n", "not a TOML file"),
    ("[furina]\nbench = 'b'\n[furina.build]\ncharacters = 'c.yaml'\n", "[furina] give 'bench'"),
    ("[furina]\nbench = 'b'\neval = true\n", "[furina] 'eval' must be a table ([furina.eval]) of its settings"),
    ("[furina]\nbench = 3\n", "[furina] 'bench' must be a benchmark folder's path"),
    ("[roleinteract]\ndata = ['missing.json']\n", "missing.json"),
    # A rule over several settings is told in the file's keys, not the command line's flags.
    (f"[coser]\ndata = ['{sample_path('coser', 'example.json')}']\ncontinue_from = 3\nmax_rounds = 2\n",
     "[coser]: 'continue_from' 3 with 'max_rounds' 2: every round would come from the book"),
    (f"[furina.pool]\nbooks = ['{sample_path('books')}']\nmin_tokens = 900\nmax_tokens = 300\n"
     "[furina.build]\ncharacters = 'c.yaml'\n",
     "chunk sizes out of order: 'min_tokens' 900, 'max_tokens' 300 (each at most the next)"),
])
def test_a_bad_suite_file_is_one_line_naming_the_file_and_the_table(tmp_path, text, message):
    path = _write(tmp_path, text)
    ran = rpbench("suite", "run", "--model", "m", "--suite", str(path), "--out", str(tmp_path / "out"))
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert message in ran.stderr and str(path) in ran.stderr and "Traceback" not in ran.stderr
    assert len(ran.stderr.strip().splitlines()) == 1


def test_a_mode_the_suite_file_does_not_have_is_an_error(tmp_path):
    ran = rpbench("suite", "run", "--model", "m", "--mode", "dmtt", "--out", str(tmp_path / "out"))
    assert ran.returncode == 2 and "--mode: 'dmtt' is not a mode of" in ran.stderr
    assert "(did you mean dmt? its modes: furina, pingpong, dmt," in ran.stderr


def test_the_suite_file_may_be_given_as_the_argument_as_well_as_with_suite(tmp_path):
    """`rpbench suite show > mine.toml` then `rpbench suite run mine.toml`: the file is read as with --suite
    (here its typo is found), and a file given both ways is an error rather than one silently winning."""
    mine = tmp_path / "mine.toml"
    mine.write_text('[dmt]\nmax_round = 3\n', encoding="utf-8")
    for given in ([str(mine)], ["--suite", str(mine)]):
        ran = rpbench("suite", "run", *given, "--model", "m", "--out", str(tmp_path / "out"))
        assert ran.returncode == 2 and ran.stderr.strip() == (
            f"error: {mine}: [dmt] 'max_round': no such setting of dmt (did you mean 'max_rounds'?)"), ran.stderr
    twice = rpbench("suite", "run", str(mine), "--suite", str(mine), "--model", "m", "--out", str(tmp_path / "o"))
    assert twice.returncode == 2 and "--suite: given twice, as the option and as the argument" in twice.stderr


def test_an_unknown_model_is_the_commands_error_not_the_suite_files(tmp_path):
    """--model is the suite command's option: its error names the option, not a table of the suite file."""
    ran = rpbench("suite", "run", "--model", "nosuchmodel", "--mode", "coser", "--out", str(tmp_path / "out"))
    assert ran.returncode == 2 and ran.stderr.startswith("error: --model: unknown model 'nosuchmodel'"), ran.stderr


def test_suite_show_prints_the_shipped_suite_which_names_every_mode_and_runs_where_it_is_saved(tmp_path):
    ran = rpbench("suite", "show")
    assert ran.returncode == 0
    assert all(f"[{m}" in ran.stdout for m in ("furina", "pingpong", "dmt", "roleinteract", "rolellm", "coser",
                                               "characterbench"))
    # `rpbench suite show > my-suite.toml`, as its header says, then run from there: the samples are found.
    copy = tmp_path / "my-suite.toml"
    copy.write_text(ran.stdout, encoding="utf-8")
    paths = [v for table in tomllib.loads(ran.stdout).values() for v in _strings(table) if "/" in v]
    assert paths and all(Path(p).is_absolute() and Path(p).exists() for p in paths), paths
    # A folder is shown where its files are, not under an editable install's link tree (build/__editable__...).
    assert not any("__editable__" in p for p in paths), paths
    planned = rpbench("suite", "run", "--suite", str(copy), "--model", "test", "--plan", "--mode", "roleinteract",
                      "--out", str(tmp_path / "o"))
    assert planned.returncode == 0, planned.stderr


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


# -- the statistics, on constructed cases ---------------------------------------------------------------
def _bench(name: str, order: list[str], items: int = 12) -> RankedBenchmark:
    """Each model right on a share of the items that follows ``order`` (best first); items shared by models."""
    rows = []
    for rank, model in enumerate(order):
        right = items - 3 * rank  # 12, 9, 6, 3 of 12
        rows += [{"model": model, "item": k, "v": float(k < right)} for k in range(items)]
    return RankedBenchmark(name, rows, "model", "item", lambda picked: sum(r["v"] for r in picked) / len(picked))


def test_kendall_tau_between_benchmarks_is_as_computed_by_hand():
    same = _bench("x", ["a", "b", "c", "d"])
    swap = _bench("y", ["a", "b", "d", "c"])  # one of six pairs discordant: (5 - 1) / 6
    flip = _bench("z", ["d", "c", "b", "a"])
    pairs = {(p.first, p.second): p for p in rank_agreement([same, swap, flip], resamples=300, seed=1)}
    assert pairs[("x", "y")].tau == pytest.approx(4 / 6)
    assert pairs[("x", "z")].tau == pytest.approx(-1.0)
    assert pairs[("y", "z")].tau == pytest.approx(-4 / 6)
    for p in pairs.values():
        assert p.models == 4 and p.ci_low is not None and p.ci_low <= p.tau <= p.ci_high and p.resamples > 0
    assert most_disagreeing(list(pairs.values())) == ("z", pytest.approx((-1 - 4 / 6) / 2))


def test_tau_needs_three_models_and_percentiles_need_two():
    assert kendall_tau({"a": 1.0, "b": 2.0}, {"a": 2.0, "b": 1.0}) == (None, 2)
    assert percentiles({"a": 5.0}) == {"a": None}
    assert percentiles({"a": 1.0, "b": 2.0, "c": 3.0}) == pytest.approx({"a": 100 / 6, "b": 50.0, "c": 500 / 6})
    assert percentiles({"a": 1.0, "b": 2.0}, higher_is_better=False) == {"a": 75.0, "b": 25.0}


def test_with_two_models_the_report_says_why_there_is_no_agreement(tmp_path, scripted):
    ran = rpbench("suite", "run", "--model", "good", "--model", "poor", "--mode", "roleinteract", "--mode", "dmt",
                  "--models-file", str(scripted), "--cache", str(tmp_path / "c.sqlite"), "--out",
                  str(tmp_path / "two"), "--resamples", "50")
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "needs at least 3 models" in ran.stdout
    assert "this suite ran 2" in (tmp_path / "two" / "report.md").read_text(encoding="utf-8")
    assert pq.read_table(tmp_path / "two" / "agreement.parquet").num_rows == 0


def test_a_mode_that_fails_before_scoring_is_not_profiled_from_an_earlier_runs_tables(tmp_path, scripted, loopback):
    first = _suite(tmp_path, scripted, "--mode", "roleinteract")
    assert first.returncode == 0, first.stderr[-2000:]
    # The poor model's key is now refused: its answers stage stops, so no new leaderboard is written and the
    # earlier one (which ranked all three) is still in the mode's folder.
    text = scripted.read_text(encoding="utf-8").replace('[roles.poor]\nmodel = "openai/poor"',
                                                        '[roles.poor]\nmodel = "openai/denied"')
    scripted.write_text(text, encoding="utf-8")
    loopback.model_faults["denied"] = "401"
    ran = _suite(tmp_path, scripted, "--mode", "roleinteract")
    assert ran.returncode == 3, ran.stderr[-2000:]
    out = tmp_path / "suite"
    assert (out / "roleinteract" / "leaderboard.parquet").is_file()
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert any("from an earlier run" in r for r in manifest["suite"]["modes"]["roleinteract"]["reasons"])
    assert pq.read_table(out / "profile.parquet").num_rows == 0
    assert "- roleinteract: failed" in (out / "report.md").read_text(encoding="utf-8")


def test_a_model_without_any_percentile_gets_no_empty_chart():
    from rpbench.tasks.reports.profile import ProfileRow
    from rpbench.tasks.reports.profile_page import percentile_charts

    def row(model: str, percentile: float | None) -> ProfileRow:
        return ProfileRow(model=model, benchmark="dmt", metric="score", unit="0-100", score=50.0, ci_low=40.0,
                          ci_high=60.0, n=4, failed=0, percentile=percentile)

    assert percentile_charts([row("alone", None)], ["dmt"]) == []
    charts = percentile_charts([row("a", 25.0), row("b", 75.0)], ["dmt"])
    assert [c.alt for c in charts] == ["a: percentile per benchmark", "b: percentile per benchmark"]


def test_a_benchmark_that_scored_nothing_for_a_model_says_so_under_the_profile():
    from rpbench.tasks.reports.profile import ProfileRow
    from rpbench.tasks.reports.profile_page import _profile_table

    def row(model: str, score: float | None, n: int) -> ProfileRow:
        return ProfileRow(model=model, benchmark="pingpong", metric="ln_score", unit="", score=score,
                          ci_low=score, ci_high=score, n=n, failed=0, percentile=None if score is None else 50.0)

    lines = _profile_table([row("a", None, 0), row("b", 3.2, 4)], ["pingpong"])
    assert "- No pingpong score for a (n = 0, 0 failed): it scored none of their items" in "\n".join(lines)
    assert not any("No pingpong score" in line and "b (" in line for line in lines)


def test_a_suite_stopped_in_any_of_its_flows_continues_with_the_same_command(tmp_path, scripted, loopback):
    """FURINA's three flows (pool, build, evaluation) and RoleInteract's one, each stopped in turn by a kill
    halfway through its requests: the same command run again finishes, sending no request again whose reply had
    reached the killed command (those answered in its last two seconds may not have). A stop by the budget ends
    a flow the same way (tests/test_budget.py), and writes its manifest as stopped, which the suite's check reads."""
    import math
    import os
    import signal
    import subprocess
    import time

    from tests.helpers import CLI

    modes = ("--mode", "furina", "--mode", "roleinteract")
    args = [a for m in MODELS for a in ("--model", m)]

    def command(out: str, cache: str) -> list[str]:
        return ["suite", "run", *args, *modes, "--models-file", str(scripted), "--cache", str(tmp_path / cache),
                "--out", str(tmp_path / out), "--resamples", "200"]

    full = rpbench(*command("full", "full.sqlite"))
    assert full.returncode == 0, full.stderr[-2000:]
    order = [("furina", "pool"), ("furina", "bench"), ("furina", "eval"), ("roleinteract", "")]
    sent = [json.loads((tmp_path / "full" / mode / folder / "manifest.json").read_text(encoding="utf-8"))
            ["this_run"]["calls_sent"] for mode, folder in order]
    assert all(n >= 2 for n in sent), sent
    env = {**os.environ, TEST_KEY_ENV: "k", "RPBENCH_PROGRESS_BAR": "0", "RPBENCH_SHARED_LIMITS": "0"}
    for k, (mode, folder) in enumerate(order):
        loopback.log.clear()
        target = sum(sent[:k]) + sent[k] // 2
        argv = command(f"stop{k}", f"calls{k}.sqlite")
        with (tmp_path / f"stop{k}.log").open("ab") as log:
            proc = subprocess.Popen([*CLI, *argv], env=env, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            deadline = time.monotonic() + 300
            while sum(1 for e in loopback.log if e.get("ok")) < target and proc.poll() is None \
                    and time.monotonic() < deadline:
                time.sleep(0.01)
            assert proc.poll() is None, f"flow {k} finished before the kill"
            os.killpg(proc.pid, signal.SIGKILL)
            killed_at = time.time()
            proc.wait()
        safe = {e["digest"] for e in loopback.log if e.get("ok") and e.get("answered", math.inf) <= killed_at - 2.0}
        stopped_in = tmp_path / f"stop{k}" / mode / folder
        assert not (stopped_in / "manifest.json").is_file() or \
            json.loads((stopped_in / "manifest.json").read_text())["outcome"]["status"] != "ok", k
        first = len(loopback.log)
        # --keep-failures: the helper roles' few unusable replies in FURINA's build (see the test above) are
        # replayed, not asked again, so every request sent again would be a lost answer.
        resumed = rpbench(*argv, "--keep-failures")
        assert resumed.returncode == 0, (k, resumed.stderr[-2000:])
        again = {e["digest"] for e in loopback.log[first:]} & safe
        if again:  # what was sent again, for the failure message
            bodies = {hashlib.sha256(json.dumps(b, sort_keys=True).encode()).hexdigest(): b for b in loopback.requests}
            shown = [(bodies[d].get("model"), str(bodies[d]["messages"][-1]["content"])[:80]) for d in again
                     if d in bodies]
            raise AssertionError(f"flow {k}: {len(again)} answered requests sent again: {shown[:5]}")
        profile = pq.read_table(tmp_path / f"stop{k}" / "profile.parquet").to_pylist()
        assert {p["benchmark"] for p in profile} == {"furina", "roleinteract"}, k
