"""CharacterBench: items, replies in character, judgments per dimension, scores and agreement."""
