"""A small OpenAI-compatible chat server on 127.0.0.1, for tests and benchmarks.

It answers ``POST /v1/chat/completions`` with scripted or rule-based replies (and OpenAI's Files and Batches
endpoints, a batch answered line by line by the same responder),
after a configurable latency, and can be told to misbehave: HTTP 429 or 500,
a timeout, a malformed or truncated JSON body, an empty reply, or a 401 that
echo the key back. It records
every request it receives, so a test can count what a rerun sent.

Run it in a thread (``LoopbackServer().start()``) or as a process:
``python -m tests.loopback --port 8088 --latency 0.2`` (from the repository's root).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import random
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from aiohttp import web

FAULTS = ("429", "500", "timeout", "malformed", "truncated", "empty", "401")
Responder = Callable[[dict[str, Any]], str]


def default_responder(body: dict[str, Any]) -> str:
    """Echo the last user message back; answer schema requests with a minimal valid-looking object."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") in {"json_schema", "json_object"}:
        return json.dumps({"reason": "scripted", "score": 3})
    last = next((m["content"] for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")
    return f"echo: {str(last)[:80]}"


def completion_body(model: str, content: str, prompt_tokens: int = 10, cached_tokens: int = 0) -> dict[str, Any]:
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": max(1, len(content) // 4),
            "total_tokens": prompt_tokens + max(1, len(content) // 4),
            **({"prompt_tokens_details": {"cached_tokens": cached_tokens}} if cached_tokens else {}),
        },
    }


class LoopbackServer:
    def __init__(self, latency: float = 0.0, responder: Responder = default_responder, port: int = 0) -> None:
        self.latency = latency
        self.responder = responder
        self.port = port
        self.scripted: deque[str] = deque()
        self.faults: deque[str] = deque()
        # Faults by model: every request for that model string gets it (a model that is down, a refused key).
        self.model_faults: dict[str, str] = {}
        self.requests: list[dict[str, Any]] = []
        self.auth_headers: list[str] = []
        self.timeout_sleep = 30.0
        # Faults at random: each request fails with probability ``fault_rate``, its kind drawn from
        # ``fault_mix`` (seeded, so a run's fault pattern is repeatable for the same arrival order).
        self.fault_rate = 0.0
        self.fault_mix: tuple[str, ...] = ()
        self._fault_rng = random.Random(0)
        # One entry per request: a digest of its body, when it arrived and was answered, and whether it
        # was answered well (a crash test checks no well-answered request is sent again).
        self.log: list[dict[str, Any]] = []
        # OpenAI's Files and Batches endpoints: uploaded files by id, batches by id (each answered by the
        # responder once ``batch_delay`` seconds have passed), and the request lines batches carried.
        self.files: dict[str, tuple[str, bytes]] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.batch_requests: list[dict[str, Any]] = []
        self.batch_delay = 0.0
        # Batch creations that make the batch and then answer 500, as a reply lost on its way back would.
        self.batch_creates_lost = 0
        # Called with each batch's id once it is made, before the reply leaves (another client acting then).
        self.on_batch_created: Callable[[str], None] | None = None
        # Batch endpoints that fail with a 500 ("list", "create", "retrieve", "content", "upload") and how many
        # more times each does (a provider whose batch API is down).
        self.batch_faults: dict[str, int] = {}
        # Prompt tokens the server says it read from its prompt cache, for each reply (as OpenAI's usage does).
        self.cached_tokens = 0
        # Counts a request's prompt tokens (a priced prompt's cost then grows with it); None: 10 for every request.
        self.prompt_tokens: Callable[[dict[str, Any]], int] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    # -- control, from the test's thread ----------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *replies: str) -> None:
        """Queue exact replies, served in order before the responder is used again."""
        self.scripted.extend(replies)

    def inject(self, fault: str, times: int = 1) -> None:
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; known: {FAULTS}")
        self.faults.extend([fault] * times)

    def random_faults(self, rate: float, mix: tuple[str, ...] = FAULTS, seed: int = 0) -> None:
        unknown = set(mix) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown faults {sorted(unknown)}; known: {FAULTS}")
        self.fault_rate, self.fault_mix, self._fault_rng = rate, tuple(mix), random.Random(seed)

    def reset(self) -> None:
        self.scripted.clear()
        self.faults.clear()
        self.model_faults.clear()
        self.requests.clear()
        self.auth_headers.clear()
        self.log.clear()
        self.responder = default_responder
        self.latency = 0.0
        self.files.clear()
        self.batches.clear()
        self.batch_requests.clear()
        self.batch_delay = 0.0
        self.batch_creates_lost = 0
        self.batch_faults = {}
        self.on_batch_created = None
        self.cached_tokens = 0
        self.prompt_tokens = None
        self.fault_rate, self.fault_mix = 0.0, ()

    # -- HTTP -----------------------------------------------------------------------------------
    async def _chat(self, request: web.Request) -> web.StreamResponse:
        entry: dict[str, Any] = {"started": time.time()}
        self.log.append(entry)
        body = await request.json()
        entry["digest"] = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        # What it asks, in a few words (a failing test names the requests it is about).
        messages = body.get("messages") or [{}]
        entry["asks"] = f"{body.get('model')}: {str(messages[-1].get('content'))[:60]!r}"
        self.requests.append(body)
        self.auth_headers.append(request.headers.get("Authorization", ""))
        if self.latency:
            await asyncio.sleep(self.latency)
        fault = self.faults.popleft() if self.faults else self.model_faults.get(str(body.get("model")))
        if fault is None and self.fault_rate and self._fault_rng.random() < self.fault_rate:
            fault = self._fault_rng.choice(self.fault_mix)
        entry["fault"] = fault
        response = await self._answer(body, fault, request.headers.get("Authorization", ""))
        entry["answered"], entry["ok"] = time.time(), fault is None
        return response

    async def _answer(self, body: dict[str, Any], fault: str | None, auth: str) -> web.StreamResponse:
        model = body.get("model", "loopback")
        if fault == "429":
            return web.json_response({"error": {"message": "rate limited", "type": "rate_limit"}}, status=429)
        if fault == "401":
            # Like some providers, echo the rejected key back in the error message.
            key = auth.removeprefix("Bearer ")
            return web.json_response({"error": {"message": f"Incorrect API key provided: {key}"}}, status=401)
        if fault == "500":
            return web.json_response({"error": {"message": "server error", "type": "server_error"}}, status=500)
        if fault == "timeout":
            await asyncio.sleep(self.timeout_sleep)
        if fault == "malformed":
            return web.Response(text="{this is not json", content_type="application/json")
        if fault == "truncated":
            full = json.dumps(completion_body(model, "cut short"))
            return web.Response(text=full[: len(full) // 2], content_type="application/json")
        content = "" if fault == "empty" else (self.scripted.popleft() if self.scripted else self.responder(body))
        n_in = self.prompt_tokens(body) if self.prompt_tokens else 10
        return web.json_response(completion_body(model, content, prompt_tokens=n_in, cached_tokens=self.cached_tokens))

    # -- OpenAI's Files and Batches API ---------------------------------------------------------------
    def _failing(self, endpoint: str) -> web.Response | None:
        """A 500 if ``endpoint`` is set to fail (``batch_faults``), counting the failure down."""
        if self.batch_faults.get(endpoint, 0) > 0:
            self.batch_faults[endpoint] -= 1
            return web.json_response({"error": {"message": f"{endpoint} is down", "type": "server_error"}},
                                     status=500)
        return None

    def _file_object(self, file_id: str) -> dict[str, Any]:
        name, data = self.files[file_id]
        return {"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                "filename": name, "purpose": "batch", "status": "processed"}

    async def _upload(self, request: web.Request) -> web.Response:
        if (down := self._failing("upload")) is not None:
            return down
        form = await request.post()
        upload = form["file"]
        data = upload.file.read() if hasattr(upload, "file") else str(upload).encode()  # type: ignore[union-attr]
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = (getattr(upload, "filename", "upload.jsonl"), data)
        return web.json_response(self._file_object(file_id))

    async def _file(self, request: web.Request) -> web.Response:
        file_id = request.match_info["file_id"]
        if file_id not in self.files:
            return web.json_response({"error": {"message": f"no file {file_id}"}}, status=404)
        return web.json_response(self._file_object(file_id))

    async def _content(self, request: web.Request) -> web.Response:
        if (down := self._failing("content")) is not None:
            return down
        file_id = request.match_info["file_id"]
        if file_id not in self.files:
            return web.json_response({"error": {"message": f"no file {file_id}"}}, status=404)
        return web.Response(body=self.files[file_id][1], content_type="application/octet-stream")

    async def _create_batch(self, request: web.Request) -> web.Response:
        if (down := self._failing("create")) is not None:
            return down
        body = await request.json()
        if body.get("input_file_id") not in self.files:
            return web.json_response({"error": {"message": "no such input file"}}, status=400)
        lines = [json.loads(x) for x in self.files[body["input_file_id"]][1].splitlines() if x.strip()]
        batch_id = f"batch_{len(self.batches) + 1}"
        self.batches[batch_id] = {
            "id": batch_id, "object": "batch", "endpoint": body["endpoint"], "input_file_id": body["input_file_id"],
            "completion_window": body["completion_window"], "status": "in_progress", "created_at": int(time.time()),
            "metadata": body.get("metadata"), "output_file_id": None, "error_file_id": None,
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            "_ready_at": time.time() + self.batch_delay}
        if self.on_batch_created is not None:
            self.on_batch_created(batch_id)
        if self.batch_creates_lost:
            self.batch_creates_lost -= 1
            return web.json_response({"error": {"message": "upstream reset"}}, status=500)
        return web.json_response(self._batch_view(batch_id))

    def _batch_view(self, batch_id: str) -> dict[str, Any]:
        batch = self.batches[batch_id]
        if batch["status"] == "in_progress" and time.time() >= batch["_ready_at"]:
            self._finish_batch(batch)
        return {k: v for k, v in batch.items() if not k.startswith("_")}

    def _finish_batch(self, batch: dict[str, Any]) -> None:
        lines = [json.loads(x) for x in self.files[batch["input_file_id"]][1].splitlines() if x.strip()]
        out = []
        for line in lines:
            self.batch_requests.append(line)
            content = self.scripted.popleft() if self.scripted else self.responder(line["body"])
            out.append({"id": f"req-{len(self.batch_requests)}", "custom_id": line["custom_id"],
                        "response": {"status_code": 200, "request_id": f"r{len(self.batch_requests)}",
                                     "body": completion_body(line["body"].get("model", "loopback"), content)},
                        "error": None})
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = ("batch_output.jsonl", "\n".join(json.dumps(o) for o in out).encode())
        batch.update(status="completed", output_file_id=file_id, completed_at=int(time.time()),
                     request_counts={"total": len(lines), "completed": len(lines), "failed": 0})

    async def _get_batch(self, request: web.Request) -> web.Response:
        if (down := self._failing("retrieve")) is not None:
            return down
        batch_id = request.match_info["batch_id"]
        if batch_id not in self.batches:
            return web.json_response({"error": {"message": f"no batch {batch_id}"}}, status=404)
        return web.json_response(self._batch_view(batch_id))

    async def _cancel_batch(self, request: web.Request) -> web.Response:
        batch_id = request.match_info["batch_id"]
        if batch_id not in self.batches:
            return web.json_response({"error": {"message": f"no batch {batch_id}"}}, status=404)
        if self.batches[batch_id]["status"] == "in_progress":
            self.batches[batch_id].update(status="cancelled", cancelled_at=int(time.time()))
        return web.json_response(self._batch_view(batch_id))

    async def _list_batches(self, request: web.Request) -> web.Response:
        if (down := self._failing("list")) is not None:
            return down
        data = [self._batch_view(b) for b in sorted(self.batches, reverse=True)]
        return web.json_response({"object": "list", "data": data, "has_more": False,
                                  "first_id": data[0]["id"] if data else None,
                                  "last_id": data[-1]["id"] if data else None})

    # -- Anthropic's Messages API (what litellm sends anthropic/ models to) -------------------------------
    async def _anthropic(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        self.log.append({"started": time.time(), "answered": time.time(), "ok": True})
        text = self.scripted.popleft() if self.scripted else "(nods) A fair question. I choose B."
        # What Anthropic reports: tokens read from its prompt cache and tokens written to it, apart.
        marked = sum(1 for m in body.get("messages", []) for block in
                     (m["content"] if isinstance(m.get("content"), list) else []) if block.get("cache_control"))
        return web.json_response({
            "id": "msg_loopback", "type": "message", "role": "assistant", "model": body.get("model"),
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": max(1, len(text) // 4),
                      "cache_read_input_tokens": self.cached_tokens if marked else 0,
                      "cache_creation_input_tokens": 5 if marked else 0}})

    def _app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        for prefix in ("/v1", "", "/openai"):  # "/openai": Azure OpenAI's (the API version in the query)
            app.router.add_post(f"{prefix}/files", self._upload)
            app.router.add_get(prefix + "/files/{file_id}", self._file)
            app.router.add_get(prefix + "/files/{file_id}/content", self._content)
            app.router.add_post(f"{prefix}/batches", self._create_batch)
            app.router.add_get(f"{prefix}/batches", self._list_batches)
            app.router.add_get(prefix + "/batches/{batch_id}", self._get_batch)
            app.router.add_post(prefix + "/batches/{batch_id}/cancel", self._cancel_batch)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/chat/completions", self._chat)
        app.router.add_post("/v1/messages", self._anthropic)
        # Azure OpenAI's route: a deployment in the path, the API version in the query.
        app.router.add_post("/openai/deployments/{deployment}/chat/completions", self._chat)
        return app

    async def serve(self) -> None:
        self._runner = web.AppRunner(self._app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, backlog=1024)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def start(self) -> LoopbackServer:
        """Serve from a background thread; returns once the port is bound."""
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self.serve())
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="loopback-server", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        if self._loop is None:
            return
        runner = self._runner

        async def shutdown() -> None:
            if runner is not None:
                await runner.cleanup()

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)


def spawn(latency: float, any_mode: bool = False, cwd: str | None = None) -> tuple[subprocess.Popen[str], str]:
    """This server in a process of its own (``main``), and its base URL once it listens; the caller ends it."""
    args = [sys.executable, "-m", "tests.loopback", "--latency", str(latency), *(["--any-mode"] if any_mode else [])]
    proc = subprocess.Popen(args, cwd=cwd, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    port = int(proc.stdout.readline().strip().split("=", 1)[1])
    return proc, f"http://127.0.0.1:{port}/v1"


def main() -> None:
    parser = argparse.ArgumentParser(description="OpenAI-compatible loopback chat server for tests and benchmarks.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds to wait before each reply")
    parser.add_argument("--any-mode", action="store_true",
                        help="answer as every benchmark mode's prompts expect (tests.helpers.any_mode_responder)")
    args = parser.parse_args()
    server = LoopbackServer(latency=args.latency, port=args.port)
    if args.any_mode:
        from tests.helpers import any_mode_responder

        server.responder = any_mode_responder

    async def run() -> None:
        await server.serve()
        print(f"port={server.port}", flush=True)
        await asyncio.Event().wait()

    asyncio.run(run())


if __name__ == "__main__":
    main()


async def bare_client_rate(base_url: str, in_flight: int, n: int, warm: int = 0) -> float:
    """Calls/s of a bare aiohttp client sending ``n`` distinct requests, ``in_flight`` at a time, after ``warm``
    unmeasured ones: what a gateway's rate is a share of, on this server and machine as they are in the run."""
    import aiohttp

    gate = asyncio.Semaphore(in_flight)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def one(i: int) -> None:
            async with gate:
                body = {"model": "bare", "messages": [{"role": "user", "content": f"bare {i}"}]}
                async with session.post(f"{base_url}/chat/completions", json=body) as resp:
                    assert (await resp.json())["choices"][0]["message"]["content"]

        await asyncio.gather(*(one(-1 - i) for i in range(warm)))
        start = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        return n / (time.perf_counter() - start)
