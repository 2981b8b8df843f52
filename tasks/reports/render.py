"""Reports from a leaderboard: Markdown, and one self-contained HTML page (markdown-it-py, Jinja2) with charts.

The shared part (leaderboard table, breakdown charts, failures, metric notes)
is driven by a mode's ``Scoring``; a mode adds columns and ``Section``s of its
own without touching this file.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

from jinja2 import Environment, StrictUndefined
from markdown_it import MarkdownIt

from rpbench.tasks.reports.scores import breakdown_values
from rpbench.tasks.reports.spec import Column, Scoring, Section

_PAGE = Environment(undefined=StrictUndefined, autoescape=True).from_string(
    """<!doctype html>
<html><head><meta charset="utf-8"><title>{{ title }}</title>
<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:3px 6px;font-size:13px}img{max-width:100%}</style></head>
<body>{{ body | safe }}
{% for name, png in images.items() %}<figure><img alt="{{ name }}" src="data:image/png;base64,{{ png }}"></figure>
{% endfor %}</body></html>
""")


def fmt(value: Any, digits: int = 1, missing: str = "-") -> str:
    """A number as a report shows it: ``missing`` for None or nan, ``inf`` for infinity."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return missing
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def leaderboard_columns(scoring: Scoring, scores: Sequence[Mapping[str, Any]], extra: Sequence[Column] = ()
                        ) -> list[Column]:
    """The headline, its breakdowns, the other metrics, the mode's own columns, then failures."""
    head = scoring.headline
    columns = [Column(head.name, head.name, head.digits)]
    for key in scoring.groups:
        if key.breakdown:
            columns += [Column(v, v, head.digits) for v in breakdown_values(scores, key)]
    columns += [Column(m.name, m.name, m.digits) for m in scoring.metrics[1:]]
    return [*columns, *extra, Column("failed", "failed", 0)]


def leaderboard_markdown(board: Sequence[Mapping[str, Any]], columns: Sequence[Column]) -> list[str]:
    head, *rest = columns
    lines = ["| model | " + head.label + " | 95% CI | n | " + " | ".join(c.label for c in rest) + " |",
             "|" + "---|" * (4 + len(rest))]
    for r in board:
        interval = f"{fmt(r['ci_low'], head.digits)}-{fmt(r['ci_high'], head.digits)}"
        cells = [fmt(r.get(c.key), c.digits, c.missing) for c in rest]
        lines.append(f"| {r['model']} | {fmt(r[head.key], head.digits)} | {interval} | {r['n']} | "
                     + " | ".join(cells) + " |")
    return lines


def markdown_report(title: str, intro: str, board: Sequence[Mapping[str, Any]], columns: Sequence[Column],
                    scoring: Scoring, sections: Sequence[Section], failures: Mapping[str, Mapping[str, int]]) -> str:
    lines = [f"# {title}", "", intro, "", "## Leaderboard", "", *leaderboard_markdown(board, columns), ""]
    for section in sections:
        lines += [f"## {section.title}", "", section.markdown, ""]
    lines += ["## Failures", ""]
    if any(failures.values()):
        lines += [f"- {m}: " + ", ".join(f"{k} {v}" for k, v in f.items()) for m, f in failures.items() if f]
    else:
        lines.append("- none")
    lines += ["", "## Metrics", ""]
    lines += [f"- {m.name} ({'higher' if m.higher_is_better else 'lower'} is better): {m.description}"
              for m in scoring.metrics]
    return "\n".join(lines) + "\n"


def png(fig: Any) -> str:
    """A matplotlib figure as a base64 PNG (and the figure closed)."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _number(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float) and math.isfinite(value)


def breakdown_charts(board: Sequence[Mapping[str, Any]], scoring: Scoring,
                     scores: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """One grouped bar chart of the headline metric per breakdown key, a bar per model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = {}
    for key in scoring.groups:
        if not key.breakdown:
            continue
        values = breakdown_values(scores, key)
        fig, ax = plt.subplots(figsize=(7, 3.2))
        width = 0.8 / max(len(board), 1)
        for k, r in enumerate(board):
            xs = [i + k * width for i in range(len(values))]
            heights = [r.get(v) for v in values]
            drawn = [(x, h) for x, h in zip(xs, heights, strict=True) if _number(h)]
            ax.bar([x for x, _ in drawn], [h for _, h in drawn], width, label=r["model"])
            for x, h in zip(xs, heights, strict=True):
                if not _number(h):  # no items here: say so rather than draw a bar of 0
                    ax.text(x, 0, "n/a", ha="center", va="bottom", fontsize=6, rotation=90, color="grey")
        ax.set_xticks([i + width * (len(board) - 1) / 2 for i in range(len(values))], values)
        ax.set_ylabel(scoring.headline.name)
        ax.set_title(f"{scoring.headline.name} per {key.label}")
        if board:
            ax.legend(fontsize=7)
        out[key.column] = png(fig)
    return out


def html_report(title: str, markdown: str, images: Mapping[str, str]) -> str:
    """One self-contained page: the Markdown rendered, the charts inline."""
    body = MarkdownIt("commonmark").enable("table").render(markdown)
    return _PAGE.render(title=title, body=body, images=dict(images))
