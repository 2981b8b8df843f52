"""One import name: the wheel installs `rpbench` and nothing else, with the data the demo reads at run time."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.helpers import TEST_KEY_ENV, loopback_models_file

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_FOLDERS = ("flows", "tasks", "storage", "prompts", "deployments", "samples")

# The module's tests share module-scoped fixtures (a server, a trained adapter, a work folder): one worker
# runs them all, so the fixtures are made once.
pytestmark = pytest.mark.xdist_group("packaging")


def test_every_python_package_folder_is_found_without_a_list_to_keep():
    """setup.py makes the package list from the tree: pyproject.toml lists none (a new folder needs no line)."""
    import runpy

    assert "packages" not in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = {"rpbench." + ".".join(p.parent.relative_to(ROOT).parts)
             for top in PACKAGE_FOLDERS for p in (ROOT / top).rglob("__init__.py")}
    setup_py = runpy.run_path(str(ROOT / "setup.py"), run_name="not_main_setup")
    assert set(setup_py["packages"]()) == found and "rpbench.flows.modes.coser" in found


def _copy_of_the_tree(into: Path) -> Path:
    """The working tree's tracked and new files, copied (so a build leaves the checkout clean)."""
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    for name in files:
        if (ROOT / name).is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, into / name)
    return into


def _build_wheel(src: Path, out: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(out)], check=True, capture_output=True)
    (path,) = out.glob("rpbench-*.whl")
    return path


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built from a copy of the working tree (tracked and new files), so the checkout stays clean."""
    return _build_wheel(_copy_of_the_tree(tmp_path_factory.mktemp("src")), tmp_path_factory.mktemp("dist"))


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


def test_a_new_mode_needs_its_folder_and_its_entry_point_only(tmp_path, loopback):
    """The tutorial's quiz mode as a package of its own, ``flows/modes/quizmode``, with one line added to
    pyproject.toml (its entry point): the wheel carries it, and the installed command runs it on the loopback
    server, with no other edit and no list of packages to extend."""
    src = _copy_of_the_tree(tmp_path / "src")
    folder = src / "flows" / "modes" / "quizmode"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    own = (ROOT / "tests" / "toy_quiz.py").read_text(encoding="utf-8")
    (folder / "mode.py").write_text(own.replace("tests.toy_quiz", "rpbench.flows.modes.quizmode.mode"), "utf-8")
    pyproject = src / "pyproject.toml"
    section = '[project.entry-points."rpbench.modes"]\n'
    pyproject.write_text(pyproject.read_text().replace(
        section, section + 'toy-quiz = "rpbench.flows.modes.quizmode.mode:TOY"\n'))
    built = _build_wheel(src, tmp_path / "dist")
    assert "rpbench/flows/modes/quizmode/mode.py" in zipfile.ZipFile(built).namelist()
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(built)],
                   check=True, capture_output=True)

    loopback.responder = lambda body: "blue" if "sky" in body["messages"][-1]["content"] else "no idea"
    quiz = tmp_path / "quiz.jsonl"
    quiz.write_text('{"id": "q1", "question": "What colour is the sky?", "answer": "blue"}\n'
                    '{"id": "q2", "question": "What do bees make?", "answer": "honey"}\n')
    models = loopback_models_file(tmp_path / "models.toml", loopback)
    run = textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{str(target)!r}, {sysconfig.get_paths()["purelib"]!r}]
        import rpbench.flows.modes.quizmode.mode as mode
        assert mode.__file__.startswith({str(target)!r}), mode.__file__
        from rpbench.flows.cli.main import main
        sys.argv = ["rpbench", "toy-quiz", "run", "--questions", {str(quiz)!r}, "--model", "quizzer",
                    "--models-file", {str(models)!r}, "--out", {str(tmp_path / "out")!r},
                    "--cache", {str(tmp_path / "c.sqlite")!r}]
        main()
    """)
    env = {**os.environ, TEST_KEY_ENV: "k"}
    proc = subprocess.run([sys.executable, "-S", "-c", run], capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=600)
    assert proc.returncode == 0, (proc.stdout[-1500:], proc.stderr[-3000:])
    assert "quizzer: accuracy 50.0" in proc.stdout
    assert len(loopback.requests) == 2


def test_a_sample_folder_seen_through_an_editable_installs_links_is_the_source_folder(tmp_path):
    """An editable install links each file from folders of its own: a sample folder is shown (and read) where
    the sources are, so a user sees no build/ path and a file added since the install is there."""
    from rpbench.samples import source_of

    source = tmp_path / "src" / "samples" / "rolellm"
    (source / "profiles").mkdir(parents=True)
    (source / "profiles" / "a.json").write_text("{}", encoding="utf-8")
    (source / "added-since.jsonl").write_text("", encoding="utf-8")
    tree = tmp_path / "build" / "__editable__" / "samples" / "rolellm"
    (tree / "profiles").mkdir(parents=True)
    (tree / "profiles" / "a.json").symlink_to(source / "profiles" / "a.json")
    assert source_of(tree) == source
    assert source_of(tree / "profiles" / "a.json") == source / "profiles" / "a.json"
    plain = tmp_path / "wheel" / "samples"
    plain.mkdir(parents=True)
    assert source_of(plain) == plain  # no links: as it is
