"""What a run warns of as it starts and in every report: a judge scoring its own model, roles left on the
embedded model beside real ones; worked out once per run."""


from __future__ import annotations

from rpbench.flows.kit.front.settings import RunSettings
from rpbench.flows.kit.running.self_judging import embedded_roles, self_judging
from rpbench.tasks.llm import ModelsConfig

_notes: dict[tuple[str, str, str], tuple[list[str], list[str]]] = {}


def judge_notes(settings: RunSettings, config: ModelsConfig) -> tuple[list[str], list[str]]:
    """A judge scoring its own model, and roles left on the embedded model beside real ones: worked out once for
    a run's settings and models (the run's start, its reports and its manifest all say them)."""
    key = (type(settings).__qualname__, settings.model_dump_json(), config.model_dump_json())
    if key not in _notes:
        if len(_notes) > 64:
            _notes.clear()
        _notes[key] = (self_judging(settings, config), embedded_roles(settings, config))
    return _notes[key]


def run_notes(settings: RunSettings, config: ModelsConfig) -> list[str]:
    """What a run says as it starts and every report of it carries (``judge_notes``, one list)."""
    return [line for lines in judge_notes(settings, config) for line in lines]
