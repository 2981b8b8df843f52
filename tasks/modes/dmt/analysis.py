"""From DMT-RoleBench's labels to dialogue scores, and what its report adds: Table 4 (models x metrics, by the
exact formula), the round curve, and scores by prompt format and by role type."""

from __future__ import annotations

import statistics
from collections.abc import Collection, Sequence
from typing import Any

from rpbench.tasks.core.records import Failure
from rpbench.tasks.modes.dmt.catalog import FORMATS, METRICS, ROLE_TYPES, allocated
from rpbench.tasks.modes.dmt.records import DialogueScore, Label, Round, Seed
from rpbench.tasks.modes.dmt.scoring import (
    Policy,
    dialogue_score,
    metric_score,
    prefix_scores,
    round_curve,
    score_by_tau,
)
from rpbench.tasks.reports.render import fmt, png
from rpbench.tasks.reports.spec import (
    Analysis,
    AnalysisInput,
    Column,
    GroupKey,
    MetricSpec,
    ReportSpec,
    Scored,
    Scoring,
    Section,
)


def dialogue_scores(seeds: dict[str, Seed], rounds: Sequence[Round], labels: Sequence[Label], max_rounds: int,
                    policy: Policy, failed: Collection[tuple[str, str]] = frozenset()
                    ) -> tuple[list[DialogueScore], list[Failure]]:
    """One row per (model, dialogue, allocated metric) whose every round has a label; a missing label (a
    failed judge call) leaves that pair out, as a failure of the judge. ``failed`` (model, dialogue) pairs
    ended on a failed call: they are failures already (of the dialogues stage), never scored."""
    by_dialogue: dict[tuple[str, str], list[Round]] = {}
    for r in rounds:
        if (r.model, r.dialogue_id) in failed:
            continue
        by_dialogue.setdefault((r.model, r.dialogue_id), []).append(r)
    label_of = {(lb.model, lb.dialogue_id, lb.round, lb.metric): lb for lb in labels}
    rows, failures = [], []
    for (model, did), rs in sorted(by_dialogue.items()):
        rs = sorted(rs, key=lambda x: x.round)
        seed = seeds[rs[0].seed_id]
        for metric in allocated(seed.role_type, seed.metrics):
            found = [label_of.get((model, did, r.round, metric)) for r in rs]
            if any(lb is None or lb.label is None for lb in found):
                failures.append(Failure(stage="dmt-scores", model=model, item_id=f"{did}:{metric}",
                                        kind="unlabelled", error="a round of this dialogue has no label for "
                                                                 "this metric (its judge call failed)"))
                continue
            ones = [1 if lb.label == "good" else 0 for lb in found]  # type: ignore[union-attr]
            prefix = prefix_scores(ones, max_rounds, METRICS[metric].aggregation == "any", policy)
            rows.append(DialogueScore(model=model, dialogue_id=did, seed_id=seed.id, metric_code=metric,
                                      role_type=seed.role_type, prompt_format=rs[0].prompt_format,
                                      intent=seed.intent, language=seed.language, rounds=len(rs),
                                      score=dialogue_score(prefix), prefix=prefix))
    return rows, failures


def table4(rows: Sequence[DialogueScore]) -> dict[str, dict[str, float | None]]:
    """model -> metric -> Score_m (x100) by the paper's formula (mean over tau of the mean over dialogues)."""
    out: dict[str, dict[str, float | None]] = {}
    for model in sorted({r.model for r in rows}):
        out[model] = {m: metric_score(score_by_tau([r.prefix for r in rows if r.model == model and r.metric_code == m]))
                      for m in METRICS if any(r.model == model and r.metric_code == m for r in rows)}
    return out


def curves(rows: Sequence[DialogueScore]) -> dict[str, list[float | None]]:
    """model -> Score_tau (x100) for tau = 1..T."""
    out = {}
    for model in sorted({r.model for r in rows}):
        mine = [r for r in rows if r.model == model]
        out[model] = round_curve({m: score_by_tau([r.prefix for r in mine if r.metric_code == m])
                                  for m in sorted({r.metric_code for r in mine})})
    return out


def _mean_of_metrics(scores: dict[str, float | None]) -> float | None:
    values = [v for v in scores.values() if v is not None]
    return statistics.fmean(values) if values else None


def _by(rows: Sequence[DialogueScore], column: str, values: Sequence[str]) -> list[str]:
    lines = [f"| model | {' | '.join(values)} |", "|---|" + "---|" * len(values)]
    for model in sorted({r.model for r in rows}):
        cells = []
        for v in values:
            picked = [r for r in rows if r.model == model and getattr(r, column) == v]
            cells.append(fmt(_mean_of_metrics(table4(picked).get(model, {})), 1) if picked else "-")
        lines.append(f"| {model} | {' | '.join(cells)} |")
    return lines


