"""PingPong: what rpbench sends equals what PingPong's own code sends, request for request.

The release's ``run_eval_v2.py`` (IlyaGusev/ping_pong_bench at 4e3b0e0, from ../shared/releases) runs here: its
``process_situation`` plays each (card, situation) with its providers pointed at the loopback server, which
answers every request by its content. rpbench runs the same cards and situations against the same server; both
send the same requests (messages, temperature, top_p, max_tokens), so both conversations unfold alike."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from tests.helpers import TEST_KEY_ENV, rpbench
from tests.release_code import imported, release_folder

pytestmark = pytest.mark.usefixtures("harness")
SETTINGS = Path(__file__).resolve().parents[1] / "samples" / "pingpong" / "settings.yaml"
TURNS = 2


def _folder() -> Path:
    return release_folder("IlyaGusev/ping_pong_bench", "4e3b0e0b6b093670f67b80d7d62b5a5e8e7b13fd")


def respond(body: dict) -> str:
    """Every reply a function of its request: the interrogator's and the judge's in the JSON their prompts show,
    the player's in words (with a double space, which the release's generate makes single)."""
    text = json.dumps(body["messages"], ensure_ascii=False)
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    if body["model"].endswith("interrogator"):
        return "Here it is:\n" + json.dumps({"next_utterance": f"Tell me more, {digest}."})
    if body["model"].endswith("judge"):
        n = len(re.findall(r"\nTurn \d+:", body["messages"][-1]["content"]))
        return json.dumps({"scores": [
            {"turn": t, "is_refusal_explanation": "'no'", "is_refusal": False, "in_character_explanation": "'x'",
             "in_character_score": 4, "entertaining_explanation": "'x'", "entertaining_score": 3,
             "fluency_explanation": "'x'", "fluency_score": 5} for t in range(1, n + 1)]})
    return f" *nods*  Indeed, {digest}. "


def _sent(requests: list[dict]) -> list[str]:
    keep = ("messages", "temperature", "top_p", "max_tokens")
    return sorted(json.dumps({k: r.get(k) for k in keep}, ensure_ascii=False, sort_keys=True) for r in requests)


def release_requests(loopback, language: str) -> list[dict]:
    """What PingPong's v2 code sends for every card and situation of ``language`` in the shipped settings
    (situations cut to TURNS turns, as --max-turns does)."""
    from rpbench.tasks.modes.pingpong.cards import load_settings

    settings = load_settings(str(SETTINGS))
    with imported(_folder(), ["src.run_eval_v2", "src.data", "src.provider"]) as (v2, data, provider):
        providers = {name: provider.LLMProvider(model_name=name, base_url=loopback.base_url, api_key="k",
                                                params={}) for name in ("player", "interrogator", "judge")}
        # As run_eval does: its own settings for the interrogator and the judge, the defaults for the player.
        providers["interrogator"].params = {"temperature": 0.8, "top_p": 0.95, "max_tokens": 1024}
        providers["judge"].params = {"temperature": 0.1, "top_p": 0.95, "max_tokens": 4096}
        paths = {"interrogator_user_prompt_path": "templates/v2/interrogator_user.jinja",
                 "interrogator_system_prompt_path": "templates/v2/interrogator_system.jinja",
                 "judge_user_prompt_path": "templates/v2/judge_user.jinja",
                 "judge_system_prompt_path": "templates/v2/judge_system.jinja",
                 "character_prompt_path": f"templates/{language}_character.jinja"}
        run_settings = data.Settings(characters=[], situations=[], version=2,
                                     **{k: str(_folder() / v) for k, v in paths.items()})
        for card in settings.cards[language]:
            for situation in settings.situations[language]:
                character = data.Character(char_name=card.name, system_prompt=card.system_prompt,
                                           example_prompt=card.example_dialogue, initial_message=card.greeting or "",
                                           summary=card.summary)
                v2.process_situation(character, data.Situation(text=situation.text, num_turns=TURNS), run_settings,
                                     providers["player"], providers["interrogator"], providers["judge"])
    return list(loopback.requests)


def _models(tmp_path: Path, loopback) -> str:
    path = tmp_path / "models.toml"
    path.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{loopback.base_url}"\n'
                    f'api_key_env = "{TEST_KEY_ENV}"\ntimeout = 20\n'
                    '[roles.interrogator]\nmodel = "openai/interrogator"\n'
                    '[roles.pingpong-judge]\nmodel = "openai/judge"\n', encoding="utf-8")
    return str(path)


def test_a_v2_run_sends_what_pingpong_s_code_sends(loopback, tmp_path, monkeypatch):
    """The shipped English cards in all their situations: every request of the interrogator, the player and the
    judge is the release's, message for message, with its settings; PingPong's prompts' words reach the run."""
    monkeypatch.setenv(TEST_KEY_ENV, "k")
    loopback.responder = respond
    theirs = release_requests(loopback, "en")
    loopback.reset()
    loopback.responder = respond
    ran = rpbench("pingpong", "run", "--settings", str(SETTINGS), "--model", "openai/player", "--judge",
                  "pingpong-judge", "--character", "Captain Mirela Voss", "--character", "Tobias Fenn", "--max-turns", str(TURNS), "--models-file",
                  str(_models(tmp_path, loopback)), "--cache", str(tmp_path / "c.sqlite"), "--out",
                  str(tmp_path / "pp"), "--resamples", "40")
    assert ran.returncode == 0, ran.stderr[-2000:]
    ours = list(loopback.requests)
    assert len(ours) == len(theirs) == 6 * (2 * TURNS + 1)  # two cards x three situations
    assert _sent(ours) == _sent(theirs)
    # Every literal run of the v2 templates (30+ characters) is in some request.
    sent = "\n".join(m["content"] for r in ours for m in r["messages"])
    for name in ("interrogator_user", "interrogator_system", "judge_user", "judge_system"):
        text = (_folder() / "templates" / "v2" / f"{name}.jinja").read_text(encoding="utf-8")
        runs = [r.strip() for r in re.split(r"{[{%].*?[}%]}", text) if len(r.strip()) >= 30]
        assert runs and all(r in sent for r in runs), name
    manifest = json.loads((tmp_path / "pp" / "manifest.json").read_text())
    assert any(k.endswith("templates/v2/judge_user.jinja") for k in manifest["release_files"])


def test_an_altered_template_fails_the_comparison(loopback, tmp_path, monkeypatch):
    """The player's card, rendered from the release's template: one changed word is seen."""
    from rpbench.tasks.modes.pingpong import release
    from rpbench.tasks.modes.pingpong.cards import load_settings
    from rpbench.tasks.modes.pingpong.conversation import card_prompt

    card = load_settings(str(SETTINGS)).cards["en"][0]
    with imported(_folder(), ["src.util", "src.data"]) as (util, data):
        theirs = util.encode_prompt(str(_folder() / "templates" / "en_character.jinja"), character=data.Character(
            char_name=card.name, system_prompt=card.system_prompt, example_prompt=card.example_dialogue,
            initial_message=card.greeting))
    assert card_prompt(card) == theirs
    original = release.render
    monkeypatch.setattr(release, "render", lambda path, **v: original(path, **v).replace("Persona", "Role"))
    assert card_prompt(card) != theirs
