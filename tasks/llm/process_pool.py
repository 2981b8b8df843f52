"""Spread litellm calls over worker processes shared by the whole process.

litellm spends milliseconds of Python per call (its OpenAI route the most;
benchmarks/litellm_routes.py measures them). In one
process those milliseconds cap throughput: at a few hundred requests in flight
the process sits at one core and replies wait for the event loop. A model spec
with ``processes = N`` (N > 1) has its calls sent by N child processes
(``process_worker``), each running litellm on its own event loop and core. The
gateway keeps everything else in its own process: the cache, the concurrency
and rate bounds, retries, parsing and accounting.

The workers belong to the process, not to an event loop: every stage (each on
its own loop, several at once) sends through the same N workers, so ``N`` is
the number of extra processes whatever the number of models and stages. A
reader thread per worker hands each batch of answers to the loops that asked,
one wake-up per loop and batch. Stages take the pool while they run
(``acquire_pool``) and give it back when they close (``release_pool``); the
workers stop when the last one does.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import select
import subprocess
import sys
import threading
import time
from collections import defaultdict
from typing import Any

import orjson

from rpbench.tasks.llm.call_errors import WorkerCallError

START_TIMEOUT_S = 180.0
PIPE_BYTES = 1 << 20  # asked of the kernel for each pipe, so a burst of requests does not block the sender

_Waiter = tuple[asyncio.AbstractEventLoop, asyncio.Future]


def _settle(answers: list[tuple[asyncio.Future, dict[str, Any] | BaseException]]) -> None:
    """On the asking loop: give each waiting call its reply or error (a call that gave up is skipped)."""
    for future, answer in answers:
        if future.done():
            continue
        if isinstance(answer, BaseException):
            future.set_exception(answer)
        elif "reply" in answer:
            future.set_result(answer["reply"])
        else:
            future.set_exception(WorkerCallError(answer["error"], bool(answer["transient"]), bool(answer.get("fatal"))))


def _deliver(batch: dict[asyncio.AbstractEventLoop, list]) -> None:
    for loop, answers in batch.items():
        with contextlib.suppress(RuntimeError):  # that loop has closed: nobody is waiting any more
            loop.call_soon_threadsafe(_settle, answers)


def _grow_pipe(fd: int) -> None:
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
    except (ImportError, OSError):  # not Linux, or over the system's limit: the default size works, slower
        pass


class _Worker:
    """One child process, the calls waiting for its answers, and the thread that reads them."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "rpbench.tasks.llm.process_worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in, self._out = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        _grow_pipe(self._in)
        _grow_pipe(self._out)
        self.pending: dict[int, _Waiter] = {}
        self.served = 0  # answers read back (tests look: calls really went through the workers)
        self.alive = True
        self._pending_lock = threading.Lock()  # the reader and the senders; never held while blocked on a pipe
        self._write_lock = threading.Lock()  # one request line at a time on stdin
        self._reader: threading.Thread | None = None

    def wait_ready(self, deadline: float) -> None:
        """Block until the child says it is ready (litellm imported), then start reading its answers."""
        line = b""
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._out], [], [], left)[0]:
                self.proc.kill()
                raise WorkerCallError("a gateway worker process did not start in time", transient=False)
            chunk = os.read(self._out, 1)
            if not chunk:
                raise WorkerCallError("a gateway worker process failed to start (see its stderr above)",
                                      transient=False)
            line += chunk
        if not line.startswith(b'{"ready"'):
            self.proc.kill()
            raise WorkerCallError("a gateway worker process failed to start (see its stderr above)", transient=False)
        self._reader = threading.Thread(target=self._read, name=f"rpbench-worker-{self.proc.pid}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        rest = b""
        try:
            while chunk := os.read(self._out, PIPE_BYTES):
                *lines, rest = (rest + chunk).split(b"\n")
                batch: dict[asyncio.AbstractEventLoop, list] = defaultdict(list)
                messages = [orjson.loads(line) for line in lines]
                self.served += len(messages)
                with self._pending_lock:
                    for msg in messages:
                        waiter = self.pending.pop(msg["id"], None)
                        if waiter is not None:  # None: its caller gave up (cancelled); the answer is dropped
                            batch[waiter[0]].append((waiter[1], msg))
                _deliver(batch)
        except OSError:  # the pipe broke: the same as the worker ending
            pass
        finally:
            with self._pending_lock:
                self.alive = False
                orphans, self.pending = self.pending, {}
            batch = defaultdict(list)
            for loop, future in orphans.values():
                # The call may or may not have reached the server; sending it again is safe.
                batch[loop].append((future, WorkerCallError("the gateway worker process exited", transient=True)))
            _deliver(batch)
            self.proc.wait()

    def send(self, call_id: int, line: bytes, waiter: _Waiter) -> None:
        with self._pending_lock:
            if not self.alive:  # it died after it was picked: nobody would ever answer
                raise WorkerCallError("the gateway worker process exited", transient=True)
            self.pending[call_id] = waiter
        try:
            with self._write_lock:
                view = memoryview(line)
                while view:
                    view = view[os.write(self._in, view):]
        except OSError:
            self.forget(call_id)
            raise WorkerCallError("the gateway worker process exited", transient=True) from None

    def forget(self, call_id: int) -> None:
        with self._pending_lock:
            self.pending.pop(call_id, None)

    def close(self) -> None:
        """Close its stdin (it finishes what it has and exits), wait for it, and for its reader."""
        with contextlib.suppress(OSError):
            self.proc.stdin.close()  # type: ignore[union-attr]
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self._reader is not None:
            self._reader.join(10)


class ProcessPool:
    """``size`` worker processes shared by every event loop of the process; each call goes to the least busy.

    Workers take seconds to start (each imports litellm). ``ready`` says whether they are up; until then the
    gateway sends calls from its own process (the same request, the same reading of the reply) while
    ``start_soon`` starts them in the background, so no stage waits on them.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._workers: list[_Worker] = []
        self._ids = itertools.count()
        self._start_lock = threading.Lock()
        self._starter: threading.Thread | None = None
        self._start_error: WorkerCallError | None = None
        self._starting: list[_Worker] = []  # launched and not yet ready: killed if the pool closes meanwhile
        self._closed = False

    def ready(self) -> bool:
        workers = self._workers
        return len(workers) == self.size and all(w.alive for w in workers)

    def start_soon(self) -> None:
        """Start (or replace) the workers in a background thread, unless that is under way already. A start
        that failed is raised here (and by every later call): a pool that cannot start is an error, never a
        silent switch to sending from this process."""
        if self._start_error is not None:
            raise self._start_error
        with self._start_lock:
            if self._closed or (self._starter is not None and self._starter.is_alive()):
                return
            self._starter = threading.Thread(target=self._start_in_background, name="rpbench-worker-start",
                                             daemon=True)
            self._starter.start()

    def _start_in_background(self) -> None:
        try:
            self._ready_workers()
        except WorkerCallError as exc:
            self._start_error = exc
        except Exception as exc:  # e.g. no memory for a new process
            self._start_error = WorkerCallError(f"gateway worker processes could not start: {exc}", transient=False)

    def wait_ready(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Block until the workers are up (for tests and for callers that want them before they start)."""
        self.start_soon()
        deadline = time.monotonic() + timeout_s
        while not self.ready():
            if self._start_error is not None:
                raise self._start_error
            if time.monotonic() > deadline:
                raise WorkerCallError("the gateway worker processes did not start in time", transient=False)
            time.sleep(0.05)

    def _ready_workers(self) -> None:
        """Start (or replace) workers; only ever on the one starter thread of ``start_soon``."""
        with self._start_lock:
            if self._closed:
                return
            alive = [w for w in self._workers if w.alive]
            fresh = [_Worker() for _ in range(self.size - len(alive))]  # all launched, then all awaited
            self._starting = fresh
        deadline = time.monotonic() + START_TIMEOUT_S
        try:
            for worker in fresh:
                worker.wait_ready(deadline)
        except BaseException:
            for worker in fresh:
                worker.proc.kill()
                worker.proc.wait()
            with self._start_lock:
                self._starting = []
            raise
        with self._start_lock:
            self._starting = []
            if self._closed:  # closed while they started: they are nobody's
                for worker in fresh:
                    worker.close()
                return
            self._workers = alive + fresh

    async def call(self, kwargs: dict[str, Any], key_env: str | None) -> dict[str, Any]:
        """Send one ``litellm.acompletion`` request (see ``litellm_call.request_kwargs``) and wait for its fields."""
        if not self.ready():  # one died since the caller asked ``ready``: retried, sent from the process meanwhile
            self.start_soon()
            raise WorkerCallError("a gateway worker process exited", transient=True)
        worker = min(self._workers, key=lambda w: len(w.pending))
        call_id = next(self._ids)
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        worker.send(call_id, orjson.dumps({"id": call_id, "kwargs": kwargs, "key_env": key_env}) + b"\n",
                    (loop, future))
        try:
            return await future
        finally:
            worker.forget(call_id)

    def close(self) -> None:
        with self._start_lock:
            self._closed = True
            workers, self._workers = self._workers, []
            starter = self._starter
            for worker in self._starting:
                worker.proc.kill()  # its start fails at once instead of being waited for
        for worker in workers:
            worker.close()
        if starter is not None:
            starter.join(START_TIMEOUT_S)


_pools: dict[int, tuple[ProcessPool, int]] = {}  # size -> (pool, stages using it)
_warm: dict[int, int] = {}  # size -> runs that started it ahead of its first stage (``warm_pool``), a use each
_pools_lock = threading.Lock()


def _pool_and_users(size: int) -> tuple[ProcessPool, int]:
    """The pool of ``size`` workers (a new one, not yet started, if there is none) and its uses; under the lock."""
    pool, users = _pools.get(size, (None, 0))
    return (pool, users) if pool is not None else (ProcessPool(size), 0)


def acquire_pool(size: int) -> ProcessPool:
    """The process's pool of ``size`` workers, counted as used until ``release_pool``. The uses held for a
    pool started ahead (``warm_pool``) pass to the first stage that asks: they become its one use."""
    with _pools_lock:
        pool, users = _pool_and_users(size)
        _pools[size] = (pool, users - _warm.pop(size, 0) + 1)
        return pool


def warm_pool(size: int) -> None:
    """Start the pool of ``size`` workers now, ahead of the first stage that will use it (a run starting:
    they import litellm while it reads its data). Held until a stage takes it over, or ``cool_pool``."""
    with _pools_lock:
        pool, users = _pool_and_users(size)
        _pools[size] = (pool, users + 1)
        _warm[size] = _warm.get(size, 0) + 1
    pool.start_soon()


def cool_pool(size: int) -> None:
    """A run that called ``warm_pool`` ends: if no stage took the pool over, its use is given back (the last
    use stops the workers)."""
    with _pools_lock:
        held = _warm.get(size, 0)
        if not held:
            return
        if held > 1:
            _warm[size] = held - 1
        else:
            del _warm[size]
        pool = _pools[size][0]
    if release_pool(pool):
        pool.close()


def release_pool(pool: ProcessPool) -> bool:
    """One user fewer; returns whether that was the last (the caller then stops the workers with ``close``)."""
    with _pools_lock:
        held, users = _pools.get(pool.size, (None, 0))
        if held is not pool:
            return False
        if users > 1:
            _pools[pool.size] = (pool, users - 1)
            return False
        del _pools[pool.size]
        return True


def kill_workers() -> None:
    """Kill every worker process of every pool at once (a run quitting without waiting for them)."""
    with _pools_lock:
        pools = [pool for pool, _users in _pools.values()]
    for pool in pools:
        for worker in [*pool._workers, *pool._starting]:
            with contextlib.suppress(OSError):
                worker.proc.kill()
