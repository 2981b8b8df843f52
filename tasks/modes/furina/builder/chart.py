"""Bar chart of benchmark items per dimension (PNG)."""

from __future__ import annotations

from pathlib import Path

from rpbench.tasks.modes.furina.dimensions import DIMENSIONS
from rpbench.tasks.modes.furina.domain import Item


def items_per_dimension_chart(items: list[Item], path: str | Path, title: str = "Items per dimension") -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    counts = [sum(1 for i in items if i.dimension == d) for d in DIMENSIONS]
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.bar(DIMENSIONS, counts, color="#4c72b0")
    ax.set_title(title)
    ax.set_ylabel("items")
    for x, n in enumerate(counts):
        ax.text(x, n, str(n), ha="center", va="bottom")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
