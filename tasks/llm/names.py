"""Names a user gives for models (``--model``, ``--source``, a seed role, a deployment parameter) resolve or fail.

A name is a role of the models file, a built-in role of the benchmark mode
(which falls back to ``[default]`` when the file leaves it out), a local model
``local/<name>`` from the registry, or a litellm model string
(``<provider>/<model>`` with a provider litellm knows, or a model name in its
price map). Anything else is an input error that lists the names that exist:
a typo never quietly becomes the default model.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from rpbench.tasks.core.errors import InputError, unknown_name
from rpbench.tasks.llm.config import ModelsConfig
from rpbench.tasks.llm.keys import require_keys
from rpbench.tasks.llm.local.models import EMBEDDED, check_adapter, local_name, split_adapter


@functools.cache
def _litellm_names() -> tuple[frozenset[str], frozenset[str]]:
    import litellm

    providers = frozenset(str(p.value) if hasattr(p, "value") else str(p) for p in litellm.provider_list)
    return providers, frozenset(litellm.model_cost)


def is_litellm_model(name: str) -> bool:
    provider, slash, rest = name.partition("/")
    providers, known_models = _litellm_names()
    if slash:
        return bool(rest) and provider in providers
    return name in known_models


def resolve(config: ModelsConfig, name: str, builtin_roles: Iterable[str], like: str) -> str:
    """The role to call for ``name``; a model string gets a role ``<like>@<name>`` with ``like``'s settings."""
    builtin = set(builtin_roles)
    if name in builtin or name == like:
        return name
    if name in config.roles:
        # A role of the models file standing for a model: at ``like``'s settings (the benchmark's), under what the
        # file sets for it itself.
        return config.bind_role(name, like)
    local = local_name(name)
    if local is not None:
        known = [EMBEDDED, *config.local_models]
        base, adapter = split_adapter(local)
        if base not in known:
            raise unknown_name("local model", base, known, hint="add it under [local_models] in a models file")
        if adapter is not None:
            try:
                check_adapter(adapter)
            except ValueError as exc:
                raise InputError(str(exc)) from None
        return config.bind_model(name, like)
    if is_litellm_model(name):
        return config.bind_model(name, like)
    raise unknown_name("model", name, [*config.roles, *builtin],
                       hint="or give a litellm model string such as openai/gpt-4o, or local/<name>")


def resolve_all(config: ModelsConfig, names: Iterable[str], builtin_roles: Iterable[str], like: str,
                option: str) -> dict[str, str]:
    """Name -> role for every name, or an InputError that says which option held the bad name (or the model
    whose key is not set: a run that needs it could not make a single call)."""
    builtin = list(builtin_roles)
    out = {}
    for name in names:
        try:
            out[name] = resolve(config, name, builtin, like)
        except InputError as exc:
            raise InputError(f"{option}: {exc}") from None
    require_keys(config, out.values(), option)
    return out
