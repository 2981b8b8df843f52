"""Shared fixtures: an offline environment, the loopback server, gateways bound to it."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

# Offline and quiet before anything imports prefect, litellm or transformers.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from rpbench.flows.kit.running.environment import setup_environment

# Two workers share two cores: the local model's threads (llama.cpp, torch) take one core each, as threads that
# wait on a core another worker holds slow every step (set before torch is imported; subprocesses inherit it).
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    os.environ.setdefault("RPBENCH_LOCAL_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
# One Prefect home per test worker (the suite runs on two, pytest-xdist): their result storage stays apart.
setup_environment(prefect_home=Path(__file__).resolve().parent.parent
                  / f".prefect-test-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}")

# The benchmarks' released code (their prompts' words), beside the checkout as ../shared/data is: every run in the
# tests reads it from there, as a user's runs read `rpbench releases fetch`'s copy.
from tests.shared_copies import use_shared_releases  # noqa: E402

use_shared_releases()

import pytest  # noqa: E402

from rpbench.tasks.llm.cache import CallCache  # noqa: E402
from rpbench.tasks.llm.gateway import Gateway  # noqa: E402
from tests.helpers import TEST_KEY_ENV, loopback_config  # noqa: E402

# litellm binds its log handlers to the stream stderr was when it was imported (pytest's capture file then,
# closed later): a warning it logs in a later test would write to a closed file and take pytest's own
# stderr down with it. The process's real stderr stays open.
for _name in ("LiteLLM", "LiteLLM Proxy", "LiteLLM Router"):
    for _handler in logging.getLogger(_name).handlers:
        if isinstance(_handler, logging.StreamHandler):
            _handler.setStream(sys.__stderr__)
# absl (under rouge-score) makes its handler on import, on the stream stderr is then; when logging is configured
# again (Prefect's first flow in the process), the old handlers are closed, and absl's closes its stream if that
# is not the stderr of that moment: pytest's capture file, which takes pytest's stderr down with it ("lost
# sys.stderr") in whichever test comes next. Bound to the process's real stderr, which it never closes.
import absl.logging  # noqa: E402

absl.logging.get_absl_handler().python_handler.stream = sys.__stderr__
from tests.loopback import LoopbackServer  # noqa: E402
from tests.shared_copies import SHARED  # noqa: E402

# A clone without ../shared/releases (the releases' code is not ours to ship; CI has it): every time a run finds a
# release file missing (prompts/releases.py builds the one line it says then) is noted, for the report hook below.
_RELEASES_HERE = (SHARED / "releases").is_dir() or "RPBENCH_RELEASES" in os.environ
_missing_release: list[str] = []
# How that line ends (a command's output, which the failure shows cut in the middle, keeps its end).
_RELEASE_NOT_THERE = "to a copy holding it)"
if not _RELEASES_HERE:
    import rpbench.prompts.releases as _releases

    _problem = _releases._problem

    def _noted_problem(release, path, state, root):
        _missing_release.append(f"{release.name}'s {path}")
        return _problem(release, path, state, root)

    _releases._problem = _noted_problem


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Without the releases' code here, a test that failed because a run it made found a release file missing (in
    this process, or said in what the failure shows of a command's output) is skipped, saying so. With the folder
    there, such a stop is a failure as any other."""
    if call.when == "setup":
        _missing_release.clear()
    report = yield
    if report.failed and not _RELEASES_HERE and (_missing_release or _RELEASE_NOT_THERE in str(report.longrepr)):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0,
                           f"Skipped: the releases' code is not here: {SHARED / 'releases'} (see "
                           "../shared/releases/README.md); this test runs a benchmark that reads its words from it"
                           + (f" ({_missing_release[0]})" if _missing_release else ""))
    return report


@pytest.fixture(scope="session")
def harness():
    """One temporary Prefect server for the whole session: every in-process flow and command runs on it (each
    server costs seconds to start, and flows in one process may share one)."""
    from prefect.testing.utilities import prefect_test_harness

    # The harness server is this session's alone, like a command's temporary server: the gateway's own bounds
    # hold, and sharing limits through it would only slow every later test's requests (tests of shared limits
    # run their own server and turn sharing on).
    os.environ["RPBENCH_SHARED_LIMITS"] = "0"
    with prefect_test_harness(server_startup_timeout=120):
        from prefect.settings import PREFECT_API_URL

        from rpbench.flows.kit.scale.shared_limits import OWN_SERVER_ENV

        # And it ends with the session: flow runs send it no heartbeats, as on a command's temporary server.
        os.environ[OWN_SERVER_ENV] = str(PREFECT_API_URL.value())
        try:
            yield
        finally:
            os.environ.pop(OWN_SERVER_ENV, None)


@pytest.fixture(scope="session")
def _server():
    server = LoopbackServer().start()
    yield server
    server.stop()


@pytest.fixture
def loopback(_server):
    """The session's loopback server, with scripts, faults and request log cleared."""
    _server.reset()
    yield _server
    _server.reset()


@pytest.fixture
async def make_gateway(loopback, tmp_path, monkeypatch):
    """Build a gateway bound to the loopback server, with a call cache under tmp_path; closed after the test
    (an HTTP session left open is reported, with a traceback, when the test process exits)."""
    monkeypatch.setenv(TEST_KEY_ENV, "sk-test-abcdef0123456789")
    made: list[Gateway] = []

    def make(cache: bool = True, **overrides) -> Gateway:
        made.append(Gateway(
            loopback_config(loopback, **overrides), CallCache(tmp_path / "calls.sqlite") if cache else None
        ))
        return made[-1]

    yield make
    for gateway in made:
        await gateway.aclose()

