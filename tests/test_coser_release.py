"""CoSER: what rpbench sends equals what CoSER's own code sends, request for request.

The release's ``gca_evaluation/main.py`` (Neph0s/CoSER at 624efc5, copied from ../shared/releases into the test's
folder, where it writes its logs and cache) runs here as its README runs it, its client pointed at the loopback
server: given-circumstance acting on a test file, then the critic. The server answers every request by its
content: actors and the environment in words (some empty at temperature 0, some looping), the predictor with a
valid next speaker, the critic in the JSON its prompt shows. rpbench runs the same file against the same server;
every request, the actors', the environment's, the predictor's and the critic's, carries the same messages and
temperature."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import re
import runpy
import shutil
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import TEST_KEY_ENV, released, rpbench
from tests.release_code import imported, own_random, release_folder, stub

pytestmark = pytest.mark.usefixtures("harness")
SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "coser" / "example.json"
MODELS = {"actor": "loopback-actor", "environment": "gpt-environment", "predictor": "gpt-predictor",
          "critic": "gpt-critic"}
DIMENSIONS = ("Storyline Consistency", "Anthropomorphism", "Character Fidelity", "Storyline Quality")


def respond(body: dict) -> str:
    messages = body["messages"]
    digest = hashlib.sha256(json.dumps(messages, ensure_ascii=False).encode()).hexdigest()
    model = body["model"].rsplit("/", 1)[-1]
    if model == MODELS["critic"]:
        dimension = next(d for d in DIMENSIONS if f"### {d}\n" in messages[0]["content"])  # its criteria
        severity = 1 + int(digest[:2], 16) % 4
        return "```json\n" + json.dumps({dimension: {"flaws": [
            {"instance": f"turn {digest[:4]}", "type": dimension, "severity": severity}]}}) + "\n```"
    if model == MODELS["predictor"]:
        names = json.loads(re.search(r"\[[^\]]*\]", messages[0]["content"])[0].replace("'", '"'))
        heard = [m["content"] for m in messages if m["role"] == "user"]
        last = max(names, key=lambda n: "".join(heard).rfind(f"{n}:"))
        if sum(m["role"] == "assistant" for m in messages) >= 6:
            return "1. Reasoning: the scene has run its course.\n2. Next Speaker: <END CHAT>"
        return f"1. Reasoning: someone answers.\n2. Next Speaker: {names[(names.index(last) + 1) % len(names)]}"
    if body.get("temperature") == 0 and digest[0] in "012":
        return ""  # empty at first: asked again at temperature 1
    if digest[1] in "01":  # a reply that loops: cut at its repetition (not a GPT's or a Claude's)
        return f"[{digest[:6]}] (waves) " + "we go round and round again " * 8
    return f"[thinks {digest[:6]}] (nods) Indeed, {digest[6:12]}."


def _with_motivations(path: Path, into: Path) -> Path:
    """The test file with each key character's thought under ``motivation``, the key main.py reads (its released
    test set writes ``thought``, which main.py never reads: rpbench reads either)."""
    items = json.loads(path.read_text(encoding="utf-8"))
    for item in items:
        item["key_characters"] = [{"name": k["name"], "motivation": k.get("motivation", k.get("thought", ""))}
                                  for k in item["key_characters"]]
    into.write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
    return into


def _stubs() -> dict:
    """agent.py imports LangChain for its retrieval (never used without --retrieval): stand-ins. And a ``random``
    of the release's own: main.py seeds the shared generator and draws each prompt's layout from it."""
    class Embeddings:
        pass

    anything = type("Anything", (), {"__init__": lambda self, *a, **k: None})
    return {"langchain": stub("langchain"), "langchain.embeddings": stub("langchain.embeddings"),
            "langchain.embeddings.base": stub("langchain.embeddings.base", Embeddings=Embeddings),
            "langchain_community": stub("langchain_community"),
            "langchain_community.vectorstores": stub("langchain_community.vectorstores", FAISS=anything),
            "langchain.schema": stub("langchain.schema", Document=anything),
            "langchain.text_splitter": stub("langchain.text_splitter", RecursiveCharacterTextSplitter=anything,
                                            CharacterTextSplitter=anything),
            "jsonlines": stub("jsonlines"), "random": own_random()}


@contextlib.contextmanager
def _another_thread_drawing() -> Iterator[None]:
    """A thread drawing from Python's shared generator the whole time, as a service of this process may: what the
    release sends must not depend on it (in CI it once did, one decorator in 30 asterisks instead of 20)."""
    done = threading.Event()

    def draw() -> None:
        while not done.wait(0.0005):
            random.random()

    thread = threading.Thread(target=draw, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def release_requests(loopback, data: Path, work: Path) -> list[dict]:
    """The requests CoSER's main.py sends for ``data``: simulation, then judging."""
    from rpbench.tasks.modes.coser.scoring import word_tokens

    code = work / "gca_evaluation"
    shutil.copytree(release_folder("Neph0s/CoSER", "624efc50db7be3a4e37cec6a1c58ed434dc9f2ce") / "gca_evaluation",
                    code)
    (code / "config.json").write_text(json.dumps({"api_key": "k", "base_url": loopback.base_url}))
    (code / ".cache").mkdir()  # where its call cache goes (the repository keeps the folder)
    cwd, argv = os.getcwd(), sys.argv
    os.chdir(code)
    sys.argv = ["main.py", "--test_file", str(data), "--actor_model", MODELS["actor"], "--judge_model",
                MODELS["critic"], "--env_model", MODELS["environment"], "--nsp_model", MODELS["predictor"]]
    try:
        with _another_thread_drawing(), imported(code, ["utils"], _stubs()) as (utils,):
            # NLTK would download its English Punkt tables for word_tokenize: the same tables, from rpbench's wheel.
            utils.word_tokenize = word_tokens
            runpy.run_path(str(code / "main.py"), run_name="__main__")
    finally:
        os.chdir(cwd)
        sys.argv = argv
    return list(loopback.requests)


