"""One name per character in a book: speaker aliases mapped to a canonical name."""

from __future__ import annotations

from collections import Counter

from rpbench import prompts
from rpbench.tasks.llm import Request
from rpbench.tasks.modes.furina.pool.ingest import Book
from rpbench.tasks.modes.furina.pool.models import AliasMap
from rpbench.tasks.modes.furina.records import RawScene


def tidy(name: str) -> str:
    return " ".join(name.split())


def speaker_counts(scenes: list[RawScene]) -> Counter[str]:
    return Counter(tidy(line.speaker) for sc in scenes for line in sc.dialogue)


def alias_request(book: Book, counts: Counter[str]) -> Request[AliasMap]:
    text = prompts.render("furina/pool/aliases", book.language, title=book.title, names=counts.most_common()).text
    return Request("extractor", [{"role": "user", "content": text}], schema=AliasMap, tag=f"aliases:{book.book_id}")


def alias_mapping(groups: AliasMap, known: set[str]) -> tuple[dict[str, str], list[str]]:
    """Alias -> canonical name. Names the model invented are ignored and reported, never applied."""
    mapping: dict[str, str] = {}
    ignored: list[str] = []
    for group in groups.groups:
        canonical = tidy(group.canonical)
        for alias in group.aliases:
            alias = tidy(alias)
            if alias not in known:
                ignored.append(alias)
            elif alias != canonical and alias not in mapping:
                mapping[alias] = canonical
    return mapping, ignored


def apply_aliases(scenes: list[RawScene], mapping: dict[str, str]) -> None:
    for sc in scenes:
        for line in sc.dialogue:
            line.speaker = mapping.get(tidy(line.speaker), tidy(line.speaker))
        seen: set[str] = set()
        merged = []
        for ch in sc.characters:
            ch.name = mapping.get(tidy(ch.name), tidy(ch.name))
            if ch.name not in seen:
                seen.add(ch.name)
                merged.append(ch)
        sc.characters = merged
