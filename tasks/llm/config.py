"""Model roles bound to model strings and sampling settings.

A role (judge, director, source, ...) is only a name. The config file binds
each name to a litellm model string plus sampling settings, so no code ever
hard-codes a model. Keys never live here: a spec may name the environment
variable that holds its key (``api_key_env``), and the value is read only at
call time.

A role's settings are layered, each layer over the one before, and every
value remembers which layer gave it (``rpbench models`` shows it; the layers are
one table in docs/concepts/models.md):

1. ModelSpec's own defaults, for any real provider;
2. the settings the mode that calls the role gives it (``Role.settings``: the
   limits its replies need, the release's sampling);
3. on the embedded 135M model only, its tuning (short budgets, a repetition
   penalty, capped reasoning: ``EMBEDDED_TUNING`` and ``Role.embedded``), which
   a real model never gets;
4. the models file's ``[default]``, then ``RPBENCH_DEFAULT_<FIELD>``, except a
   field the role's mode sets in layer 2: a benchmark's sampling stays the
   release's unless the user sets it for that role;
5. the models file's ``[roles.<role>]``, then ``RPBENCH_<ROLE>_<FIELD>``; for a
   model under test named by a role of the file (``--model gpt4o``), that
   role's own, over the settings of the benchmark's role it stands in for
   (``ModelsConfig.bind_role``).

The model itself is chosen first (a model string given for a role replaces
it), since whether layer 3 applies depends on it. ``RoleLayers.overridden``
says which of a benchmark's settings a user's setting for the role replaces.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from rpbench.storage.user_files import load_yaml, read_user_text
from rpbench.tasks.core.errors import InputError, close_match, first_error, unknown_name
from rpbench.tasks.core.secrets import (
    field_secrets,
    looks_like_key,
    redact_url,
    register_pasted_key,
    register_secret_names,
    scrub,
    url_secrets,
)
from rpbench.tasks.llm.local.models import EMBEDDED, LocalModelSpec, local_name, model_fingerprint, split_adapter
from rpbench.tasks.llm.local.models import PROVIDER as LOCAL_PROVIDER
from rpbench.tasks.llm.provider_schema import BATCH_PROVIDERS, Family, batch_provider

LOCAL_MODEL = f"{LOCAL_PROVIDER}/{EMBEDDED}"
DEFAULT_CONFIG_PATH = Path(__file__).with_name("default_models.toml")
PRESETS_DIR = Path(__file__).with_name("presets")
ENV_PREFIX = "RPBENCH_"

StructuredMode = Literal["auto", "json_schema", "json_object", "prompt"]
# How a role bound by a name of the models file is spelt: ``<like>@role:<name>`` (``ModelsConfig.bind_role``).
BOUND = "role:"


def split_at(text: str) -> tuple[str, str | None]:
    """``a@b`` as (a, b), a text without "@" as (text, None): the one reading of the strings rpbench writes
    with "@" (a role bound to a model, ``RoleBinding``; an endpoint, ``endpoint_parts``)."""
    left, at, right = text.partition("@")
    return (left, right) if at else (text, None)


@dataclass(frozen=True)
class RoleBinding:
    """A role as the gateway is given it, parsed: a role's own name (``like`` alone), a model string called
    with the settings of role ``like`` (``like@openai/gpt-4o``: ``model``), or the model a models file's role
    binds, with ``like``'s settings under its own (``like@role:gpt4o``: ``bound``). The one place such a
    string is read (``ModelsConfig.bind_model`` and ``bind_role`` write it)."""

    like: str
    model: str | None = None
    bound: str | None = None

    @classmethod
    def parse(cls, role: str) -> RoleBinding:
        like, target = split_at(role)
        if not (like and target):
            return cls(role)
        if target.startswith(BOUND):
            return cls(like, bound=target.removeprefix(BOUND))
        return cls(like, model=target)

    @property
    def binds(self) -> bool:
        return self.model is not None or self.bound is not None


def endpoint_parts(endpoint: str) -> tuple[str, str]:
    """``ModelSpec.endpoint``'s model and address (``model@api_base``)."""
    model, base = split_at(endpoint)
    return model, base or ""


