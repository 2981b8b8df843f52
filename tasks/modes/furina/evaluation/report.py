"""Evaluation reports: Markdown, and a self-contained HTML page with the charts embedded."""

from __future__ import annotations

import base64
import html
import io
import math
from typing import Any

from rpbench.tasks.modes.furina.builder.dwrs import DIMENSIONS


def _fmt(x: Any, digits: int = 1) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.{digits}f}" if isinstance(x, float) else str(x)


def _png(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def charts(board: dict[str, Any], scores: list[dict[str, Any]]) -> dict[str, str]:
    """Base64 PNGs: per-dimension scores, established vs synthesized, performance vs reliability (Pareto)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = board["rows"]
    models = [r["model"] for r in rows]
    out = {}
    fig, ax = plt.subplots(figsize=(7, 3.2))
    width = 0.8 / max(len(models), 1)
    for k, r in enumerate(rows):
        ax.bar([i + k * width for i in range(len(DIMENSIONS))], [r[d] or 0 for d in DIMENSIONS], width, label=r["model"])
    ax.set_xticks([i + width * (len(models) - 1) / 2 for i in range(len(DIMENSIONS))], DIMENSIONS)
    ax.set_ylabel("score")
    ax.set_title("Score per dimension")
    ax.legend(fontsize=7)
    out["dimensions"] = _png(fig)

    fig, ax = plt.subplots(figsize=(7, 3.2))
    for k, ctype in enumerate(("established", "synthesized")):
        vals = [next((s["score"] for s in scores if (s["model"], s["dimension"], s["language"], s["character_type"])
                      == (m, "all", "all", ctype)), 0) for m in models]
        ax.bar([i + k * 0.4 for i in range(len(models))], vals, 0.4, label=ctype)
    ax.set_xticks([i + 0.2 for i in range(len(models))], models, fontsize=7)
    ax.set_title("Established vs synthesized characters")
    ax.legend(fontsize=7)
    out["character_types"] = _png(fig)

    fig, ax = plt.subplots(figsize=(5, 3.5))
    finite = [r["reliability"] for r in rows if r["reliability"] is not None]
    top = (max(finite) * 1.2) if finite else 1.0
    for r in rows:
        y = r["reliability"] if r["reliability"] is not None else top
        ax.scatter(r["score"], y, marker="*" if r["model"] in board["pareto"] else "o", s=80)
        ax.annotate(r["model"], (r["score"], y), fontsize=7)
    ax.set_xlabel("performance")
    ax.set_ylabel("reliability (100 / hallucination %)")
    ax.set_title("Performance vs reliability (* = Pareto frontier)")
    out["pareto"] = _png(fig)
    return out


def markdown_report(board: dict[str, Any], halluc: list[dict[str, Any]], failures: dict[str, dict[str, int]],
                    n_items: int) -> str:
    lines = ["# rpbench evaluation", "", f"{n_items} benchmark items.", "", "## Leaderboard", "",
             "| model | score | 95% CI | n | " + " | ".join(DIMENSIONS)
             + " | established | synthesized | gap | SC % | EC % | reliability | order disagreement | failed |",
             "|" + "---|" * (12 + len(DIMENSIONS))]
    for r in board["rows"]:
        lines.append(
            f"| {r['model']} | {_fmt(r['score'])} | {_fmt(r['ci_low'])}-{_fmt(r['ci_high'])} | {r['n']} | "
            + " | ".join(_fmt(r[d]) for d in DIMENSIONS)
            + f" | {_fmt(r['established'])} | {_fmt(r['synthesized'])} | {_fmt(r['gap'])}"
            + f" | {_fmt(r['sc_rate'])} | {_fmt(r['ec_rate'])} | "
            + f"{_fmt(r['reliability']) if r['reliability'] is not None else 'undefined (rate 0 or no items)'} | "
            + f"{_fmt(r['order_disagreement'], 2)} | {r['failed']} |")
    lines += ["", f"Pareto frontier (performance vs reliability): {', '.join(board['pareto']) or '-'}",
              f"Separability index: {_fmt(board['separability_index'], 3)}", "", "## Failures (left out of scores)", ""]
    if any(failures.values()):
        lines += [f"- {m}: " + ", ".join(f"{k} {v}" for k, v in f.items()) for m, f in failures.items() if f]
    else:
        lines.append("- none")
    lines += ["", "Scores: each item earns (f(sigma1) + f(6 - sigma2)) / 2 with f = {1: 3, 2: 1, 3: 0.5, 4: 0, 5: 0};"
              " performance = sum / (3 N) x 100. Hallucination: both judgments say so (SC: synthesized characters on"
              " CR items, EC: established characters on FR items).", ""]
    return "\n".join(lines)


def html_report(markdown: str, images: dict[str, str]) -> str:
    body = []
    for line in markdown.splitlines():
        if line.startswith("# "):
            body.append(f"<h1>{html.escape(line[2:])}</h1>")
        elif line.startswith("## "):
            body.append(f"<h2>{html.escape(line[3:])}</h2>")
        elif line.startswith("|") and not set(line) <= set("|-"):
            cells = [html.escape(c.strip()) for c in line.strip("|").split("|")]
            body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
        elif line.startswith("- "):
            body.append(f"<li>{html.escape(line[2:])}</li>")
        elif line.strip() and not set(line) <= set("|-"):
            body.append(f"<p>{html.escape(line)}</p>")
    joined, table_open = [], False
    for part in body:
        if part.startswith("<tr>") and not table_open:
            joined.append("<table>")
            table_open = True
        if not part.startswith("<tr>") and table_open:
            joined.append("</table>")
            table_open = False
        joined.append(part)
    if table_open:
        joined.append("</table>")
    imgs = "".join(f'<figure><img alt="{k}" src="data:image/png;base64,{v}"></figure>' for k, v in images.items())
    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto}table{border-collapse:collapse}"
             "td{border:1px solid #ccc;padding:3px 6px;font-size:13px}tr:first-child td{font-weight:bold}"
             "img{max-width:100%}")
    return f"<!doctype html><html><head><meta charset='utf-8'><title>rpbench evaluation</title><style>{style}</style>" \
           f"</head><body>{''.join(joined)}{imgs}</body></html>"
