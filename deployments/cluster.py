"""A scale-out setup on one machine, the same pieces a team runs on several: PostgreSQL, a Prefect server on
it, a process work pool with rpbench's deployments, and Prefect workers polling that pool.

``python -m rpbench.deployments.cluster --folder .rpbench/cluster --workers 2`` starts them all (PostgreSQL from
Debian's ``postgresql`` package, in a data folder of its own), prints the ``PREFECT_API_URL`` to use, and stops
them all on Ctrl-C. ``benchmarks/scaleout.py`` uses the same functions. On real machines each piece is started
by its own service manager instead; README "Scaling out" says which settings then change.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

POOL = "rpbench-process"
DB_USER = "rpbench"


class ClusterError(RuntimeError):
    """A piece of the cluster would not start: the message says which and where its log is."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def postgres_bin() -> Path:
    """Debian's PostgreSQL server programs (initdb and postgres live outside PATH, under a versioned folder)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("postgres")
    if on_path:
        return Path(on_path).parent
    raise ClusterError("PostgreSQL's server is not installed: apt-get install postgresql")


@dataclass
class Cluster:
    folder: Path
    api_url: str = ""
    database_url: str = ""
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def env(self, **extra: str) -> dict[str, str]:
        """The environment for a process that talks to this cluster's Prefect server."""
        return {**os.environ, "PREFECT_API_URL": self.api_url, "PREFECT_HOME": str(self.folder / "prefect-home"),
                "PREFECT_SERVER_ANALYTICS_ENABLED": "false", **extra}

    def spawn(self, name: str, args: Sequence[str], env: dict[str, str], user: str | None = None,
              cwd: Path | None = None) -> subprocess.Popen[bytes]:
        """Start a piece in its own session (so it stops with its children), its output in ``<name>.log``."""
        if user:
            args = ["runuser", "-u", user, "--", *args]
        log = (self.folder / f"{name}.log").open("ab")
        proc = subprocess.Popen(list(args), env=env, stdout=log, stderr=subprocess.STDOUT, cwd=cwd,
                                start_new_session=True)
        self.procs.append(proc)
        return proc

    def wait_for(self, name: str, ready: Callable[[], bool], seconds: float = 120) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for proc in self.procs:
                if proc.poll() is not None:
                    raise ClusterError(f"{name}: a process exited with {proc.returncode} "
                                       f"(logs in {self.folder})")
            if ready():
                return
            time.sleep(0.3)
        raise ClusterError(f"{name}: not ready after {seconds:.0f} s (log: {self.folder / (name + '.log')})")

    def stop(self) -> None:
        """Stop every piece, the last started first (workers before the server before the database)."""
        for proc in reversed(self.procs):
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
        self.procs.clear()


