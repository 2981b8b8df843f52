"""From PingPong's turns and judgments to conversation scores, and what its report adds to the shared one:
the refusal ratio, reply length, rank groups, one leaderboard per language (as the paper publishes them),
the length factors (per language) and each judge's own numbers."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from operator import attrgetter
from typing import Any

from rpbench.tasks.core.languages import language_name
from rpbench.tasks.modes.pingpong.judging import complete_conversations
from rpbench.tasks.modes.pingpong.records import CRITERIA, ConversationScore, Turn, TurnJudgment
from rpbench.tasks.modes.pingpong.scoring import (
    JudgeScore,
    judge_score,
    length_factors,
    pool_judges,
    rank_groups,
    v1_length_shifts,
)
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


def conversation_scores(turns: Sequence[Turn], judgments: Sequence[TurnJudgment], judges: Sequence[str],
                        criterion_weights: Mapping[str, float] | None = None,
                        judge_weights: Mapping[str, float] | None = None,
                        exact_mean: bool = False) -> list[ConversationScore]:
    """One row per (model, complete conversation) that at least one of ``judges`` judged; LN is filled later
    (it depends on every model in the leaderboard)."""
    verdicts: dict[tuple[str, str, str], list[TurnJudgment]] = {}
    for j in judgments:
        if j.judge in judges:
            verdicts.setdefault((j.model, j.conversation_id, j.judge), []).append(j)
    rows = []
    for model in sorted({t.model for t in turns}):
        for cid, ts in sorted(complete_conversations([t for t in turns if t.model == model]).items()):
            by_judge: dict[str, JudgeScore] = {
                judge: judge_score(sorted(verdicts[(model, cid, judge)], key=attrgetter("turn")), criterion_weights,
                                   exact_mean)
                for judge in judges if (model, cid, judge) in verdicts}
            if not by_judge:
                continue  # every judge failed on it: their failures are recorded by the judging stage
            pooled = pool_judges(by_judge, judge_weights)
            crit = pooled.criteria or {}
            rows.append(ConversationScore(
                model=model, conversation_id=cid, language=ts[0].language, character=ts[0].character,
                situation_id=ts[0].situation_id, judges=sorted(by_judge), refusal=bool(pooled.refused_by),
                refused_by=pooled.refused_by, in_character=crit.get("in_character"),
                entertaining=crit.get("entertaining"), fluency=crit.get("fluency"), final=pooled.final,
                ln_score=None, length=statistics.fmean(len(t.player or "") for t in ts), messages=len(ts)))
    return rows


def model_lengths(rows: Sequence[ConversationScore]) -> dict[str, float]:
    """Each model's mean characters per player message, over every message of its scored conversations."""
    chars: dict[str, float] = {}
    count: dict[str, int] = {}
    for r in rows:
        chars[r.model] = chars.get(r.model, 0.0) + r.length * r.messages
        count[r.model] = count.get(r.model, 0) + r.messages
    return {m: chars[m] / count[m] for m in chars if count[m]}


def with_length_factors(rows: Sequence[ConversationScore], version: str = "v2"
                        ) -> tuple[list[ConversationScore], dict[str, dict[str, float]]]:
    """Rows with ``ln_score`` filled, and each language's per-model length adjustment: v2's factor (``ln_score`` =
    final x factor) or v1's shift (``ln_score`` = final + shift), each version's own formula (``scoring``). The
    paper ranks each language on its own, so each has its own median: Russian replies are not measured against
    English ones."""
    adjust: dict[str, dict[str, float]] = {}
    for lang in sorted({r.language for r in rows}):
        mine = [r for r in rows if r.language == lang]
        lengths = model_lengths(mine)
        if version == "v1":
            finals = {m: statistics.fmean(f) for m in lengths
                      if (f := [r.final for r in mine if r.model == m and r.final is not None])}
            adjust[lang] = v1_length_shifts(lengths, finals)
        else:
            adjust[lang] = length_factors(lengths)

    def ln(r: ConversationScore) -> float | None:
        if r.final is None:
            return None
        by = adjust[r.language][r.model]
        return r.final + by if version == "v1" else r.final * by

    return [r.model_copy(update={"ln_score": ln(r)}) for r in rows], adjust


