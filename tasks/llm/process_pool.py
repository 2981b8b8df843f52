"""Spread litellm calls over worker processes.

litellm spends about 3-4 ms of Python per call. In one process those
milliseconds add up when many replies arrive together: at concurrency 64 the
event loop is busy for a quarter of a second handling one wave of replies
before it can send the next, so throughput falls well short of
concurrency / latency. A model spec with ``processes = N`` (N > 1) has its calls
sent by N child processes (``process_worker``), each running litellm on its own
event loop and core. The gateway keeps everything else in its own process:
the cache, the concurrency and rate bounds, retries, parsing and accounting.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
from typing import Any

import orjson

from rpbench.tasks.llm.transient import WorkerCallError

START_TIMEOUT_S = 180.0
LINE_LIMIT = 64 * 1024 * 1024  # one protocol line holds a whole reply


class _Worker:
    """One child process and the calls waiting for its answers."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.pending: dict[int, asyncio.Future] = {}
        self.alive = True
        self.reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls) -> _Worker:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "rpbench.tasks.llm.process_worker",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=LINE_LIMIT,
        )
        assert proc.stdout is not None
        try:
            first = await asyncio.wait_for(proc.stdout.readline(), START_TIMEOUT_S)
        except TimeoutError:
            proc.kill()
            raise WorkerCallError("a gateway worker process did not start in time", transient=False) from None
        if not first.startswith(b'{"ready"'):
            proc.kill()
            raise WorkerCallError("a gateway worker process failed to start (see its stderr above)", transient=False)
        return cls(proc)

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        try:
            while line := await self.proc.stdout.readline():
                msg = orjson.loads(line)
                future = self.pending.pop(msg["id"], None)
                if future is None or future.done():  # its caller gave up (cancelled): drop the answer
                    continue
                if "reply" in msg:
                    future.set_result(msg["reply"])
                else:
                    future.set_exception(WorkerCallError(msg["error"], bool(msg["transient"]),
                                                            bool(msg.get("fatal"))))
        finally:
            self.alive = False
            for future in self.pending.values():
                if not future.done():
                    # The call may or may not have reached the server; sending it again is safe.
                    future.set_exception(WorkerCallError("the gateway worker process exited", transient=True))
            self.pending.clear()

    def send(self, call_id: int, kwargs: dict[str, Any], key_env: str | None) -> asyncio.Future:
        if not self.alive:  # it died after it was picked: nobody would ever answer
            raise WorkerCallError("the gateway worker process exited", transient=True)
        future = asyncio.get_running_loop().create_future()
        self.pending[call_id] = future
        assert self.proc.stdin is not None
        self.proc.stdin.write(orjson.dumps({"id": call_id, "kwargs": kwargs, "key_env": key_env}) + b"\n")
        return future

    async def close(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 10)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        await self.reader


class ProcessPool:
    """``size`` worker processes on the running event loop; each call goes to the least busy one."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._workers: list[_Worker] = []
        self._ids = itertools.count()
        self._lock = asyncio.Lock()

    async def _ready_workers(self) -> list[_Worker]:
        if len(self._workers) == self.size and all(w.alive for w in self._workers):
            return self._workers
        async with self._lock:  # start (or replace) workers once, however many calls arrive at the same time
            alive = [w for w in self._workers if w.alive]
            missing = self.size - len(alive)
            if missing > 0:
                alive += await asyncio.gather(*(_Worker.start() for _ in range(missing)))
            self._workers = alive
        return self._workers

    async def call(self, kwargs: dict[str, Any], key_env: str | None) -> dict[str, Any]:
        """Send one ``litellm.acompletion`` request (see ``litellm_call.request_kwargs``) and wait for its fields."""
        workers = await self._ready_workers()
        worker = min(workers, key=lambda w: len(w.pending))
        call_id = next(self._ids)
        future = worker.send(call_id, kwargs, key_env)
        try:
            return await future
        finally:
            worker.pending.pop(call_id, None)

    async def aclose(self) -> None:
        workers, self._workers = self._workers, []
        await asyncio.gather(*(w.close() for w in workers))
