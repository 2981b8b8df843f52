"""The model roles FURINA calls, and what each does. A models file that leaves one out binds it to [default]."""

from __future__ import annotations

ROLES: dict[str, str] = {
    "extractor": "pool: judges chunk boundaries, extracts scenes, canonicalises names, assembles scene profiles",
    "synthesizer": "writes original characters: themes, world, profiles, a scene and its dialogue, with reviews",
    "director": "builder: picks who speaks next, or ends the scene",
    "scene": "builder: plays the scene's own characters",
    "source": "builder: plays the test character (the candidate a benchmark item is made of)",
    "base": "builder and evaluation: the reference reply every candidate is compared with",
    "judge": "builder: names the dimension a turn tests and prefers a reply, grades dialogues; "
             "evaluation: compares the reply under test with the base in both orders",
    "checker": "evaluation: reads judge rationales for hallucinations",
    "test": "evaluation: the settings a model string under test is called with",
}
