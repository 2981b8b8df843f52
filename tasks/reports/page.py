"""A report as one self-contained HTML page: the leaderboard as a sortable table, compact by default with every
column on demand, each chart beside the table it explains, a colour per model that every chart shares.

The Markdown report (report.md) holds the same numbers; this page only lays them out for reading.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jinja2 import Environment, StrictUndefined
from markdown_it import MarkdownIt

from rpbench.tasks.reports.render import fmt, fmt_interval
from rpbench.tasks.reports.spec import Chart, Column, Section


@dataclass(frozen=True)
class Block:
    """A part of the page: a heading, its HTML, and the charts shown beside it."""

    title: str
    html: str
    charts: Sequence[Chart] = ()


_MD = MarkdownIt("commonmark").enable("table")

# Sorting: a click on a heading sorts by that column (numbers as numbers, a dash last), a second click reverses.
# "All columns" shows what the compact view leaves out. Both work from the file alone (no network).
_SCRIPT = """
document.querySelectorAll('table.board').forEach(function (table) {
  table.querySelectorAll('th').forEach(function (th, col) {
    th.addEventListener('click', function () {
      var body = table.tBodies[0], rows = Array.from(body.rows);
      var down = th.dataset.order !== 'desc';
      table.querySelectorAll('th').forEach(function (h) { delete h.dataset.order; });
      th.dataset.order = down ? 'desc' : 'asc';
      function key(row) { var v = row.cells[col].dataset.v; return v === undefined || v === '' ? null : v; }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (x === null || y === null) { return (x === null) - (y === null); }
        var nx = Number(x), ny = Number(y);
        var c = (isNaN(nx) || isNaN(ny)) ? String(x).localeCompare(String(y)) : nx - ny;
        return down ? -c : c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
document.querySelectorAll('button.all-columns').forEach(function (button) {
  button.addEventListener('click', function () {
    var on = document.body.classList.toggle('all-columns');
    button.textContent = on ? 'Fewer columns' : button.dataset.label;
  });
});
"""

_PAGE = Environment(undefined=StrictUndefined, autoescape=True).from_string(
    """<!doctype html>
<html><head><meta charset="utf-8"><title>{{ title }}</title>
<style>
body{font-family:sans-serif;max-width:1400px;margin:1.5em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 7px;font-size:13px}
td.num{text-align:right;font-variant-numeric:tabular-nums}th{background:#f4f4f4;cursor:pointer;white-space:nowrap}
th[data-order=desc]::after{content:" \\25BE"}th[data-order=asc]::after{content:" \\25B4"}
.more{display:none}body.all-columns .more{display:table-cell}
.swatch{display:inline-block;width:.8em;height:.8em;border-radius:2px;margin-right:.4em;vertical-align:-1px}
.pair{display:flex;flex-wrap:wrap;gap:1.5em;align-items:flex-start}.pair>div{flex:1 1 480px;min-width:0;overflow-x:auto}
figure{flex:0 1 620px;margin:0}figure img{max-width:100%}figcaption{font-size:12px;color:#555}
button.all-columns{font-size:12px;margin:.3em 0}
</style></head>
<body>
<h1>{{ title }}</h1>
{{ intro | safe }}
{% for block in blocks %}<h2>{{ block.title }}</h2>
<div class="pair"><div>{{ block.html | safe }}</div>
{% for chart in block.charts %}<figure><img alt="{{ chart.alt }}" src="data:image/png;base64,{{ chart.png }}">
{% if chart.caption %}<figcaption>{{ chart.caption }}</figcaption>{% endif %}</figure>
{% endfor %}</div>
{% endfor %}<script>{{ script | safe }}</script>
</body></html>
""")

_BOARD = Environment(undefined=StrictUndefined, autoescape=True).from_string(
    """{% if hidden %}<button class="all-columns" data-label="All {{ total }} columns">All {{ total }} columns</button>
{% endif %}<table class="board"><thead><tr><th>model</th>
{% for c in columns %}<th{% if c.more %} class="more"{% endif %}>{{ c.heading }}</th>{% endfor %}</tr></thead>
<tbody>{% for row in rows %}<tr><td data-v="{{ row.model }}"><span class="swatch" style="background:{{ row.colour }}">
</span>{{ row.model }}</td>
{% for cell in row.cells %}<td class="num{% if cell.more %} more{% endif %}" data-v="{{ cell.v }}">{{ cell.text }}</td>
{% endfor %}</tr>
{% endfor %}</tbody></table>
""")


def _sort_value(value: Any) -> str:
    return repr(float(value)) if isinstance(value, int | float) and value == value else ""  # nan: no value


FAILED_COLUMNS = ("failed", "failed_share")  # always shown: how many items failed, and their share


def leaderboard_html(board: Sequence[Mapping[str, Any]], columns: Sequence[Column], colours: Mapping[str, str],
                     compact: int = 1) -> str:
    """The leaderboard as a sortable table: the headline, its interval, n and failures (count and share) shown;
    the breakdowns, other metrics and the mode's columns after ``compact`` of them behind a button."""
    head, *rest = columns
    failed = [c for c in rest if c.key in FAILED_COLUMNS]
    others = [c for c in rest if c.key not in FAILED_COLUMNS]
    shown: list[dict[str, Any]] = [{"heading": head.heading, "more": False},
                                   {"heading": "95% CI", "more": False}, {"heading": "n", "more": False}]
    shown += [{"heading": c.heading, "more": k >= compact} for k, c in enumerate(others)]
    shown += [{"heading": c.heading, "more": False} for c in failed]
    rows = []
    for r in board:
        cells = [{"v": _sort_value(r.get(head.key)), "text": fmt(r.get(head.key), head.digits, head.missing),
                  "more": False},
                 {"v": _sort_value(r.get("ci_low")),
                  "text": fmt_interval(r.get('ci_low'), r.get('ci_high'), head.digits), "more": False},
                 {"v": _sort_value(r.get("n")), "text": str(r.get("n", "-")), "more": False}]
        for k, c in enumerate(others):
            value = c.shown(r.get(c.key))
            cells.append({"v": _sort_value(value), "text": fmt(value, c.digits, c.missing), "more": k >= compact})
        for c in failed:
            value = c.shown(r.get(c.key))
            cells.append({"v": _sort_value(value), "text": fmt(value, c.digits, c.missing), "more": False})
        rows.append({"model": r["model"], "colour": colours.get(str(r["model"]), "#999"), "cells": cells})
    hidden = sum(c["more"] for c in shown)
    return _BOARD.render(columns=shown, rows=rows, hidden=hidden, total=len(shown) + 1)


def markdown_html(markdown: str) -> str:
    return _MD.render(markdown)


def section_block(section: Section) -> Block:
    return Block(section.title, markdown_html(section.markdown),
                 [Chart(png, name.replace("_", " ")) for name, png in section.images.items()])


def html_page(title: str, intro_markdown: str, blocks: Sequence[Block]) -> str:
    """One self-contained page: the intro, then each block with its charts beside it."""
    return _PAGE.render(title=title, intro=markdown_html(intro_markdown), blocks=list(blocks), script=_SCRIPT)
