"""FURINA's figures: performance against reliability per language and character type (Figures 5 and 11).

Values that are not numbers are not drawn as if they were: a model with no checked items (reliability
undefined) is named under its panel instead of plotted, and infinite reliability (checked, never
hallucinated) sits on a line of its own marked "inf" above the finite values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rpbench.tasks.reports.render import png

if TYPE_CHECKING:
    from matplotlib.axes import Axes

Points = dict[str, tuple[float, float | None]]


def pareto_grid(slices: dict[tuple[str, str], Points], fronts: dict[str, list[str]],
                colours: dict[str, str] | None = None) -> str:
    """One panel per (language, character type): a point per model, stars on that panel's frontier."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = sorted(slices)
    cols = min(2, len(keys))
    rows = math.ceil(len(keys) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.8 * rows), squeeze=False)
    for ax in axes.flat[len(keys):]:
        ax.set_visible(False)
    for ax, key in zip(axes.flat, keys, strict=False):
        _panel(ax, slices[key], fronts.get(f"{key[0]}/{key[1]}", []), f"{key[0]}, {key[1]}", colours or {})
    return png(fig)


@dataclass(frozen=True)
class Placed:
    model: str
    x: float
    y: float
    label_offset: int  # points above (positive) or below (negative) the marker


@dataclass(frozen=True)
class PanelLayout:
    placed: list[Placed]
    undefined: list[str]  # models with no reliability: named, not drawn
    infinity_line: float | None  # where infinite reliability is drawn, when some model has it


def panel_layout(points: Points) -> PanelLayout:
    """Where each model goes: finite values as they are, infinity on a line above them, undefined nowhere."""
    finite = [r for _, r in points.values() if r is not None and not math.isinf(r)]
    top = max(finite) * 1.25 if finite else 1.0
    has_inf = any(r is not None and math.isinf(r) for _, r in points.values())
    ordered = sorted(((p, top if math.isinf(r) else r, m) for m, (p, r) in points.items() if r is not None))
    # Alternate label sides in order of performance, so that neighbours do not print over each other.
    placed = [Placed(m, x, y, 8 if k % 2 == 0 else -12) for k, (x, y, m) in enumerate(ordered)]
    return PanelLayout(placed, sorted(m for m, (_, r) in points.items() if r is None), top if has_inf else None)


def _panel(ax: Axes, points: Points, front: list[str], title: str, colours: dict[str, str]) -> None:
    layout = panel_layout(points)
    for p in layout.placed:
        star = p.model in front
        ax.scatter(p.x, p.y, marker="*" if star else "o", s=90 if star else 40, color=colours.get(p.model))
        ax.annotate(p.model, (p.x, p.y), xytext=(4, p.label_offset), textcoords="offset points", fontsize=7)
    if layout.infinity_line is not None:
        ax.axhline(layout.infinity_line, linestyle=":", linewidth=0.8, color="grey")
        ax.text(0.01, layout.infinity_line, " inf (no hallucination)", transform=ax.get_yaxis_transform(),
                fontsize=7, va="bottom", color="grey")
    if layout.undefined:
        ax.text(0.01, 0.02, "undefined (no checked items): " + ", ".join(layout.undefined),
                transform=ax.transAxes, fontsize=7, color="grey")
    ax.set_xlabel("performance")
    ax.set_ylabel("reliability (100 / hallucination %)")
    ax.set_title(f"{title} (* = Pareto frontier)", fontsize=9)
