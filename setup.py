"""Package discovery for the one import name: every folder with an ``__init__.py`` under the top-level folders
installs as ``rpbench.<folder>...`` (``pyproject.toml`` maps each top-level folder to its name). setuptools'
own discovery cannot add the prefix, so the list is made here, from the tree: a new benchmark's folders need
no edit of ``pyproject.toml`` beyond its entry point."""

from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).resolve().parent
TOP_LEVEL = ("flows", "tasks", "storage", "prompts", "deployments", "samples")


def packages() -> list[str]:
    found = {"rpbench." + ".".join(init.parent.relative_to(ROOT).parts)
             for top in TOP_LEVEL for init in (ROOT / top).rglob("__init__.py")}
    return sorted(found)


if __name__ == "__main__":  # run by the build backend (and not when a test reads the list)
    setup(packages=packages())