def role_shown(role: str) -> str:
    """A role as a message names it to the user: the name they gave (``gpt4o`` for ``like@role:gpt4o``), the
    benchmark's role a model string stands in (``pingpong-player`` for ``pingpong-player@openai/gpt-4o``)."""
    binding = RoleBinding.parse(role)
    return binding.bound if binding.bound is not None else binding.like


class ModelSpec(BaseModel):
    """One model binding: where to send a request and how to sample."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    model: str = LOCAL_MODEL
    api_base: str | None = None
    api_key_env: str | None = Field(
        default=None, description="Name of the environment variable holding the key (never the key itself)."
    )
    # Ranges every provider shares (a negative temperature, a top_p below 0 or above 1 are refused by all of
    # them): checked when the file is read, not by the first request of a run. Upper bounds differ, so they are
    # left. A top_p of 0 is OpenAI's and Together's to take (PersonaGym's judges are sent it); a server that
    # refuses it (vLLM) says so on the first request.
    temperature: float | None = Field(default=0.0, ge=0, description='"none" (or None): not sent, so the '
                                      "provider's own default applies.")
    top_p: float | None = Field(default=None, ge=0, le=1)
    max_tokens: int = Field(default=1024, ge=1)
    seed: int | None = 0
    timeout: float = Field(default=120.0, gt=0, description="Seconds a request may take.")
    max_concurrency: int = Field(default=16, ge=1, description="Requests in flight to this model's endpoint.")
    rpm: int | None = Field(default=None, ge=1, description="Requests per minute for this model; None for no limit.")
    processes: int = Field(
        default=1, ge=1, le=32,
        description="Worker processes that send this model's calls. Above 1, litellm's per-call CPU is spread "
        "over cores (see tasks/llm/process_pool.py); worth it for remote endpoints at high concurrency. The "
        "workers are the rpbench process's, shared by every model and stage with the same number: 2 means two "
        "extra processes however many models run at once.",
    )
    structured: StructuredMode = "auto"
    schema_rules: Family | None = Field(
        default=None, description="The JSON-schema rules this endpoint enforces on a reply's schema: openai "
        "(strict Structured Outputs), gemini, anthropic, vllm (standard JSON Schema) or local. None: by the model "
        "string's route (openai/, azure/ and a bare name: openai, whatever the api_base; hosted_vllm/ and other "
        "servers: vllm).")
    reasoning_chars: int | None = Field(
        default=None, ge=1,
        description="Longest free-text reasoning this role may write in a structured reply (a judge's reasoning, "
        "a director's reason), in characters. None keeps each schema's own generous cap; a small local model "
        "needs a short one to close its JSON within max_tokens.")
    max_cost: float | None = Field(default=None, gt=0, description="USD this role may spend in one run; the run "
                                   "stops (exit 3) before a request could take it past. None: no limit of its own.")
    input_cost_per_token: float | None = Field(default=None, ge=0, description="USD; overrides litellm's price map.")
    output_cost_per_token: float | None = Field(default=None, ge=0, description="USD; overrides litellm's price map.")
    cached_input_cost_per_token: float | None = Field(
        default=None, ge=0, description="USD for a prompt token the provider read from its prompt cache; default: "
        "litellm's price, else the input price.")
    cache_write_cost_per_token: float | None = Field(
        default=None, ge=0, description="USD for a prompt token written to the provider's prompt cache (Anthropic); "
        "default: litellm's price, else the input price.")
    batch: bool = Field(default=False, strict=True, description="Send this role's independent calls (judging, "
                        "checking, answering a fixed question; not a dialogue's turns) through the provider's batch "
                        "API, one batch per stage shard: about half the price, replies within the provider's window "
                        "(24 h) instead of seconds.")
    batch_poll_s: float = Field(default=30.0, gt=0, description="Seconds between two looks at a batch in flight.")
    batch_input_cost_per_token: float | None = Field(
        default=None, ge=0, description="USD for a batch's prompt token; default: litellm's batch price, else the "
        "interactive price (never less than what is paid).")
    batch_output_cost_per_token: float | None = Field(default=None, ge=0, description="USD for a batch's reply token.")
    extra: dict[str, Any] = Field(default_factory=dict, description="Passed to litellm as-is.")

    @field_validator("temperature", mode="before")
    @classmethod
    def _none_written_as_text(cls, value: Any) -> Any:
        # TOML has no null: a models file says "none" for a temperature the request should not carry.
        return None if isinstance(value, str) and value.strip().lower() == "none" else value

    @field_validator("model", mode="before")
    @classmethod
    def _named(cls, value: Any) -> Any:
        # A blank model string routes nowhere: said here, not by every request of a run failing.
        if value is None or (isinstance(value, str) and not value.strip()):
            raise ValueError("no model named: give a litellm model string (openai/gpt-4o) or local/<name>")
        return value

    @field_validator("api_base")
    @classmethod
    def _no_credentials_in_the_address(cls, value: str | None) -> str | None:
        # litellm's HTTP client sends the key as a bearer token beside a user and password written into the address,
        # which it cannot combine: every request of a run failed. Said once, here, never echoing the password.
        if value:
            from urllib.parse import urlsplit

            try:
                parts = urlsplit(value)
                holds = parts.username is not None or parts.password is not None
            except ValueError:
                holds = "@" in value.split("//", 1)[-1].split("/", 1)[0]
            if holds:
                for secret in url_secrets(value):
                    register_pasted_key(secret)
                raise ValueError("a user name and password written into the address (user:***@host) cannot be sent "
                                 "(the key goes as a bearer token, which cannot be combined with them): give the "
                                 "address without them, and the key with api_key_env, or a server's own header "
                                 "under extra.extra_headers")
        return value

    @field_validator("api_key_env")
    @classmethod
    def _a_variable_name(cls, name: str | None) -> str | None:
        # The value is never echoed: if it is a key, an error message must not print it.
        if name is not None and looks_like_key(name):
            register_pasted_key(name)
            raise ValueError("this looks like an API key, not the name of an environment variable: put the key "
                             "in a variable (export MY_KEY=...) and write api_key_env = \"MY_KEY\"")
        return name

    @model_validator(mode="after")
    def _secrets_are_masked_from_now_on(self) -> ModelSpec:
        # A password in the server's address, a key in its query or in a header ``extra`` sends: masked in
        # every log line and manifest, as keys read from the environment are.
        for value in [*url_secrets(self.api_base or ""), *field_secrets(self.extra)]:
            register_pasted_key(value)
        return self

    @model_validator(mode="after")
    def _local_model_stays_in_process(self) -> ModelSpec:
        if self.processes > 1 and self.model.startswith(LOCAL_PROVIDER + "/"):
            raise ValueError("the embedded local model runs in the rpbench process: processes must be 1")
        if self.batch and batch_provider(self.model) is None:
            raise ValueError(f"batch: {self.model} has no batch API litellm can use (providers with one: "
                             f"{', '.join(BATCH_PROVIDERS)})")
        if self.batch and (problem := self.batch_key_problem()):
            raise ValueError(f"batch: {problem}")
        return self

    def batch_key_problem(self) -> str | None:
        """Why this model's batches could not be sent, or None: a vLLM server of one's own, whose batches go
        through an OpenAI-style files client that refuses to start without a key (the other routes read their
        provider's own variable)."""
        if not self.api_key_env and batch_provider(self.model) == "hosted_vllm":
            where = redact_url(self.api_base) if self.api_base else "its server"
            return (f"{self.model} at {where} sends batches through an OpenAI-style files API, "
                    "whose client needs a key: give api_key_env (a variable holding any value, if your server takes "
                    "none)")
        return None

    def sampling(self) -> dict[str, Any]:
        """The settings that change what the model says: part of every cache key."""
        out: dict[str, Any] = {"max_tokens": self.max_tokens}
        if self.temperature is not None:
            out["temperature"] = self.temperature
        if self.top_p is not None:
            out["top_p"] = self.top_p
        if self.seed is not None:
            out["seed"] = self.seed
        out.update(self.extra)
        return out

    def identity(self) -> dict[str, Any]:
        """What decides the replies (not how fast they come): stage cache keys include it."""
        return {"model": model_fingerprint(self.model), "api_base": self.api_base or "", "sampling": self.sampling(),
                "structured": self.structured, "reasoning_chars": self.reasoning_chars,
                **({"schema_rules": self.schema_rules} if self.schema_rules else {})}

    def endpoint(self) -> str:
        """The identity of the server behind the model, used for limits and cache keys."""
        return f"{self.model}@{self.api_base or ''}"


class RetryPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    transient_attempts: int = Field(default=6, ge=1, description="Tries of one request on transient errors.")
    backoff_initial: float = Field(default=0.5, ge=0)
    backoff_max: float = Field(default=30.0, ge=0)
    parse_attempts: int = Field(default=3, ge=1, description="Replies asked for before an unusable one is a failure.")


@dataclass(frozen=True)
class Role:
    """A role a benchmark mode calls: what it does, the settings its replies need on any real model (the
    paper's sampling, a budget its longest reply fits), and the embedded 135M model's tuning for it, which
    applies on that model only. Keys are ModelSpec fields; a misspelled one fails when the mode is imported."""

    about: str
    settings: Mapping[str, Any] = field(default_factory=dict)
    embedded: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for part in (self.settings, self.embedded):
            unknown = sorted(set(part) - set(ModelSpec.model_fields))
            if unknown:
                raise ValueError(f"role '{self.about}': {unknown[0]} is not a model setting")


# What the embedded SmolLM2-135M needs under every role: a reply budget it fills in seconds, a repetition
# penalty (it loops without one; a parameter no hosted API defines), short reasoning so its JSON closes within
# the budget, and few requests at once (it runs in this process). A real model never gets any of it.
EMBEDDED_TUNING: dict[str, Any] = {"max_tokens": 160, "max_concurrency": 8, "reasoning_chars": 240,
                                   "extra": {"repetition_penalty": 1.2}}

# field -> (value, where it came from)
Layer = dict[str, tuple[Any, str]]


def _layer(values: Mapping[str, Any], source: str) -> Layer:
    return {k: (v, source) for k, v in values.items()}


def is_embedded(model: str) -> bool:
    """The embedded 135M model, with or without a LoRA adapter of one's own on it."""
    name = local_name(model)
    return name is not None and split_adapter(name)[0] == EMBEDDED


@dataclass(frozen=True)
class RoleLayers:
    """What every role's settings are merged from (see the module's docstring for the order)."""

    builtin: Mapping[str, tuple[str, Role]]  # role -> (the mode declaring it, its Role)
    file_default: Layer
    env_default: Layer
    file_roles: Mapping[str, Layer]
    env_roles: Mapping[str, Layer]

    def merged(self, role: str | None, model: str | None = None, bound: str | None = None) -> Layer:
        """Role ``role``'s fields (None: [default]'s), each with its source; ``model`` replaces the model;
        ``bound``: a role of the models file whose name stands for a model under ``role``'s settings (``--model
        gpt4o``), its own fields over them."""
        named = bound or role
        own = [self.file_roles.get(named, {}), self.env_roles.get(named, {})] if named else []
        chosen: tuple[Any, str] = (LOCAL_MODEL, "built in")
        for layer in [self.file_default, self.env_default, *own]:
            chosen = layer.get("model", chosen)
        if model is not None:
            chosen = (model, "the model string given")
        mode, declared = self.builtin.get(role or "", ("", None))
        layers: list[Layer] = []
        if declared is not None:
            layers.append(_layer(declared.settings, f"mode {mode}"))
        if isinstance(chosen[0], str) and is_embedded(chosen[0]):  # a model that is not text fails validation
            layers.append(_layer(EMBEDDED_TUNING, "embedded model tuning"))
            if declared is not None:
                layers.append(_layer(declared.embedded, f"embedded model tuning of mode {mode}"))
        # [default] sets what no benchmark states (where to send, how many at once, ...): a setting the role's
        # benchmark gives (the release's sampling) stays the benchmark's unless the user sets it for this role.
        kept = set(declared.settings) if declared is not None else set()
        layers += [{k: v for k, v in layer.items() if k not in kept}
                   for layer in (self.file_default, self.env_default)]
        layers += own
        out: Layer = {}
        for layer in layers:
            for k, (v, source) in layer.items():
                if k == "extra" and "extra" in out:  # litellm options add up; a later layer's value wins per key
                    v = {**out["extra"][0], **v}
                out[k] = (v, source)
        out["model"] = chosen
        return out

    def overridden(self, role: str, bound: str | None = None) -> list[tuple[str, Any, Any, str]]:
        """The settings of ``role``'s benchmark that a user's own setting for the role replaces: (field, the
        benchmark's value, the value sent, where it was set)."""
        _mode, declared = self.builtin.get(role, ("", None))
        if declared is None:
            return []
        merged = self.merged(role, bound=bound)
        out = []
        for field_name, value in declared.settings.items():
            sent, source = merged.get(field_name, (value, ""))
            if sent != value and not source.startswith(("mode ", "embedded model tuning")):
                out.append((field_name, value, sent, source))
        return out


class ModelsConfig(BaseModel):
    """The whole model configuration of a run."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    default: ModelSpec = Field(default_factory=ModelSpec)
    roles: dict[str, ModelSpec] = Field(default_factory=dict)
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    local_models: dict[str, LocalModelSpec] = Field(
        default_factory=dict, description="Named local models, addressed as local/<name>, beside the embedded one.")
    _layers: RoleLayers | None = PrivateAttr(default=None)
    _resolved: dict[str, ModelSpec] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _local_models_exist(self) -> ModelsConfig:
        known = {EMBEDDED, *self.local_models}
        for where, spec in [("default", self.default), *((f"roles.{r}", s) for r, s in self.roles.items())]:
            name = local_name(spec.model)
            name = split_adapter(name)[0] if name else None
            if name is not None and name not in known:
                raise ValueError(f"{where}: unknown local model '{name}' (known: {', '.join(sorted(known))})")
        return self

    def environment_only(self, role: str) -> list[str]:
        """The variables that bind ``role`` when only the environment does (none when the file names it)."""
        layers = self._layers
        if layers is None or role in layers.file_roles:
            return []
        return sorted(source.removeprefix("environment ") for _v, source in layers.env_roles.get(role, {}).values())

    def for_role(self, role: str) -> ModelSpec:
        """A role's settings.

        A role the models file (or the environment) binds is in ``roles``; a role only a mode declares is
        merged from its layers when first asked for. ``<like>@<model>`` (what ``bind_model`` returns) is the
        model string with the settings of role ``like`` as they are for that model (the embedded model's tuning
        never reaches another model), so the name alone says everything, in any process. A role nothing
        declares is an error listing the roles there are (names a user gives are checked before any work
        starts, ``rpbench.tasks.llm.names``, so this is a name the code made up: never silently [default]'s).
        A config that does not know the benchmarks' roles (made in code, ``ModelsConfig(default=...)``, or read
        without ``roles``) gives every role [default]'s settings.
        """
        if role in self.roles:
            return self.roles[role]
        known = self._resolved.get(role)
        if known is not None:
            return known
        binding = RoleBinding.parse(role)
        if binding.bound is not None:
            if self._layers is None:
                return self.for_role(binding.bound)
            spec = self._spec(binding.like, bound=binding.bound)
        elif binding.model is not None:
            if self._layers is None:
                return self.for_role(binding.like).model_copy(update={"model": binding.model})
            spec = self._spec(binding.like, binding.model)
        elif self._layers is not None and role in self._layers.builtin:
            spec = self._spec(role)
        elif role == "default" or self._layers is None or not self._layers.builtin:
            # [default] itself; or a config made without the benchmarks' roles (in code, or read with no
            # ``roles``): there every role is [default]'s
            return self.default
        else:
            raise unknown_name("role", role, [*self.roles, *self._layers.builtin],
                               "a role is one of the models file's ([roles.NAME]) or one a benchmark declares")
        self._resolved[role] = spec
        return spec

    def sources_of(self, role: str) -> dict[str, str]:
        """Where each of ``role``'s values came from (empty for a config made in code)."""
        if self._layers is None:
            return {}
        binding = RoleBinding.parse(role)
        if binding.binds:
            merged = self._layers.merged(binding.like, binding.model, binding.bound)
        else:
            merged = self._layers.merged(role if role in self.roles or role in self._layers.builtin else None)
        return {k: source for k, (_v, source) in merged.items()}

    def _spec(self, role: str, model: str | None = None, bound: str | None = None) -> ModelSpec:
        assert self._layers is not None
        return ModelSpec.model_validate({k: v for k, (v, _s) in self._layers.merged(role, model, bound).items()})

    @staticmethod
    def bind_model(model: str, like: str) -> str:
        """The role that calls litellm model string ``model`` with the settings of role ``like``."""
        return f"{like}@{model}"

    @staticmethod
    def bind_role(name: str, like: str) -> str:
        """The role that calls the model the file's role ``name`` binds, with the settings of role ``like`` under
        those ``name`` sets itself (``--model gpt4o`` for PingPong's player: gpt4o's model at the player's
        sampling, unless [roles.gpt4o] sets its own)."""
        return f"{like}@{BOUND}{name}"

    def overrides(self, role: str) -> list[tuple[str, Any, Any, str]]:
        """``RoleLayers.overridden`` for a role as the gateway is given it (``like@role:name`` included)."""
        if self._layers is None:
            return []
        binding = RoleBinding.parse(role)
        if binding.bound is not None:
            return self._layers.overridden(binding.like, binding.bound)
        return self._layers.overridden(binding.like)

    def key_variables(self) -> set[str]:
        """The environment variables this config reads keys from."""
        specs = [self.default, *self.roles.values()]
        return {spec.api_key_env for spec in specs if spec.api_key_env}

    def redacted(self) -> dict[str, Any]:
        """A dump safe for manifests: keys are here only as their variables' names, and a secret written into a
        server's address or a header is masked."""
        dump = self.model_dump(mode="json")
        for spec in [dump.get("default"), *(dump.get("roles") or {}).values()]:
            if isinstance(spec, dict) and spec.get("api_base"):
                spec["api_base"] = redact_url(spec["api_base"])
        return dict(scrub(dump, []))  # the secret-named fields (a header in ``extra``) masked by their names


def _coerce(field_type: Any, raw: str) -> Any:
    if raw.lower() in {"none", "null", ""}:
        return None
    if field_type in (int, "int"):
        return int(raw)
    if field_type in (float, "float"):
        return float(raw)
    return raw


def _env_layers(known_roles: set[str], environ: Mapping[str, str]) -> tuple[Layer, dict[str, Layer]]:
    """The ``RPBENCH_<ROLE>_<FIELD>`` (and ``RPBENCH_DEFAULT_<FIELD>``) overrides: [default]'s, and each role's.

    A role is matched among the names the config knows (a variable name cannot hold a dash:
    RPBENCH_DMT_JUDGE_MAX_TOKENS sets role dmt-judge), else taken as written, so
    ``RPBENCH_JUDGE_MODEL=openai/gpt-4o`` binds a role nothing else mentions.
    """
    fields = {name: f.annotation for name, f in ModelSpec.model_fields.items() if name != "extra"}
    default: Layer = {}
    roles: dict[str, Layer] = {}
    for key, raw in sorted(environ.items()):
        if not key.startswith(ENV_PREFIX):
            continue
        rest = key[len(ENV_PREFIX):].lower()
        if rest.startswith("default_") and rest.removeprefix("default_") not in fields:
            # A misspelt override would be ignored without a word (other RPBENCH_ variables, and key variables
            # named after a role, cannot be told from a misspelt role's; [default]'s can).
            asked = rest.removeprefix("default_")
            near = close_match(asked, fields)
            hint = (f"did you mean {ENV_PREFIX}DEFAULT_{near.upper()}? " if near else "") + (
                "extra is set in the models file only" if asked == "extra" else "not a setting of a role")
            raise InputError(f"environment variable {key}: {hint} (see `rpbench models --help`)")
        for name in sorted(fields, key=len, reverse=True):
            suffix = "_" + name
            if rest.endswith(suffix) and len(rest) > len(suffix):
                role = rest[: -len(suffix)]
                role = next((r for r in sorted(known_roles) if r.replace("-", "_") == role), role)
                annotation = str(fields[name])
                kind = int if "int" in annotation else float if "float" in annotation else str
                try:
                    value = _coerce(kind, raw)
                except ValueError:
                    whose = "the default" if role == "default" else f"role {role}"
                    raise InputError(f"environment variable {key}: '{raw}' is not a number "
                                     f"(it sets {name} of {whose})") from None
                target = default if role == "default" else roles.setdefault(role, {})
                target[name] = (value, f"environment {key}")
                break
        else:
            _check_misspelt_field(key, rest, known_roles, fields)
    return default, roles


def _check_misspelt_field(key: str, rest: str, known_roles: set[str], fields: Mapping[str, Any]) -> None:
    """A variable that names a known role and then a setting a letter or two off (RPBENCH_JUDGE_TEMPERATUR)
    would be ignored without a word. Other variables are left alone: a key's variable may well be called
    RPBENCH_JUDGE_API_KEY, which is no setting, nor close enough to one."""
    parts = rest.split("_")
    for cut in range(1, len(parts)):
        role_part, asked = "_".join(parts[:cut]), "_".join(parts[cut:])
        if not any(r.replace("-", "_") == role_part for r in known_roles):
            continue
        near = close_match(asked, fields, cutoff=0.8)
        if near:
            raise InputError(f"environment variable {key}: did you mean {ENV_PREFIX}{role_part.upper()}_"
                             f"{near.upper()}? '{asked}' is not a setting of a role (see `rpbench models --help`)")


def presets() -> list[str]:
    """The models files that ship with rpbench, by name (``--models-file furina-paper``)."""
    return sorted(p.stem for p in PRESETS_DIR.glob("*.toml"))


def models_path(path: str | Path | None) -> Path:
    """The models file a user named: a path, or the name of a shipped preset; anything else is an error."""
    if not path:
        return DEFAULT_CONFIG_PATH
    given = Path(path)
    if given.is_file():
        return given
    if given.suffix == "" and len(given.parts) == 1 and (PRESETS_DIR / f"{given}.toml").is_file():
        return PRESETS_DIR / f"{given}.toml"
    near = close_match(str(path), presets()) if given.suffix == "" and len(given.parts) == 1 else None
    guess = f"did you mean '{near}'? " if near else ""
    raise InputError(f"{path}: models config not found (neither a file nor a preset; {guess}presets: "
                     f"{', '.join(presets())})")


def _mapping(value: Any, path: Path, where: str) -> dict[str, Any]:
    """A part of the models file that must be a table; anything else is one line naming the part."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        kind = {"str": "a string", "list": "a list", "int": "a number", "float": "a number"}.get(
            type(value).__name__, type(value).__name__)
        wanted = ("[default] and [roles.NAME] tables" if where == "the file"
                  else "a table of settings (model = ..., temperature = ...)")
        raise InputError(f"{path}: {where}: expected {wanted}, got {kind}")
    return value


def load_models_config(path: str | Path | None = None, environ: Mapping[str, str] | None = None,
                       roles: Mapping[str, tuple[str, Role]] | None = None) -> ModelsConfig:
    """Read a TOML or YAML models file (or a shipped preset, by name), apply environment overrides, validate.

    ``roles``: the roles the registered benchmark modes declare (role -> (mode, Role)), whose own settings
    sit under the file's; the kit passes them (``rpbench.flows.kit.front.registry.models_config``).
    """
    path = models_path(path)
    text = read_user_text(path, "a models config")
    try:
        data = load_yaml(text, path) if path.suffix in {".yaml", ".yml"} else tomllib.loads(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise InputError(f"{path}: cannot parse models config: {str(exc).splitlines()[0]}") from None
    data = _mapping(data, path, "the file")
    if not data:
        # An emptied file would otherwise bind every role to the embedded model, without a word.
        raise InputError(f"{path}: the models file sets nothing (empty, or only comments): give [default] and "
                         "[roles.NAME] tables, or leave --models-file out to use the built-in roles")
    builtin = dict(roles or {})
    name = path.stem if path.parent == PRESETS_DIR else str(path)
    if path == DEFAULT_CONFIG_PATH:
        name = "built-in models file"
    default = _mapping(data.get("default"), path, "default")
    file_roles = {role: _mapping(spec, path, f"roles.{role}")
                  for role, spec in _mapping(data.get("roles"), path, "roles").items()}
    env_default, env_roles = _env_layers({*file_roles, *builtin}, os.environ if environ is None else environ)
    layers = RoleLayers(
        builtin=builtin, file_default=_layer(default, f"{name} [default]"), env_default=env_default,
        file_roles={role: _layer(spec, f"{name} [roles.{role}]") for role, spec in file_roles.items()},
        env_roles=env_roles)
    # Every role the file or the environment binds, merged now (a mode's own roles when first asked for).
    merged = {"default": layers.merged(None)} | {role: layers.merged(role) for role in sorted({*file_roles,
                                                                                              *env_roles})}
    values = {role: {k: v for k, (v, _s) in layer.items()} for role, layer in merged.items()}
    data = {**data, "default": values.pop("default"), "roles": values}
    try:
        config = ModelsConfig.model_validate(data)
    except ValidationError as exc:
        where, msg = first_error(exc)
        section, _, field_name = where.rpartition(".")
        in_role = section.startswith(("default", "roles."))
        if exc.errors()[0]["type"] == "extra_forbidden" and (in_role or not section):
            known = ModelSpec.model_fields if in_role else ModelsConfig.model_fields
            near = close_match(field_name, known)  # a typo is the likely cause of an unknown key
            msg = f"did you mean '{near}'? " if near else ""
            if in_role:
                msg += (f"not a setting of a role (see `rpbench models --help`); an option for litellm itself goes "
                        f"in [{section}.extra]: {field_name} = ...")
            else:
                msg += f"not a section of a models file (the sections: {', '.join(known)})"
        role = "default" if section == "default" else section.removeprefix("roles.")
        source = merged.get(role, {}).get(field_name, (None, ""))[1]
        if source.startswith("environment "):  # the value came from a variable, not from the file
            raise InputError(f"{source.replace('environment', 'environment variable', 1)}: field '{where}': "
                             f"{msg}") from None
        raise InputError(f"{path}: field '{where}': {msg}" if where != "record" else f"{path}: {msg}") from None
    config._layers = layers
    # Whatever a models file names as holding a key is a secret, whatever the variable is called.
    register_secret_names(config.key_variables())
    return config
