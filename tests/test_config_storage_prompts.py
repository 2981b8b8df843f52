"""Model config, Parquet storage, prompt rendering, structured parsing: pure functions."""

from __future__ import annotations

import contextvars
import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from jinja2 import UndefinedError
from pydantic import BaseModel

from rpbench import prompts
from rpbench.storage.runs import RunDir
from rpbench.storage.schemas import CALLS, TableSpec
from rpbench.storage.tables import read_rows, read_table, write_table
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.core.records import Record
from rpbench.tasks.llm.cache import request_key
from rpbench.tasks.llm.config import LOCAL_MODEL, load_models_config
from rpbench.tasks.llm.structured import extract_json, parse_reply


# -- config -------------------------------------------------------------------------------------
def _with_roles(**kw):
    from rpbench.flows.kit.front.registry import role_settings

    return load_models_config(roles=role_settings(), **kw)


def test_default_config_binds_every_role_to_the_local_model():
    config = _with_roles(environ={})
    for role in ("judge", "source", "base", "director", "scene", "checker"):
        assert config.for_role(role).model == LOCAL_MODEL
    with pytest.raises(InputError, match="unknown role 'never-mentioned'"):  # no silent [default]
        config.for_role("never-mentioned")
    assert config.for_role("source").temperature == 0.7  # FURINA's own setting for the role
    assert config.for_role("judge").temperature == 0.0  # ModelSpec's own
    assert config.for_role("local-sampled").temperature == 0.8  # set for the role in the file


def test_environment_overrides_a_role_and_binds_new_ones():
    env = {"RPBENCH_JUDGE_MODEL": "openai/gpt-4.1", "RPBENCH_JUDGE_API_KEY_ENV": "OPENAI_API_KEY",
           "RPBENCH_CHECKER_TEMPERATURE": "0.3", "RPBENCH_DEFAULT_MAX_TOKENS": "99"}
    config = load_models_config(environ=env)
    assert config.for_role("judge").model == "openai/gpt-4.1"
    assert config.for_role("judge").api_key_env == "OPENAI_API_KEY"
    assert config.for_role("checker").temperature == 0.3
    assert config.for_role("checker").model == LOCAL_MODEL
    assert config.default.max_tokens == 99


def test_a_variable_sets_a_role_whose_name_has_a_dash():
    config = _with_roles(environ={"RPBENCH_DMT_JUDGE_MAX_TOKENS": "77"})
    assert config.for_role("dmt-judge").max_tokens == 77 and config.for_role("dmt-judge").reasoning_chars == 80
    assert "dmt_judge" not in config.roles


def test_bad_config_names_the_file_and_field(tmp_path):
    bad = tmp_path / "models.toml"
    bad.write_text('[roles.judge]\ntemperature = "hot"\n')
    with pytest.raises(InputError, match=r"models.toml: field 'roles.judge.temperature'"):
        load_models_config(bad, environ={})
    bad.write_text("[roles.judge\n")
    with pytest.raises(InputError, match="cannot parse"):
        load_models_config(bad, environ={})
    with pytest.raises(InputError, match="not found"):
        load_models_config(tmp_path / "missing.toml", environ={})
    # A model that is not text is the field's error (it was a TypeError traceback); a price is never negative.
    bad.write_text("[default]\nmodel = -1\n")
    with pytest.raises(InputError, match=r"models.toml: field 'default.model': Input should be a valid string"):
        load_models_config(bad, environ={})
    bad.write_text('[roles.judge]\nmodel = []\n')
    with pytest.raises(InputError, match=r"field 'roles.judge.model': Input should be a valid string"):
        load_models_config(bad, environ={})
    bad.write_text('[roles.judge]\nmodel = "openai/x"\noutput_cost_per_token = -1e-6\n')
    with pytest.raises(InputError, match=r"field 'roles.judge.output_cost_per_token': Input should be greater"):
        load_models_config(bad, environ={})


def test_request_key_changes_with_every_part_of_the_identity():
    base = dict(model="m", api_base=None, messages=[{"role": "user", "content": "hi"}], sampling={"temperature": 0})
    keys = {
        request_key(**base),
        request_key(**{**base, "model": "m2"}),
        request_key(**{**base, "messages": [{"role": "user", "content": "hi!"}]}),
        request_key(**{**base, "sampling": {"temperature": 0.5}}),
        request_key(**base, sample_index=1),
        request_key(**base, attempt=1),
        request_key(**base, response_schema={"type": "object"}),
    }
    assert len(keys) == 7
    assert request_key(**base) == request_key(**base)


# -- storage ------------------------------------------------------------------------------------
class ScoreRow(Record):
    model: str
    dimension: str
    language: str
    character_type: str
    score: float
    ci_low: float
    ci_high: float
    n: int


