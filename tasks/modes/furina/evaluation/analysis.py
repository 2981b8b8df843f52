"""FURINA's numbers beyond the shared leaderboard: its scoring declaration, the per-language tables the paper
reports (Table 4, Table 14), hallucination rates and reliability, Pareto sets per language and character type
(Figures 5 and 11), position consistency, the style-controlled win rate and separability."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rpbench.tasks.modes.furina.dimensions import DIMENSIONS
from rpbench.tasks.modes.furina.evaluation.charts import pareto_grid
from rpbench.tasks.modes.furina.evaluation.scoring import (
    pareto_front,
    performance,
    performance_statistic,
    position_bias,
    reliability,
    slot_wins,
    win_share,
)
from rpbench.tasks.modes.furina.records import ItemScore
from rpbench.tasks.reports.render import fmt, fmt_interval
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
from rpbench.tasks.stats import separability_index
from rpbench.tasks.stats.style import Comparison, style_controlled

if TYPE_CHECKING:  # the arena's table (pyarrow) is loaded when a report is made, not with FURINA's commands
    from rpbench.tasks.reports.arena import ArenaBattle, ArenaRow, Outcome

ALL = "all"
CHARACTER_TYPES = ("established", "synthesized")
# Which hallucination rate goes with which character type: SC (synthesized characters on CR items),
# EC (established characters on FR items).
RATE_OF_TYPE = {"synthesized": "sc", "established": "ec"}
STYLE_RESAMPLES = 200  # each resample refits the regression; more adds time, not much precision
UNDEFINED = "undefined (no checked items)"

SCORING = Scoring(
    metrics=(
        MetricSpec(
            "score", column="score", point=performance, statistic=performance_statistic,
            description="each item earns (f(sigma1) + f(6 - sigma2)) / 2 with f = {1: 3, 2: 1, 3: 0.5, 4: 0, 5: 0}, "
                        "sigma1 judged with the reply under test shown first, sigma2 with it second; "
                        "performance = sum / (3 N) x 100 over every item, an unanswered item (failed or empty "
                        "answer) counting 0; 95% intervals by a bootstrap that resamples whole dialogues, since "
                        "items of one dialogue are correlated.",
            unit="0-100",
        ),
        MetricSpec(
            "answered", column="score_answered", point=performance, statistic=performance_statistic,
            description="the same performance over the answered items only (beside `unanswered`, their count).",
            unit="0-100",
        ),
    ),
    groups=(GroupKey("dimension", "dimension", DIMENSIONS),
            GroupKey("language", "language", breakdown=False),
            GroupKey("character_type", "character type", CHARACTER_TYPES)),
    cluster_column="dialogue_id",
    item_column="item_id",
)

EXTRA_COLUMNS = (
    Column("unanswered", "unanswered", 0, unit="items"),
    Column("gap", "gap", unit="points"),
    Column("sc_rate", "SC hallucinated", unit="%"),
    Column("ec_rate", "EC hallucinated", unit="%"),
    Column("reliability", "reliability", missing=UNDEFINED, unit="100 / %"),
    Column("style_controlled", "style-ctrl win", unit="%"),
    # Shares of the judged items, kept as 0-1 in the tables and shown in % beside the other shares.
    Column("order_disagreement", "order disagreement", 1, unit="%", scale=100),
    Column("slot_a_share", "slot-A wins", 1, unit="%", scale=100),
)


def _rate(flags: list[bool]) -> float:
    return 100.0 * sum(flags) / len(flags) if flags else math.nan


def hallucination_rates(item_scores: Sequence[ItemScore]) -> list[dict[str, Any]]:
    """Per model and language (and overall): SC rate (synthesized characters, CR items), EC rate (established
    characters, FR items), their pooled rate, in percent, with counts and reliability (None without items)."""
    rows = []
    for model in sorted({s.model for s in item_scores}):
        mine = [s for s in item_scores if s.model == model and s.hallucinated is not None]
        for lang in [*sorted({s.language for s in item_scores}), ALL]:
            sel = [s for s in mine if lang in (ALL, s.language)]
            sc = [bool(s.hallucinated) for s in sel if s.character_type == "synthesized" and s.dimension == "CR"]
            ec = [bool(s.hallucinated) for s in sel if s.character_type == "established" and s.dimension == "FR"]
            rows.append({"model": model, "language": lang,
                         "sc_rate": _rate(sc), "sc_n": len(sc), "sc_reliability": reliability(_rate(sc), len(sc)),
                         "ec_rate": _rate(ec), "ec_n": len(ec), "ec_reliability": reliability(_rate(ec), len(ec)),
                         "rate": _rate(sc + ec), "reliability": reliability(_rate(sc + ec), len(sc + ec))})
    return rows


def _score(scores: list[dict[str, Any]], model: str, **where: str) -> dict[str, Any] | None:
    want = {"metric": "score", "dimension": ALL, "language": ALL, "character_type": ALL, **where}
    return next((s for s in scores if s["model"] == model and all(s[k] == v for k, v in want.items())), None)


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join([*lines, *("| " + " | ".join(r) + " |" for r in rows)])


def _ci(s: dict[str, Any] | None) -> str:
    return fmt_interval(s['ci_low'], s['ci_high']) if s else "-"


def language_tables(inp: AnalysisInput, languages: list[str]) -> str:
    """Table 4: one leaderboard per language, the score with its interval and per dimension."""
    parts = []
    models = [r["model"] for r in inp.board]
    for lang in languages:
        ranked = sorted(models, key=lambda m: -(_score(inp.scores, m, language=lang) or {"score": -math.inf})["score"])
        rows = []
        for m in ranked:
            top = _score(inp.scores, m, language=lang)
            if top is None:
                continue
            dims = [fmt((_score(inp.scores, m, language=lang, dimension=d) or {}).get("score")) for d in DIMENSIONS]
            rows.append([m, fmt(top["score"]), _ci(top), str(top["n"]), *dims])
        parts.append(f"### {lang}\n\n" + _md_table(["model", "score", "95% CI", "n", *DIMENSIONS], rows))
    return "\n\n".join(parts)


def hallucination_table(rates: list[dict[str, Any]]) -> str:
    """Table 14: SC and EC rates per model and language, with the number of checked items behind each."""
    rows = [[r["model"], r["language"], f"{fmt(r['sc_rate'])} ({r['sc_n']})", f"{fmt(r['ec_rate'])} ({r['ec_n']})",
             fmt(r["reliability"], missing=UNDEFINED)] for r in rates]
    return _md_table(["model", "language", "SC % (n)", "EC % (n)", "reliability"], rows)


def pareto_sets(inp: AnalysisInput, rates: list[dict[str, Any]], languages: list[str]
                ) -> dict[tuple[str, str], dict[str, tuple[float, float | None]]]:
    """(language, character type) -> model -> (performance on that slice, reliability from its own rate)."""
    rate_of = {(r["model"], r["language"]): r for r in rates}
    out = {}
    for lang in languages:
        for ctype in CHARACTER_TYPES:
            points: dict[str, tuple[float, float | None]] = {}
            for r in inp.board:
                top = _score(inp.scores, r["model"], language=lang, character_type=ctype)
                if top is not None:
                    rate = rate_of.get((r["model"], lang), {})
                    points[r["model"]] = (top["score"], rate.get(f"{RATE_OF_TYPE[ctype]}_reliability"))
            if points:
                out[(lang, ctype)] = points
    return out


def position_table(item_scores: Sequence[ItemScore], judge: str) -> tuple[str, dict[str, dict[str, float]]]:
    """How often the two orders disagree on the winner, and which slot the judge's wins go to."""
    rows, per_model = [], {}
    for model in sorted({s.model for s in item_scores}):
        pairs = [(s.sigma1, s.sigma2) for s in item_scores
                 if s.model == model and s.sigma1 is not None and s.sigma2 is not None]
        bias, slots = position_bias(pairs), slot_wins(pairs)
        per_model[model] = {**bias, **slots}
        rows.append([model, judge, str(len(pairs)), fmt(100 * bias["disagreement_rate"]),
                     fmt(100 * slots["slot_a_share"]), fmt(100 * slots["slot_b_share"]), fmt(bias["mean_offset"], 2)])
    table = _md_table(["model", "judge", "items", "orders disagree %", "wins in slot A %", "wins in slot B %",
                       "mean offset"], rows)
    return table, per_model


