"""A run held to a budget (--max-cost, or a role's max_cost): it stops before the spend could pass it, exits 3
naming the spend and the budget, and the same command with a larger budget continues, sending no completed call
again."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.helpers import TEST_KEY_ENV, rpbench

EXAMPLE = Path(__file__).resolve().parent.parent / "samples" / "roleinteract" / "example.json"
ITEMS = 21
PRICE = 0.001  # per reply token; prompts are free here, so a request's most is max_tokens * PRICE exactly


def _models(tmp_path: Path, base: str, role_budget: float | None) -> Path:
    path = tmp_path / "models.toml"
    # One request at a time: where the run stops does not depend on how replies interleave.
    path.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{base}"\napi_key_env = "{TEST_KEY_ENV}"\n'
                    "max_concurrency = 1\nmax_tokens = 8\ninput_cost_per_token = 0.0\n"
                    f"output_cost_per_token = {PRICE}\n"
                    + (f"max_cost = {role_budget}\n" if role_budget is not None else ""))
    return path


@pytest.mark.parametrize("where", ["--max-cost", "models file"])
def test_a_run_stops_at_its_budget_and_a_larger_one_continues(harness, loopback, tmp_path, where):
    loopback.responder = lambda body: "I choose B."  # 2 reply tokens: each answer costs 2 * PRICE
    budget = 31 * PRICE  # 12 answers (24) leave 7, less than the 8 a 13th could cost
    models = _models(tmp_path, loopback.base_url, budget if where == "models file" else None)
    args = ["roleinteract", "run", "--data", str(EXAMPLE), "--model", "test", "--out", str(tmp_path / "run"),
            "--models-file", str(models), "--cache", str(tmp_path / "calls.sqlite")]
    env = {TEST_KEY_ENV: "k"}
    stopped = rpbench(*args, *(["--max-cost", str(budget)] if where == "--max-cost" else []), env=env)
    assert stopped.returncode == 3, stopped.stderr[-2000:]
    line = stopped.stderr.strip().splitlines()[-1]
    assert "budget reached" in line and f"${budget:.4f}" in line, line
    answered = {e["digest"] for e in loopback.log if e.get("ok")}
    # Spent 2 * PRICE a call; the next call could cost 8 * PRICE: it stops once spent + 8 * PRICE passes 30 * PRICE.
    assert len(answered) == 12 and len(loopback.log) == 12
    journals = list((tmp_path / "run").rglob("*.journal.jsonl"))
    assert journals  # the calls of the stopped stage are accounted for
    spent = 12 * 2 * PRICE
    assert spent <= budget
    first = len(loopback.log)
    if where == "models file":
        models.write_text(models.read_text().replace(f"max_cost = {budget}", "max_cost = 1.0"))
    more = rpbench(*args, *(["--max-cost", "1"] if where == "--max-cost" else []), env=env)
    assert more.returncode == 0, more.stderr[-2000:]
    again = [e["digest"] for e in loopback.log[first:]]
    assert not answered & set(again) and len(again) == ITEMS - 12
    calls = pq.read_table(tmp_path / "run" / "calls.parquet").to_pylist()
    # Every call paid once: the stopped run's 12 (journaled) and the 9 the rerun sent; its 12 cached ones are free.
    assert sum(c["cost_usd"] or 0 for c in calls if not c["cached"]) == pytest.approx(ITEMS * 2 * PRICE)


def test_a_model_with_no_known_price_cannot_run_under_a_budget(harness, loopback, tmp_path):
    models = tmp_path / "models.toml"
    models.write_text(f'[default]\nmodel = "openai/no-such-priced-model"\napi_base = "{loopback.base_url}"\n'
                      f'api_key_env = "{TEST_KEY_ENV}"\n')
    ran = rpbench("roleinteract", "run", "--data", str(EXAMPLE), "--model", "test", "--out", str(tmp_path / "run"),
                  "--models-file", str(models), "--max-cost", "1", env={TEST_KEY_ENV: "k"})
    assert ran.returncode == 3 and "price is unknown" in ran.stderr and not loopback.log
