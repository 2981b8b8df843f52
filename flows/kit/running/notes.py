"""What a run warns of as it starts and in every report: a judge scoring its own model, roles left on the
embedded model beside real ones; worked out once per run."""


from __future__ import annotations

from typing import Any

from rpbench.flows.kit.front.settings import RunSettings
from rpbench.flows.kit.running.self_judging import Judging, embedded_roles, self_judging
from rpbench.tasks.core.secrets import scrub
from rpbench.tasks.llm import ModelsConfig

_notes: dict[tuple[str, str, str], tuple[list[str], list[str], list[str]]] = {}


def _worked_out(settings: RunSettings, config: ModelsConfig) -> tuple[list[str], list[str], list[str]]:
    """A judge scoring its own model, roles left on the embedded model beside real ones, and the benchmark's
    settings a user's replaces: worked out once for a run's settings and models (the run's start, its reports and
    its manifest all say them)."""
    key = (type(settings).__qualname__, settings.model_dump_json(), config.model_dump_json())
    if key not in _notes:
        if len(_notes) > 64:
            _notes.clear()
        judging = settings.judging()
        _notes[key] = (self_judging(settings, config, judging), embedded_roles(settings, config, judging),
                       overridden(settings, config, judging))
    return _notes[key]


def judge_notes(settings: RunSettings, config: ModelsConfig) -> tuple[list[str], list[str]]:
    """A judge scoring its own model, and roles left on the embedded model beside real ones."""
    judging_self, left_embedded, _ = _worked_out(settings, config)
    return judging_self, left_embedded


def run_notes(settings: RunSettings, config: ModelsConfig) -> list[str]:
    """What a run says as it starts and every report of it carries (``judge_notes``, one list, then the
    benchmark settings a user's setting replaces)."""
    return [line for lines in _worked_out(settings, config) for line in lines]


def overridden(settings: RunSettings, config: ModelsConfig, judging: Judging) -> list[str]:
    """One line per setting of a benchmark's own (its release's sampling) that the user's setting for one of the
    run's roles replaces: said, never silent."""
    tested, judges = judging
    lines = []
    for name in dict.fromkeys([*tested, *judges, *settings.helper_roles()]):
        for field, release, sent, where in config.overrides(name):
            lines.append(f"role {name}: {field} {sent!r} ({where}) replaces the benchmark's own {release!r}")
    return lines


# What the manifest says of each role a run called: the settings that decide its replies, each with where it came
# from (a benchmark's own, the embedded model's tuning, the models file, the environment).
SENT = ("model", "temperature", "top_p", "max_tokens", "seed", "extra", "structured")


def role_settings(config: ModelsConfig, roles: set[str]) -> dict[str, Any]:
    """Per role called: each setting sent and its source, and the benchmark's settings a user's setting replaced."""
    out = {}
    for role in sorted(roles):
        spec, sources = config.for_role(role), config.sources_of(role)
        values = spec.model_dump()
        out[role] = {**{k: {"value": scrub(values[k], []) if k == "extra" else values[k],
                            "from": sources.get(k, "built in")} for k in SENT},
                     "replaces": [f"{field} {sent!r} ({where}) replaces the benchmark's own {release!r}"
                                  for field, release, sent, where in config.overrides(role)]}
    return out
