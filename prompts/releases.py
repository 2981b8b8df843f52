"""The benchmarks' released code, read as pinned data.

A benchmark whose authors published code states its prompts there. rpbench never copies those words: a mode
declares its ``Release`` (repository, commit, and the sha256 of each file it reads, as facts), and its stages read
the words from those files at run time, exactly as they read a released test set. The files come from a folder in
the release layout, ``<owner>__<name>@<commit>/<path>`` (``RPBENCH_RELEASES``, or ``--releases DIR``), or from
rpbench's cache, which ``rpbench releases fetch`` fills from the repository at the pinned commit. A file is used
only when its sha256 is the pinned one; every file read is recorded, and a run's manifest lists them.

Python files among them are read as text (``prompts.python_text``), never imported or executed.
"""

from __future__ import annotations

import functools
import hashlib
import os
import tomllib
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rpbench.tasks.core.errors import InputError
from rpbench.tasks.core.paths import cache_dir, one_writer

RELEASES_ENV = "RPBENCH_RELEASES"
# Where a file of a public GitHub repository is served at a commit, byte for byte.
RAW_URL = "https://raw.githubusercontent.com/{repository}/{commit}/{path}"
MAX_FILE_BYTES = 4 * 1024 * 1024  # the prompt-bearing files are tens of kilobytes
State = Literal["ok", "missing", "differs"]

# The release files read in the current context: "<repository>@<commit>/<path>" -> sha256 (a stage's record).
_reads: ContextVar[dict[str, str] | None] = ContextVar("rpbench_release_reads", default=None)


@dataclass(frozen=True)
class Release:
    """One release: the files a mode reads from a repository at one commit, with their sha256.

    ``benchmark`` is the rpbench benchmark that reads it (what `rpbench releases fetch` is told); ``about`` says
    what the files hold."""

    benchmark: str
    repository: str  # owner/name, as GitHub spells it
    commit: str  # the full 40-hex commit
    files: Mapping[str, str]  # path in the repository -> sha256 of its bytes
    about: str = ""

    def __post_init__(self) -> None:
        if len(self.commit) != 40 or any(c not in "0123456789abcdef" for c in self.commit):
            raise ValueError(f"release {self.repository}: commit {self.commit!r} is not a full 40-hex commit")
        if "/" not in self.repository:
            raise ValueError(f"release {self.repository!r}: not owner/name")

    @property
    def name(self) -> str:
        """repository@short commit, as pages and messages say it."""
        return f"{self.repository}@{self.commit[:7]}"

    @property
    def folder(self) -> str:
        """Its folder in a releases folder: ``<owner>__<name>@<commit>``."""
        return f"{self.repository.replace('/', '__')}@{self.commit}"

    def url(self, path: str) -> str:
        return RAW_URL.format(repository=self.repository, commit=self.commit, path=path)

    def key(self, path: str) -> str:
        """How a read of ``path`` is recorded: ``<repository>@<commit>/<path>``."""
        return f"{self.repository}@{self.commit}/{path}"

    @classmethod
    def pinned(cls, path: Path) -> Release:
        """A release as its pin file states it (``release.toml`` beside a mode's reader): ``benchmark``,
        ``repository``, ``commit``, ``about`` and a ``[files]`` table of path = sha256. Pins are facts, kept as data
        like the releases' own checksums (``MANIFEST.tsv``)."""
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        return cls(benchmark=data["benchmark"], repository=data["repository"], commit=data["commit"],
                   files=dict(data["files"]), about=data.get("about", ""))

    def identity(self) -> dict[str, object]:
        """What a stage's cache key holds of it: where its words come from, pinned."""
        return {"repository": self.repository, "commit": self.commit, "files": dict(sorted(self.files.items()))}


class ReleaseUnavailable(InputError):
    """A release file a run needs is not there, or is not the pinned one: one line naming the file and the command
    that gets it."""


def releases_root() -> Path:
    """Where release files are read from: ``RPBENCH_RELEASES``, else rpbench's cache (``releases/``)."""
    given = os.environ.get(RELEASES_ENV)
    return Path(given).expanduser() if given else cache_dir() / "releases"


def use_releases(folder: str | Path | None) -> None:
    """Read release files from ``folder`` in this process and the processes it starts (``--releases DIR``)."""
    if folder is None:
        return
    path = Path(folder).expanduser()
    if not path.is_dir():
        raise InputError(f"--releases: {path} is not a folder (a copy of the releases in the layout "
                         "<owner>__<name>@<commit>/<path>; `rpbench releases fetch` fills rpbench's own)")
    os.environ[RELEASES_ENV] = str(path.resolve())