def comparisons(item_scores: Sequence[ItemScore]) -> list[Comparison]:
    """Each answered item as one comparison with the base reply: the outcome averaged over both orders."""
    out = []
    for s in item_scores:
        if s.sigma1 is None or s.sigma2 is None or s.test_chars is None or s.test_markup is None:
            continue
        out.append(Comparison(s.model, win_share(s.sigma1, s.sigma2), s.dialogue_id,
                              {"chars": (s.test_chars, s.base_chars), "markup": (s.test_markup, s.base_markup)}))
    return out


def battles(item_scores: Sequence[ItemScore], base: str, judge: str, run: str, version: str) -> list[ArenaBattle]:
    """Each judgment of an answered item as the arena's battle: the reply under test in slot A (sigma1) and in
    slot B (sigma2) against the base model's; sigma below 3 is a win for slot A, above 3 for slot B, 3 a tie."""
    from rpbench.tasks.reports.arena import ArenaBattle

    def outcome(sigma: int) -> Outcome:
        return "model_a" if sigma < 3 else "model_b" if sigma > 3 else "tie"

    out = []
    for s in item_scores:
        if s.sigma1 is None or s.sigma2 is None:
            continue
        test = (s.test_chars, s.test_markup)
        reply = (s.base_chars, s.base_markup)
        for order, sigma, (a, b) in ((1, s.sigma1, (test, reply)), (2, s.sigma2, (reply, test))):
            out.append(ArenaBattle(benchmark="furina", version=version, run=run, subset=s.dimension,
                                   language=s.language, dialogue=s.dialogue_id, item_id=s.item_id, round=order,
                                   model_a=s.model if order == 1 else base, model_b=base if order == 1 else s.model,
                                   candidate=s.model, baseline=base, position="a" if order == 1 else "b",
                                   outcome=outcome(sigma), judge=judge, a_chars=a[0], b_chars=b[0],
                                   a_markup=a[1], b_markup=b[1]))
    return out


