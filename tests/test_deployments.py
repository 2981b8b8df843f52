"""Deployments are declared with the right flows, parameters and schedule (no server needed)."""

from __future__ import annotations


def test_deployments_declare_flows_and_a_nightly_schedule():
    from rpbench.deployments.serve import NIGHTLY_EVAL, deployments

    deps = {(d.flow_name, d.name): d for d in deployments()}
    assert ("rpbench-evaluate", "nightly-eval") in deps and ("rpbench-build-pool", "on-demand") in deps
    nightly = deps[("rpbench-evaluate", "nightly-eval")]
    assert nightly.parameters == NIGHTLY_EVAL
    assert nightly.schedules[0].schedule.cron == "0 3 * * *"