def _models(tmp_path: Path, loopback) -> str:
    path = tmp_path / "models.toml"
    path.write_text(
        f'[default]\nmodel = "openai/loopback"\napi_base = "{loopback.base_url}"\napi_key_env = "{TEST_KEY_ENV}"\n'
        f'timeout = 20\n[roles.coser-actor]\nmodel = "openai/{MODELS["actor"]}"\n'
        f'[roles.coser-environment]\nmodel = "openai/{MODELS["environment"]}"\n'
        f'[roles.coser-next-speaker]\nmodel = "openai/{MODELS["predictor"]}"\n'
        f'[roles.coser-critic]\nmodel = "openai/{MODELS["critic"]}"\n', encoding="utf-8")
    return str(path)


def _sent(requests: list[dict]) -> list[str]:
    """What each request says (its messages and temperature), with its model, in a comparable form; the
    critic's token limit is left out (CoSER's 8,196 is the coser-paper preset's, not the default)."""
    return sorted(json.dumps({"model": r["model"].rsplit("/", 1)[-1], "messages": r["messages"],
                              "temperature": float(r.get("temperature") or 0),
                              "max_tokens": None if r["model"].endswith(MODELS["critic"]) else r.get("max_tokens")},
                             ensure_ascii=False, sort_keys=True) for r in requests)


