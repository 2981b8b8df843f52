"""The model roles RoleInteract calls. SocialBench's release sends each prompt with no sampling settings (the
provider's defaults); rpbench leaves the temperature to the provider likewise and caps a reply at 512 tokens,
far above an option letter or a memory answer, so a budget can bound every request."""

from __future__ import annotations

from rpbench.tasks.llm.config import Role

ROLES: dict[str, Role] = {
    "roleinteract-player": Role("roleinteract: the settings a model under test (--model given as a model string) "
                                "answers the questions with", {"temperature": None, "max_tokens": 512},
                                {"temperature": 0.0, "max_tokens": 96}),
}
