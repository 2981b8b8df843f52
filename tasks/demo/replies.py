"""Pure steps of the demo: build the requests, run them through the gateway, shape the rows."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError

import prompts
from tasks.errors import InputError
from tasks.llm import CallResult, Gateway, Request


class DemoLine(BaseModel):
    character: dict[str, str]
    speaker: str
    line: str
    language: str = "en"


class InCharacterVerdict(BaseModel):
    """The judge reasons first, then scores."""

    reason: str = Field(max_length=300)
    score: Literal[1, 2, 3, 4, 5]


def load_lines(path: str | Path) -> list[DemoLine]:
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise InputError(f"{path}: cannot read demo lines ({exc})") from None
    lines = []
    for i, item in enumerate(data or []):
        try:
            lines.append(DemoLine.model_validate(item))
        except ValidationError as exc:
            field = ".".join(str(p) for p in exc.errors()[0]["loc"])
            raise InputError(f"{path}: record {i}: field '{field}': {exc.errors()[0]['msg']}") from None
    return lines


def reply_requests(lines: list[DemoLine]) -> list[Request]:
    out = []
    for i, ln in enumerate(lines):
        text = prompts.render("demo/reply", ln.language, character=ln.character, speaker=ln.speaker, line=ln.line).text
        out.append(Request("source", [{"role": "user", "content": text}], tag=f"demo-reply-{i}"))
    return out


def judge_requests(lines: list[DemoLine], replies: list[CallResult]) -> list[Request | None]:
    """One judge request per reply that exists; a failed reply gets no judgment (and is reported as such)."""
    out: list[Request | None] = []
    for i, (ln, rep) in enumerate(zip(lines, replies, strict=True)):
        if not rep.ok:
            out.append(None)
            continue
        text = prompts.render(
            "demo/judge", ln.language, character=ln.character, speaker=ln.speaker, line=ln.line, reply=rep.text
        ).text
        out.append(Request("judge", [{"role": "user", "content": text}], schema=InCharacterVerdict, tag=f"demo-judge-{i}"))
    return out


def demo_rows(lines: list[DemoLine], replies: list[CallResult], verdicts: list[CallResult | None]) -> list[dict[str, Any]]:
    rows = []
    for i, (ln, rep, ver) in enumerate(zip(lines, replies, verdicts, strict=True)):
        if not rep.ok:
            status = "no_reply"
        else:
            status = "ok" if ver is not None and ver.ok else "failed"
        rows.append(
            {
                "prompt_id": f"demo-{i}",
                "character": ln.character["name"],
                "prompt": ln.line,
                "reply": rep.text if rep.ok else None,
                "judge_status": status,
                "in_character": ver.parsed.score if ver is not None and ver.ok else None,
                "judge_reason": ver.parsed.reason if ver is not None and ver.ok else None,
                "judge_raw": ver.text if ver is not None else rep.error,
            }
        )
    return rows


async def run_demo(
    gateway: Gateway, lines: list[DemoLine], progress: Callable[[str, int], Any] | None = None
) -> list[dict[str, Any]]:
    """Replies first, then judgments of the replies that exist; ``progress(name, total)`` makes a callback."""
    requests = reply_requests(lines)
    replies = await gateway.run_all(requests, on_done=progress("replies", len(requests)) if progress else None)
    judge = judge_requests(lines, replies)
    todo = [r for r in judge if r is not None]
    results = await gateway.run_all(todo, on_done=progress("judgments", len(todo)) if progress else None)
    it = iter(results)
    verdicts = [next(it) if r is not None else None for r in judge]
    return demo_rows(lines, replies, verdicts)
