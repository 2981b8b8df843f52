"""The model roles CoSER's mode calls. A models file that leaves one out binds it to [default]."""

from __future__ import annotations

ROLES: dict[str, str] = {
    "coser-actor": "coser: the settings a model under test (--model given as a model string) plays the "
                   "characters with",
    "coser-environment": "coser: describes how the world reacts to the characters (CoSER: gpt-4o)",
    "coser-next-speaker": "coser: predicts who acts next in a scene (CoSER: gpt-4o-mini)",
    "coser-critic": "coser: lists each dimension's flaws of a scene against the book's conversation (CoSER: gpt-4o)",
}