def arena_section(rows: Sequence[ArenaRow]) -> Section:
    """The arena's table over both orders' judgments: the same battles the position table counts."""
    from rpbench.tasks.reports.arena import arena_chart, arena_markdown

    chart = arena_chart(rows, "FURINA: Elo against the base model")
    return Section("Arena: Bradley-Terry over both orders",
                   "Each judgment is one battle of the reply under test against the base model's reply (sigma "
                   "below 3: slot A won; above 3: slot B; 3: a tie), so every answered item gives two, one per "
                   "order. Win rate over decisive battles against the base (ties beside); Elo by Bradley-Terry "
                   "maximum likelihood (400, base 10, mean 1000), a tie half a win each way; 95% intervals by a "
                   "bootstrap over dialogues. `rpbench leaderboard` fits these over several runs.\n\n"
                   + arena_markdown(rows), {"elo": chart} if chart else {})


def analyze(inp: AnalysisInput) -> Analysis:
    """Fill FURINA's leaderboard columns (in place) and write its report sections."""
    records: list[ItemScore] = inp.records
    languages = sorted({s.language for s in records})
    rates = hallucination_rates(records)
    overall = {r["model"]: r for r in rates if r["language"] == ALL}
    position, by_model = position_table(records, str(inp.context.get("judge", "judge")))
    styled = {s.model: s for s in style_controlled(comparisons(records), min(inp.resamples, STYLE_RESAMPLES),
                                                   inp.seed)}
    for row in inp.board:
        model = row["model"]
        h = overall.get(model, {})
        est, syn = row.get("established"), row.get("synthesized")
        row.update({
            "unanswered": sum(1 for s in records if s.model == model and not s.answered),
            "gap": est - syn if est is not None and syn is not None else None,
            "sc_rate": h.get("sc_rate"), "ec_rate": h.get("ec_rate"), "reliability": h.get("reliability"),
            "style_controlled": styled[model].controlled_win_rate if model in styled else None,
            "order_disagreement": by_model[model]["disagreement_rate"],
            "slot_a_share": by_model[model]["slot_a_share"],
        })
    points = {r["model"]: (r["score"], r["reliability"]) for r in inp.board}
    pareto = pareto_front(points)
    slices = pareto_sets(inp, rates, languages)
    fronts = {f"{lang}/{ctype}": pareto_front(pts) for (lang, ctype), pts in slices.items()}
    si = separability_index([r["score"] for r in inp.board]) if len(inp.board) > 1 else math.nan
    unreliable = sorted(m for m, (_, r) in points.items() if r is None)
    sections = [
        Section("Per language (Table 4)", "Performance per language, with 95% intervals over dialogues.\n\n"
                + language_tables(inp, languages)),
        Section("Hallucination (Table 14)",
                "An item counts as hallucinated only when the checker says so for both judgments. SC: synthesized "
                "characters on CR items; EC: established characters on FR items. Reliability = 100 / rate; a "
                "rate of 0 gives infinite reliability (shown as inf), no checked items gives none.\n\n"
                + hallucination_table(rates)),
        Section("Performance and reliability",
                f"Pareto frontier, all items: {', '.join(pareto) or '-'}"
                + (f" (left out, no checked items: {', '.join(unreliable)})" if unreliable else "") + "\n\n"
                + "\n".join(f"- {k}: {', '.join(v) or '-'}" for k, v in fronts.items())
                + f"\n\nSeparability index: {fmt(si, 3)}",
                # No chart when no model has a reliability anywhere: every panel would be an empty frame.
                {"pareto": pareto_grid(slices, fronts, inp.colours)}
                if any(r is not None for points in slices.values() for _, r in points.values()) else {}),
        Section("Position consistency",
                "Each item is judged twice, the reply under test first and then second. `orders disagree` is the "
                "share of items where the two orders name different winners (a tie counts as its own side); "
                "`wins in slot A/B` split the decisive judgments by the slot of the winner: 50/50 means no "
                "preference for a position. Mean offset is sigma1 + sigma2 - 6 (0 when the orders mirror).\n\n"
                + position),
        Section("Style-controlled win rate",
                "Win rate against the base reply (each item's two judgments averaged), raw and controlled for "
                "reply length and markup ((actions), *emphasis*, [thoughts], headings, bullets) by a logistic "
                "regression of the outcome on model indicators plus the scaled style differences, as "
                "arena-hard-auto's style control does; the controlled rate is the model's at equal style. "
                f"95% intervals from {min(inp.resamples, STYLE_RESAMPLES)} dialogue-clustered bootstrap refits.\n\n"
                + _md_table(["model", "items", "raw win %", "style-controlled win %", "95% CI"],
                            [[m, str(s.n), fmt(s.raw_win_rate), fmt(s.controlled_win_rate),
                              fmt_interval(s.ci_low, s.ci_high)] for m, s in sorted(styled.items())])),
    ]
    if inp.context.get("arena"):
        sections.append(arena_section(inp.context["arena"]))
    return Analysis(sections, {"pareto": pareto, "pareto_by_slice": fronts, "separability_index": si})


