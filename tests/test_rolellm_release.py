"""RoleLLM's RoleBench as OpenCompass runs it (the prompting RoleLLM's authors point to): what rpbench sends under
``--mode opencompass`` (the default) is OpenCompass's message, and the same answers score as OpenCompass scored them.

OpenCompass's RoleBench configurations (open-compass/opencompass at a5acc4b, from ../shared/releases) are run here
as Python (their imports of OpenCompass's classes stood in for: only the dictionaries they build are read), and
the message OpenCompass makes of their template for an API model is built by the rule of its APITemplateParser:
the SYSTEM turn has no role of its own among an OpenAI model's HUMAN and BOT rounds, so it falls back to HUMAN,
and consecutive turns of one role are joined with a line break; each turn filled by ``safe_format`` (a
replacement of ``{column}`` per reader column, in order). ``tests/data/rolellm_opencompass_scores.json`` keeps the
Rouge-L OpenCompass 0.5.4 reported for the answers of ``respond`` to the shipped questions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import TEST_KEY_ENV, loopback_models_file, rpbench
from tests.release_code import imported, release_folder, stub

pytestmark = pytest.mark.usefixtures("harness")
DATA = Path(__file__).parent / "data"


def respond(body: dict) -> str:
    """An answer made of the question (the message's last line) and a catchphrase: some overlap with every
    reference, never all."""
    question = str(body["messages"][-1]["content"]).split("\n")[-1]
    return f"{question} 稳住。" if any("\u4e00" <= ch <= "\u9fff" for ch in question) else f"{question} Steady as she goes."


def opencompass_message(config: str, role: str, desc: str, question: str) -> str:
    """The one user message OpenCompass sends an OpenAI-style model for a RoleBench question under ``config``."""
    folder = release_folder("open-compass/opencompass", "a5acc4bba3b658f151617a3b393602110fb7a740")
    classes = {name: type(name, (), {}) for name in ("PromptTemplate", "ZeroRetriever", "GenInferencer",
                                                     "RougeEvaluator", "JiebaRougeEvaluator",
                                                     "InstructionGeneralizationEnglishDataset",
                                                     "RoleGeneralizationEnglishDataset",
                                                     "InstructionGeneralizationChineseDataset")}
    stubs = {m: stub(m, **classes) for m in ("opencompass", "opencompass.openicl", "opencompass.openicl.icl_prompt_template",
                                             "opencompass.openicl.icl_retriever", "opencompass.openicl.icl_inferencer",
                                             "opencompass.openicl.icl_evaluator", "opencompass.datasets",
                                             "opencompass.datasets.rolebench")}
    with imported(folder / "opencompass" / "configs" / "datasets" / "rolebench", [config], stubs) as (module,):
        (dataset,) = getattr(module, f"{config}_datasets")
    template = dataset["infer_cfg"]["prompt_template"]["template"]
    columns = dataset["reader_cfg"]["input_columns"]
    turns = []
    for turn in [*template["begin"], *template["round"]]:
        if turn["role"] == "BOT":
            break
        text = turn["prompt"]
        for column, value in zip(columns, (role, desc, question), strict=True):
            text = text.replace("{" + column + "}", value)
        turns.append(("HUMAN" if turn["role"] == "SYSTEM" else turn["role"], text))
    assert {r for r, _ in turns} == {"HUMAN"}
    return "\n".join(t for _, t in turns)


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


def test_a_rolellm_run_sends_opencompass_s_message_and_scores_as_it_does(loopback, tmp_path, monkeypatch):
    from rpbench.samples import sample_path
    from rpbench.storage.tables import read_records
    from rpbench.tasks.modes.rolellm.tables import QUESTIONS, ROW_SCORES

    recorded = json.loads((DATA / "rolellm_opencompass_scores.json").read_text(encoding="utf-8"))
    bench = sample_path("rolellm", "rolebench")
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = respond
    models = loopback_models_file(tmp_path / "models.toml", loopback)
    ran = rpbench("rolellm", "eval", "--data", str(bench / "rolebench-eng" / "instruction-generalization"),
                  "--data", str(bench / "rolebench-zh"), "--model", "rolellm-player", "--out", str(tmp_path / "rl"),
                  "--models-file", str(models), "--cache", str(tmp_path / "c.sqlite"), "--resamples", "40")
    assert ran.returncode == 0, ran.stderr[-2000:]
    descs = {**json.loads((bench / "profiles-eng" / "desc.json").read_text(encoding="utf-8")),
             **json.loads((bench / "profiles-zh" / "desc.json").read_text(encoding="utf-8"))}
    rows = read_records(tmp_path / "rl" / QUESTIONS.filename, QUESTIONS)
    sent = [b["messages"] for b in loopback.requests]
    assert len(sent) == len(rows) >= 10 and all(len(m) == 1 and m[0]["role"] == "user" for m in sent)
    wanted = sorted(opencompass_message("instruction_generalization_zh" if r.language == "zh"
                                        else "instruction_generalization_eng", r.role, descs[r.role], r.question)
                    for r in rows)
    assert sorted(m[0]["content"] for m in sent) == wanted
    assert all(b.get("max_tokens") == 512 and b.get("temperature") == 0.7 for b in loopback.requests)
    # The same answers scored as OpenCompass scored them: Chinese, the mean of jieba Rouge-L against the first
    # reference, exactly; English, its bootstrap middle of the same per-question scores.
    scores = [s for s in read_records(tmp_path / "rl" / ROW_SCORES.filename, ROW_SCORES)
              if s.model == "rolellm-player"]
    zh = [s.rouge_l for s in scores if s.language == "zh"]
    en = [s.rouge_l for s in scores if s.language == "en"]
    assert sum(zh) / len(zh) == pytest.approx(recorded["rouge_l"]["RoleBench_instruct_zh"], abs=1e-6)
    assert _opencompass_bootstrap_mid(en) == pytest.approx(recorded["rouge_l"]["RoleBench_instruct_eng"], abs=1e-6)


def test_an_altered_prompt_fails_the_comparison(monkeypatch):
    from rpbench.tasks.modes.rolellm import release

    args = ("eng-instruction-generalization", "en", "Captain Vane", "A sky pirate.", "Why the storm?")
    theirs = opencompass_message("instruction_generalization_eng", *args[2:])
    assert release.user_message(*args) == theirs
    original = release.template
    monkeypatch.setattr(release, "template", lambda split, lang: release.Template(
        tuple((r, f, p.replace("personality", "character")) for r, f, p in original(split, lang).turns),
        original(split, lang).columns))
    assert release.user_message(*args) != theirs
