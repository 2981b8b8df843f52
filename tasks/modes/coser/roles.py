"""The model roles CoSER's mode calls, with CoSER's own limits (gca_evaluation: every agent's reply 512 tokens,
the critic's up to 8,196; temperature 0 on a first try). The critic gets 4,096 here, which every provider's
models take (some refuse more); the coser-paper preset gives it CoSER's 8,196."""

from __future__ import annotations

from rpbench.tasks.llm.config import Role

ROLES: dict[str, Role] = {
    "coser-actor": Role("coser: the settings a model under test (--model given as a model string) plays the "
                        "characters with", {"temperature": 0.0, "max_tokens": 512}, {"max_tokens": 96}),
    "coser-environment": Role("coser: describes how the world reacts to the characters (CoSER: gpt-4o)",
                              {"temperature": 0.0, "max_tokens": 512}, {"max_tokens": 96}),
    "coser-next-speaker": Role("coser: predicts who acts next in a scene (CoSER: gpt-4o-mini)",
                               {"temperature": 0.0, "max_tokens": 512}, {"max_tokens": 64}),
    "coser-critic": Role("coser: lists each dimension's flaws of a scene against the book's conversation (CoSER: "
                         "gpt-4o-2024-08-06)", {"temperature": 0.0, "max_tokens": 4096}, {"max_tokens": 320}),
}