MODEL_SCORES = TableSpec("model_scores", 1, ScoreRow)


def test_arrow_schemas_come_from_the_records():
    schema = MODEL_SCORES.schema
    assert schema.field("n").type == pa.int64() and schema.field("score").type == pa.float64()
    assert not schema.field("model").nullable
    calls = CALLS.schema
    assert calls.field("started_at").type == pa.timestamp("ms", tz="UTC") and calls.field("error").nullable


def _demo_row(i: int) -> dict:
    return {"model": f"p{i}", "dimension": "CR", "language": "en", "character_type": "all", "score": 50.0,
            "ci_low": 40.0, "ci_high": 60.0, "n": 10}


def test_write_then_read_round_trips_and_records_the_schema_version(tmp_path):
    path = write_table(tmp_path / "t.parquet", [_demo_row(i) for i in range(3)], MODEL_SCORES)
    assert read_rows(path, MODEL_SCORES)[2]["model"] == "p2"
    meta = pq.read_schema(path).metadata
    assert meta[b"rpbench.table"] == b"model_scores" and meta[b"rpbench.schema_version"] == b"1"
    assert not list(tmp_path.glob(".*tmp"))  # no temp file left behind


def test_a_failed_write_leaves_the_old_table_intact(tmp_path):
    path = write_table(tmp_path / "t.parquet", [_demo_row(0)], MODEL_SCORES)
    with pytest.raises(ValueError, match="unknown columns"):
        write_table(path, [{**_demo_row(1), "bogus": 1}], MODEL_SCORES)
    assert [r["model"] for r in read_rows(path, MODEL_SCORES)] == ["p0"]


