"""The manual: the README stays short and keeps its two commands, the MkDocs site builds with --strict (a
broken link or a missing page fails), its command reference holds every command and option of the command
line, and in a browser the built site opens, its navigation reaches every page and its search finds a
command by name."""

from __future__ import annotations

import functools
import http.server
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_is_short_and_gives_the_two_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode("utf-8")) <= 8 * 1024
    assert "bash .ci/setup && .venv/bin/rpbench furina demo" in readme
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    test_command = "bash .ci/setup dev && .venv/bin/python -m pytest -q -n 2 --dist loadgroup --durations=25"
    assert test_command in readme and test_command in ci
    pages = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs" / "benchmarks").glob("*.md"))
    assert len(pages) >= 8  # seven benchmarks and the overview: every one linked
    for link in ("docs/getting-started.md", "docs/reference/cli.md", *pages):
        assert f"]({link})" in readme and (ROOT / link).is_file(), link


def test_every_command_and_option_is_in_the_reference():
    from rpbench.flows.cli.reference import all_commands, reference_markdown

    text = reference_markdown()
    commands = list(all_commands())
    names = {words for words, _ in commands}
    assert {"rpbench coser run", "rpbench furina eval", "rpbench pingpong run"} <= names
    assert "rpbench eval" not in names and "| `rpbench eval` | `rpbench furina eval` | command |" in text  # listed once
    for words, cmd in commands:
        assert f"`{words}`" in text, words
        for p in cmd.params:
            if getattr(p, "param_type_name", "") == "option" and not getattr(p, "hidden", False) and p.name != "help":
                assert f"`{p.opts[0]}`" in text, (words, p.opts)
            elif getattr(p, "param_type_name", "") == "argument":  # named as --help names it, with its help
                name = (p.metavar or p.name).upper()
                assert f"| `{name}` | argument: " in text and "__" not in name, (words, name)


@functools.cache
def _built(folder: str) -> Path:
    site = Path(folder) / "site"
    ran = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)], cwd=ROOT,
                         capture_output=True, text=True, timeout=300, env={"NO_MKDOCS_2_WARNING": "1",
                                                                          **__import__("os").environ})
    assert ran.returncode == 0, ran.stderr[-3000:]
    return site


def _section(text: str, command: str) -> str:
    start = text.index(f"`{command}`\n")
    return text[start:text.find("\n#", start)]


def test_each_command_lists_only_its_own_options():
    """``rpbench models`` and ``prepare`` read the models file and nothing else: no budget, cache or batch."""
    from rpbench.flows.cli.reference import reference_markdown

    text = reference_markdown()
    for command in ("rpbench models", "rpbench prepare"):
        section = _section(text, command)
        assert "`--models-file`" in section
        assert not any(o in section for o in ("`--cache`", "`--max-cost`", "`--batch`", "`--keep-failures`"))
    assert "`--max-cost`" in _section(text, "rpbench coser run")


