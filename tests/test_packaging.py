"""One import name: the wheel installs `rpbench` and nothing else, with the data the demo reads at run time."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import textwrap
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_FOLDERS = ("flows", "tasks", "storage", "prompts", "deployments", "samples")

# The module's tests share module-scoped fixtures (a server, a trained adapter, a work folder): one worker
# runs them all, so the fixtures are made once.
pytestmark = pytest.mark.xdist_group("packaging")


def test_every_python_package_folder_is_listed_in_pyproject():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {"rpbench." + ".".join(p.parent.relative_to(ROOT).parts)
             for top in PACKAGE_FOLDERS for p in (ROOT / top).rglob("__init__.py")}
    assert found - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"
    assert listed - found == set(), "these are listed in pyproject.toml but have no __init__.py"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built from a copy of the working tree (tracked and new files), so the checkout stays clean."""
    src = tmp_path_factory.mktemp("src")
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    for name in files:
        if (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(out)], check=True, capture_output=True)
    (path,) = out.glob("rpbench-*.whl")
    return path


def test_the_wheel_adds_only_rpbench(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"rpbench", wheel.name.split("-py3")[0] + ".dist-info"}
    for needed in ("rpbench/prompts/furina/eval/judge.en.j2", "rpbench/tasks/llm/default_models.toml",
                   "rpbench/samples/books/the_keepers_ledger.en.txt", "rpbench/samples/characters/starter.en.yaml"):
        assert needed in names


def test_an_install_of_the_wheel_alone_finds_its_data(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                   check=True, capture_output=True)
    # -S: no .pth processing, so the editable checkout cannot stand in for a file the wheel lacks.
    check = textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{str(target)!r}, {sysconfig.get_paths()["purelib"]!r}]
        import rpbench.flows.cli.main as cli
        assert cli.__file__.startswith({str(target)!r}), cli.__file__
        from rpbench import prompts
        from rpbench.flows.modes.furina.demo import DEMO_BOOK, DEMO_CHARACTERS
        from rpbench.tasks.llm import load_models_config
        assert DEMO_BOOK.is_file() and DEMO_CHARACTERS.is_file()
        assert "furina/eval/judge.en.j2" in prompts.all_templates()
        assert load_models_config(environ={{}}).default.model.startswith("local/")
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-S", "-c", check], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
