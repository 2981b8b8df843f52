"""The benchmarks' released code as pinned data: each mode's declared files match the pinned copies (their sha256
is the one ../shared/releases/MANIFEST.tsv gives), `rpbench releases` says where they are read from and what is
missing, `rpbench releases fetch` downloads and checks them (one line and exit 2 when the network is down, a file
comes with other bytes, or the repository has no such file), and a run without them stops before any call."""

from __future__ import annotations

import csv
import hashlib
import http.server
import shutil
import threading
from pathlib import Path

import pytest

from rpbench.samples import sample_path
from tests.helpers import rpbench
from tests.release_code import RELEASES

pytestmark = pytest.mark.usefixtures("harness")


def _declared():
    from rpbench.flows.kit.front.registry import modes

    return {name: mode.load_releases() for name, mode in modes().items()}


def test_every_declared_file_is_pinned_as_the_shared_manifest_pins_it():
    manifest = RELEASES / "MANIFEST.tsv"
    if not manifest.is_file():
        pytest.skip(f"the releases' manifest is not here: {manifest}")
    pinned = {(r["repository"], r["commit"], r["path"]): r["sha256"]
              for r in csv.DictReader(manifest.open(encoding="utf-8"), delimiter="\t")}
    declared = _declared()
    assert {n for n, found in declared.items() if found} == {"characterbench", "coser", "pingpong", "roleinteract",
                                                             "personagym", "rolellm", "rpbench-auto"}
    for name, found in declared.items():
        for release in found:
            assert release.benchmark == name
            for path, digest in release.files.items():
                assert pinned[(release.repository, release.commit, path)] == digest, (name, path)
                held = RELEASES / release.folder / path
                assert hashlib.sha256(held.read_bytes()).hexdigest() == digest, held


class _Repository(http.server.BaseHTTPRequestHandler):
    """raw.githubusercontent.com on loopback: a release's files from a folder, one of them altered on demand."""

    root: Path = RELEASES
    altered: str = ""

    def do_GET(self) -> None:  # the name http.server calls
        _, repository_owner, repository_name, commit, *path = self.path.split("/")
        folder = self.root / f"{repository_owner}__{repository_name}@{commit}"
        target = folder.joinpath(*path)
        if not target.is_file():
            self.send_error(404, "Not Found")
            return
        data = target.read_bytes()
        if "/".join(path) == self.altered:
            data += b"\n# not the pinned file\n"
        self.send_response(200)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def repository(monkeypatch):
    if not RELEASES.is_dir():
        pytest.skip(f"the releases are not here: {RELEASES}")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Repository)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr("rpbench.prompts.releases.RAW_URL",
                        f"http://127.0.0.1:{server.server_port}/{{repository}}/{{commit}}/{{path}}")
    yield _Repository
    server.shutdown()
    _Repository.altered, _Repository.root = "", RELEASES


def test_fetch_downloads_every_file_checks_it_and_keeps_what_is_there(repository, tmp_path):
    target = tmp_path / "releases"
    ran = rpbench("releases", "fetch", "pingpong", "roleinteract", "--releases", str(target))
    assert ran.returncode == 0, ran.stderr
    assert "pingpong: IlyaGusev/ping_pong_bench@4e3b0e0: 8 downloaded, 0 already there" in ran.stdout
    listed = rpbench("releases", "--releases", str(target))
    assert "pingpong: IlyaGusev/ping_pong_bench@4e3b0e0" in listed.stdout and "8 files, all there" in listed.stdout
    assert "characterbench: thu-coai/CharacterBench@f4ec56a" in listed.stdout and "missing" in listed.stdout
    again = rpbench("releases", "fetch", "pingpong", "--releases", str(target))
    assert again.returncode == 0 and "0 downloaded, 8 already there" in again.stdout
    # A shared releases folder gains only pinned files: no lock, no partial file, whatever a fetch did.
    pinned = {f"{r.folder}/{p}" for name in ("pingpong", "roleinteract") for r in _declared()[name] for p in r.files}
    held = {str(p.relative_to(target)) for p in target.rglob("*") if p.is_file()}
    assert held == pinned, sorted(held - pinned)[:5]


def test_fetch_says_in_one_line_when_it_cannot(repository, tmp_path, monkeypatch):
    target = tmp_path / "releases"
    repository.altered = "dataset.py"  # a file that comes with other bytes
    bad = rpbench("releases", "fetch", "roleinteract", "--releases", str(target))
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert "dataset.py: the downloaded file's sha256 is" in bad.stderr and "nothing was written" in bad.stderr
    assert not (target / "X-PLUG__SocialBench@1287b67034f6c76c4b3b068c51a3a9300f85ee0a" / "dataset.py").exists()
    repository.root = tmp_path / "empty"  # a repository that does not have the file
    missing = rpbench("releases", "fetch", "roleinteract", "--releases", str(target))
    assert missing.returncode == 2 and "HTTP 404" in missing.stderr and "could not be downloaded" in missing.stderr
    repository.root = RELEASES
    monkeypatch.setattr("rpbench.prompts.releases.RAW_URL", "http://127.0.0.1:9/{repository}/{commit}/{path}")
    offline = rpbench("releases", "fetch", "roleinteract", "--releases", str(target))
    assert offline.returncode == 2 and len(offline.stderr.strip().splitlines()) == 1
    assert "could not be downloaded" in offline.stderr and "--releases DIR" in offline.stderr
    assert not target.exists()  # no folder tree, no lock file left behind by any of these
    unknown = rpbench("releases", "fetch", "pingpnog")
    assert unknown.returncode == 2 and "did you mean 'pingpong'?" in unknown.stderr
    none = rpbench("releases", "fetch", "furina")
    assert none.returncode == 2 and "published no code" in none.stderr