def test_reads_fail_with_one_clear_line(tmp_path):
    with pytest.raises(InputError, match="not found"):
        read_table(tmp_path / "none.parquet", MODEL_SCORES)
    (tmp_path / "junk.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(InputError, match=r"junk\.parquet: not a readable Parquet file"):
        read_table(tmp_path / "junk.parquet", MODEL_SCORES)
    path = write_table(tmp_path / "calls.parquet", [], CALLS)
    with pytest.raises(InputError, match="holds table 'calls', expected 'model_scores'"):
        read_table(path, MODEL_SCORES)
    pq.write_table(pa.table({"model": ["a"]}), tmp_path / "thin.parquet")
    with pytest.raises(InputError, match="lacks column 'dimension'"):
        read_table(tmp_path / "thin.parquet", MODEL_SCORES)
    newer = TableSpec(MODEL_SCORES.name, 99, ScoreRow)
    write_table(tmp_path / "new.parquet", [_demo_row(0)], newer)
    with pytest.raises(InputError, match="schema version 99"):
        read_table(tmp_path / "new.parquet", MODEL_SCORES)


def test_manifest_holds_versions_counts_and_is_rewritten_atomically(tmp_path):
    run = RunDir(tmp_path / "run")
    write_table(run.table(MODEL_SCORES), [_demo_row(0), _demo_row(1)], MODEL_SCORES)
    run.write_manifest(totals={"calls": 2})
    manifest = json.loads(run.manifest_path.read_text())
    assert manifest["row_counts"] == {"model_scores": 2}
    assert manifest["totals"] == {"calls": 2}
    assert "pyarrow" in manifest["packages"] and "wall_s" in manifest["timings"]
    run.write_manifest(extra="x")
    assert run.read_manifest()["totals"] == {"calls": 2}  # merged, not replaced


# -- prompts ------------------------------------------------------------------------------------
def test_render_is_strict_and_records_the_template_hash():
    used: dict[str, str] = {}

    def in_a_run() -> prompts.Rendered:
        prompts.record_into(used)
        return prompts.render("furina/eval/checker", "en", rationale="Reply A invents a brother.", test_label="A")

    out = contextvars.copy_context().run(in_a_run)
    assert "Reply A invents a brother." in out.text and "Does the judge say that Reply A" in out.text
    assert used == {"furina/eval/checker.en.j2": hashlib.sha256(Path(prompts.TEMPLATE_DIR, out.template).read_bytes()).hexdigest()}
    with pytest.raises(UndefinedError):
        prompts.render("furina/eval/checker", "en", rationale="x")


def test_each_stage_records_only_its_own_templates(tmp_path):
    from rpbench.flows.kit.running.stage import StageRun, StageSpec

    def run(name: str, language: str):
        stage = StageRun(StageSpec(name, templates=("furina/eval/checker",)), {"out": str(tmp_path / name)})
        prompts.record_into(stage.templates)
        prompts.render("furina/eval/checker", language, rationale="r", test_label="A")
        return stage.result()

    first = contextvars.copy_context().run(run, "a", "en")
    second = contextvars.copy_context().run(run, "b", "zh")
    assert list(first.templates) == ["furina/eval/checker.en.j2"]
    assert list(second.templates) == ["furina/eval/checker.zh.j2"]


def test_a_stage_that_renders_an_undeclared_template_is_refused(tmp_path):
    """Its cache key would miss edits to that template: a programming error, caught at once."""
    from rpbench.flows.kit.running.stage import StageRun, StageSpec

    def run():
        stage = StageRun(StageSpec("s", templates=("furina/eval/judge",)), {"out": str(tmp_path)})
        prompts.record_into(stage.templates)
        prompts.render("furina/eval/checker", "en", rationale="r", test_label="A")
        return stage.result()

    with pytest.raises(RuntimeError, match="undeclared templates"):
        contextvars.copy_context().run(run)


def test_chinese_variant_is_used_for_chinese():
    out = prompts.render("furina/dims/question", "zh", dim="CR", target="孙悟空")
    assert out.template == "furina/dims/question.zh.j2" and "考察孙悟空能否用好这个场景中已经确立的信息" in out.text


# rpbench's own words in one language only, where a release's serve the others: PingPong's card in Chinese (its
# release has English and Russian cards, read from its files).
RELEASE_HAS_THE_OTHERS = {"pingpong/player": ("zh",)}


def test_every_template_has_english_and_chinese_variants():
    """rpbench's own words come in English and Chinese, but where a release's words serve a language."""
    names = {path.rsplit(".", 2)[0] for path in prompts.all_templates()}
    for name in names:
        languages = RELEASE_HAS_THE_OTHERS.get(name, ("en", "zh"))
        for lang in languages:
            assert f"{name}.{lang}.j2" in prompts.all_templates(), name


# -- structured ---------------------------------------------------------------------------------
class Score(BaseModel):
    reason: str
    score: int


@pytest.mark.parametrize(
    "text",
    ['{"reason": "a", "score": 2}', 'Sure!\n```json\n{"reason": "a", "score": 2}\n```', 'x {"reason": "a", "score": 2} y'],
)
def test_extract_json_finds_the_object(text):
    assert parse_reply(text, Score) == Score(reason="a", score=2)


def test_parse_errors_say_what_is_wrong():
    with pytest.raises(ValueError, match="no valid JSON"):
        extract_json('{"reason": "a", ')
    with pytest.raises(ValueError, match="score"):
        parse_reply('{"reason": "a"}', Score)
    with pytest.raises(ValueError, match="empty"):
        extract_json("   ")


def test_records_written_a_batch_at_a_time_make_the_same_table(tmp_path, monkeypatch):
    from rpbench.storage import tables
    from rpbench.storage.schemas import FAILURES
    from rpbench.tasks.core.records import Failure

    rows = [Failure(stage="s", model=f"m{i % 3}", item_id=str(i), kind="answer", error=None if i % 2 else "x")
            for i in range(25)]
    whole = tables.write_records(tmp_path / "whole.parquet", rows, FAILURES)
    monkeypatch.setattr(tables, "RECORDS_PER_BATCH", 10)
    batched = tables.write_records(tmp_path / "batched.parquet", rows, FAILURES)
    assert pq.read_table(batched).equals(pq.read_table(whole))
    assert tables.read_records(batched, FAILURES) == rows
    streamed = tables.write_records(tmp_path / "streamed.parquet", (r for r in rows), FAILURES)  # taken as they come
    assert pq.read_table(streamed).equals(pq.read_table(whole))


def test_a_ledger_keeps_its_records_as_lines_and_gives_them_back_whole(tmp_path, monkeypatch):
    from rpbench.storage import tables
    from rpbench.storage.schemas import CALLS
    from rpbench.tasks.core.records import CallRecord
    from rpbench.tasks.llm.ledger import Ledger, read_journal

    made = [CallRecord(call_id=f"c{i}", cache_key=f"k{i}", role="judge", model="openai/x", tag=f"t{i}", attempt=i % 2,
                       cached=bool(i % 3), outcome="ok" if i % 4 else "parse_error", error=None if i % 4 else "bad",
                       prompt_tokens=i, completion_tokens=2 * i, latency_s=0.5 + i, cost_usd=None if i % 5 else 0.1)
            for i in range(23)]
    ledger = Ledger(tmp_path / "journal.jsonl")
    assert ledger.count() == 0 and ledger  # empty, and still a ledger (``ledger or Ledger()`` keeps it)
    for record in made:
        ledger.add(record)
    assert ledger.count() == 23 and ledger.records() == made
    assert read_journal(tmp_path / "journal.jsonl") == made
    monkeypatch.setattr(tables, "RECORDS_PER_BATCH", 10)
    direct = tables.write_records(tmp_path / "direct.parquet", made, CALLS)
    assert pq.read_table(ledger.write(tmp_path / "calls.parquet")).equals(pq.read_table(direct))
