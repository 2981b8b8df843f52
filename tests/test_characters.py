"""Test characters: both file forms, every validation error, P_pub hiding private values."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from rpbench import prompts
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.modes.furina.character_files import from_short_form, load_characters
from rpbench.tasks.modes.furina.characters.profile import full_profile, public_profile, public_profiles
from rpbench.tasks.modes.furina.domain import Character
from tests.helpers import rpbench

ROOT = Path(__file__).resolve().parent.parent
STARTERS = [ROOT / "samples" / "characters" / "starter.en.yaml", ROOT / "samples" / "characters" / "starter.zh.yaml"]

LONG = {
    "name": "Zero", "language": "en", "type": "synthesized",
    "attributes": [
        {"key": "persona", "value": "Calm and logical.", "visibility": "public"},
        {"key": "background_private", "value": "Fled the Veins at sixteen.", "visibility": "private"},
    ],
}
SHORT = {"name": "Zero", "language": "en", "type": "synthesized",
         "profile": {"persona": "Calm and logical.", "background_private": "Fled the Veins at sixteen."},
         "private": ["background_private"]}


def test_short_and_long_forms_give_the_same_character(tmp_path):
    (tmp_path / "long.json").write_text(json.dumps(LONG))
    (tmp_path / "short.yaml").write_text(yaml.safe_dump([SHORT], allow_unicode=True, sort_keys=False))
    assert load_characters(tmp_path / "long.json") == load_characters(tmp_path / "short.yaml")


def test_round_trip_through_json(tmp_path):
    (character,) = load_characters(STARTERS[0])[:1]
    (tmp_path / "c.json").write_text(json.dumps(character.model_dump()))
    assert load_characters(tmp_path / "c.json") == [character]


def test_starter_sets_are_valid_and_keep_the_papers_private_keys():
    characters = [c for path in STARTERS for c in load_characters(path)]
    assert sum(c.language == "en" for c in characters) >= 5 and sum(c.language == "zh" for c in characters) >= 5
    for c in characters:
        private = {a.key for a in c.attributes if a.visibility == "private"}
        assert {"relationships", "hobbies", "speech_pattern", "background_private"} <= private, c.name


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"name": ""}, "character #0: field 'name'"),
        ({"name": None}, "field 'name'"),
        ({"language": "fr"}, "character Zero: field 'language': unknown language 'fr'"),
        ({"type": "famous"}, "character Zero: field 'type': unknown type 'famous'"),
        ({"attributes": [{"key": "age", "value": "9", "visibility": "secret"}]},
         "character Zero: field 'attributes.0.visibility': unknown visibility 'secret'"),
        ({"attributes": [{"key": "age", "value": "9", "visibility": "public"},
                         {"key": "age", "value": "10", "visibility": "public"}]},
         "character Zero: field 'attributes': duplicate key 'age'"),
        ({"attributes": [{"key": "age", "value": "  ", "visibility": "public"}]},
         "character Zero: field 'attributes.0.value': the value is blank"),
    ],
)
def test_each_validation_error_names_file_character_and_field(tmp_path, change, expected):
    record = {**LONG, **change}
    if record["name"] is None:
        del record["name"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(record))
    with pytest.raises(InputError) as err:
        load_characters(path)
    assert str(err.value).startswith(f"{path}: ") and expected in str(err.value)


def test_short_form_private_key_must_exist(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({**SHORT, "private": ["hobbies"]}))
    with pytest.raises(InputError, match="character Zero: 'private' names a key that is not in the profile: 'hobbies'"):
        load_characters(path)


@pytest.mark.parametrize(("private", "profile", "message"), [
    ([{"persona": 1}], {}, "'private' must be a list of the profile's keys"),  # was a TypeError traceback
    ("persona", {}, "'private' must be a list of the profile's keys"),
    ([], {"persona": [["calm"]]}, "profile 'persona': expected text, a list of text or a mapping of text"),
])
def test_a_malformed_short_form_is_an_error_naming_the_character(tmp_path, private, profile, message):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({**SHORT, "profile": {**SHORT["profile"], **profile}, "private": private}))
    with pytest.raises(InputError, match=f"bad.yaml: character Zero: {re.escape(message)}"):
        load_characters(path)


def test_yaml_lists_and_mappings_in_a_profile_read_as_text_not_as_python():
    path_text = yaml.safe_dump({**SHORT, "profile": {"hobbies": ["fishing", "chess"], "age": 40,
                                                     "relationships": {"Mina": "wife", "Van Helsing": "enemy"}},
                                "private": []})
    character = Character.model_validate(from_short_form(yaml.safe_load(path_text)))
    values = {a.key: a.value for a in character.attributes}
    assert values == {"hobbies": "fishing, chess", "age": "40", "relationships": "Mina: wife; Van Helsing: enemy"}


def test_public_profile_hides_private_values_in_a_stable_order():
    c = Character.model_validate(LONG)
    assert public_profile(c) == "Persona: Calm and logical."
    assert "Fled the Veins" in full_profile(c)
    assert public_profile(c) == public_profile(Character.model_validate(LONG))


def test_no_template_that_renders_other_characters_can_leak_private_values():
    """Every template that shows other characters' profiles gets them only through P_pub."""
    characters = [c for path in STARTERS for c in load_characters(path)]
    others = public_profiles(characters, "en")
    for c in characters:
        for a in c.attributes:
            if a.visibility == "private":
                assert a.value not in others, (c.name, a.key)
    # Templates may only be given other characters as pre-rendered public text: no template reads `.attributes`.
    for path in prompts.all_templates():
        text = (prompts.TEMPLATE_DIR / path).read_text(encoding="utf-8")
        assert ".attributes" not in text and ".profile" not in text, path


def test_cli_check_prints_a_summary_and_fails_cleanly(tmp_path):
    ok = rpbench("characters", "check", *map(str, STARTERS))
    assert ok.returncode == 0 and "Sherlock Holmes [en, established]" in ok.stdout and "孙悟空" in ok.stdout
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**LONG, "language": "xx"}))
    proc = rpbench("characters", "check", str(bad))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith(f"error: {bad}: character Zero: field 'language'")
