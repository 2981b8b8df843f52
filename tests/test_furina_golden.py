"""FURINA's results on a loopback benchmark stay what they were recorded as, unless changed on purpose.

The expected numbers (tests/data/furina_loopback_golden.json) were first computed by the code before the
pipeline was reshaped, and re-recorded when the FURINA-fidelity work deliberately changed the judge's
prompt (it now sees the scene), the dimension texts, the item-score table and the intervals (clustered by
dialogue). Every table, score and bootstrap interval must come out the same; a change that moves them must
be deliberate: re-record with ``RPBENCH_RECORD_GOLDEN=1 pytest tests/test_furina_golden.py`` and say why
in the commit.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

import pytest

from rpbench.tasks.modes.furina.domain import Item
from rpbench.tasks.modes.furina.evaluation.analysis import REPORT
from rpbench.tasks.modes.furina.evaluation.run import Bench, EvalConfig, evaluate
from rpbench.tasks.reports.report import build_report
from tests.test_builder import SCENE, TEST
from tests.test_evaluation import ESTABLISHED

GOLDEN_PATH = Path(__file__).parent / "data" / "furina_loopback_golden.json"
GOLDEN = json.loads(GOLDEN_PATH.read_text())
DIMS = ["CR", "FR", "RR", "CA", "PA"]


def respond(body):
    """A scripted judge and checker whose answers depend only on the prompt."""
    name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
    d = hashlib.md5(json.dumps(body["messages"]).encode()).hexdigest()
    if name == "JudgeVerdict":
        invents = " invents facts" if int(d[6], 16) < 5 else ""
        return json.dumps({"reasoning": f"r{d[:6]}{invents}", "sigma": 1 + int(d[:2], 16) % 5})
    if name == "CheckVerdict":
        return json.dumps({"answer": "Yes" if "invents" in json.dumps(body["messages"]) else "No"})
    return f"(nods) reply {d[:8]}"


def items() -> list[Item]:
    return [Item(item_id=f"i{k}", character="Zero" if k % 2 == 0 else "Holmes",
                 character_type="synthesized" if k % 2 == 0 else "established", language="en", scene_id="s1",
                 dialogue_id=f"d{k % 4}", dimension=DIMS[k % 5], history=[{"speaker": "Starbuck", "text": f"Question {k}?"}],
                 test_utterance="t", base_utterance="b", source_model="m", sigma=1) for k in range(30)]


def _digest(rows) -> str:
    return hashlib.sha256(json.dumps([r.model_dump() for r in rows], sort_keys=True, default=str).encode()).hexdigest()


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    return a == b


async def test_furina_scores_are_unchanged_by_the_move(make_gateway, loopback):
    loopback.responder = respond
    gateway = make_gateway()
    gateway.config.roles["m-a"] = gateway.config.default.model_copy(update={"temperature": 0.3})
    gateway.config.roles["m-b"] = gateway.config.default.model_copy(update={"temperature": 0.9})
    bench = Bench(items(), {"Zero": TEST, "Holmes": ESTABLISHED}, {"s1": SCENE})
    tables = await evaluate(gateway, bench, {"m-a": "m-a", "m-b": "m-b"}, EvalConfig())
    report = build_report(REPORT, "30 items.", tables.item_scores, tables.failures, 1000, 0)
    digests = {name: _digest(getattr(tables, name)) for name in ("generations", "judgments", "checks", "item_scores")}
    if os.environ.get("RPBENCH_RECORD_GOLDEN"):
        GOLDEN_PATH.write_text(json.dumps({"digests": digests, "model_scores": report.scores,
                                           "leaderboard": report.board, "pareto": report.analysis.summary["pareto"]},
                                          indent=1, default=str))
        pytest.skip("golden numbers recorded")
    for name, digest in digests.items():
        assert digest == GOLDEN["digests"][name], name
    assert len(report.scores) == len(GOLDEN["model_scores"]) == 144  # 2 metrics x 72 groups
    for new, old in zip(report.scores, GOLDEN["model_scores"], strict=True):
        assert all(_same(new[k], v) for k, v in old.items()), (new, old)
    assert [r["model"] for r in report.board] == [r["model"] for r in GOLDEN["leaderboard"]]
    for new, old in zip(report.board, GOLDEN["leaderboard"], strict=True):
        assert all(_same(new[k], v) for k, v in old.items()), (new, old)
    assert report.analysis.summary["pareto"] == GOLDEN["pareto"]
