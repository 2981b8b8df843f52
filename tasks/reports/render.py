"""Reports from a leaderboard: the Markdown report, number formatting and the breakdown charts (the HTML page
that lays them out is ``page``).

The shared part (leaderboard table, breakdown charts, failures, metric notes)
is driven by a mode's ``Scoring``; a mode adds columns and ``Section``s of its
own without touching this file.
"""

from __future__ import annotations

import base64
import functools
import io
import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

from rpbench.tasks.reports.scores import shown_breakdown_values
from rpbench.tasks.reports.spec import Chart, Column, Scoring, Section


def undefined(value: Any) -> bool:
    """None or nan: a number with no value (an interval over one item, a model that scored nothing)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def fmt(value: Any, digits: int = 1, missing: str = "-") -> str:
    """A number as a report shows it: ``missing`` for None or nan, ``inf`` for infinity."""
    if undefined(value):
        return missing
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def fmt_interval(low: Any, high: Any, digits: int = 1, between: str = "-") -> str:
    """An interval as a report shows it, or one dash when it is undefined (one item, one cluster)."""
    if undefined(low) or undefined(high):
        return "-"
    return f"{fmt(low, digits)}{between}{fmt(high, digits)}"


def leaderboard_columns(scoring: Scoring, scores: Sequence[Mapping[str, Any]], extra: Sequence[Column] = ()
                        ) -> list[Column]:
    """The headline, its breakdowns, the other metrics, the mode's own columns, then failures."""
    head = scoring.headline
    columns = [Column(head.name, head.name, head.digits, unit=head.unit)]
    for key in scoring.groups:
        if key.breakdown:
            # In the headline's unit, which its own heading names (a unit on each of twenty columns is noise).
            columns += [Column(v, key.heading(v), head.digits) for v in shown_breakdown_values(scores, key)]
    columns += [Column(m.name, m.name, m.digits, unit=m.unit) for m in scoring.metrics[1:]]
    # The count and its share of the items the model was asked: one failure in eight is not one in eight hundred.
    return [*columns, *extra, Column("failed", "failed", 0, unit="items"),
            Column("failed_share", "failed", 1, unit="% of items", scale=100.0)]


def leaderboard_markdown(board: Sequence[Mapping[str, Any]], columns: Sequence[Column]) -> list[str]:
    head, *rest = columns
    lines = ["| model | " + head.heading + " | 95% CI | n | " + " | ".join(c.heading for c in rest) + " |",
             "|" + "---|" * (4 + len(rest))]
    for r in board:
        interval = fmt_interval(r['ci_low'], r['ci_high'], head.digits)
        cells = [fmt(c.shown(r.get(c.key)), c.digits, c.missing) for c in rest]
        lines.append(f"| {r['model']} | {fmt(r[head.key], head.digits)} | {interval} | {r['n']} | "
                     + " | ".join(cells) + " |")
    return lines


def breakdown_markdown(board: Sequence[Mapping[str, Any]], scoring: Scoring, scores: Sequence[Mapping[str, Any]]
                       ) -> str:
    """The headline per value of each breakdown key with its 95% interval and n, a table per key (the
    leaderboard's breakdown columns give the points alone)."""
    from rpbench.tasks.reports.scores import ALL

    head = scoring.headline
    keys = [k for k in scoring.groups if k.breakdown]
    parts = []
    for key in keys:
        values = shown_breakdown_values(scores, key)
        if not values:
            continue
        lines = [f"{head.name} per {key.label}: score [95% interval] (n)", "",
                 "| model | " + " | ".join(key.heading(v) for v in values) + " |", "|" + "---|" * (1 + len(values))]
        for r in board:
            cells = []
            for v in values:
                found = next((s for s in scores if s["model"] == r["model"] and s["metric"] == head.name
                              and s[key.column] == v and all(s[k.column] == ALL for k in scoring.groups
                                                             if k is not key)), None)
                cells.append("-" if found is None else f"{fmt(found['score'], head.digits)} "
                             f"[{fmt_interval(found['ci_low'], found['ci_high'], head.digits, ', ')}] ({found['n']})")
            lines.append(f"| {r['model']} | " + " | ".join(cells) + " |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def failures_markdown(failures: Mapping[str, Mapping[str, int]]) -> str:
    lines = [f"- {m}: " + ", ".join(f"{k} {v}" for k, v in f.items()) for m, f in failures.items() if f]
    return "\n".join(lines or ["- none"])


def metrics_markdown(scoring: Scoring) -> str:
    return "\n".join(f"- {m.name} ({m.unit + ', ' if m.unit else ''}"
                     f"{'higher' if m.higher_is_better else 'lower'} is better): {m.description}"
                     for m in scoring.metrics)


def markdown_report(title: str, intro: str, board: Sequence[Mapping[str, Any]], columns: Sequence[Column],
                    scoring: Scoring, sections: Sequence[Section], failures: Mapping[str, Mapping[str, int]],
                    breakdowns: str = "") -> str:
    lines = [f"# {title}", "", intro, "", "## Leaderboard", "", *leaderboard_markdown(board, columns), ""]
    if breakdowns:
        lines += [f"## {scoring.headline.name} per group, with intervals", "", breakdowns, ""]
    for section in sections:
        lines += [f"## {section.title}", "", section.markdown, ""]
    lines += ["## Failures", "", failures_markdown(failures), "", "## Metrics", "", metrics_markdown(scoring)]
    return "\n".join(lines) + "\n"


def png(fig: Any) -> str:
    """A matplotlib figure as a base64 PNG (and the figure closed)."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    with warnings.catch_warnings():
        # A glyph no installed font has (Chinese names where no CJK font is installed) is drawn as a box; the
        # tables beside the chart hold the names. One warning per glyph would bury the run's output.
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font")
        fig.tight_layout()
        fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")  # keeps a legend set beside the axes
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def load_chart_libraries() -> None:
    """Import what a report's charts and intervals need (matplotlib on Agg with its fonts, scipy's statistics):
    a run calls this in a thread of its own as it starts, while its stages wait on their models, so the report
    stage at its end does not spend a second importing them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot
    import scipy.stats  # noqa: F401

    chart_fonts()


