"""The model roles FURINA calls, what each does, and its limits on a real model (those of the paper's setup,
the furina-paper preset) and on the embedded 135M model."""

from __future__ import annotations

from rpbench.tasks.llm.config import Role

ROLES: dict[str, Role] = {
    "extractor": Role("pool: judges chunk boundaries, extracts scenes, canonicalises names, assembles scene "
                      "profiles", {"max_tokens": 8192}, {"max_tokens": 1024}),
    "synthesizer": Role("writes original characters: themes, world, profiles, a scene and its dialogue, with "
                        "reviews", {"temperature": 0.7, "max_tokens": 4096}, {"max_tokens": 1024}),
    "director": Role("builder: picks who speaks next, or ends the scene", {"max_tokens": 512}),
    "scene": Role("builder: plays the scene's own characters", {"temperature": 0.7, "max_tokens": 512},
                  {"max_tokens": 64}),
    "source": Role("builder: plays the test character (the candidate a benchmark item is made of)",
                   {"temperature": 0.7, "max_tokens": 512}, {"max_tokens": 64}),
    "base": Role("builder and evaluation: the reference reply every candidate is compared with",
                 {"max_tokens": 512}, {"max_tokens": 64}),
    "judge": Role("builder: names the dimension a turn tests and prefers a reply, grades dialogues; evaluation: "
                  "compares the reply under test with the base in both orders", {"max_tokens": 2048},
                  {"max_tokens": 320}),
    "checker": Role("evaluation: reads judge rationales for hallucinations", {"max_tokens": 64}),
    "test": Role("evaluation: the settings a model string under test is called with", {"max_tokens": 512},
                 {"max_tokens": 64}),
}
