"""The suite's report: the profile of every model across the benchmarks, as Markdown and as one HTML page with a
percentile chart per model (in its colour from every other report)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rpbench.tasks.core.records import JudgeAgreement
from rpbench.tasks.reports.colours import model_colours
from rpbench.tasks.reports.judges import judge_agreement_lines
from rpbench.tasks.reports.page import Block, html_page, markdown_html
from rpbench.tasks.reports.profile import AgreementResult, Combined, ProfileRow, SubScore
from rpbench.tasks.reports.render import fmt, fmt_interval, png
from rpbench.tasks.reports.spec import Chart

CAVEATS = """\
- Each benchmark keeps its own scale and unit; the profile never adds unlike scores together.
- A percentile is a model's standing among the models of this suite on that benchmark (the "mean" percentile
  rank: 0 below every other model, 100 above every other, ties share). Run other models and it changes; it is
  not a standing among all models, and it says nothing about how far apart the scores are: read the scores and
  their 95% intervals for that.
- The benchmarks ran on the data the suite file names (by default the small samples shipped with rpbench), with
  the judges it names. Small data gives wide intervals and unstable rankings; the agreement table says how far
  the rankings can be trusted to agree.
"""


@dataclass(frozen=True)
class RunLink:
    """One benchmark's run as the report links it."""

    mode: str
    status: str
    folder: str  # relative to the suite's folder
    reasons: Sequence[str] = ()


def _profile_table(profile: Sequence[ProfileRow], benchmarks: Sequence[str]) -> list[str]:
    units = {p.benchmark: f"{p.metric}, {p.unit}" if p.unit else p.metric for p in profile}
    lines = ["| model | " + " | ".join(f"{b} ({units.get(b, '')})" for b in benchmarks) + " |",
             "|---|" + "---|" * len(benchmarks)]
    for model in sorted({p.model for p in profile}):
        mine = {p.benchmark: p for p in profile if p.model == model}
        cells = []
        for b in benchmarks:
            p = mine.get(b)
            cells.append("not run" if p is None else
                         f"{fmt(p.score)} [{fmt(p.ci_low)}, {fmt(p.ci_high)}], pct {fmt(p.percentile, 0)}")
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    return lines + _unscored_lines(profile, benchmarks)


def _unscored_lines(profile: Sequence[ProfileRow], benchmarks: Sequence[str]) -> list[str]:
    """Why a cell has no score: the benchmark scored none of the model's items (its own report says which
    rule left them out: failed calls, replies a judge flagged, ...)."""
    lines = []
    for b in benchmarks:
        empty = [p for p in profile if p.benchmark == b and p.score is None]
        if empty:
            said = ", ".join(f"{p.model} (n = {p.n}, {p.failed} failed)" for p in sorted(empty, key=lambda p: p.model))
            lines.append(f"- No {b} score for {said}: it scored none of their items (its report says why); "
                         "no percentile either.")
    return ["", *lines] if lines else []


