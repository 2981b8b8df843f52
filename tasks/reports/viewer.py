"""The sample viewer: every sample of a run (one model's answer to one item, with what it was asked and how it
was judged) in one page that works from a file, with no server.

A mode turns its published tables into ``Sample``s; this module owns the page: filters over the samples'
facets, a text search, paging, a deep link per sample (``viewer.html#sample=<id>``) and the samples of the
same item side by side (``#item=<item>``). The samples travel as JSON inside the page and are drawn with
``textContent`` only, so model text (``<script>`` included) is always shown as text.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

from rpbench.storage.tables import atomic_write_chunks

VIEWER_FILE = "viewer.html"
PAGE_SIZE = 50


@dataclass(frozen=True)
class Part:
    """One block of a sample as the viewer shows it. ``kind``: ``text`` (a labelled block, the model's answer
    say), ``turn`` (one line of a dialogue: ``label`` is the speaker), ``pair`` (parts of this kind that follow
    one another are shown side by side: two replies to the same turn, as a judge compared them) or ``note``
    (small print: a judge's reasons, a status)."""

    label: str
    text: str
    kind: str = "text"


@dataclass(frozen=True)
class Sample:
    """One model's answer to one item. ``item`` is shared by every model's sample of that item (the viewer
    puts them side by side); ``facets`` are the filters (language, dimension, outcome, ...); ``score`` is a
    short line of how it was scored ("win", "Rouge-L 35.2")."""

    id: str
    item: str
    model: str
    title: str
    score: str
    parts: list[Part]
    facets: dict[str, str] = field(default_factory=dict)


def gist(text: str, width: int = 80) -> str:
    """A text on one line, ``width`` columns at most (a Chinese character takes two), for a sample's title: cut
    at a space where there is one near the end (English), else anywhere (Chinese has no spaces to cut at)."""
    from rich.cells import cell_len, chop_cells

    line = " ".join(text.split())
    if cell_len(line) <= width:
        return line
    cut = chop_cells(line, width - 1)[0]
    space = cut.rfind(" ")
    return (cut[:space] if space > len(cut) * 2 // 3 else cut) + "…"


def failed_text(text: str | None, error: str | None = None) -> str:
    """A reply as the viewer shows it: the text, or why there is none."""
    if text is not None:
        return text
    return f"(no reply: {error})" if error else "(no reply)"


def versus_people(judge: float | None, human: float | None) -> str:
    """The viewer's facet for a judge's score beside a person's, to filter replies by disagreement."""
    if judge is None or human is None:
        return "-"
    return "agrees" if judge == human else f"off by {abs(judge - human):g}"


def _asset(name: str) -> str:
    return files("rpbench.tasks.reports").joinpath("assets", name).read_text(encoding="utf-8")


def _json_for_script(value: object) -> str:
    """JSON safe inside a <script> element: no ``</script>`` or ``<!--`` can end or bend it."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").replace(
        "\u2028", "\\u2028").replace("\u2029", "\\u2029")


def viewer_html(title: str, samples: Iterable[Sample], links: Mapping[str, str] | None = None) -> str:
    """The page. ``links`` (label -> relative href) go in its header: back to the report, say."""
    return "".join(_viewer_chunks(title, samples, links))


def _viewer_chunks(title: str, samples: Iterable[Sample], links: Mapping[str, str] | None) -> Iterator[str]:
    """The page piece by piece, one sample at a time: at 100,000 samples the whole page (and its JSON, and
    their escaped copies) held at once was most of a run's peak memory."""
    yield ("<!doctype html>\n<html><head><meta charset=\"utf-8\">"
           "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
           f"<title>{html.escape(title)}</title><style>{_asset('viewer.css')}</style></head>\n<body>\n"
           "<script type=\"application/json\" id=\"viewer-data\">")
    head = _json_for_script({"title": title, "pageSize": PAGE_SIZE, "links": dict(links or {})})
    yield head[:-1] + ',"samples":['
    seen: set[str] = set()
    for n, s in enumerate(samples):
        if s.id in seen:
            raise ValueError(f"two samples have the id '{s.id}'")
        seen.add(s.id)
        # The model is always a filter, first.
        yield ("," if n else "") + _json_for_script({**asdict(s), "facets": {"model": s.model, **s.facets}})
    yield f"]}}</script>\n<div id=\"app\"></div>\n<script>{_asset('viewer.js')}</script>\n</body></html>\n"


_DATA = re.compile(r'<script type="application/json" id="viewer-data">(.*?)</script>', re.S)


def read_viewer(path: str | Path) -> dict[str, Any]:
    """The title, links and samples a viewer page holds (``rpbench report`` gathers several runs' samples)."""
    found = _DATA.search(Path(path).read_text(encoding="utf-8"))
    if found is None:
        raise ValueError("not a sample viewer page (no viewer data in it)")
    data = json.loads(found.group(1))
    if not isinstance(data, dict) or not isinstance(data.get("title"), str) or not isinstance(data.get("samples"),
                                                                                               list):
        raise ValueError("its viewer data is not what rpbench writes (a title and a list of samples)")
    return data


def write_viewer(folder: str | Path, title: str, samples: Iterable[Sample],
                 links: Mapping[str, str] | None = None, name: str = VIEWER_FILE) -> Path:
    """``viewer.html`` in ``folder`` (written atomically, as the samples come); returns its path."""
    path = Path(folder) / name
    atomic_write_chunks(path, (chunk.encode("utf-8") for chunk in _viewer_chunks(title, samples, links)))
    return path
