"""CharacterBench: what rpbench sends equals, character for character, what the release's own code builds.

The release's code (thu-coai/CharacterBench at f4ec56a, from ../shared/releases) runs here: ``process.py`` asks a
model for replies (its client pointed at the loopback server), and ``process_wo_context_<lang>_all.py`` builds
each judge input. rpbench runs the same items against the same server. A change to a word of any prompt makes
these fail (one test alters a prompt to show it)."""

from __future__ import annotations

import copy
import json
import runpy
import sys
from pathlib import Path

import pytest

from tests.helpers import TEST_KEY_ENV, loopback_models_file, released, rpbench
from tests.release_code import anything_module, imported, release_folder

pytestmark = pytest.mark.usefixtures("harness")
COMMIT = "f4ec56a45b1b3f14b5cdcce5d53d8fdc485c5f63"
SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "characterbench"
STORED = ("attribute_consistency_bot", "attribute_consistency_human", "behavior_consistency_human",
          "empathetic_responsiveness", "engagement", "human_likeness", "memory_consistency")


def _folder() -> Path:
    return release_folder("thu-coai/CharacterBench", COMMIT)


def _with_replies(items: list[dict]) -> list[dict]:
    """Items as the release's response_data files hold them: each system's reply as response_zh and, in the
    translation, response_en (here the released reply itself)."""
    out = copy.deepcopy(items)
    for x in out:
        x["response_zh"] = x["response_messages"]["response"]
        x["translation_en"]["response_en"] = x["translation_en"]["response_messages"]["response"]
    return out


def release_judge_inputs(files: dict[str, Path], language: str) -> list[str]:
    """What the release's process_wo_context_<lang>_all.py builds for each file's items, file by file."""
    with imported(_folder() / "construct_prompts", [f"process_wo_context_{language}_all"]) as (module,):
        return [o["instruction"] for dim, path in files.items() for o in module.process(str(path), dim)[0]]


def release_judge_system() -> list[dict]:
    """The messages of the payload the release's model_generation_qwen_chat.py sends CharacterJudge (with
    transformers and vLLM standing in: their model would be loaded at import)."""
    stubs = {"transformers": anything_module("transformers"), "vllm": anything_module("vllm")}
    with imported(_folder(), ["model_generation_qwen_chat"], stubs) as (module,):
        (payload, _data, _path), = module.create_payload([{"id": 0, "input": "INPUT", "output": "1"}], "/nonexistent")
    return payload["messages"]


@pytest.mark.parametrize("language", ["zh", "en"])
def test_the_judge_inputs_of_the_released_replies_equal_the_release_s(loopback, tmp_path, monkeypatch, language):
    """The first five items of every stored dimension (35 a language, 70 in all), their released replies judged
    by a judge asked as CharacterJudge: every request is the release's payload, input for input."""
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    files = {}
    for dim in STORED:
        items = json.loads(released(f"characterbench/{dim}_test.json").read_text(encoding="utf-8"))[:5]
        files[dim] = tmp_path / "in" / f"{dim}_test.json"
        files[dim].parent.mkdir(exist_ok=True)
        files[dim].write_text(json.dumps(_with_replies(items), ensure_ascii=False), encoding="utf-8")
    theirs = release_judge_inputs(files, language)
    system = release_judge_system()[0]
    loopback.responder = lambda body: "3"
    models = loopback_models_file(tmp_path / "models.toml", loopback)
    ran = rpbench("characterbench", "run", *(a for p in files.values() for a in ("--data", str(p))),
                  "--language", language, "--judge-output", "number", "--models-file", str(models),
                  "--cache", str(tmp_path / "calls.sqlite"), "--out", str(tmp_path / "run"), "--resamples", "50")
    assert ran.returncode == 0, ran.stderr[-2000:]
    sent = [b["messages"] for b in loopback.requests]
    assert len(theirs) == 35 and len(sent) == 35
    assert all(m[0] == system for m in sent)
    assert sorted(m[1]["content"] for m in sent) == sorted(theirs)
    assert all([m["role"] for m in b] == ["system", "user"] for b in sent)
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    read = manifest["release_files"]
    assert f"thu-coai/CharacterBench@{COMMIT}/model_generation_qwen_chat.py" in read
    assert sum(f"eval_prompts_{language}/" in k for k in read) == len(STORED)
    # The report says whose words were sent: every file read, with the sha256 it was checked against.
    report = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert "The benchmark&#39;s own words" in report or "The benchmark's own words" in report
    assert all(k in report and v in report for k, v in read.items())


# Every dimension's own fields, on a shipped sample item: what each dimension's judge input adds.
_LAYOUTS = {
    "memory_consistency": {"messages": {"output": {"dialogue_segments": ["五点出船。", "墨点是只黑猫。"]}}},
    "fact_accuracy": {"messages": {"output": {"answer": "长江"}}},
    "boundary_consistency": {"response_messages": {"reference_response": "（摇头）那个我可不懂。"}},
    "attribute_consistency_bot": {"messages": {"output": {"answer": "三十二岁"}}},
    "attribute_consistency_human": {"messages": {"reference": "话不多，爱下象棋"}},
    "behavior_consistency_bot": {"messages": {"output": {"reference": "说话简短，常带动作"}}},
    "behavior_consistency_human": {"response_messages": {"character_style": "说话简短，常带动作"}},
    "emotion_self_regulation": {"messages": {"output": {"emotion": "平静"}}},
    "empathetic_responsiveness": {"messages": {"output": {"emotion": "好奇"}}},
    "morality_stability": {}, "morality_robustness": {}, "human_likeness": {}, "engagement": {},
}


def _merge(into: dict, more: dict) -> None:
    for k, v in more.items():
        if isinstance(v, dict) and isinstance(into.get(k), dict):
            _merge(into[k], v)
        else:
            into[k] = v