def language_boards(rows: Sequence[ConversationScore], scores: Sequence[dict[str, Any]]
                    ) -> dict[str, list[dict[str, Any]]]:
    """One leaderboard per language, as the paper publishes them: per model its length-normalised score with
    the interval, the final score, the refusal ratio, the mean reply length; ranked by the score."""
    out: dict[str, list[dict[str, Any]]] = {}
    for lang in sorted({r.language for r in rows}):
        board: list[dict[str, Any]] = []
        for model in sorted({r.model for r in rows if r.language == lang}):
            mine = [r for r in rows if r.model == model and r.language == lang]
            found = {s["metric"]: s for s in scores if s["model"] == model and s.get("language") == lang}
            ln, final = found.get("ln_score", {}), found.get("final", {})
            board.append({"model": model, "ln_score": ln.get("score"), "ci_low": ln.get("ci_low"),
                          "ci_high": ln.get("ci_high"), "final": final.get("score"), "n": len(mine),
                          "refusal_ratio": sum(r.refusal for r in mine) / len(mine),
                          "length": model_lengths(mine).get(model)})
        board.sort(key=lambda b: -(float(b["ln_score"]) if b["ln_score"] is not None else -math.inf))
        ranks = rank_groups([float(b["ln_score"]) for b in board if b["ln_score"] is not None])
        for b, rank in zip(board, ranks, strict=False):
            b["rank"] = rank
        out[lang] = board
    return out


def per_judge(turns: Sequence[Turn], judgments: Sequence[TurnJudgment], judges: Sequence[str]) -> list[dict[str, Any]]:
    """Each judge alone: per model, the mean final score over the conversations it did not flag, and how many
    it flagged as refusals (a check of how far the judges agree)."""
    out: list[dict[str, Any]] = []
    for judge in judges:
        for r in conversation_scores(turns, judgments, [judge]):
            out.append({"judge": judge, "model": r.model, "final": r.final, "refusal": r.refusal})
    table = []
    for judge in judges:
        for model in sorted({o["model"] for o in out if o["judge"] == judge}):
            mine = [o for o in out if o["judge"] == judge and o["model"] == model]
            finals = [o["final"] for o in mine if o["final"] is not None]
            table.append({"judge": judge, "model": model, "conversations": len(mine),
                          "final": statistics.fmean(finals) if finals else None,
                          "refusals": sum(o["refusal"] for o in mine)})
    return table


def _analyze(data: AnalysisInput) -> Analysis:
    scale = data.context.get("scale", "1-5")  # the judges' scale: 1-5, or 1-10 for v1's tester
    rows = [r if isinstance(r, ConversationScore) else ConversationScore.model_validate(r) for r in data.records]
    lengths = model_lengths(rows)
    for row in data.board:
        mine = [r for r in rows if r.model == row["model"]]
        row["refusal_ratio"] = sum(r.refusal for r in mine) / len(mine) if mine else None
        row["length"] = lengths.get(row["model"])
    for row, rank in zip(data.board, rank_groups([r["ln_score"] for r in data.board]), strict=True):
        row["rank"] = float(rank)
    factors: dict[str, dict[str, float]] = data.context.get("length_factors", {})
    boards = language_boards(rows, data.scores)
    sections = []
    if boards:
        lines = ["The paper publishes one leaderboard per language; here they are, each ranked by its own "
                 "length-normalised score (95% interval over conversations), beside the pooled leaderboard above.",
                 ""]
        for lang, board in boards.items():
            lines += [f"**{language_name(lang)} ({lang})**", "",
                      f"| rank group | model | length-normalised score ({scale}) | 95% interval | final ({scale}) | "
                      "refusals (%) | reply length (chars) | conversations |", "|---|---|---|---|---|---|---|---|"]
            lines += [f"| {b.get('rank', '-')} | {b['model']} | {fmt(b['ln_score'], 2)} | "
                      f"[{fmt(b['ci_low'], 2)}, {fmt(b['ci_high'], 2)}] | {fmt(b['final'], 2)} | "
                      f"{fmt(100 * b['refusal_ratio'], 1)} | {fmt(b['length'], 0)} | {b['n']} |" for b in board]
            lines.append("")
        sections.append(Section("Leaderboard per language", "\n".join(lines)))
    if factors:
        v1 = data.context.get("length_scheme") == "v1"
        how = ("(v1, as PingPong's build_table_v1.py) its final score moved by (max - min of the models' finals) x "
               "min(0, tanh((median - length) / (3 x median)))" if v1 else
               "(v2, as PingPong's build_table_v2.py) its conversation scores multiplied by 1 + (median / length - "
               "1) x 0.07, kept within 0.93 and 1")
        lines = [f"Per language, the median of the models' mean reply lengths in that language; each model has {how}.",
                 "", f"| language | median length | model | mean reply length | {'shift' if v1 else 'factor'} |",
                 "|---|---|---|---|---|"]
        for lang, by_model in sorted(factors.items()):
            means = model_lengths([r for r in rows if r.language == lang])
            median = statistics.median(means.values()) if means else 0.0
            lines += [f"| {lang} | {median:.0f} | {m} | {means.get(m, 0):.0f} | {f:.4f} |"
                      for m, f in sorted(by_model.items())]
        sections.append(Section("Length normalisation", "\n".join(lines)))
    judges = data.context.get("per_judge", [])
    if judges:
        lines = ["Each judge on its own (final score over the conversations it did not flag as a refusal); the "
                 "leaderboard pools them per conversation.", "",
                 "| judge | model | conversations | final | refusals |", "|---|---|---|---|---|"]
        lines += [f"| {j['judge']} | {j['model']} | {j['conversations']} | {fmt(j['final'], 2)} | {j['refusals']} |"
                  for j in judges]
        sections.append(Section("Judges", "\n".join(lines)))
    summary = {"length_factors": factors, "scale": scale, "by_language": boards}
    return Analysis(sections, summary)