def start_postgres(cluster: Cluster) -> str:
    """A PostgreSQL server on loopback with a fresh data folder; returns the database URL for Prefect."""
    bin_dir = postgres_bin()
    data, sockets = cluster.folder / "pgdata", cluster.folder / "pgsock"
    # PostgreSQL refuses to run as root: as root, its folders belong to Debian's `postgres` user, which runs it.
    user = "postgres" if os.geteuid() == 0 else None
    for path in (data, sockets):
        path.mkdir(parents=True, exist_ok=True)
        if user:
            shutil.chown(path, user=user)
    if not (data / "PG_VERSION").exists():
        cmd = [str(bin_dir / "initdb"), "-D", str(data), "-U", DB_USER, "-A", "trust", "--no-sync"]
        if user:
            cmd = ["runuser", "-u", user, "--", *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            raise ClusterError(f"initdb failed: {done.stderr.strip() or done.stdout.strip()}")
    port = free_port()
    cluster.spawn("postgres", [str(bin_dir / "postgres"), "-D", str(data), "-p", str(port), "-h", "127.0.0.1",
                               "-k", str(sockets)], env=dict(os.environ), user=user)

    def accepting() -> bool:
        check = [str(bin_dir / "pg_isready"), "-h", "127.0.0.1", "-p", str(port), "-U", DB_USER]
        return subprocess.run(check, capture_output=True).returncode == 0

    cluster.wait_for("postgres", accepting, seconds=60)
    made = subprocess.run([str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", DB_USER, "prefect"],
                          capture_output=True, text=True)
    if made.returncode and "already exists" not in made.stderr:
        raise ClusterError(f"createdb failed: {made.stderr.strip()}")
    return f"postgresql+asyncpg://{DB_USER}@127.0.0.1:{port}/prefect"


def healthy(api_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{api_url}/health", timeout=2) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


def start_server(cluster: Cluster, database_url: str | None) -> str:
    """``prefect server start`` on loopback, on PostgreSQL when ``database_url`` is given (else SQLite)."""
    port = free_port()
    cluster.api_url = f"http://127.0.0.1:{port}/api"
    env = cluster.env()
    if database_url:
        env["PREFECT_SERVER_DATABASE_CONNECTION_URL"] = database_url
        cluster.database_url = database_url
    cluster.spawn("prefect-server", [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
                                     "--port", str(port)], env=env)
    cluster.wait_for("prefect-server", lambda: healthy(cluster.api_url), seconds=180)
    return cluster.api_url


def register_deployments(cluster: Cluster, pool: str = POOL, runner: str = "threads") -> None:
    """Create the process work pool and register every rpbench deployment in it (``rpbench deploy --pool``)."""
    cmd = [sys.executable, "-m", "rpbench.flows.cli.main", "--runner", runner, "deploy", "--pool", pool]
    done = subprocess.run(cmd, env=cluster.env(), capture_output=True, text=True, timeout=300)
    if done.returncode:
        raise ClusterError(f"registering deployments failed: {(done.stderr or done.stdout).strip()[-2000:]}")


def start_workers(cluster: Cluster, count: int, pool: str = POOL, cwd: Path | None = None,
                  **env: str) -> None:
    """``count`` Prefect workers polling ``pool``; each runs one flow run at a time in a subprocess."""
    for k in range(count):
        cluster.spawn(f"worker-{k + 1}", [sys.executable, "-m", "prefect", "worker", "start", "--pool", pool,
                                          "--type", "process", "--limit", "1", "--name", f"rpbench-worker-{k + 1}"],
                      env=cluster.env(**env), cwd=cwd)


@contextlib.contextmanager
def local_cluster(folder: Path, workers: int = 2, postgres: bool = True, pool: str = POOL,
                  cwd: Path | None = None, **env: str) -> Iterator[Cluster]:
    """PostgreSQL (or SQLite), a Prefect server, the deployments in ``pool`` and ``workers`` workers; all
    stopped on leaving."""
    folder.mkdir(parents=True, exist_ok=True)
    cluster = Cluster(folder=folder.resolve())
    try:
        database_url = start_postgres(cluster) if postgres else None
        start_server(cluster, database_url)
        register_deployments(cluster, pool, runner=env.get("RPBENCH_RUNNER", "threads"))
        start_workers(cluster, workers, pool, cwd=cwd, **env)
        yield cluster
    finally:
        cluster.stop()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m rpbench.deployments.cluster",
        description="Start PostgreSQL, a Prefect server on it, rpbench's deployments in a process work pool and "
                    "Prefect workers, all on this machine; Ctrl-C stops them all.")
    parser.add_argument("--folder", type=Path, default=Path(".rpbench/cluster"),
                        help="Where the database, the logs and Prefect's home go (default .rpbench/cluster).")
    parser.add_argument("--workers", type=int, default=2, help="Prefect workers to start (default 2).")
    parser.add_argument("--pool", default=POOL, help=f"Work pool name (default {POOL}).")
    parser.add_argument("--sqlite", action="store_true", help="Keep the Prefect server on SQLite (no PostgreSQL).")
    args = parser.parse_args(argv)
    try:
        with local_cluster(args.folder, args.workers, postgres=not args.sqlite, pool=args.pool) as cluster:
            print(f"PREFECT_API_URL={cluster.api_url}")
            print(f"database: {cluster.database_url or 'SQLite'}; pool: {args.pool}; workers: {args.workers}; "
                  f"logs: {cluster.folder}", flush=True)
            while True:
                time.sleep(3600)
    except ClusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