def test_the_site_builds_strict_with_the_reference_and_the_measured_figures(tmp_path):
    pytest.importorskip("mkdocs", reason="MkDocs is not installed (bash .ci/setup dev)")
    site = _built(str(tmp_path))
    reference = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "rpbench coser run" in reference and "--max-cost" in reference
    # Placeholders shown as written (not swallowed as HTML tags), and a default its own sentence.
    assert "RPBENCH__" not in reference and "RPBENCH_&lt;ROLE&gt;_&lt;FIELD&gt;" in reference
    assert ".Default:" not in reference and " Default: " in reference
    performance = (site / "performance" / "index.html").read_text(encoding="utf-8")
    results = (ROOT / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8")
    headline = next(line for line in results.splitlines() if line.startswith("Headline:"))
    assert headline.split("**")[1].split(" = ")[1] in performance  # included from what the benchmarks wrote
    # A short summary (a row per script), the full history staying in the repository.
    page = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    summary = (ROOT / "benchmarks" / "SUMMARY.md").read_text(encoding="utf-8")
    assert "RESULTS.md\"" not in page and len(page.splitlines()) + len(summary.splitlines()) < 120
    assert performance.count("<tr>") - 1 == sum(line.startswith("## ") for line in results.splitlines()) - 1
    rolellm = (site / "benchmarks" / "rolellm" / "index.html").read_text(encoding="utf-8")
    assert "OpenCompass&#39;s scoring (rpbench&#39;s default)" in rolellm or "OpenCompass's scoring (rpbench's default)" in rolellm
    assert (site / "screenshots" / "viewer-furina.png").is_file()
    tutorial = (site / "write-a-benchmark" / "index.html").read_text(encoding="utf-8")
    assert "check_quiz" in tutorial and "QuizSettings" in tutorial  # the toy mode the tests run, as it is
    assert "JudgedSettings" in tutorial and "grade_judged" in tutorial  # the judged example, as it is


def test_every_benchmark_is_a_group_and_furinas_old_names_are_aliases_that_say_so():
    from tests.helpers import rpbench

    for group in ("furina", "pingpong", "dmt", "roleinteract", "rolellm", "coser"):
        ran = rpbench(group, "--help")
        assert ran.returncode == 0 and "Usage: rpbench " + group in " ".join(ran.stdout.split()), group
    grouped, aliased = rpbench("furina", "build", "--help"), rpbench("build", "--help")
    assert grouped.returncode == aliased.returncode == 0
    assert "this top-level name goes in the next release" in " ".join(aliased.stdout.split())
    assert "next release" not in grouped.stdout
    listing = " ".join(rpbench("--help", env={"COLUMNS": "400"}).stdout.split())
    assert "furina" in listing and "(Also `rpbench furina eval`" in listing


def test_the_built_site_opens_navigates_every_page_and_finds_a_command(tmp_path):
    pytest.importorskip("mkdocs", reason="MkDocs is not installed (bash .ci/setup dev)")
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.helpers import headless_chromium

    browser = headless_chromium()
    site = _built(str(tmp_path))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *a, **k: None  # type: ignore[method-assign]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        browser.get(base)
        assert "rpbench" in browser.title
        links = {a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR, "a.md-nav__link[href]")}
        pages = {link.split("#")[0] for link in links if link and link.startswith(base)}
        wanted = {p.relative_to(site).parent.as_posix() for p in site.rglob("index.html")
                  if p.parent != site and not p.parent.name.startswith(("assets", "search", "screenshots"))}
        reached = {p.removeprefix(base).rstrip("/") for p in pages}
        assert wanted <= reached, wanted - reached
        for page in sorted(pages):
            browser.get(page)
            WebDriverWait(browser, 20).until(lambda b: b.find_elements(By.CSS_SELECTOR, "article h1"), page)
        browser.get(base)
        deadline, found = time.time() + 60, ""
        while time.time() < deadline:  # the index loads in a web worker: type again until it answers
            box = browser.find_element(By.CSS_SELECTOR, "input.md-search__input")
            box.click()  # the header's search field (the theme lists results under it as one types)
            box.clear()
            box.send_keys("coser run")
            time.sleep(1)
            found = " ".join(e.get_attribute("textContent") or ""
                             for e in browser.find_elements(By.CSS_SELECTOR, ".md-search-result__item"))
            if "coser" in found.lower():
                break
        meta = " ".join(e.get_attribute("textContent") or ""
                        for e in browser.find_elements(By.CSS_SELECTOR, ".md-search-result__meta"))
        assert "coser" in found.lower(), (found, meta, browser.get_log("browser")[-5:])
    finally:
        browser.quit()
        server.shutdown()


def test_the_pages_teach_each_benchmarks_commands_under_its_name():
    """FURINA's top-level names are aliases on their way out: the manual teaches `rpbench furina ...`."""
    import re

    old = re.compile(r"rpbench (build|export|eval|validate|demo|pool|characters)\b")
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in pages for m in old.finditer(p.read_text("utf-8"))]
    assert not found, found


