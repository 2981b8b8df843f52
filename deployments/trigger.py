"""Start rpbench's deployments from code: a small wrapper over Prefect's ``run_deployment``.

    from rpbench.deployments.trigger import trigger
    run = trigger("rpbench-evaluate/nightly-eval", {"models": ["openai/gpt-4o"]}, wait=True)
    print(run.state_name, run.flow_run_id)

Every rpbench flow takes one parameter, ``settings`` (the flow's settings model); ``trigger`` takes that
model's fields and sends them as ``settings``, merged over the deployment's own defaults (a nightly
deployment's benchmark and output folder stay as configured unless a field overrides them). Prefect's server
checks them against the flow's parameter schema. ``PREFECT_API_URL`` says which server.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rpbench.tasks.core.errors import InputError


@dataclass(frozen=True)
class Triggered:
    deployment: str
    flow_run_id: str
    flow_run_name: str
    state_name: str  # Scheduled (not waited for), or the final state: Completed, Failed, Crashed, ...
    parameters: dict[str, Any]

    @property
    def completed(self) -> bool:
        return self.state_name == "Completed"


def parse_params(pairs: Sequence[str]) -> dict[str, Any]:
    """``key=value`` options as settings fields: a value is read as JSON when it is JSON (numbers, true, lists),
    as text otherwise; a key given twice makes a list (``--param models=a --param models=b``)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise InputError(f"--param: '{pair}' is not key=value")
        try:
            value: Any = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        if key in out:
            out[key] = [*(out[key] if isinstance(out[key], list) else [out[key]]), value]
        else:
            out[key] = value
    return out


async def _deployment(name: str) -> Any:
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    if "/" not in name:
        raise InputError(f"deployment '{name}': expected FLOW/DEPLOYMENT, as `prefect deployment ls` shows it")
    async with get_client() as client:
        try:
            return await client.read_deployment_by_name(name)
        except ObjectNotFound:
            known: list[str] = []
            for d in await client.read_deployments():
                known.append(f"{(await client.read_flow(d.flow_id)).name}/{d.name}")
            known.sort()
            raise InputError(f"unknown deployment '{name}' (known: {', '.join(known) or 'none'})") from None


def _is_list(prop: Mapping[str, Any]) -> bool:
    return prop.get("type") == "array" or any(_is_list(p) for p in prop.get("anyOf", []))


def typed(settings: Mapping[str, Any], schema: Mapping[str, Any], deployment: str) -> dict[str, Any]:
    """``settings`` checked against the deployment's parameter schema: a field by its name or by its
    command-line flag (``model`` for ``models``, as ``--model`` says it); an unknown one is an error naming
    the known ones; a single value for a list field becomes a one-item list."""
    ref = str(((schema.get("properties") or {}).get("settings") or {}).get("$ref", ""))
    model = (schema.get("definitions") or {}).get(ref.rsplit("/", 1)[-1]) or {}
    props = model.get("properties") or {}
    # The command line's names work too (`--param model=x` as `rpbench eval --model x` says it).
    flags = {str(p["cli"]).lstrip("-").replace("-", "_"): k for k, p in props.items() if p.get("cli")}
    out: dict[str, Any] = {}
    for key, value in settings.items():
        key = key if key in props else flags.get(key, key)
        if props and key not in props:
            raise InputError(f"--param: {deployment} has no setting '{key}' (known: {', '.join(sorted(props))})")
        out[key] = [value] if props and _is_list(props[key]) and not isinstance(value, list) else value
    return out


def trigger(deployment: str, settings: Mapping[str, Any] | None = None, *, wait: bool = True,
            timeout: float | None = None, tags: Sequence[str] = ()) -> Triggered:
    """Start a flow run of ``deployment`` (``FLOW/DEPLOYMENT``) with ``settings`` fields over its defaults;
    with ``wait``, return once it has finished (or ``timeout`` seconds have passed)."""
    from prefect.deployments import run_deployment
    from prefect.utilities.asyncutils import run_coro_as_sync

    found: Any = run_coro_as_sync(_deployment(deployment))
    defaults = dict((found.parameters or {}).get("settings") or {})
    given = typed(settings or {}, found.parameter_openapi_schema or {}, deployment)
    parameters = {"settings": {**defaults, **given}}
    # Called outside an event loop, Prefect's sync-compatible run_deployment returns the flow run itself.
    run: Any = run_deployment(deployment, parameters=parameters, timeout=timeout if wait else 0, tags=list(tags),
                              as_subflow=False, poll_interval=1)
    state = str(run.state.name) if run.state else "Unknown"
    return Triggered(deployment, str(run.id), str(run.name), state, parameters)
