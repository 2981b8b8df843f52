"""``rpbench models``: which model each role resolves to; ``rpbench models check`` asks each one to answer."""

from __future__ import annotations

import asyncio
import time
from typing import Literal

import typer
from pydantic import Field

from rpbench.flows.kit.front.settings import ModelsFileSettings, cli
from rpbench.tasks.core.secrets import redact_url, scrub

PING = [{"role": "user", "content": "Reply with the single word: ready"}]


class ModelsSettings(ModelsFileSettings):
    action: Literal["show", "check"] = Field(
        default="show", json_schema_extra=cli(argument=True),
        description="show (default): each role's model and settings; check: send one tiny request per role the "
        "models file binds, and the default, and report what answers (exit 3 if any does not).")


# What `rpbench models` shows of each role, in this order (other fields only where something sets them).
SHOWN = ("model", "api_base", "temperature", "top_p", "max_tokens", "reasoning_chars", "extra", "max_concurrency",
         "processes", "batch", "api_key_env", "max_cost")


def show_models(s: ModelsFileSettings) -> None:
    from rpbench.flows.kit.front.registry import builtin_roles, models_config
    from rpbench.tasks.llm.config import presets
    from rpbench.tasks.llm.local.models import EMBEDDED

    config = models_config(s.models_file)
    typer.echo("Each role's settings, and where each value comes from (a mode's own setting, the embedded "
               "model's tuning, the models file or preset, the environment; 'built in' otherwise):")
    for role in ["default", *sorted(set(config.roles) | builtin_roles())]:
        spec = config.default if role == "default" else config.for_role(role)
        sources = config.sources_of(role)
        values = spec.model_dump()
        values["api_base"] = redact_url(values["api_base"]) if values["api_base"] else None
        values["extra"] = scrub(values["extra"], [])  # a header's key, by its name
        parts = [f"{name}={values[name]!r} ({sources.get(name, 'built in')})" for name in SHOWN
                 if name in ("model", "temperature", "max_tokens") or name in sources]
        typer.echo(f"{role}:\n    " + "\n    ".join(parts))
    local = {EMBEDDED: "embedded", **{k: v.path or "embedded" for k, v in config.local_models.items()}}
    typer.echo("local models: " + ", ".join(f"local/{k} ({v})" for k, v in sorted(local.items())))
    typer.echo("presets (--models-file NAME): " + ", ".join(presets()))


async def _ask_each(s: ModelsFileSettings) -> list[tuple[str, str, str | None, float]]:
    """(role, model, error or None, seconds) for [default] and every role the file binds, all at once.

    Uncached, one try each (a check must reach the model now), with a few tokens of answer."""
    from rpbench.flows.kit.front.registry import models_config
    from rpbench.tasks.core.errors import ModelUnusable
    from rpbench.tasks.llm.gateway import Gateway

    config = models_config(s.models_file)
    roles = ["default", *sorted(r for r in config.roles if r != "default")]
    small = config.model_copy(update={
        "default": config.default.model_copy(update={"max_tokens": 8}),
        "roles": {r: spec.model_copy(update={"max_tokens": 8}) for r, spec in config.roles.items()},
        "retry": config.retry.model_copy(update={"transient_attempts": 1, "parse_attempts": 1})})
    gateway = Gateway(small, cache=None)

    async def one(role: str) -> tuple[str, str, str | None, float]:
        started = time.monotonic()
        try:
            reply = await gateway.complete(role, PING, tag="models-check")
            error = None if reply.ok else reply.error
        except ModelUnusable as exc:
            error = exc.error + (f" (key read from {exc.key_env})" if exc.key_env else "")
        spec = small.for_role(role)
        # Where it was asked, with the model: "Connection error" alone does not say which server refused.
        where = f"{spec.model} at {redact_url(spec.api_base)}" if spec.api_base and error is not None else spec.model
        return role, where, error, time.monotonic() - started

    try:
        return list(await asyncio.gather(*(one(r) for r in roles)))
    finally:
        await gateway.aclose()


def check_models(s: ModelsFileSettings) -> None:
    from rpbench.tasks.llm.event_loop import run_coroutine

    results = run_coroutine(_ask_each(s))
    for role, model, error, seconds in results:
        if error is None:
            typer.echo(f"{role}: {model} answers ({seconds:.1f} s)")
        else:
            typer.secho(f"{role}: {model} does not answer: {error}", err=True, fg=typer.colors.RED)
    failed = sum(error is not None for _r, _m, error, _s in results)
    typer.echo(f"{len(results) - failed} of {len(results)} roles answer")
    if failed:
        raise typer.Exit(3)


def models(s: ModelsSettings) -> None:
    """Show which model and settings each role resolves to, and the local models there are; `rpbench models
    check` sends one tiny request per role and says which answer."""
    if s.action == "check":
        check_models(s)
    else:
        show_models(s)