def _layout_files(folder: Path) -> dict[str, Path]:
    base = json.loads((SAMPLES / "engagement_test.json").read_text(encoding="utf-8"))
    files = {}
    for dim, fields in _LAYOUTS.items():
        items = _with_replies(base)
        for x in items:
            x["annotation_score"] = x["gold"] = 1  # on every dimension's scale
            for part in (x, x["translation_en"]):
                _merge(part, copy.deepcopy(fields))
        files[dim] = folder / f"{dim}_test.json"
        files[dim].write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
    return files


def _ours(files: dict[str, Path], language: str) -> list[str]:
    from rpbench.tasks.modes.characterbench.judging import judge_input
    from rpbench.tasks.modes.characterbench.loader import load_items

    return [judge_input(i, i.reply or "") for p in files.values() for i in load_items([str(p)], [language])]


@pytest.mark.parametrize("language", ["zh", "en"])
def test_every_dimension_s_judge_input_is_laid_out_as_the_release_lays_it_out(tmp_path, language):
    """All thirteen dimensions (seven have no released data here): the shipped sample given each one's fields."""
    files = _layout_files(tmp_path)
    ours, theirs = _ours(files, language), release_judge_inputs(files, language)
    assert len(ours) == len(theirs) == 2 * len(_LAYOUTS)
    for dim, mine, release in zip([d for d in files for _ in range(2)], ours, theirs, strict=True):
        assert mine == release, dim


def test_an_altered_prompt_or_layout_fails_the_comparison(tmp_path, monkeypatch):
    """The comparison sees one word changed in a release prompt, and a judge input left without its dialogue."""
    import dataclasses

    from rpbench.tasks.modes.characterbench import release
    from rpbench.tasks.modes.characterbench.dimensions import DIMENSIONS

    files = _layout_files(tmp_path)
    theirs = release_judge_inputs(files, "en")
    assert _ours(files, "en") == theirs
    original = release.judge_prompt
    monkeypatch.setattr(release, "judge_prompt", lambda d, lang: original(d, lang).replace("impartial", "fair"))
    assert _ours(files, "en") != theirs
    monkeypatch.setattr(release, "judge_prompt", original)
    for dim in ("human_likeness", "behavior_consistency_human"):
        monkeypatch.setitem(DIMENSIONS, dim, dataclasses.replace(DIMENSIONS[dim], dialogue=False))
        mine = _ours(files, "en")
        assert mine != theirs and sum(a != b for a, b in zip(mine, theirs, strict=True)) == 2
        monkeypatch.setitem(DIMENSIONS, dim, dataclasses.replace(DIMENSIONS[dim], dialogue=True))


def _run_release_process(data: Path, out: Path, base_url: str) -> None:
    """The release's process.py as its README runs it, its gpt_call client pointed at ``base_url``."""
    from openai import OpenAI

    with imported(_folder(), ["gpt_call"]) as (gpt_call,):
        gpt_call.client = OpenAI(base_url=base_url, api_key="k")
        argv = sys.argv
        sys.argv = ["process.py", "--data_path", str(data), "--output_path", str(out)]
        try:
            runpy.run_path(str(_folder() / "process.py"), run_name="__main__")
        finally:
            sys.argv = argv


def test_a_reply_is_asked_and_read_as_the_release_asks_and_reads_it(loopback, tmp_path, monkeypatch):
    """The reply request is process.py's, word for word, in both languages; the reply, read as process.py reads it
    (its Chinese comma and full stop made ASCII), is what the judge then sees."""
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    reply = "（点头）好的，坐稳了。"
    loopback.responder = lambda body: (json.dumps({"response": reply}, ensure_ascii=False)
                                       if len(body["messages"]) == 1 else "2")
    raw = tmp_path / "raw"
    raw.mkdir()
    for p in SAMPLES.glob("*.json"):
        (raw / p.name).write_text(p.read_text(encoding="utf-8"), encoding="utf-8")
    _run_release_process(raw, tmp_path / "released_out", loopback.base_url)
    theirs = {lang: [b["messages"] for b in loopback.requests][n::2] for n, lang in enumerate(("zh", "en"))}
    stored = {p.name: json.loads(p.read_text(encoding="utf-8")) for p in (tmp_path / "released_out").glob("*.json")}
    assert all(isinstance(x["response_zh"], dict) for items in stored.values() for x in items)
    files = sorted(raw.glob("*.json"))
    models = loopback_models_file(tmp_path / "models.toml", loopback)
    for language in ("zh", "en"):
        loopback.reset()
        loopback.responder = lambda body: (json.dumps({"response": reply}, ensure_ascii=False)
                                           if len(body["messages"]) == 1 else "2")
        ran = rpbench("characterbench", "run", *(a for p in files for a in ("--data", str(p))), "--language",
                      language, "--model", "characterbench-player", "--judge-output", "number", "--models-file",
                      str(models), "--cache", str(tmp_path / f"calls-{language}.sqlite"), "--out",
                      str(tmp_path / f"run-{language}"), "--resamples", "50")
        assert ran.returncode == 0, ran.stderr[-2000:]
        asked = [b["messages"] for b in loopback.requests if len(b["messages"]) == 1]
        assert len(asked) == len(theirs[language]) == 6  # three sample files of two items
        assert sorted(json.dumps(m, ensure_ascii=False) for m in asked) == \
            sorted(json.dumps(m, ensure_ascii=False) for m in theirs[language])
        judged = [b["messages"][1]["content"] for b in loopback.requests if len(b["messages"]) == 2]
        assert judged and all(judged_text.count("：（点头）好的,坐稳了.") == 1 for judged_text in judged)
