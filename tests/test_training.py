"""LoRA training on the embedded model (tiny inputs, a few steps): the loss mask, a falling loss, DPO pairs from
a benchmark the loopback server built, a killed run resuming from its checkpoint, the adapter answering through
the gateway and ranked beside its base by `rpbench furina eval`."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rpbench.storage.tables import read_records
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.llm.local.hf_weights import transformers_folder
from rpbench.tasks.llm.local.models import EMBEDDED, local_model, weights_path
from rpbench.tasks.modes.furina.character_files import write_characters
from rpbench.tasks.modes.furina.scene_files import write_scenes
from rpbench.tasks.modes.furina.tables import DIALOGUES, SCENES
from rpbench.tasks.modes.furina.training import preference_pairs
from rpbench.tasks.training.data import hold_out, mix, parse_mix
from rpbench.tasks.training.recipe import LoraOptions, Recipe
from rpbench.tasks.training.records import ChatTurn, SftSample
from rpbench.tasks.training.trainer import build_trainer, load_base, sft_rows, train
from tests.helpers import CLI, TEST_KEY_ENV, schema_responder
from tests.test_builder import SCENE, TEST

# The module's tests share module-scoped fixtures (a server, a trained adapter, a work folder): one worker
# runs them all, so the fixtures are made once.
pytestmark = [pytest.mark.local_model, pytest.mark.slow, pytest.mark.xdist_group("training")]
ROOT = Path(__file__).resolve().parent.parent


def _sample(i: int, question: str, answer: str, kind: str = "role_specific") -> SftSample:
    system = "You are Captain Vane, the captain of an airship."
    return SftSample(sample_id=f"s{i}", source="test", kind=kind, language="en", role="Captain Vane",  # type: ignore[arg-type]
                     prompt=[ChatTurn(role="system", content=system), ChatTurn(role="user", content=question)],
                     response=answer, system=system, input=question)


SAMPLES = [_sample(0, "Who are you?", "Captain Vane of the Gull. Steady as she goes."),
           _sample(1, "What do you carry?", "Salt and secrets, lad. Salt keeps, lies don't.")]


@pytest.fixture(scope="module")
def base() -> Path:
    return transformers_folder(weights_path(local_model(EMBEDDED)))


@pytest.mark.parametrize("template", ["chat", "alpaca"])
def test_the_loss_is_on_the_reply_tokens_only(base, template, tmp_path):
    model, tokenizer = load_base(base, template, "en")
    trainer = build_trainer("sft", model, tokenizer, sft_rows(SAMPLES), [], Recipe(
        learning_rate=1e-3, epochs=1, batch_size=2, accumulation=1, max_length=256, max_steps=1), LoraOptions(),
        tmp_path / "checkpoints", seed=0)
    batch = trainer.data_collator([trainer.train_dataset[i] for i in range(len(SAMPLES))])
    for sample, ids, labels in zip(SAMPLES, batch["input_ids"], batch["labels"], strict=True):
        prompt = tokenizer.apply_chat_template([t.model_dump() for t in sample.prompt], tokenize=False,
                                               add_generation_prompt=True)
        learned = tokenizer.decode(ids[labels != -100])
        ignored = tokenizer.decode(ids[labels == -100])
        # Exactly the reply (and the end-of-turn token) is learned; the whole prompt is ignored.
        assert learned.startswith(sample.response) and len(learned) - len(sample.response) <= len("<|im_end|>\n")
        assert ignored.startswith(prompt)
        assert ("### Response:" in prompt) == (template == "alpaca")


def test_a_short_sft_run_on_the_embedded_model_lowers_the_training_loss(base, tmp_path):
    recipe = Recipe(learning_rate=1e-3, epochs=100, batch_size=2, accumulation=1, max_length=128, max_steps=6,
                    save_steps=100, eval_steps=100, logging_steps=1, warmup_ratio=0.0)
    done = train("sft", base, sft_rows(SAMPLES), [], tmp_path / "adapter", tmp_path / "checkpoints", recipe,
                 LoraOptions(), "chat", "en", seed=0)
    curve = [p.loss for p in sorted(done.losses, key=lambda p: p.step) if p.split == "train"]
    assert done.steps == 6 and len(curve) == 6
    assert curve[-1] < 0.8 * curve[0], curve
    assert (tmp_path / "adapter" / "adapter_config.json").is_file() and done.tokens > 0


def test_mixing_keeps_the_ratio_and_holding_out_is_seeded():
    samples = [_sample(i, f"q{i}", f"a{i}", kind="general" if i < 30 else "role_specific") for i in range(40)]
    mixed = mix(samples, parse_mix(["general=1", "role_specific=2"]), seed=3)
    kinds = [s.kind for s in mixed]
    assert kinds.count("role_specific") == 10 and kinds.count("general") == 5
    assert mix(samples, parse_mix(["general=1", "role_specific=2"]), seed=3) == mixed
    assert len(mix(samples, parse_mix(["general=0"]), seed=0)) == 10
    held = hold_out(samples, 0.1, seed=1)
    assert sum(s.split == "heldout" for s in held) == 4 and held == hold_out(samples, 0.1, seed=1)
    with pytest.raises(InputError, match=r"keeps no sample \(the data holds only general, role_specific, weighted 0\)"):
        mix(samples, parse_mix(["general=0", "role_specific=0"]), seed=0)
    with pytest.raises(InputError, match="kind=weight"):
        parse_mix(["dialog"])
    with pytest.raises(InputError, match="'dialog=1': unknown kind 'dialog' \\(did you mean 'dialogue'\\?"):
        parse_mix(["dialog=1"])


# -- a benchmark built against the loopback server, then the CLI ---------------------------------------------
def _responder(body: dict) -> str:
    """Selection verdicts of every strength (sigma 1-5, from the request), source and base replies that differ."""
    fmt = (body.get("response_format") or {}).get("json_schema") or {}
    digest = int(hashlib.sha256(json.dumps(body["messages"]).encode()).hexdigest()[:8], 16)
    if fmt.get("name") == "SelectionVerdict":
        return json.dumps({"reasoning": "compared", "dimension": "CA", "sigma": 1 + digest % 5})
    if fmt:
        return schema_responder(body)
    return f"(nods) {body['model']} says {digest % 1000}."


def _models_file(folder: Path, server) -> Path:
    path = folder / "models.toml"
    path.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{server.base_url}"\nschema_rules = "vllm"\napi_key_env = '
                    f'"{TEST_KEY_ENV}"\nstructured = "json_schema"\ntimeout = 5\nmax_tokens = 24\n'
                    '[roles.base]\nmodel = "openai/loopback-base"\n')
    return path


def _env(folder: Path) -> dict[str, str]:
    return {**os.environ, TEST_KEY_ENV: "sk-train-test", "PREFECT_HOME": str(folder / "prefect"),
            "RPBENCH_PROGRESS_BAR": "0"}


@pytest.fixture(scope="module")
def built(_server, tmp_path_factory):
    """A small benchmark (its dialogues hold judged test turns) and the models file that built it."""
    folder = tmp_path_factory.mktemp("built")
    _server.reset()
    _server.responder = _responder
    pool = folder / "pool"
    write_scenes(pool / SCENES.filename, [SCENE])
    write_characters(folder / "chars.yaml", [TEST])
    models = _models_file(folder, _server)
    proc = subprocess.run([*CLI, "build", "--characters", str(folder / "chars.yaml"), "--pool", str(pool), "--out",
                           str(folder / "bench"), "--threshold", "1", "--min-rounds", "3", "--max-rounds", "4",
                           "--budget", "2", "--models-file", str(models), "--cache", str(folder / "calls.sqlite")],
                          cwd=ROOT, env=_env(folder), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    yield folder / "bench", models, folder
    _server.reset()


def test_dpo_pairs_come_from_the_judged_turns_with_the_preferred_reply_chosen(built):
    bench, _, _ = built
    pairs, ties = preference_pairs(str(bench))
    judged = {f"{t.dialogue_id}:{t.turn}": t for t in read_records(bench / "dialogues.parquet", DIALOGUES)
              if t.is_test and t.judge_status == "ok"}
    assert pairs and len(pairs) + ties == len(judged)
    assert ties == sum(t.sigma == 3 for t in judged.values())
    for p in pairs:
        t = judged[p.pair_id]
        assert p.chosen == (t.source_reply if t.sigma < 3 else t.base_reply)
        assert p.rejected == (t.base_reply if t.sigma < 3 else t.source_reply)
        assert p.chosen_side == ("source" if t.sigma < 3 else "base") and p.margin == abs(t.sigma - 3)
        assert p.chosen != p.rejected


def _checkpoint_written(out: Path) -> bool:
    return any(out.glob("checkpoints/*/checkpoint-*/trainer_state.json"))


@pytest.fixture(scope="module")
def trained(built):
    """`rpbench train` on the benchmark's accepted turns, killed once its first checkpoint is on disk, then run
    again to the end."""
    bench, models, folder = built
    out = folder / "train"
    argv = [*CLI, "train", "--data", str(bench), "--out", str(out), "--max-steps", "2", "--models-file", str(models)]
    log = (folder / "train.log").open("ab")
    proc = subprocess.Popen(argv, cwd=ROOT, env=_env(folder), stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    deadline = time.monotonic() + 600
    while not _checkpoint_written(out) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert proc.poll() is None, "training finished before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    again = subprocess.run(argv, cwd=ROOT, env=_env(folder), capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr[-3000:]
    return out, again.stdout


def test_a_killed_run_resumes_from_its_checkpoint(trained):
    out, stdout = trained
    manifest = json.loads((out / "manifest.json").read_text())["training"]
    assert Path(manifest["resumed_from"]).name == "checkpoint-1" and "resumed from checkpoint-1" in stdout
    assert manifest["steps"] == 2
    steps = sorted(r["step"] for r in pq.read_table(out / "losses.parquet").to_pylist() if r["split"] == "train")
    assert steps == [1, 2]  # the step before the kill comes back from the checkpoint's state
    assert (out / "report.md").is_file() and (out / "losses.png").stat().st_size > 1000
    assert not list(out.glob(".*")), "a temporary folder was published"


async def test_the_saved_adapter_loads_back_and_answers_through_the_gateway(trained):
    from rpbench.flows.kit.front.registry import builtin_roles
    from rpbench.tasks.llm import load_models_config
    from rpbench.tasks.llm.gateway import Gateway
    from rpbench.tasks.llm.names import resolve

    out, _ = trained
    model = (out / "model.txt").read_text().strip()
    assert model == f"local/{EMBEDDED}+adapter={out.resolve() / 'adapter'}"
    config = load_models_config(environ={})
    role = resolve(config, model, builtin_roles(), like="test")
    gateway = Gateway(config, cache=None)
    try:
        result = await gateway.complete(role, [{"role": "user", "content": "Say hello in one sentence."}])
    finally:
        await gateway.aclose()
    assert result.ok and result.text.strip(), result.error


def test_eval_ranks_the_base_model_and_the_adapter_side_by_side(built, trained):
    bench, models, folder = built
    out, _ = trained
    model = (out / "model.txt").read_text().strip()
    proc = subprocess.run([*CLI, "eval", "--bench", str(bench), "--model", f"local/{EMBEDDED}", "--model", model,
                           "--models-file", str(models), "--out", str(folder / "eval"), "--resamples", "50"],
                          cwd=ROOT, env=_env(folder), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    board = json.loads((folder / "eval" / "manifest.json").read_text())["evaluation"]["leaderboard"]
    assert {row["model"] for row in board} == {f"local/{EMBEDDED}", model}


def test_a_merged_adapter_gives_the_same_logits_as_base_and_adapter(base, trained, tmp_path):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from rpbench.tasks.training.merge import merge_adapter

    out, _ = trained
    merged = merge_adapter(base, out / "adapter", tmp_path / "merged")
    assert (merged / "config.json").is_file() and not (merged / "adapter_config.json").exists()
    ids = torch.tensor([[1, 2, 3, 4, 5, 6]])
    with torch.no_grad():
        plain = AutoModelForCausalLM.from_pretrained(str(merged), dtype=torch.float32)(ids).logits
        stacked = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32),
                                            str(out / "adapter"))(ids).logits
        untouched = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32)(ids).logits
    # float32 sums in another order (the merged weight is one matrix, the stacked adapter two products): logits
    # near 20 differ in the fourth decimal place, so the bound is relative as well as absolute.
    assert torch.allclose(plain, stacked, rtol=1e-4, atol=1e-3)
    assert (plain - untouched).abs().max() > 1e-5  # the adapter changed something
