"""Deployments are declared for every flow of every mode, with settings as parameters (no server needed)."""

from __future__ import annotations


def test_deployments_declare_every_flow_and_a_nightly_schedule():
    from rpbench.deployments.serve import deployments
    from rpbench.flows.kit.front.registry import modes
    from rpbench.flows.modes.furina.settings import EvalSettings

    deps = {(d.flow_name, d.name): d for d in deployments()}
    for mode in modes().values():
        for flow in mode.load_flows().values():
            assert (flow.name, "on-demand") in deps
    assert ("rpbench-train-lora", "on-demand") in deps
    assert ("rpbench-suite", "on-demand") in deps
    weekly = deps[("rpbench-build-pool", "weekly-pool-refresh")]
    assert weekly.schedules[0].schedule.cron == "0 2 * * 1"
    assert weekly.parameters == {"settings": {"books": ["books/inbox"], "out": "runs/pool"}}
    nightly = deps[("rpbench-evaluate", "nightly-eval")]
    assert nightly.parameters == {"settings": EvalSettings(bench="runs/bench", models=["local-greedy"],
                                                           out="runs/eval-nightly").model_dump()}
    assert nightly.schedules[0].schedule.cron == "0 3 * * *"
    # The parameters are the flow's own settings model: Prefect validates them against it.
    from prefect.utilities.callables import parameter_schema

    from rpbench.flows.modes.furina.evaluate import evaluate

    schema = parameter_schema(evaluate).model_dump()
    assert list(schema["properties"]) == ["settings"] and "EvalSettings" in str(schema["definitions"])


def test_a_folder_of_books_stands_for_the_books_in_it_when_the_run_starts(tmp_path):
    from rpbench.flows.modes.furina.settings import PoolSettings

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "b.txt").write_text("x")
    (inbox / "notes.md").write_text("not a book")
    assert PoolSettings(books=[str(inbox)]).books == [str(inbox / "b.txt")]
    (inbox / "a.epub").write_bytes(b"x")  # dropped in before the next run
    assert PoolSettings(books=[str(inbox)]).books == [str(inbox / "a.epub"), str(inbox / "b.txt")]


def test_trigger_takes_a_setting_by_its_field_or_by_its_command_line_name():
    from prefect.utilities.callables import parameter_schema

    from rpbench.deployments.trigger import parse_params, typed
    from rpbench.flows.modes.furina.evaluate import evaluate
    from rpbench.tasks.core.errors import InputError

    schema = parameter_schema(evaluate).model_dump()
    given = parse_params(["model=openai/gpt-4o", "models-file=m.toml", "resamples=50"])
    assert typed(given, schema, "rpbench-evaluate/x") == {"models": ["openai/gpt-4o"], "models_file": "m.toml",
                                                          "resamples": 50}
    assert typed(parse_params(["models=a", "models=b"]), schema, "d") == {"models": ["a", "b"]}
    import pytest

    with pytest.raises(InputError, match="has no setting 'modle'"):
        typed(parse_params(["modle=x"]), schema, "rpbench-evaluate/x")