def _metric(name: str, description: str) -> MetricSpec:
    return MetricSpec(name, description, column=name, digits=2)


REPORT = ReportSpec(
    title="PingPong: role-play with an emulated user, judged by several models",
    unit="conversations per model (every card in every situation of its language)",
    scoring=Scoring(
        metrics=(
            _metric("ln_score", "length-normalised score: v2, each scored conversation's final score times its "
                                "model's length factor (below 1 only for models whose mean reply is longer than "
                                "the median model's, by at most 7%); v1, the final moved down by PingPong's v1 "
                                "rule; the leaderboard ranks by it"),
            _metric("final", "the three criteria weighted 0.333 each and summed, as PingPong's code does (their "
                             "exact mean with --exact-mean), pooled over judges per conversation (Agg.)"),
            *(_metric(c, f"{c.replace('_', ' ')}: mean over turns, pooled over judges") for c in CRITERIA),
        ),
        groups=(GroupKey("language", "language"),),
        item_column="conversation_id",
    ),
    extra_columns=(Column("refusal_ratio", "refusals", 1, unit="%", scale=100),
                   Column("length", "reply length", 0, unit="chars"), Column("rank", "rank group", 0)),
    analyze=_analyze,
)


def scored(conversations: list[str], cards: list[str], judgments: list[str], failures: list[str],
           judges: list[str], judge_weights: dict[str, float], criterion_weights: dict[str, float] | None,
           scale: str, exact_mean: bool = False) -> Scored:
    """The report stage's hook: conversation scores (judges pooled), length factors, samples."""
    from rpbench.storage.schemas import FAILURES
    from rpbench.storage.tables import read_records
    from rpbench.tasks.modes.pingpong.samples import samples
    from rpbench.tasks.modes.pingpong.tables import CARDS, CONVERSATIONS, TURN_JUDGMENTS

    turns = [t for p in conversations for t in read_records(p, CONVERSATIONS)]
    verdicts = [j for p in judgments for j in read_records(p, TURN_JUDGMENTS)]
    # A judge given again (rejudge) replaces its earlier verdicts, and its earlier failures where it now judged.
    verdicts = list({(j.judge, j.model, j.conversation_id, j.turn): j for j in verdicts}.values())
    judged = {(j.model, j.conversation_id, j.judge) for j in verdicts}
    failed = [f for p in failures for f in read_records(p, FAILURES)
              if not (f.kind.startswith("judgment:") and (f.model, f.item_id, f.kind.partition(":")[2]) in judged)]
    version = "v1" if scale == "1-10" else "v2"
    # v1's final is the criteria's plain mean (run_eval_v1 saves it so); v2's weights them 0.333 each.
    rows, factors = with_length_factors(conversation_scores(turns, verdicts, judges, criterion_weights,
                                                            judge_weights, exact_mean or version == "v1"), version)
    made = sorted({(c.language, c.name): c for p in cards for c in read_records(p, CARDS)}.values(),
                  key=lambda c: (c.language, c.name))
    n = len({t.conversation_id for t in turns})
    return Scored(rows, failed, n, [(CONVERSATIONS, turns), (CARDS, made), (TURN_JUDGMENTS, verdicts)],
                  {"length_factors": factors, "per_judge": per_judge(turns, verdicts, judges), "scale": scale,
                   "length_scheme": version}, samples(turns, made, verdicts, rows),
                  summary={"conversations": n, "scored": len(rows), "refusals": sum(r.refusal for r in rows)})