def _subscore_tables(subscores: Sequence[SubScore], benchmarks: Sequence[str]) -> list[str]:
    lines: list[str] = []
    for b in benchmarks:
        mine = [s for s in subscores if s.benchmark == b]
        columns = list(dict.fromkeys(s.column for s in mine))
        if not columns:
            continue
        lines += [f"**{b}**", "", "| model | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
        for model in sorted({s.model for s in mine}):
            values = {s.column: s for s in mine if s.model == model}
            lines.append(f"| {model} | " + " | ".join(
                fmt(values[c].value, values[c].digits) if c in values else fmt(None) for c in columns) + " |")
        lines.append("")
    return lines


def _agreement_lines(result: AgreementResult) -> list[str]:
    if not result.pairs:
        return [result.note]
    lines = ["| benchmarks | models | Kendall's tau | 95% CI | resamples |", "|---|---|---|---|---|"]
    lines += [f"| {a.first} / {a.second} | {a.models} | {fmt(a.tau, 2)} | "
              f"{fmt_interval(a.ci_low, a.ci_high, 2, ' to ')} | {a.resamples} |" for a in result.pairs]
    lines += ["", result.note]
    if result.least is not None:
        lines.append(f"Least in agreement with the others: **{result.least[0]}** (mean tau {result.least[1]:.2f}).")
    elif any(a.tau is not None for a in result.pairs):
        lines.append("No benchmark agrees less with the others than the rest do (every mean tau is the same).")
    undefined = [f"{a.first} / {a.second}" for a in result.pairs if a.tau is None]
    if undefined:
        lines.append("No tau (fewer than three models in common, or a ranking all ties): " + ", ".join(undefined)
                     + ".")
    return lines


def _combined_lines(rows: Sequence[Combined]) -> list[str]:
    if not rows:
        return []
    weights = ", ".join(f"{b} {w:g}" for b, w in rows[0].weights.items())
    return ["## Weighted percentile (asked for by the suite file)", "",
            f"A weighted mean of each model's percentiles, weights {weights}: a standing among these models, "
            "not a score.", "", "| model | weighted percentile |", "|---|---|",
            *(f"| {r.model} | {fmt(r.weighted_percentile, 0)} |" for r in rows), ""]


def percentile_charts(profile: Sequence[ProfileRow], benchmarks: Sequence[str]) -> list[Chart]:
    """A chart per model: its percentile on each benchmark, in its colour; a benchmark without one is named.
    A model with no percentile anywhere (a suite of one model) gets no chart: an empty frame says nothing."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = sorted({p.model for p in profile})
    colours = model_colours(models)
    charts = []
    for model in models:
        mine = {p.benchmark: p.percentile for p in profile if p.model == model}
        drawn = [(b, float(v)) for b in benchmarks if (v := mine.get(b)) is not None]
        if not drawn:
            continue
        fig, ax = plt.subplots(figsize=(5, 0.45 * len(benchmarks) + 1.0))
        ax.barh([b for b, _ in drawn], [v for _, v in drawn], color=colours[model])
        ax.set_xlim(0, 100)
        ax.set_yticks(range(len(drawn)), [b for b, _ in drawn])
        ax.invert_yaxis()
        ax.set_xlabel("percentile among the suite's models")
        ax.set_title(model)
        missing = [b for b in benchmarks if mine.get(b) is None]
        caption = f"No percentile: {', '.join(missing)}." if missing else ""
        charts.append(Chart(png(fig), f"{model}: percentile per benchmark", caption))
    return charts


JUDGES_NOTE = ("Where a benchmark has human scores, how far each judge follows them (the benchmark's "
               "agreement.parquet; 95% bootstrap intervals over items).")


def _judge_lines(judges: Sequence[JudgeAgreement]) -> list[str]:
    return [JUDGES_NOTE, "", *judge_agreement_lines(judges, with_benchmark=True), ""] if judges else []


def profile_markdown(title: str, intro: str, profile: Sequence[ProfileRow], subscores: Sequence[SubScore],
                     agreement: AgreementResult, combined: Sequence[Combined], runs: Sequence[RunLink],
                     judges: Sequence[JudgeAgreement] = ()) -> str:
    benchmarks = [r.mode for r in runs]
    lines = [f"# {title}", "", intro, "", "## Profile", "",
             "Each cell: the benchmark's headline score [95% interval], and the model's percentile among this "
             "suite's models.", "", *_profile_table(profile, benchmarks), "",
             *_combined_lines(combined), "## Sub-scores", "", *_subscore_tables(subscores, benchmarks),
             "## Agreement between benchmarks", "", *_agreement_lines(agreement), "",
             *(["## Judges against people", "", *_judge_lines(judges)] if judges else []), "## Runs", "",
             *_run_lines(runs), "", "## What the profile shows and what it does not", "", CAVEATS]
    return "\n".join(lines) + "\n"


def _run_lines(runs: Sequence[RunLink]) -> list[str]:
    out = []
    for r in runs:
        why = f" ({'; '.join(r.reasons)})" if r.reasons else ""
        out.append(f"- {r.mode}: {r.status}{why}: [report]({r.folder}/report.html), "
                   f"[samples]({r.folder}/viewer.html), folder `{r.folder}`")
    return out


def profile_html(title: str, intro: str, profile: Sequence[ProfileRow], subscores: Sequence[SubScore],
                 agreement: AgreementResult, combined: Sequence[Combined], runs: Sequence[RunLink],
                 links: Mapping[str, str], judges: Sequence[JudgeAgreement] = ()) -> str:
    benchmarks = [r.mode for r in runs]
    link_line = " ".join(f"[{name}]({href})" for name, href in links.items())
    blocks = [Block("Profile", markdown_html("\n".join(_profile_table(profile, benchmarks))),
                    percentile_charts(profile, benchmarks))]
    if combined:
        blocks.append(Block("Weighted percentile", markdown_html("\n".join(_combined_lines(combined)[2:]))))
    blocks += [Block("Sub-scores", markdown_html("\n".join(_subscore_tables(subscores, benchmarks)))),
               Block("Agreement between benchmarks", markdown_html("\n".join(_agreement_lines(agreement)))),
               *([Block("Judges against people", markdown_html("\n".join(_judge_lines(judges))))] if judges else []),
               Block("Runs", markdown_html("\n".join(_run_lines(runs)))),
               Block("What the profile shows and what it does not", markdown_html(CAVEATS))]
    return html_page(title, f"{intro}\n\n{link_line}", blocks)
