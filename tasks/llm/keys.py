"""Is the key a model needs there? Checked before a run starts, so a missing key is one line at once rather
than a failed first request (or, for some providers, a retried 'server error') minutes into a run."""

from __future__ import annotations

import contextlib
import contextvars
import io
import os
from collections.abc import Iterable, Iterator

from rpbench.tasks.core.errors import InputError
from rpbench.tasks.llm.config import ModelsConfig, ModelSpec, role_shown
from rpbench.tasks.llm.local.models import PROVIDER as LOCAL_PROVIDER


def missing_key(spec: ModelSpec) -> str | None:
    """The environment variable(s) this model needs and does not have, or None.

    A variable the models file names (``api_key_env``) must be set. A provider's own variable
    (``OPENAI_API_KEY`` for ``openai/...``) is what litellm reads when the file names none; it is only asked
    for when no ``api_base`` is given, since a server of one's own (vLLM, llama.cpp) may take no key at all.
    """
    if spec.model.startswith(LOCAL_PROVIDER + "/"):
        return None
    if spec.api_key_env:
        return None if os.environ.get(spec.api_key_env) is not None else spec.api_key_env
    if spec.api_base:
        return None
    import litellm

    try:
        with contextlib.redirect_stdout(io.StringIO()):  # litellm prints its provider list for models it can't place
            missing = litellm.validate_environment(model=spec.model).get("missing_keys") or []
    except Exception:  # a model litellm cannot place: its first call will say what is wrong
        return None
    return " or ".join(missing) or None


def unroutable(spec: ModelSpec) -> str | None:
    """Why litellm cannot tell which provider serves this model (a bare name it does not know, a provider
    prefix it has not heard of), or None. The same look-up every request makes first, done once before the
    run: otherwise every request fails with it, after the run has started."""
    if spec.model.startswith(LOCAL_PROVIDER + "/"):
        return None
    import litellm

    try:
        with contextlib.redirect_stdout(io.StringIO()):  # litellm prints its provider list for models it can't place
            litellm.get_llm_provider(model=spec.model, api_base=spec.api_base)
    except Exception as exc:
        return str(exc).splitlines()[0].removeprefix("litellm.BadRequestError: ")
    return None


# Off where the run does not start in this process (`rpbench trigger`: its worker reads its own environment).
_CHECKING: contextvars.ContextVar[bool] = contextvars.ContextVar("rpbench_key_checks", default=True)


@contextlib.contextmanager
def keys_checked_elsewhere() -> Iterator[None]:
    """Checks run in this block leave keys to the process that will make the calls."""
    token = _CHECKING.set(False)
    try:
        yield
    finally:
        _CHECKING.reset(token)


def require_keys(config: ModelsConfig, roles: Iterable[str], option: str = "") -> None:
    """An InputError for the first role whose model litellm cannot route, or lacks its key, naming the model
    (and the variable)."""
    if not _CHECKING.get():
        return
    for role in roles:
        spec = config.for_role(role)
        where = f"{option}: " if option else ""
        why = unroutable(spec)
        if why is not None:
            raise InputError(f"{where}model {spec.model} (role {role_shown(role)}): litellm cannot tell which "
                             f"provider serves it ({why}); write it as <provider>/<model>, for example "
                             "openai/gpt-4o, or hosted_vllm/<model> with api_base for a server of your own")
        var = missing_key(spec)
        if var is not None:
            raise InputError(f"{where}model {spec.model} (role {role_shown(role)}) needs its key in {var}, which "
                             "is not set: export it where the run starts, or name another variable with "
                             "api_key_env in a models file")
