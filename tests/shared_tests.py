"""The shared tests every mode must pass unedited, and one command that runs them for one mode:

    .venv/bin/python -m tests.shared_tests MODE

Each test parametrized by mode (the hardening tests' kills, faults and secrets scan, the plan against the run, the
viewer) runs for MODE alone; the tests that check every registered mode at once (wiring, registration, commands,
deployments, code digests, released files, lint and types, the docs' code blocks, packaging) run whole. A mode
registered by its entry point is found by all of them: none holds a list a new mode must be added to, except
``tests/test_releases.py``'s list of the modes that read a release (a mode with a ``release.toml`` joins it)."""

from __future__ import annotations

import sys

SHARED = ("tests/test_hardening.py", "tests/test_plan.py", "tests/test_viewer.py", "tests/test_wiring.py",
          "tests/test_modes.py", "tests/test_cli.py", "tests/test_deployments.py", "tests/test_code_digest.py",
          "tests/test_releases.py", "tests/test_code_quality.py", "tests/test_docs.py", "tests/test_packaging.py")


def selection(mode: str, registered: list[str]) -> str:
    """pytest's ``-k``: MODE's own cases of the parametrized tests, and every test parametrized by none."""
    others = " or ".join(f"[{m}]" for m in registered if m != mode)
    return f"[{mode}] or not ({others})" if others else f"[{mode}] or not []"


def main(argv: list[str]) -> int:
    import pytest

    from rpbench.flows.kit.front.registry import modes

    registered = sorted(modes())
    if len(argv) != 1 or argv[0] not in registered:
        print(f"usage: python -m tests.shared_tests MODE (one of: {', '.join(registered)})", file=sys.stderr)
        return 2
    return int(pytest.main(["-q", "-n", "2", *SHARED, "-k", selection(argv[0], registered)]))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
