"""A judge scoring its own answers: LLM judges prefer their own replies (self-preference), so a judge, checker or
critic bound to the same model as a model under test is pointed out, on the command line and in the manifest,
never silently accepted."""

from __future__ import annotations

from rpbench.flows.kit.front.registry import builtin_roles
from rpbench.flows.kit.front.settings import RunSettings
from rpbench.tasks.llm import ModelsConfig


def _model_string(config: ModelsConfig, name: str, roles: frozenset[str]) -> str:
    """The model a name calls: a role's model, or the name itself (a model string)."""
    return config.for_role(name).model if name in config.roles or name in roles else name


Judging = tuple[list[str], list[str]]  # the models under test and the judges (``RunSettings.judging``)


def self_judging(settings: RunSettings, config: ModelsConfig, judging: Judging | None = None) -> list[str]:
    """One line per judge bound to the same model string as a model under test."""
    tested, judges = judging or settings.judging()
    if not tested or not judges:
        return []
    roles = frozenset(builtin_roles())
    under_test = {name: _model_string(config, name, roles) for name in tested}
    lines = []
    for judge in judges:
        model = _model_string(config, judge, roles)
        same = [name for name, m in under_test.items() if m == model]
        if same:
            lines.append(f"judge '{judge}' is the same model as the model(s) under test {', '.join(same)} "
                         f"({model}): it scores its own answers, and LLM judges favour their own")
    return lines


def embedded_roles(settings: RunSettings, config: ModelsConfig, judging: Judging | None = None) -> list[str]:
    """One line when a run mixes real models with roles left on the embedded 135M model: a user who names
    openai/gpt-4o as the model under test should not find the user emulator or the critic of that run played
    by a demo model without being told, before anything is sent."""
    from rpbench.tasks.llm.config import is_embedded

    tested, judges = judging or settings.judging()
    names = dict.fromkeys([*tested, *judges, *settings.helper_roles()])
    if not names:
        return []
    roles = frozenset(builtin_roles())
    models = {name: _model_string(config, name, roles) for name in names}
    local = [name for name, model in models.items() if is_embedded(model)]
    if not local or len(local) == len(models):
        return []
    return [f"roles {', '.join(local)} run on the embedded local model (SmolLM2-135M, for demos and tests) beside "
            f"real models: bind them in a models file (--models-file, [roles.NAME] model = ...) or with "
            f"RPBENCH_<ROLE>_MODEL"]
