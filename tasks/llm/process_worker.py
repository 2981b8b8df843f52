"""A child process that sends litellm calls for the gateway (see ``process_pool``).

Protocol, one JSON object per line. In on stdin: ``{"id", "kwargs", "key_env"}``.
Out on the original stdout: ``{"ready": true}`` once litellm is imported and warmed up, then per
request ``{"id", "reply": {...}}`` or ``{"id", "error": "...", "transient": bool, "fatal": bool}``.
The key is read here from the inherited environment, so it never crosses the
pipe. The process ends when its stdin closes, which is also what happens when
the parent dies.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import sys
from typing import Any, BinaryIO

import orjson

from rpbench.tasks.core.secrets import scrub_text
from rpbench.tasks.llm.event_loop import run_coroutine
from rpbench.tasks.llm.litellm_call import add_transport, new_session, send, tune_litellm, warm_up
from rpbench.tasks.llm.transient import is_fatal, is_transient

LINE_LIMIT = 64 * 1024 * 1024  # one protocol line holds a whole request


async def serve(out: BinaryIO) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    session = new_session()
    inflight: set[asyncio.Task] = set()

    # Answers finished in one turn of the loop leave in one write: a burst of replies (a wave of calls sent
    # together comes back together) costs one system call and wakes the parent's reader once, not per answer.
    unsent: list[bytes] = []

    def flush() -> None:
        out.write(b"".join(unsent))
        out.flush()
        unsent.clear()

    def write(obj: dict[str, Any]) -> None:
        if not unsent:
            loop.call_soon(flush)
        unsent.append(orjson.dumps(obj) + b"\n")

    async def one(msg: dict[str, Any]) -> None:
        try:
            reply = await send(add_transport(msg["kwargs"], msg.get("key_env"), session))
            write({"id": msg["id"], "reply": reply})
        except Exception as exc:  # reported back; the parent decides on retries
            write({"id": msg["id"], "error": scrub_text(f"{type(exc).__name__}: {exc}")[:2000],
                   "transient": is_transient(exc), "fatal": is_fatal(exc)})

    try:
        await warm_up()
    except Exception as exc:  # only slower: the first real call does the same set-up
        print(f"gateway worker: warm-up call failed ({type(exc).__name__}: {exc})", file=sys.stderr)
    write({"ready": True})
    while line := await reader.readline():
        task = asyncio.create_task(one(orjson.loads(line)))
        inflight.add(task)
        task.add_done_callback(inflight.discard)
    if inflight:
        await asyncio.gather(*inflight)
    if unsent:
        flush()
    await session.close()


def main() -> None:
    # Ctrl-C and SIGTERM reach the whole process group: the parent decides when to stop, and the replies to
    # requests already sent must still reach it to be recorded. The worker ends when its stdin closes.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # Keep the protocol stream to ourselves: anything a library prints goes to stderr instead.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    tune_litellm()
    # What is loaded now (litellm, its model tables, pydantic's schemas) lives as long as the process: out of
    # the collector's sight, a full collection walks only what calls made since. Walking it all, every few
    # seconds under load, stalled every call in flight here.
    gc.freeze()
    run_coroutine(serve(out))


if __name__ == "__main__":
    main()