def test_help_texts_keep_their_bracketed_words():
    """--help reads every help text as Rich markup: a description with a bracketed word ("no [thoughts]") lost
    it. Each command's and option's help must render as written."""
    from rich.text import Text

    from rpbench.flows.cli.reference import all_commands
    from tests.helpers import rpbench

    lost = []
    for words, cmd in all_commands():
        for name, text in [("", cmd.help or ""), *((p.name, getattr(p, "help", None) or "") for p in cmd.params)]:
            if Text.from_markup(text).plain != text.replace("\\[", "["):
                lost.append(f"{words} {name}")
    assert not lost, lost
    shown = rpbench("coser", "run", "--help", env={"COLUMNS": "200"})
    assert shown.returncode == 0 and "no [thoughts]" in shown.stdout


# -- the guide to adding a benchmark names only what exists ----------------------------------------------------
GUIDE = ROOT / "docs" / "write-a-benchmark.md"
# Where the names a mode's author uses live: the kit, the gateway's requests and roles, reports, storage, prompts.
KIT_PACKAGES = ("rpbench.flows.kit", "rpbench.tasks.llm", "rpbench.tasks.reports", "rpbench.tasks.core",
                "rpbench.tasks.annotation", "rpbench.tasks.choices", "rpbench.tasks.judged", "rpbench.storage",
                "rpbench.prompts")


@functools.cache
def _kit_names() -> dict[str, object]:
    import importlib
    import pkgutil

    names: dict[str, object] = {}
    for package in KIT_PACKAGES:
        root = importlib.import_module(package)
        modules = [root] + [importlib.import_module(m.name) for m in
                            pkgutil.walk_packages(getattr(root, "__path__", []), prefix=f"{package}.")]
        for module in modules:
            names.update({k: v for k, v in vars(module).items() if not k.startswith("_")})
    return names


def _python_blocks(text: str) -> list[str]:
    blocks = [b.split("```", 1)[0] for b in text.split("```python\n")[1:]]
    return [b for b in blocks if not b.lstrip().startswith("--8<--")]  # the tutorial's file, included whole


def test_every_name_a_code_block_of_the_guide_calls_exists_and_takes_what_it_is_given():
    """The guide's code: every function or class it calls is one the kit has, and every keyword it passes is
    one that takes it (a renamed field or a removed helper fails here, not in a newcomer's first run)."""
    import ast
    import inspect

    names = _kit_names()
    blocks = _python_blocks(GUIDE.read_text(encoding="utf-8"))
    assert blocks
    checked = 0
    for block in blocks:
        for node in ast.walk(ast.parse(block)):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            assert node.func.id in names, f"the guide calls {node.func.id}, which the kit does not have"
            target = names[node.func.id]
            parameters = inspect.signature(target).parameters  # type: ignore[arg-type]
            if not any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
                unknown = [k.arg for k in node.keywords if k.arg not in parameters]
                assert not unknown, f"the guide gives {node.func.id} {unknown}, which it does not take"
            checked += 1
    assert checked >= 4


def test_every_kit_name_and_path_the_guide_mentions_exists():
    """Each class-like name in backquotes (``EvalSettings``, ``Scored(...)``) is the kit's, and each path to a
    file of the repository is there."""
    import re

    text = GUIDE.read_text(encoding="utf-8")
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)  # the code blocks, checked above
    spans = [" ".join(s.split()) for s in re.findall(r"`([^`]+)`", prose)]
    names = _kit_names()
    classes = {m.group(1) for s in spans if (m := re.fullmatch(r"([A-Z][A-Za-z]+[a-z][A-Za-z]*)(\(.*\))?", s))}
    assert {"EvalSettings", "RunCommand", "Scored", "Role", "StageRun", "BenchmarkMode"} <= classes
    assert not sorted(c for c in classes if c not in names), "names the kit does not have"
    paths = {s.split(":")[0] for s in spans if re.fullmatch(r"[\w./-]+\.(py|md|toml)(:\w+)?", s) and "/" in s}
    assert paths and not sorted(p for p in paths if not (ROOT / p).exists()), "paths that are not there"
    for ref in re.findall(r'= "(rpbench\.[\w.]+:\w+)"', text):  # the entry point shown
        module, _, attribute = ref.partition(":")
        assert hasattr(__import__(module, fromlist=[attribute]), attribute), ref