def file_path(release: Release, path: str, root: Path | None = None) -> Path:
    return (root or releases_root()) / release.folder / path


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@functools.lru_cache(maxsize=256)
def _checked_bytes(where: str, size: int, mtime_ns: int) -> tuple[bytes, str]:
    """A file's bytes and sha256, read once while its size and time stay as they are."""
    data = Path(where).read_bytes()
    return data, _sha256(data)


def file_state(release: Release, path: str, root: Path | None = None) -> State:
    """Whether the pinned file is there (``ok``), absent, or there with other bytes."""
    where = file_path(release, path, root)
    try:
        st = where.stat()
    except OSError:
        return "missing"
    if not where.is_file():
        return "missing"
    return "ok" if _checked_bytes(str(where), st.st_size, st.st_mtime_ns)[1] == release.files[path] else "differs"


def _problem(release: Release, path: str, state: State, root: Path) -> ReleaseUnavailable:
    where = file_path(release, path, root)
    get = f"`rpbench releases fetch {release.benchmark}`"
    if state == "missing":
        return ReleaseUnavailable(f"{where}: {release.name}'s {path} is not there; {get} downloads it (or give "
                                  f"--releases DIR, or set {RELEASES_ENV}, to a copy holding it)")
    return ReleaseUnavailable(f"{where}: not {release.name}'s {path} (its sha256 is not the pinned "
                              f"{release.files[path][:12]}...); {get} downloads the pinned file again")


def require(releases: Iterable[Release]) -> None:
    """Every file of ``releases`` is there and pinned, or one line naming the first that is not (checked before a
    run makes any call)."""
    root = releases_root()
    for release in releases:
        for path in release.files:
            state = file_state(release, path, root)
            if state != "ok":
                raise _problem(release, path, state, root)


def read_text(release: Release, path: str) -> str:
    """The text of one pinned file (UTF-8), recorded as read in this context; ``ReleaseUnavailable`` when it is
    absent or not the pinned file."""
    if path not in release.files:
        raise KeyError(f"{release.name}: {path} is not among the files it pins")  # a mode's own mistake
    root = releases_root()
    where = file_path(release, path, root)
    state = file_state(release, path, root)
    if state != "ok":
        raise _problem(release, path, state, root)
    st = where.stat()
    data, digest = _checked_bytes(str(where), st.st_size, st.st_mtime_ns)
    record = _reads.get()
    if record is not None:
        record[release.key(path)] = digest
    return data.decode("utf-8")


def record_reads_into(reads: dict[str, str]) -> None:
    """Record every release file read from here on in this context (and tasks it starts) into ``reads``."""
    _reads.set(reads)


# -- fetching -------------------------------------------------------------------------------------
Opener = Callable[[str, float], bytes]


def _download(url: str, timeout: float) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        data: bytes = response.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"over {MAX_FILE_BYTES // 2**20} MB")
    return data


class FetchFailed(InputError):
    """A release file could not be downloaded, or came with other bytes than the pinned ones."""


def fetch(release: Release, root: Path | None = None, opener: Opener = _download, timeout: float = 30.0,
          ) -> dict[str, str]:
    """Download every file of ``release`` that is not there yet (or differs) from the repository at the pinned
    commit into ``root``; each is written only once its sha256 is the pinned one, atomically, and nothing else is
    written there (no folder before a file, no lock: a shared releases folder gains only pinned files). Returns
    path -> what happened ("already there", "downloaded"); the first failure is a ``FetchFailed`` naming the file
    and why."""
    root = root or releases_root()
    done: dict[str, str] = {}
    for path, pinned in sorted(release.files.items()):
        target = file_path(release, path, root)
        if file_state(release, path, root) == "ok":
            done[path] = "already there"
            continue
        url = release.url(path)
        try:
            data = opener(url, timeout)
        except urllib.error.HTTPError as exc:
            raise FetchFailed(f"{url}: the repository answered HTTP {exc.code} ({exc.reason}); {release.name}'s "
                              f"{path} could not be downloaded") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise FetchFailed(f"{url}: could not be downloaded ({reason}); with no network, copy the "
                              f"releases folder from a machine that has it and give --releases DIR") from None
        if _sha256(data) != pinned:
            raise FetchFailed(f"{url}: the downloaded file's sha256 is {_sha256(data)[:12]}..., not the pinned "
                              f"{pinned[:12]}...; nothing was written (is the commit still served as it was?)")
        with one_writer(target, locks_apart=True):  # two fetches at once: the second finds the file there
            if file_state(release, path, root) == "ok":
                done[path] = "already there"
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(f".{target.name}.partial")
            partial.write_bytes(data)
            os.replace(partial, target)
            done[path] = "downloaded"
    return done


def states(release: Release, root: Path | None = None) -> dict[str, State]:
    """Each pinned file's state under ``root`` (or the folder in use)."""
    return {path: file_state(release, path, root) for path in sorted(release.files)}