def _curve_chart(curve: dict[str, list[float | None]], colours: dict[str, str]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(6, 3.2))
    for model, ys in curve.items():
        pts = [(t + 1, y) for t, y in enumerate(ys) if y is not None]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=model, color=colours.get(model))
    ax.set_xlabel("rounds (tau)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # a dialogue has 1, 2, 3 rounds, never 1.25
    ax.set_ylabel("Score_tau")
    ax.set_title("DMT-Score by number of rounds")
    if curve:
        ax.legend(fontsize=7)
    return png(fig)


def _analyze(data: AnalysisInput) -> Analysis:
    rows = [r if isinstance(r, DialogueScore) else DialogueScore.model_validate(r) for r in data.records]
    t4 = table4(rows)
    for row in data.board:
        row["metric_mean"] = _mean_of_metrics(t4.get(row["model"], {}))
    codes = [m for m in METRICS if any(m in v for v in t4.values())]
    lines = ["Score_m x100 by the paper's formula: for each number of rounds tau, the share of dialogues whose first "
             "tau rounds pass (strict metrics: all good; KE and Inte: any good), averaged over tau = 1..T.", "",
             f"| model | {' | '.join(codes)} | mean |", "|---|" + "---|" * (len(codes) + 1)]
    lines += [f"| {m} | {' | '.join(fmt(v.get(c), 1) for c in codes)} | {fmt(_mean_of_metrics(v), 1)} |"
              for m, v in t4.items()]
    curve = curves(rows)
    policy = data.context.get("policy", "carry")
    T = max((len(v) for v in curve.values()), default=0)
    curve_lines = [f"Score_tau (mean over metrics) for tau = 1..{T}; dialogues shorter than tau: policy "
                   f"'{policy}'.", "", f"| model | {' | '.join(str(t) for t in range(1, T + 1))} |",
                   "|---|" + "---|" * T]
    curve_lines += [f"| {m} | {' | '.join(fmt(v, 1) for v in ys)} |" for m, ys in curve.items()]
    formats = [f for f in FORMATS if any(r.prompt_format == f for r in rows)]
    types = [t for t in ROLE_TYPES if any(r.role_type == t for r in rows)]
    sections = [
        Section("Metrics (Table 4)", "\n".join(lines)),
        Section("By number of rounds", "\n".join(curve_lines), {"round_curve": _curve_chart(curve, data.colours)}),
        Section("By system-prompt format", "Mean of the metric scores over the dialogues of each format.\n\n"
                + "\n".join(_by(rows, "prompt_format", formats))),
        Section("By role type", "Mean of the metric scores over the dialogues of each role type.\n\n"
                + "\n".join(_by(rows, "role_type", types))),
    ]
    ends = data.context.get("ends", {})
    if ends:
        end_lines = ["| model | why the dialogue ended | dialogues |", "|---|---|---|"]
        end_lines += [f"| {m} | {reason} | {n} |" for m, by in sorted(ends.items()) for reason, n in sorted(by.items())]
        sections.append(Section("Dialogue lengths", "\n".join(end_lines)))
    summary: dict[str, Any] = {"table4": t4, "round_curve": curve, "policy": policy}
    return Analysis(sections, summary)


REPORT = ReportSpec(
    title="DMT-RoleBench: dynamic multi-turn role-play dialogues",
    scoring=Scoring(
        metrics=(MetricSpec("score", "DMT-Score x100 over every judged (dialogue, metric) pair: each pair's prefix "
                                     "scores averaged over tau = 1..T; 95% intervals resample whole dialogues",
                            column="score", unit="0-100"),),
        groups=(GroupKey("metric_code", "metric", tuple(METRICS)),
                GroupKey("prompt_format", "prompt format", FORMATS, breakdown=False),
                GroupKey("role_type", "role type", ROLE_TYPES, breakdown=False)),
        cluster_column="dialogue_id",
        item_column="dialogue_id",
    ),
    extra_columns=(Column("metric_mean", "mean of metrics", unit="0-100"),),
    analyze=_analyze,
    unit="dialogues per model (one per seed and prompt format)",
)


def scored(rounds: list[str], steps: list[str], ends: list[str], seeds: list[str], labels: list[str],
           failures: list[str], max_rounds: int, policy: str, n_dialogues: int) -> Scored:
    """The report stage's hook: every model's rounds and labels as dialogue scores under ``policy``, the ways
    dialogues ended, samples."""
    from collections import Counter

    from rpbench.storage.schemas import FAILURES
    from rpbench.storage.tables import read_records
    from rpbench.tasks.modes.dmt.samples import samples
    from rpbench.tasks.modes.dmt.tables import ENDS, LABELS, ROUNDS, SEEDS, STEPS

    made_rounds = [r for p in rounds for r in read_records(p, ROUNDS)]
    made_labels = [lb for p in labels for lb in read_records(p, LABELS)]
    made_ends = [e for p in ends for e in read_records(p, ENDS)]
    by_id = {s.id: s for p in seeds for s in read_records(p, SEEDS)}
    pol: Policy = "exclude" if policy == "exclude" else "bad" if policy == "bad" else "carry"
    failed_dialogues = {(e.model, e.dialogue_id) for e in made_ends if e.failed}
    rows, unscored = dialogue_scores(by_id, made_rounds, made_labels, max_rounds, pol, failed_dialogues)
    end_counts: dict[str, Counter[str]] = {}
    for e in made_ends:
        end_counts.setdefault(e.model, Counter())[e.reason] += 1
    finals: list[tuple[Any, Sequence[Any]]] = [
        (ROUNDS, made_rounds), (STEPS, [s for p in steps for s in read_records(p, STEPS)]), (ENDS, made_ends),
        (SEEDS, sorted(by_id.values(), key=lambda s: s.id)), (LABELS, made_labels)]
    return Scored(rows, [f for p in failures for f in read_records(p, FAILURES)] + unscored, n_dialogues, finals,
                  {"policy": policy, "ends": {m: dict(c) for m, c in end_counts.items()}},
                  samples(list(by_id.values()), made_rounds, made_labels, made_ends, rows))
