"""What rpbench sends in a live CoSER run, compared fact by fact with what CoSER's own code sends.

``tests/data/coser_release_requests.json`` holds the facts of every request CoSER's released code
(gca_evaluation/main.py at 624efc5) sent when it ran once against the loopback server on three released
circumstances, the stand-in model answering with ``tests.coser_release_facts.responder`` (no prompt text is
kept, only facts: which agent, round, limits, and what the input carried). Here rpbench runs the same
circumstances against the same stand-in, and every request must carry the same facts, in the same order per
circumstance, except the differences listed in ``DIFFERENCES``: each is stated on CoSER's page.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from tests.coser_release_facts import case_id, facts, responder
from tests.helpers import TEST_KEY_ENV, loopback_models_file, released, rpbench

pytestmark = pytest.mark.usefixtures("harness")
ROOT = Path(__file__).resolve().parents[1]
RECORDED = json.loads((Path(__file__).parent / "data" / "coser_release_requests.json").read_text())

# (agent kind, fact) -> (CoSER's code, rpbench, why), each stated under "Where rpbench differs" on CoSER's page.
DIFFERENCES = {
    ("critic", "max_tokens"): (8196, 4096, "the critic's limit without a preset"),
    ("critic", "turns_named"): (False, True, "every stored turn under its speaker's name"),
    ("critic", "also_sent"): ([], ["response_format", "seed"], "JSON schema"),
    ("actor", "thought"): (False, True, "reads `thought`"),
    ("actor", "also_sent"): ([], ["seed"], "seed"),
    ("environment", "also_sent"): ([], ["seed"], "seed"),
    ("next-speaker", "also_sent"): ([], ["seed"], "seed"),
}


def _picked() -> list[dict]:
    data = json.loads(released("coser/test/test_set.json").read_text())
    example = json.loads(released("coser/test/example_test_set.json").read_text())
    picked = [data[0], data[100], example[0]]
    assert [case_id(c) for c in picked] == RECORDED["circumstances"]
    return picked


def _by_case(requests: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = defaultdict(list)
    for r in requests:
        out[r["case"]].append(r)
    return out


def test_a_live_coser_run_sends_what_coser_s_code_sends(loopback, tmp_path, monkeypatch):
    picked = _picked()
    data = tmp_path / "picked.json"
    data.write_text(json.dumps(picked, ensure_ascii=False), encoding="utf-8")
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = responder(picked)
    models = loopback_models_file(tmp_path / "models.toml", loopback)  # sets no token limit: the mode's own
    ran = rpbench("coser", "run", "--data", str(data), "--model", "coser-actor", "--out", str(tmp_path / "run"),
                  "--models-file", str(models), "--cache", str(tmp_path / "c.sqlite"), "--resamples", "40")
    assert ran.returncode == 0, ran.stderr[-2000:]
    ours = _by_case([facts(b, picked) for b in loopback.requests])
    theirs = _by_case(RECORDED["requests"])
    assert set(ours) == set(theirs)
    seen: set[tuple[str, str]] = set()
    for case, wanted in theirs.items():
        got = ours[case]
        # The same agents asked in the same order: calls per round, who acts, when the scene ends, the critic.
        assert [(r["agent"], r["round"]) for r in got] == [(r["agent"], r["round"]) for r in wanted], case
        for mine, release in zip(got, wanted, strict=True):
            kind = release["agent"].split(":")[0]
            assert set(mine) == set(release), (case, release["agent"])
            for fact, value in release.items():
                if (kind, fact) in DIFFERENCES and value == DIFFERENCES[(kind, fact)][0] \
                        and mine[fact] == DIFFERENCES[(kind, fact)][1]:
                    seen.add((kind, fact))
                    continue
                assert mine[fact] == value, (case, release["agent"], release["round"], fact)
    # Every listed difference was met (none is stale), and each is on CoSER's page.
    assert seen == set(DIFFERENCES)
    page = (ROOT / "docs" / "benchmarks" / "coser.md").read_text()
    for _release, _ours, phrase in DIFFERENCES.values():
        assert phrase.lower() in page.lower(), phrase


def test_the_coser_paper_preset_gives_coser_s_limits():
    from rpbench.flows.kit.front.registry import models_config

    config = models_config("coser-paper")
    assert config.for_role("coser-critic").max_tokens == 8196
    assert config.for_role("coser-critic").model == "openai/gpt-4o-2024-08-06"
    for role in ("coser-actor", "coser-environment", "coser-next-speaker"):
        assert config.for_role(role).max_tokens == 512 and config.for_role(role).temperature == 0.0
    shown = rpbench("models", "--models-file", "coser-paper")
    assert shown.returncode == 0
    critic = shown.stdout.split("coser-critic:")[1].split("\n\n")[0]
    assert "max_tokens=8196 (coser-paper [roles.coser-critic])" in critic
    assert "model='openai/gpt-4o-2024-08-06' (coser-paper [roles.coser-critic])" in critic
