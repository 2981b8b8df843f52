"""Scale-out pieces that need no cluster: the runner choice, work-pool deployments by module path, and the
clear errors around them. (A run on Dask workers is in tests/test_prefect_server.py; the whole cluster with
PostgreSQL and two Prefect workers runs in benchmarks/scaleout.py.)"""

from __future__ import annotations

import importlib
import subprocess

import pytest

from tests.helpers import CLI


def test_the_runner_comes_from_the_environment_and_an_unknown_one_is_an_error(monkeypatch):
    from prefect.task_runners import ThreadPoolTaskRunner
    from prefect_dask import DaskTaskRunner

    from rpbench.flows.kit.scale.runners import stage_runner, with_chosen_runner
    from rpbench.flows.modes.roleinteract.flows import roleinteract
    from rpbench.tasks.core.errors import InputError

    monkeypatch.delenv("RPBENCH_RUNNER", raising=False)
    runner = stage_runner(4)
    assert isinstance(runner, ThreadPoolTaskRunner) and runner._max_workers == 4
    assert with_chosen_runner(roleinteract) is roleinteract

    monkeypatch.setenv("RPBENCH_RUNNER", "dask")
    monkeypatch.setenv("RPBENCH_DASK_WORKERS", "3")
    local = stage_runner(6)
    assert isinstance(local, DaskTaskRunner)
    assert local.cluster_kwargs["n_workers"] == 3 and local.cluster_kwargs["processes"] is True
    assert local.cluster_kwargs["threads_per_worker"] == 2
    assert isinstance(with_chosen_runner(roleinteract).task_runner, DaskTaskRunner)
    monkeypatch.setenv("RPBENCH_DASK_ADDRESS", "tcp://10.0.0.5:8786")
    assert stage_runner(4).address == "tcp://10.0.0.5:8786"

    monkeypatch.setenv("RPBENCH_DASK_WORKERS", "0")
    monkeypatch.delenv("RPBENCH_DASK_ADDRESS")
    with pytest.raises(InputError, match="RPBENCH_DASK_WORKERS"):
        stage_runner(4)
    monkeypatch.setenv("RPBENCH_RUNNER", "spark")
    with pytest.raises(InputError, match=r"unknown runner \(RPBENCH_RUNNER\) 'spark' \(known: dask, threads\)"):
        stage_runner(4)


@pytest.mark.parametrize(("args", "env", "message"), [
    (["--runner", "spark", "models"], {}, "error: unknown runner (RPBENCH_RUNNER) 'spark' (known: dask, threads)"),
    (["models"], {"RPBENCH_RUNNER": "spark"}, "error: unknown runner (RPBENCH_RUNNER) 'spark'"),
    (["deploy", "--pool", "p"], {}, "error: deploy --pool: PREFECT_API_URL is not set"),
])
def test_bad_scale_out_settings_are_one_line(args, env, message, monkeypatch, tmp_path):
    import os

    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RPBENCH_RUNNER", "PREFECT_API_URL"))}
    proc = subprocess.run([*CLI, *args], env={**clean, "PREFECT_HOME": str(tmp_path), **env},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith(message), proc.stderr
    assert "Traceback" not in proc.stderr


def test_work_pool_deployments_name_their_flows_by_module_path_and_carry_the_runner(monkeypatch):
    """A process worker imports each flow from the installed package: the entrypoint must lead back to it, and
    the runner the deploying command chose must reach the worker's flow runs (as job variables)."""
    from prefect.deployments.runner import EntrypointType

    from rpbench.deployments.serve import RUNNER_ENV, deployments

    monkeypatch.setenv("RPBENCH_RUNNER", "dask")
    env = {k: "dask" for k in RUNNER_ENV[:1]}
    made = deployments(entrypoint_type=EntrypointType.MODULE_PATH, job_variables={"env": env})
    assert len(made) > 10
    for d in made:
        module, _, name = d.entrypoint.rpartition(".")
        assert module.startswith("rpbench.flows."), d.entrypoint
        assert getattr(importlib.import_module(module), name).name == d.flow_name
        assert d.job_variables == {"env": {"RPBENCH_RUNNER": "dask"}}


def test_a_missing_key_variable_is_said_plainly(monkeypatch):
    import aiohttp

    from rpbench.tasks.llm.call_errors import MissingKeyError
    from rpbench.tasks.llm.litellm_call import add_transport

    monkeypatch.delenv("RPBENCH_NO_SUCH_KEY", raising=False)

    async def check() -> None:
        async with aiohttp.ClientSession() as session:
            with pytest.raises(MissingKeyError, match="RPBENCH_NO_SUCH_KEY is not set in this process"):
                add_transport({"model": "openai/x"}, "RPBENCH_NO_SUCH_KEY", session)
            monkeypatch.setenv("RPBENCH_NO_SUCH_KEY", "sk-1")
            assert add_transport({"model": "openai/x"}, "RPBENCH_NO_SUCH_KEY", session)["api_key"] == "sk-1"

    import asyncio

    asyncio.run(check())


def test_the_vllm_preset_points_every_role_at_one_openai_compatible_server():
    from rpbench.flows.kit.front.registry import builtin_roles
    from rpbench.tasks.llm import load_models_config
    from rpbench.tasks.llm.config import presets

    assert "vllm" in presets()
    config = load_models_config("vllm", environ={"RPBENCH_DEFAULT_API_BASE": "http://gpu-host:8000/v1"})
    for role in builtin_roles():
        spec = config.for_role(role)
        assert spec.model.startswith("hosted_vllm/") and spec.api_base == "http://gpu-host:8000/v1", role
        assert spec.api_key_env == "VLLM_API_KEY" and spec.structured == "json_schema"