@pytest.mark.parametrize("source", ["sample", "released examples"])
def test_a_run_sends_what_coser_s_code_sends(loopback, tmp_path, monkeypatch, source):
    path = SAMPLE if source == "sample" else released("coser/test/example_test_set.json")
    data = _with_motivations(path, tmp_path / "circumstances.json")
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = respond
    theirs = release_requests(loopback, data, tmp_path / "release")
    loopback.reset()
    loopback.responder = respond
    ran = rpbench("coser", "run", "--data", str(data), "--model", "coser-actor", "--models-file",
                  _models(tmp_path, loopback), "--cache", str(tmp_path / "c.sqlite"), "--out", str(tmp_path / "run"),
                  "--resamples", "40")
    assert ran.returncode == 0, ran.stderr[-2000:]
    ours = list(loopback.requests)
    assert len(ours) == len(theirs) > 30
    release_sent = _sent(theirs)
    assert _sent(ours) == release_sent
    # What the run exercised: empty replies asked again at temperature 1, the critic's four dimensions.
    assert any(r.get("temperature") == 1 for r in ours)
    assert sum(r["model"].endswith(MODELS["critic"]) for r in ours) == 4 * len(json.loads(data.read_text()))
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert {k.rsplit("/", 1)[-1] for k in manifest["release_files"]} >= {"prompts.py", "utils.py", "agent.py",
                                                                          "main.py"}
    if source == "sample":  # a copy of rpbench with one word of the actors' length ask changed is caught
        from rpbench.tasks.modes.coser import release

        asked = release.length_ask()
        monkeypatch.setattr(release, "length_ask", lambda: asked.replace("concisely", "briefly"))
        loopback.reset()
        loopback.responder = respond
        rpbench("coser", "run", "--data", str(data), "--model", "coser-actor", "--models-file",
                _models(tmp_path, loopback), "--cache", str(tmp_path / "altered.sqlite"), "--out",
                str(tmp_path / "altered"), "--resamples", "40")
        assert _sent(list(loopback.requests)) != release_sent


def test_every_literal_run_of_the_release_s_prompts_reaches_the_requests(loopback, tmp_path, monkeypatch):
    """The critic's template and dimensions, the environment's and the predictor's prompts: each run of 30 or more
    characters of literal text in them is in some request of a run."""
    import ast

    from rpbench.prompts.python_text import template

    folder = release_folder("Neph0s/CoSER", "624efc50db7be3a4e37cec6a1c58ed434dc9f2ce") / "gca_evaluation"
    data = _with_motivations(SAMPLE, tmp_path / "circumstances.json")
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = respond
    ran = rpbench("coser", "run", "--data", str(data), "--model", "coser-actor", "--models-file",
                  _models(tmp_path, loopback), "--cache", str(tmp_path / "c.sqlite"), "--out", str(tmp_path / "run"),
                  "--resamples", "40")
    assert ran.returncode == 0, ran.stderr[-2000:]
    sent = "\n".join(m["content"] for r in loopback.requests for m in r["messages"])
    texts: list[str] = []
    critic = ast.literal_eval(next(n.value for n in ast.parse((folder / "prompts.py").read_text()).body))
    texts += [critic["self-play-deduct-template"], *(v for d in critic["dimension_details"].values()
                                                      for v in d.values())]
    utils = ast.parse((folder / "utils.py").read_text())
    for fn in (n for n in utils.body if isinstance(n, ast.FunctionDef) and n.name in ("get_environment_prompt",
                                                                                         "get_nsp_prompt")):
        texts += [p for node in ast.walk(fn) if isinstance(node, ast.Assign)
                  and isinstance(node.value, ast.JoinedStr)
                  for p in template(node.value, "utils").parts if isinstance(p, str)]
    runs = [r.strip() for t in texts for r in re.split(r"{[^{}]*}|\n", t) if len(r.strip()) >= 30]
    assert len(runs) >= 26
    missing = [r for r in runs if r not in sent]
    assert not missing, missing[:3]


def test_a_looping_reply_is_cut_as_the_release_cuts_it():
    """rpbench's cut against the release's fix_repeation, on replies that loop and replies that do not."""
    from rpbench.tasks.modes.coser.repetition import cut_repetition

    folder = release_folder("Neph0s/CoSER", "624efc50db7be3a4e37cec6a1c58ed434dc9f2ce") / "gca_evaluation"
    source = (folder / "utils.py").read_text()
    start = source.index("def tokenize_words")
    end = source.index("from collections import Counter")
    scope: dict = {"re": re}
    exec(compile(source[start:end], str(folder / "utils.py"), "exec"), scope)  # the release's own functions, run
    replies = ["ha " * 40, "我们走吧。" * 12, "A" * 150 + " then it stopped", "(nods) Fine, fine. I will go.",
               "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen, and "
               "then again one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
               "fifteen", "Das ist gut. " * 6 + "Ende", "すみません、" * 7, ""]
    for reply in replies:
        theirs = scope["fix_repeation"](reply) if reply else False
        assert (cut_repetition(reply) or False) == theirs, reply