def test_a_run_without_its_release_stops_before_any_call(loopback, tmp_path, monkeypatch):
    """Missing, or not the pinned bytes: one line naming the file and the command that gets it; nothing sent."""
    monkeypatch.setenv("RPBENCH_RELEASES", str(tmp_path / "none"))
    (tmp_path / "none").mkdir()
    args = ["pingpong", "run", "--settings", str(sample_path("pingpong", "settings.yaml")), "--model", "player",
            "--out", str(tmp_path / "pp")]
    ran = rpbench(*args)
    assert ran.returncode == 2 and len(ran.stderr.strip().splitlines()) == 1, ran.stderr
    assert "is not there; `rpbench releases fetch pingpong` downloads it" in ran.stderr
    assert loopback.requests == []
    if not RELEASES.is_dir():
        pytest.skip(f"the releases are not here: {RELEASES}")
    copy = tmp_path / "copy"
    shutil.copytree(RELEASES / "IlyaGusev__ping_pong_bench@4e3b0e0b6b093670f67b80d7d62b5a5e8e7b13fd",
                    copy / "IlyaGusev__ping_pong_bench@4e3b0e0b6b093670f67b80d7d62b5a5e8e7b13fd")
    edited = copy / "IlyaGusev__ping_pong_bench@4e3b0e0b6b093670f67b80d7d62b5a5e8e7b13fd" / "templates" / "v2" / \
        "judge_user.jinja"
    edited.write_text(edited.read_text(encoding="utf-8").replace("player", "actor"), encoding="utf-8")
    changed = rpbench(*args, "--releases", str(copy))
    assert changed.returncode == 2 and "judge_user.jinja: not IlyaGusev/ping_pong_bench@4e3b0e0's" in changed.stderr
    assert "sha256 is not the pinned" in changed.stderr and loopback.requests == []


def test_python_files_are_read_as_text_never_imported():
    """rpbench reads a release's Python with ast: none of its modules is ever imported by rpbench's code."""
    import sys

    from rpbench.tasks.modes.characterbench import release

    if not RELEASES.is_dir():
        pytest.skip(f"the releases are not here: {RELEASES}")
    release.judge_prompt("engagement", "zh")
    assert not any(name.startswith(("eval_prompts", "data_info", "roleplay_prompt")) for name in sys.modules)


def test_release_files_are_parsed_one_thread_at_a_time(monkeypatch):
    """CPython 3.11's parser fails in two threads at once ("AST constructor recursion depth mismatch"), which
    CoSER's concurrent scenes and RoleInteract's requests met reading a release file for the first time
    together: every parse goes through one lock. Measured by a parse that waits a little, in eight threads."""
    import ast
    import time

    from rpbench.prompts import python_text

    inside, most, lock = [0], [0], threading.Lock()
    real = ast.parse

    def slow_parse(source, *args, **kwargs):
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.02)
        try:
            return real(source, *args, **kwargs)
        finally:
            with lock:
                inside[0] -= 1

    monkeypatch.setattr(ast, "parse", slow_parse)
    threads = [threading.Thread(target=python_text.parsed, args=(f"X = {i}\n",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1


def test_a_parse_raced_by_another_threads_parse_is_made_again_and_any_other_error_is_not(monkeypatch):
    """CPython 3.11's parser checks a counter another thread's parse (a library's, outside rpbench's lock) may move
    meanwhile; the full suite met it twice in one run. That error is retried; another error of the parser is not."""
    import ast

    from rpbench.prompts import python_text

    real, calls = ast.parse, []

    def racing(source, *args, **kwargs):
        calls.append(source)
        if len(calls) < 3:
            raise SystemError("AST constructor recursion depth mismatch (before=120, after=79)")
        return real(source, *args, **kwargs)

    monkeypatch.setattr(python_text.ast, "parse", racing)
    assert isinstance(python_text.parse_python("x = 1").body[0], ast.Assign) and len(calls) == 3

    def broken(source, *args, **kwargs):
        raise SystemError("something else")

    monkeypatch.setattr(python_text.ast, "parse", broken)
    with pytest.raises(SystemError, match="something else"):
        python_text.parse_python("x = 1")
