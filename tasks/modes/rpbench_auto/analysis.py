"""RPBench-Auto's numbers: each candidate's win rate against the baseline per subset (the release's headline),
the arena's Elo with intervals, position bias and the style-controlled win rate, and the released leaderboard
beside the user's models."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rpbench.tasks.modes.rpbench_auto.records import Round
from rpbench.tasks.reports.arena import ALL, ArenaBattle, ArenaRow, arena_chart, arena_markdown, arena_rows
from rpbench.tasks.reports.metrics import percent, percent_statistic
from rpbench.tasks.reports.render import fmt
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
from rpbench.tasks.stats.style import markup_count

BENCHMARK = "rpbench-auto"
SUBSETS = ("character", "scene")

SCORING = Scoring(
    metrics=(MetricSpec("win rate", "rounds the judge gave the candidate over the baseline, of the rounds it named a "
                        "winner in, in percent; 95% intervals by a bootstrap over dialogues (a dialogue's rounds "
                        "share its history)", "win", point=percent, statistic=percent_statistic, unit="%"),),
    groups=(GroupKey("subset", "subset", SUBSETS),),
    cluster_column="dialogue_id",
    item_column="item_id",
)

EXTRA_COLUMNS = (
    Column("avg", "mean of subsets", unit="%", scale=100),
    Column("elo", "Elo", 1),
    Column("no_winner", "no winner", 0, unit="rounds"),
    Column("slot_a_share", "slot-A wins", 1, unit="%", scale=100),
)


def battles_of(rounds: Sequence[Round], run: str, judge: str, version: str, baseline: str) -> list[ArenaBattle]:
    """Each judged round as the arena's battle, the baseline named by the model it is (``baseline``: a role's name
    means another model in another run, and a leaderboard over runs compares baselines by model)."""
    def named(system: str, r: Round) -> str:
        return baseline if system == r.baseline else system

    return [ArenaBattle(benchmark=BENCHMARK, version=version, run=run, subset=r.subset, language=r.language,
                        dialogue=f"{r.model}/{r.dialogue_id}", item_id=r.item_id, round=r.round,
                        model_a=named(r.model_a, r), model_b=named(r.model_b, r), candidate=r.model,
                        baseline=baseline, position="a" if r.model_a == r.model else "b", outcome=r.outcome,
                        judge=judge,
                        reason=r.reason, a_chars=len(r.reply_a), b_chars=len(r.reply_b),
                        a_markup=markup_count(r.reply_a), b_markup=markup_count(r.reply_b)) for r in rounds]


def released_rows(baseline: str, judge: str) -> list[ArenaRow]:
    """The released leaderboard (``results/leaderboard.csv``) as arena rows, marked released: its models' win
    rates against its gpt-4o, per subset and their mean."""
    from rpbench.tasks.modes.rpbench_auto.release import released_leaderboard

    out = []
    for r in released_leaderboard():
        for subset in (*SUBSETS, ALL):
            rate = r["avg"] if subset == ALL else r[subset]
            out.append(ArenaRow(benchmark=BENCHMARK, subset=subset, language=ALL, model=r["shown"],
                                baseline=baseline, judge=judge, released=True, win_rate=rate))
    return out


def release_table(board: Sequence[dict[str, Any]], released: Sequence[ArenaRow]) -> str:
    """The release's own leaderboard form: win rate per subset and their mean, the user's models beside its."""
    lines = ["| model | character (%) | scene (%) | mean of subsets (%) |", "|---|---|---|---|"]
    for row in sorted(board, key=lambda r: -float(r["avg"]) if r.get("avg") is not None else math.inf):
        cells = [fmt(row.get(s)) for s in SUBSETS]
        lines.append(f"| {row['model']} | {' | '.join(cells)} | {fmt(_scaled(row.get('avg')))} |")
    by_model: dict[str, dict[str, float | None]] = {}
    for r in released:
        by_model.setdefault(r.model, {})[r.subset] = r.win_rate
    for model, rates in sorted(by_model.items(), key=lambda kv: -(kv[1].get(ALL) or 0)):
        lines.append(f"| {model} (released) | " + " | ".join(fmt(_scaled(rates.get(s))) for s in (*SUBSETS, ALL))
                     + " |")
    return "\n".join(lines)


def _scaled(value: float | None) -> float | None:
    return None if value is None else 100 * value


def analyze(inp: AnalysisInput) -> Analysis:
    """Fill the leaderboard's Elo, no-winner, slot-A and mean-of-subsets columns; write the arena's sections."""
    rows: list[ArenaRow] = inp.context["arena"]
    overall = {r.model: r for r in rows if r.subset == ALL and r.language == ALL}
    for row in inp.board:
        found = overall.get(row["model"])
        rates = [v for s in SUBSETS if isinstance(v := row.get(s), int | float)]
        row.update({"avg": sum(rates) / len(rates) / 100 if len(rates) == len(SUBSETS) else None,
                    "elo": found.elo if found else None, "no_winner": found.no_winner if found else 0,
                    "slot_a_share": found.slot_a_share if found else None})
    released = released_rows(inp.context["baseline"], inp.context["judge"]) if inp.context.get("released") else []
    chart = arena_chart(rows, "RPBench-Auto: Elo against the baseline")
    subsets = sorted({r.subset for r in rows if r.subset != ALL})
    sections = [
        Section("Arena: win rate and Elo against the baseline",
                f"Baseline: **{inp.context['baseline']}**; judge: **{inp.context['judge']}**. Every round is one "
                "battle. Win rate: the candidate's wins over the rounds the judge named a winner in (as the "
                "release's calculate_metrics counts them; `no winner` beside). Elo: Bradley-Terry maximum "
                "likelihood over every battle (scale 400, base 10, mean 1000), as the release's EloCalculator "
                "fits it. 95% intervals by a bootstrap over dialogues, seeded. `slot-A wins`: of the decisive "
                "battles, the share the reply shown first won (50 is no position bias); `style-ctrl win`: the "
                "win rate at equal reply length and markup.\n\n" + arena_markdown(rows + released)
                + "".join(f"\n\n### {s}\n\n" + arena_markdown(rows + released, s) for s in subsets),
                {"elo": chart} if chart else {}),
        Section("As the release reports it",
                "Win rate against the baseline per subset and the mean of the two subsets (the release's "
                "`win_rate_avg`), with the released leaderboard's rows (its own runs, judge "
                "gpt-4-turbo-2024-04-09, baseline gpt-4o) marked released. Its rows are comparable with yours "
                "only for the same judge and baseline.\n\n" + release_table(inp.board, released)),
    ]
    return Analysis(sections, {"arena": [r.model_dump() for r in rows]})


REPORT = ReportSpec("RPBench-Auto: NPCs against a baseline, judged round by round by a judge playing the user",
                    SCORING, EXTRA_COLUMNS, analyze, unit="characters and scenes")


def scored(rounds: list[str], ends: list[str], failures: list[str], n_items: int, judge_model: str, baseline: str,
           run: str, version: str, released: bool, resamples: int, seed: int) -> Scored:
    """The report stage's hook: the rounds (the item table), the battles for the arena, the dialogues' ends."""
    from rpbench.storage.schemas import FAILURES
    from rpbench.storage.tables import read_records
    from rpbench.tasks.modes.rpbench_auto.samples import samples
    from rpbench.tasks.modes.rpbench_auto.tables import DIALOGUE_ENDS, ROUNDS
    from rpbench.tasks.reports.arena import ARENA, BATTLES

    rows = [r for p in rounds for r in read_records(p, ROUNDS)]
    battles = battles_of(rows, run, judge_model, version, baseline)
    made = [e for p in ends for e in read_records(p, DIALOGUE_ENDS)]
    return Scored(rows, [f for p in failures for f in read_records(p, FAILURES)], n_items,
                  [(BATTLES, battles), (ARENA, arena := arena_rows(battles, resamples, seed)), (DIALOGUE_ENDS, made)],
                  {"arena": arena, "baseline": baseline, "judge": judge_model, "released": released},
                  samples=samples(rows, made),
                  summary={"no_winner": sum(r.outcome == "none" for r in rows),
                           "judge_asked_again": sum(e.judge_asks for e in made),
                           "ended_by_scene": sum(bool(e.ended_by_scene) for e in made)})
