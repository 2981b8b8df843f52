"""The model roles RoleInteract calls. SocialBench's ``dataset.py`` hands each prompt to "some API call" and
states no sampling setting (its API clients differ: its Baichuan client, for one, sends temperature 0.8, top_k 10
and 3,072 tokens; others send none); rpbench leaves the temperature to the provider and caps a reply at 512
tokens, far above an option letter or a memory answer, so a budget can bound every request."""

from __future__ import annotations

from rpbench.tasks.llm.config import Role

ROLES: dict[str, Role] = {
    "roleinteract-player": Role("roleinteract: the settings a model under test (--model given as a model string) "
                                "answers the questions with", {"temperature": None, "max_tokens": 512},
                                {"temperature": 0.0, "max_tokens": 96}),
}
