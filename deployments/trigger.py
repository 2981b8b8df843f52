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

import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from rpbench.tasks.core.errors import InputError, first_error


@dataclass(frozen=True)
class Triggered:
    deployment: str
    flow_run_id: str
    flow_run_name: str
    state_name: str  # Scheduled (not waited for), or the final state: Completed, Failed, Crashed, ...
    parameters: dict[str, Any]
    ui_url: str | None = None  # the flow run's page in the Prefect UI
    # Nothing has polled for the deployment lately: no worker on its pool and no `rpbench deploy` serving it.
    unserved: bool = False

    @property
    def out(self) -> str | None:
        """The run folder the flow run writes (as its settings name it)."""
        value = self.parameters.get("settings", {}).get("out")
        return str(value) if value else None

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
    # The command line's names work too (`--param model=x` as `rpbench furina eval --model x` says it).
    flags = {str(p["cli"]).lstrip("-").replace("-", "_"): k for k, p in props.items() if p.get("cli")}
    out: dict[str, Any] = {}
    for key, value in settings.items():
        key = key if key in props else flags.get(key, key)
        if props and key not in props:
            raise InputError(f"--param: {deployment} has no setting '{key}' (known: {', '.join(sorted(props))})")
        out[key] = [value] if props and _is_list(props[key]) and not isinstance(value, list) else value
    return out


def check_server() -> str:
    """The Prefect server's URL, once it answers; one line otherwise (no server set, or nothing there)."""
    import httpx
    from prefect.settings import PREFECT_API_URL

    url = str(PREFECT_API_URL.value() or "")
    if not url:
        raise InputError("PREFECT_API_URL is not set: a triggered run goes to a Prefect server (prefect server "
                         "start, then export PREFECT_API_URL=http://127.0.0.1:4200/api)")
    try:
        httpx.get(url.rstrip("/") + "/health", timeout=5.0).raise_for_status()
    except httpx.HTTPError as exc:
        raise InputError(f"no Prefect server answers at {url} ({type(exc).__name__}: {str(exc)[:120]}); start "
                         "one (prefect server start) or point PREFECT_API_URL at it") from None
    return url


def _flow_checks(flow_name: str) -> tuple[type[BaseModel], Callable[[Any], Any] | None] | None:
    """The settings model of the flow Prefect calls ``flow_name``, and its input check (if it has one)."""
    from rpbench.flows.kit.front.registry import load_ref, modes
    from rpbench.flows.suite.flow import suite
    from rpbench.flows.suite.plan import check_suite
    from rpbench.flows.training.checks import check_train
    from rpbench.flows.training.flows import train_lora_flow

    found: list[tuple[Any, Any]] = [(train_lora_flow, check_train), (suite, check_suite)]
    for mode in modes().values():
        found += [(load_ref(ref), mode.checks.get(short)) for short, ref in mode.flows.items()]
    for flow, check in found:
        if flow.name == flow_name:
            model = inspect.signature(flow.fn, eval_str=True).parameters["settings"].annotation
            return model, load_ref(check) if check is not None else None
    return None


def check_settings(deployment: str, settings: Mapping[str, Any]) -> None:
    """The run's settings as its flow will read them (types, names), then the flow's own input checks (files,
    models), here rather than in a worker after the run was sent."""
    known = _flow_checks(deployment.split("/", 1)[0])
    if known is None:
        return
    model, check = known
    try:
        parsed = model.model_validate(dict(settings))
    except ValidationError as exc:
        field, msg = first_error(exc)
        raise InputError(f"--param {field}: {msg}") from None
    if check is not None:
        from rpbench.tasks.llm.keys import keys_checked_elsewhere

        with keys_checked_elsewhere():  # the worker that runs it reads its own keys
            check(parsed)


def trigger(deployment: str, settings: Mapping[str, Any] | None = None, *, wait: bool = True,
            timeout: float | None = None, tags: Sequence[str] = ()) -> Triggered:
    """Start a flow run of ``deployment`` (``FLOW/DEPLOYMENT``) with ``settings`` fields over its defaults;
    with ``wait``, return once it has finished (or ``timeout`` seconds have passed)."""
    from prefect.deployments import run_deployment
    from prefect.utilities.asyncutils import run_coro_as_sync

    check_server()
    found: Any = run_coro_as_sync(_deployment(deployment))
    defaults = dict((found.parameters or {}).get("settings") or {})
    given = typed(settings or {}, found.parameter_openapi_schema or {}, deployment)
    parameters = {"settings": {**defaults, **given}}
    check_settings(deployment, parameters["settings"])
    # Called outside an event loop, Prefect's sync-compatible run_deployment returns the flow run itself.
    run: Any = run_deployment(deployment, parameters=parameters, timeout=timeout if wait else 0, tags=list(tags),
                              as_subflow=False, poll_interval=1)
    state = str(run.state.name) if run.state else "Unknown"
    return Triggered(deployment, str(run.id), str(run.name), state, parameters, ui_url=_ui_url(str(run.id)),
                     unserved=str(getattr(found.status, "value", found.status) or "").upper() == "NOT_READY")


def _ui_url(flow_run_id: str) -> str | None:
    from prefect.settings import PREFECT_UI_URL

    base = PREFECT_UI_URL.value()
    return f"{str(base).rstrip('/')}/runs/flow-run/{flow_run_id}" if base else None
