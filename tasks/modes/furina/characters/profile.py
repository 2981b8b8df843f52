"""What other characters may see of a character: P_pub, the public attributes only."""

from __future__ import annotations

from collections.abc import Iterable

from rpbench.tasks.modes.furina.domain import Attribute, Character, SceneCharacter

KEY_LABELS = {
    "en": {"name": "Name", "nickname": "Nickname", "gender": "Gender", "age": "Age", "appearance": "Appearance",
           "persona": "Persona", "relationships": "Relationships", "hobbies": "Hobbies",
           "speech_pattern": "Speech pattern", "background_public": "Public background",
           "background_private": "Private background"},
    "zh": {"name": "姓名", "nickname": "昵称", "gender": "性别", "age": "年龄", "appearance": "外貌", "persona": "性格",
           "relationships": "人际关系", "hobbies": "爱好", "speech_pattern": "说话方式",
           "background_public": "公开背景",
           "background_private": "私密背景"},
}


def label(key: str, language: str) -> str:
    return KEY_LABELS.get(language, KEY_LABELS["en"]).get(key, key.replace("_", " ").capitalize())


def public_profile(character: Character | SceneCharacter, language: str = "en") -> str:
    """P_pub(c): the public attributes in the profile's own order, one per line."""
    return "\n".join(f"{label(a.key, language)}: {a.value}" for a in _attributes(character) if a.visibility == "public")


def full_profile(character: Character | SceneCharacter, language: str = "en") -> str:
    """Everything, private attributes included: only ever shown to the character itself."""
    return "\n".join(f"{label(a.key, language)}: {a.value}" for a in _attributes(character))


def public_profiles(characters: Iterable[Character | SceneCharacter], language: str = "en") -> str:
    """P_pub over a set of characters, each under its name."""
    return "\n\n".join(f"[{c.name}]\n{public_profile(c, language)}" for c in characters)


def _attributes(character: Character | SceneCharacter) -> list[Attribute]:
    return character.attributes if isinstance(character, Character) else character.profile
