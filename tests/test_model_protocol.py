"""Stages take any ``Model`` (complete, run, run_all): a scripted one stands in for the gateway with no litellm,
no server and no cache, and the stage behaves exactly as it does on the gateway's replies."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Sequence
from typing import Any

from rpbench.samples import sample_path
from rpbench.tasks.llm.requests import CallResult, Message, Model, NoReply, Reply, Request


class ScriptedModel:
    """Answers every request with ``script(messages)``; a None answer is a failed call."""

    def __init__(self, script: Callable[[list[Message]], str | None]) -> None:
        self.script = script
        self.asked: list[Request[Any]] = []

    def model_of(self, role: str) -> str:
        return f"scripted/{role}"

    async def complete(self, role: str, messages: list[Message], *, schema: Any = None, sample_index: int = 0,
                       tag: str | None = None, parse: Any = None) -> CallResult[Any]:
        return await self.run(Request(role, messages, schema, sample_index, tag, parse))

    async def run(self, req: Request[Any]) -> CallResult[Any]:
        self.asked.append(req)
        text = self.script(req.messages)
        if text is None:
            return NoReply(req.role, self.model_of(req.role), None, "scripted failure", 1)
        try:
            parsed = req.parse(text) if req.parse else None
        except ValueError as exc:
            return NoReply(req.role, self.model_of(req.role), text, str(exc), 1, raw_replies=(text,))
        return Reply(req.role, self.model_of(req.role), text, parsed, 1, False, (text,))

    async def run_all(self, requests: Sequence[Request[Any]], *, limit: int = 64,
                      on_done: Any = None, roles: Any = None) -> list[CallResult[Any]]:
        return [await self.run(r) for r in requests]


def test_a_scripted_model_answers_a_stage_without_the_gateway():
    from rpbench.tasks.modes.roleinteract.answering import answer_all
    from rpbench.tasks.modes.roleinteract.loader import load_files

    items = [i for i in load_files([str(sample_path("roleinteract", "example.json"))])[0] if i.choices][:4]
    model: Model = ScriptedModel(lambda messages: None if "FAIL" in str(messages) else "My answer: A")
    answers = asyncio.run(answer_all(model, items, "roleinteract-player", "scripted"))
    assert [a.status for a in answers] == ["ok"] * 4
    assert all(a.letters == ["A"] for a in answers)
    # A failed call is a failed answer, never a guess.
    failing = ScriptedModel(lambda messages: None)
    assert {a.status for a in asyncio.run(answer_all(failing, items, "roleinteract-player", "scripted"))} == {"failed"}


def test_the_model_protocol_module_imports_no_litellm():
    import subprocess

    proc = subprocess.run([sys.executable, "-c", "import sys, rpbench.tasks.llm.requests, rpbench.tasks.llm; "
                                                 "print('litellm' in sys.modules)"], capture_output=True, text=True)
    assert proc.stdout.strip() == "False", proc.stderr
