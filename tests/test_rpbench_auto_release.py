"""RPBench-Auto: what rpbench sends equals what RPBench-Auto's own scripts send, request for request.

The release's ``run_character_eval.py`` and ``run_scene_eval.py`` (boson-ai/RPBench-Auto at 01a2579, copied from
../shared/releases into the test's folder, where they read their configs and write their results) run here
with their clients pointed at the loopback server, one item at a time with Python's generator seeded as
rpbench seeds that item's A/B draws. The server answers by content: the candidates in words (a scene's in the
JSON its prompt asks for, some ending the scene), the judge with a verdict, some first unreadable (the release
asks again, as rpbench does), some naming no winner. rpbench runs the same items against the same server; every
request carries the same messages, temperature and token limit."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.helpers import TEST_KEY_ENV, rpbench
from tests.release_code import imported, release_folder

pytestmark = pytest.mark.usefixtures("harness")
COMMIT = "01a257926b196076b3e7829b4a4ec194b37dd110"
SEED = 7
MODELS = {"candidate": "loop-cand", "baseline": "loop-base", "judge": "loop-judge"}


def responder(reask: bool = False):
    """Replies by content alone, so the same request always gets the same reply (a request sent twice, as a
    retry on a loaded machine may send it, changes nothing). ``reask``: some verdicts unreadable on their first
    ask (counted by request: for tests that do not compare two runs' requests)."""
    asked: Counter[str] = Counter()

    def respond(body: dict) -> str:
        messages = body["messages"]
        digest = hashlib.sha256(json.dumps(messages).encode()).hexdigest()
        model = body["model"].rsplit("/", 1)[-1]
        if model == MODELS["judge"]:
            asked[digest] += 1
            rounds = sum(m["role"] == "assistant" for m in messages)
            if reask and digest[0] in "01" and asked[digest] == 1:
                return "I cannot decide {winner"  # unreadable: asked again
            winner = None if rounds == 0 else "model_b" if digest[1] in "0123" else "model_a"
            if rounds >= 2 and digest[2] in "01":
                winner = None  # no winner named (not on a first round: the release's progress bar divides by wins)
            text = json.dumps({"winner": winner, "next_round_user_speaks": f"And then? ({digest[3:9]})",
                               "decision_reason": f"reason {digest[9:13]}"})
            return f"```json\n{text}\n```" if digest[3] in "0123" else text
        if "is_chat_finished" in messages[0]["content"]:  # a scene's NPC
            done = sum(m["role"] == "user" for m in messages) >= 3 and digest[0] in "01234567"
            return json.dumps({"npc_speaks": f"{model} says {digest[:6]}", "is_chat_finished": done})
        return f"*{model} nods* Indeed, {digest[:8]}."

    return respond


def _configs(code: Path, base_url: str) -> None:
    def entry(name: str) -> str:
        return (f"{name}:\n    model_name: {name}\n    beautiful_name: {name}\n    api_type: openai\n"
                f"    endpoints:\n        api_base: {base_url}\n        api_key: k\n")

    (code / "config" / "api_config.yaml").write_text(entry(MODELS["candidate"]) + entry(MODELS["baseline"]))
    (code / "config" / "judger_config.yaml").write_text(entry(MODELS["judge"]))


def release_requests(loopback, subset: str, lines: list[str], work: Path) -> list[dict]:
    """What the release's script for ``subset`` sends for each data line, one item at a time, its generator
    seeded as rpbench seeds the item's draws."""
    code = work / "release"
    shutil.copytree(release_folder("boson-ai/RPBench-Auto", COMMIT), code)
    _configs(code, loopback.base_url)
    script = "run_character_eval" if subset == "character" else "run_scene_eval"
    cwd = os.getcwd()
    os.chdir(code)
    try:
        with imported(code, [script]) as (module,):
            for line in lines:
                item = json.loads(line)
                (code / "data" / f"rpbench_{subset}.jsonl").write_text(line + "\n")
                # The script draws from the module-wide generator; seeded in place, a thread of the test process
                # (an earlier run's Prefect client, say) drawing from it too would change the draws under load:
                # the script gets a generator of its own, seeded as rpbench seeds the item.
                module.random = random.Random(f"{SEED}:{subset}:{item['id']}")
                module.eval_models_pairwise(MODELS["candidate"], MODELS["baseline"])
    finally:
        os.chdir(cwd)
    return list(loopback.requests)


def _models(tmp_path: Path, loopback) -> str:
    path = tmp_path / "models.toml"
    path.write_text(
        f'[default]\nmodel = "openai/loopback"\napi_base = "{loopback.base_url}"\napi_key_env = "{TEST_KEY_ENV}"\n'
        f'timeout = 20\n[roles.rpbench-auto-candidate]\nmodel = "openai/{MODELS["candidate"]}"\n'
        f'[roles.rpbench-auto-baseline]\nmodel = "openai/{MODELS["baseline"]}"\n'
        f'[roles.rpbench-auto-judge]\nmodel = "openai/{MODELS["judge"]}"\n', encoding="utf-8")
    return str(path)


def _sent(requests: list[dict]) -> list[str]:
    return sorted(json.dumps({"model": r["model"].rsplit("/", 1)[-1], "messages": r["messages"],
                              "temperature": r.get("temperature"), "max_tokens": r.get("max_tokens"),
                              "format": r.get("response_format")}, sort_keys=True) for r in requests)


def _lines(subset: str, n: int) -> list[str]:
    folder = release_folder("boson-ai/RPBench-Auto", COMMIT)
    return (folder / "data" / f"rpbench_{subset}.jsonl").read_text(encoding="utf-8").splitlines()[:n]


def _run(tmp_path: Path, loopback, subset: str, n: int, name: str) -> object:
    return rpbench("rpbench-auto", "run", "--subset", subset, "--limit", str(n), "--model", "rpbench-auto-candidate",
                   "--models-file", _models(tmp_path, loopback), "--cache", str(tmp_path / f"{name}.sqlite"),
                   "--out", str(tmp_path / name), "--seed", str(SEED), "--resamples", "40")


@pytest.mark.parametrize("subset", ["character", "scene"])
def test_a_run_sends_what_rpbench_auto_s_scripts_send(loopback, tmp_path, monkeypatch, subset):
    n = 3
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = responder()
    theirs = release_requests(loopback, subset, _lines(subset, n), tmp_path)
    loopback.reset()
    loopback.responder = responder()
    ran = _run(tmp_path, loopback, subset, n, "run")
    assert ran.returncode == 0, ran.stderr[-2000:]
    ours = list(loopback.requests)
    assert len(ours) == len(theirs) > 6 * n
    assert _sent(ours) == _sent(theirs)
    # What the run exercised: rounds with no winner, fenced JSON, both slots.
    from rpbench.storage.tables import read_records
    from rpbench.tasks.modes.rpbench_auto.tables import DIALOGUE_ENDS, ROUNDS

    rounds = read_records(tmp_path / "run" / "rounds.parquet", ROUNDS)
    ends = read_records(tmp_path / "run" / "dialogue_ends.parquet", DIALOGUE_ENDS)
    assert {r.outcome for r in rounds} >= {"model_a", "model_b"}
    assert {r.model_a for r in rounds} == {"rpbench-auto-candidate", "rpbench-auto-baseline"}
    if subset == "scene":
        assert any(e.ended_by_scene for e in ends) and any(r.finished_a is False for r in rounds)
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert any(k.endswith(f"run_{subset}_eval.py") for k in manifest["release_files"])

    if subset == "character":  # one word of the judge's template changed in rpbench is caught
        from rpbench.tasks.modes.rpbench_auto import release

        original = release.judge_template
        monkeypatch.setattr(release, "judge_template", lambda s: type(original(s))(
            original(s).template.replace("simulate a user", "simulate a player")))
        loopback.reset()
        loopback.responder = responder()
        # Prefect's cache keys a stage by rpbench's code and the pinned files, not by a function patched here:
        # the altered run must not be answered from the first run's cached stage.
        monkeypatch.setenv("PREFECT_TASKS_REFRESH_CACHE", "true")
        _run(tmp_path, loopback, subset, n, "altered")
        altered = list(loopback.requests)
        assert len(altered) == len(theirs) and _sent(altered) != _sent(theirs)


async def test_an_unreadable_verdict_is_asked_again_as_the_release_asks_it():
    """chat_completion_judger sends the same request again until a reply can be read; rpbench sends the very same
    messages as a new sample (its own cache key), up to the asks allowed, then gives up, counted."""
    from rpbench.tasks.llm.requests import NoReply, Reply
    from rpbench.tasks.modes.rpbench_auto.dialogue import judged, read_judge

    release_folder("boson-ai/RPBench-Auto", COMMIT)
    replies = ["no verdict here", "{winner", '{"winner": "model_b", "next_round_user_speaks": "go on"}']
    asked: list = []

    class Scripted:
        async def run(self, req):
            asked.append(req)
            text = replies[len(asked) - 1] if len(asked) <= len(replies) else "still nothing"
            try:
                return Reply(req.role, "m", text, read_judge(text), 1, False, (text,))
            except ValueError as exc:
                return NoReply(req.role, "m", text, str(exc), 1, False, (text,))

    messages = [{"role": "system", "content": "judge"}, {"role": "user", "content": "{}"}]
    verdict, took, error = await judged(Scripted(), "rpbench-auto-judge", messages, "t", asks=5)
    assert verdict.parsed.winner == "model_b" and took == 3 and error is None
    assert [r.messages for r in asked] == [messages] * 3 and [r.sample_index for r in asked] == [0, 1, 2]
    asked.clear()
    replies[:] = []
    verdict, took, error = await judged(Scripted(), "rpbench-auto-judge", messages, "t", asks=2)
    assert verdict is None and took == 2 and "JSON" in error


def test_the_role_settings_are_the_release_s():
    """chat_completion's defaults (temperature 1.0, max_tokens 2048), read from utils.py, are every role's."""
    from rpbench.tasks.modes.rpbench_auto.release import sampling
    from rpbench.tasks.modes.rpbench_auto.roles import ROLES

    release_folder("boson-ai/RPBench-Auto", COMMIT)
    assert sampling() == {"temperature": 1.0, "max_tokens": 2048}
    assert all(r.settings == sampling() for r in ROLES.values())


def test_a_judge_reply_is_read_as_the_release_reads_it():
    """rpbench's reading against extract_and_parse_json and chat_completion_judger's check, on the same replies."""
    from rpbench.tasks.modes.rpbench_auto.dialogue import read_judge

    folder = release_folder("boson-ai/RPBench-Auto", COMMIT)
    with imported(folder, ["utils"]) as (utils,):
        replies = ['{"winner": "model_a", "next_round_user_speaks": "hi"}',
                   '```json\n{"winner": null, "next_round_user_speaks": "so?", "decision_reason": "x"}\n```',
                   'Sure! {"winner": "model_b", "next_round_user_speaks": "go on"', '{"winner": "model_a"}',
                   'no json at all', '{"winner": "tie", "next_round_user_speaks": "hm"}']
        for text in replies:
            try:
                theirs = utils.extract_and_parse_json(text)
                usable = "winner" in theirs and "next_round_user_speaks" in theirs
            except Exception:
                usable = False
            try:
                ours = read_judge(text)
            except ValueError:
                assert not usable, text
                continue
            assert usable, text
            assert (ours.winner, ours.next_round_user_speaks) == (theirs["winner"], theirs["next_round_user_speaks"])
    assert "utils" not in sys.modules or not str(getattr(sys.modules["utils"], "__file__", "")).startswith(str(folder))
