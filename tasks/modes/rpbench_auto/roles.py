"""The model roles RPBench-Auto calls, with the release's sampling (utils.py's chat_completion: temperature 1.0,
max_tokens 2048, for the candidates and the judge alike; a test reads them from the release and compares)."""

from __future__ import annotations

from rpbench.tasks.llm.config import Role

SAMPLING = {"temperature": 1.0, "max_tokens": 2048}

ROLES: dict[str, Role] = {
    "rpbench-auto-candidate": Role("rpbench-auto: the settings a model under test (--model given as a model "
                                   "string) plays the NPC with", SAMPLING, {"max_tokens": 96}),
    "rpbench-auto-baseline": Role("rpbench-auto: the model every candidate is judged against (RPBench-Auto: "
                                  "gpt-4o-2024-05-13)", SAMPLING, {"max_tokens": 96}),
    "rpbench-auto-judge": Role("rpbench-auto: plays the user and picks the better NPC each round (RPBench-Auto: "
                               "gpt-4-turbo-2024-04-09)", SAMPLING, {"max_tokens": 256}),
}