@functools.cache
def chart_fonts() -> list[str]:
    """Matplotlib's default font, then any installed font with Chinese glyphs, which matplotlib falls back to
    for a character the first lacks (a character's or dimension's Chinese name on an axis)."""
    from matplotlib import font_manager

    installed = {f.name for f in font_manager.fontManager.ttflist}
    cjk = [name for name in ("Noto Sans CJK SC", "Noto Sans CJK JP", "WenQuanYi Zen Hei", "WenQuanYi Micro Hei",
                             "Source Han Sans SC", "SimHei", "Microsoft YaHei", "PingFang SC") if name in installed]
    return ["DejaVu Sans", *cjk]


def _number(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float) and math.isfinite(value)


def _interval(scores: Sequence[Mapping[str, Any]], scoring: Scoring, model: str, column: str, value: str
              ) -> tuple[Any, Any]:
    """The headline's interval for ``model`` at one value of one breakdown key (every other key at 'all')."""
    found = next((s for s in scores if s["model"] == model and s["metric"] == scoring.headline.name
                  and s[column] == value and all(s[k.column] == "all" for k in scoring.groups if k.column != column)),
                 None)
    return (found["ci_low"], found["ci_high"]) if found else (None, None)


def breakdown_charts(board: Sequence[Mapping[str, Any]], scoring: Scoring, scores: Sequence[Mapping[str, Any]],
                     colours: Mapping[str, str]) -> dict[str, Chart]:
    """One grouped bar chart of the headline metric per breakdown key, a bar per model in its colour with its 95%
    interval; a value a model has no items for is not drawn (no bar of 0) but named in the caption."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["font.family"] = chart_fonts()
    head = scoring.headline
    axis = f"{head.name} ({head.unit})" if head.unit else head.name
    out = {}
    for key in scoring.groups:
        if not key.breakdown:
            continue
        values = shown_breakdown_values(scores, key)
        fig, ax = plt.subplots(figsize=(7, 3.2))
        width = 0.8 / max(len(board), 1)
        missing: list[str] = []
        for k, r in enumerate(board):
            xs = [i + k * width for i in range(len(values))]
            heights = [r.get(v) for v in values]
            drawn = [(x, h, _interval(scores, scoring, str(r["model"]), key.column, v))
                     for x, h, v in zip(xs, heights, values, strict=True) if _number(h)]
            # Each bar's 95% interval as an error bar (none where it is undefined: one item, one cluster).
            errors = [[max(h - low, 0.0) if _number(low) else 0.0 for _, h, (low, _high) in drawn],
                      [max(high - h, 0.0) if _number(high) else 0.0 for _, h, (_low, high) in drawn]]
            ax.bar([x for x, _, _ in drawn], [h for _, h, _ in drawn], width, label=r["model"],
                   color=colours.get(str(r["model"])), yerr=errors if drawn else None, capsize=2,
                   error_kw={"elinewidth": 0.8, "ecolor": "#333333"})
            missing += [f"{r['model']} on {v}" for v, h in zip(values, heights, strict=True) if not _number(h)]
        ticks = [i + width * (len(board) - 1) / 2 for i in range(len(values))]
        # Long names (CharacterBench's dimensions) side by side run into each other: slant them.
        labels = [key.heading(v) for v in values]
        # A slot of the 7-inch axis holds about 48 / len(labels) characters set level.
        crowded = max(map(len, labels), default=0) * len(labels) > 48
        ax.set_xticks(ticks, labels, rotation=30 if crowded else 0, ha="right" if crowded else "center",
                      fontsize=8 if crowded else None)
        ax.set_ylabel(axis)
        ax.set_title(f"{head.name} per {key.label}")
        if board:
            # Beside the axes, not over the bars.
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
        caption = f"Not drawn, no items: {', '.join(missing)}." if missing else ""
        out[key.column] = Chart(png(fig), f"{head.name} per {key.label}", caption)
    return out