REPORT = ReportSpec("FURINA-Bench: replies in character against a base model, judged in both orders", SCORING,
                    EXTRA_COLUMNS, analyze)


def scored(items: str, characters: str, scenes: str, generations: list[str], judgments: list[str],
           checks: list[str], item_scores: list[str], failures: list[str], n_items: int, judge_model: str,
           resamples: int, seed: int, base: str = "base", run: str = "") -> Scored:
    """The report stage's hook: every model's tables in one place, the battles against the base and their arena
    table, and the sample viewer (scene, history, both replies, both judgments)."""
    import hashlib
    from pathlib import Path

    from rpbench.storage.schemas import FAILURES
    from rpbench.storage.tables import read_records
    from rpbench.tasks.modes.furina.evaluation.bench import load_bench
    from rpbench.tasks.modes.furina.evaluation.samples import samples
    from rpbench.tasks.modes.furina.tables import CHECKS, GENERATIONS, ITEM_SCORES, JUDGMENTS
    from rpbench.tasks.reports.arena import ARENA, BATTLES, arena_rows

    rows = [r for p in item_scores for r in read_records(p, ITEM_SCORES)]
    made = [g for p in generations for g in read_records(p, GENERATIONS)]
    judged = [j for p in judgments for j in read_records(p, JUDGMENTS)]
    version = "bench " + hashlib.sha256(Path(items).read_bytes()).hexdigest()[:12]
    fought = battles(rows, base, judge_model, run, version)
    arena = arena_rows(fought, resamples, seed)
    return Scored(rows, [f for p in failures for f in read_records(p, FAILURES)], n_items,
                  [(GENERATIONS, made), (JUDGMENTS, judged),
                   (CHECKS, [c for p in checks for c in read_records(p, CHECKS)]), (BATTLES, fought), (ARENA, arena)],
                  {"judge": judge_model, "arena": arena},
                  samples(load_bench(items, characters, scenes), rows, made, judged))
