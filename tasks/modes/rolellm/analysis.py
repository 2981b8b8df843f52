"""From RoleLLM answers to Rouge-L scores, and what its report adds: the paper's per-split table (CUS, RAW,
SPE and their mean, x100) and the ranking judge's win rates."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from rpbench.tasks.core.records import Failure
from rpbench.tasks.modes.rolellm.records import BenchRow, RoleAnswer, RowScore
from rpbench.tasks.modes.rolellm.rouge import ChineseTokens, Combine, rouge_l
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

REFERENCES = ("CUS", "RAW", "SPE")


def row_scores(rows: Sequence[BenchRow], answers: Sequence[RoleAnswer], raw: Mapping[str, list[str]],
               combine: Combine, zh: ChineseTokens = "jieba") -> tuple[list[RowScore], list[Failure]]:
    """Each answered row's Rouge-L against its reference sets: a general row against its role-play references
    (CUS) and, when RAW references are given for its question, against them (RAW); a role-specific row against
    its references (SPE). A failed answer is a failure, never a score of 0."""
    by_id = {r.row_id: r for r in rows}
    scores, failures = [], []
    for a in answers:
        row = by_id[a.row_id]
        if a.status != "ok" or a.text is None:
            failures.append(Failure(stage="rolellm-answers", model=a.model, item_id=a.row_id, kind="answer",
                                    error=a.error))
            continue
        sets = ([("CUS", row.generated), ("RAW", raw.get(row.question.strip(), []))] if row.kind == "general"
                else [("SPE", row.generated)])
        for name, refs in sets:
            if refs:
                scores.append(RowScore(model=a.model, row_id=a.row_id, split=row.split, reference=name,  # type: ignore[arg-type]
                                       role=row.role, language=row.language,
                                       rouge_l=rouge_l(a.text, refs, row.language, combine, zh)))
    return scores, failures


def split_table(scores: Sequence[RowScore]) -> dict[str, dict[str, dict[str, float | None]]]:
    """split -> model -> CUS, RAW, SPE (means, x100) and avg, their mean over the sets the split has."""
    out: dict[str, dict[str, dict[str, float | None]]] = {}
    for split in sorted({s.split for s in scores}):
        for model in sorted({s.model for s in scores}):
            cells: dict[str, float | None] = {}
            for ref in REFERENCES:
                mine = [s.rouge_l for s in scores if s.split == split and s.model == model and s.reference == ref]
                cells[ref] = statistics.fmean(mine) if mine else None
            present = [v for v in cells.values() if v is not None]
            cells["avg"] = statistics.fmean(present) if present else None
            if present:
                out.setdefault(split, {})[model] = cells
    return out


def _analyze(data: AnalysisInput) -> Analysis:
    scores = [s if isinstance(s, RowScore) else RowScore.model_validate(s) for s in data.records]
    table = split_table(scores)
    lines = ["Rouge-L F (x100) per split, as RoleLLM reports it: CUS against the role-play references of the "
             "general questions, RAW against their original answers (when given), SPE against the references of "
             f"the role-specific questions; avg is their mean. References combined by `{data.context.get('combine')}` "
             "(first: the first reference only, as OpenCompass scores RoleBench; max: the best match); Chinese "
             f"tokens `{data.context.get('zh_tokens', 'jieba')}` (jieba: OpenCompass's clean-up, jieba words and "
             "rouge-chinese; chars: one token per character); prompting "
             f"`{data.context.get('mode')}`.", ""]
    for split, models in table.items():
        lines += [f"**{split}**", "", "| model | CUS | RAW | SPE | avg |", "|---|---|---|---|---|"]
        lines += [f"| {m} | " + " | ".join(fmt(c[k], 1) for k in (*REFERENCES, "avg")) + " |"
                  for m, c in models.items()]
        lines.append("")
    if not data.context.get("raw"):
        lines.append("No RAW references were given (`--raw`), so RAW is empty and avg is the mean of CUS and SPE.")
    sections = [Section("By split", "\n".join(lines))]
    wins: dict[str, Any] = data.context.get("win_rates") or {}
    if wins:
        reference = data.context.get("reference")
        body = ["Each judged question's answers were shown anonymised and shuffled; the judge ranked them. Win rate "
                f"against `{reference}` (a tie counts half), the share of questions ranked first, and the mean rank.",
                "", "| judge | system | win rate | compared | ranked first | mean rank | ranked |",
                "|---|---|---|---|---|---|---|"]
        for judge, systems in wins.items():
            body += [f"| {judge} | {s} | {fmt(v['win_rate'], 1)} | {v['compared']} | {fmt(v['first'], 1)} | "
                     f"{fmt(v['mean_rank'], 2)} | {v['ranked']} |" for s, v in systems.items()]
        sections.append(Section("Ranking judge", "\n".join(body)))
        for row in data.board:
            first = next(iter(wins.values()))
            row["win_rate"] = (first.get(row["model"]) or {}).get("win_rate")
    return Analysis(sections, {"by_split": table})


REPORT = ReportSpec(
    title="RoleLLM: answering in role, scored by Rouge-L",
    unit="questions per model",
    scoring=Scoring(
        metrics=(MetricSpec("avg", "Rouge-L F x100, the mean of CUS (speaking style: the role-play references), RAW "
                                   "(accuracy: the original answers, when given) and SPE (role knowledge: the "
                                   "role-specific references), each the mean over its questions",
                            column="rouge_l", macro_over="reference", unit="Rouge-L x100"),),
        groups=(GroupKey("reference", "reference set", order=REFERENCES), GroupKey("split", "split",
                                                                                  breakdown=False)),
        item_column="row_id",
    ),
    extra_columns=(Column("win_rate", "win rate", 1, unit="%"),),
    analyze=_analyze,
)


def scored(data: list[str], limit: int | None, answers: list[str], rankings: list[str], ranking_failures: list[str],
           raw: str | None, combine: str, prompting: str, reference: str, zh_tokens: str = "jieba") -> Scored:
    """The report stage's hook: Rouge-L of every answered row, the ranking judges' win rates, samples."""
    from rpbench.storage.schemas import FAILURES
    from rpbench.storage.tables import read_records
    from rpbench.tasks.modes.rolellm.answering import load_raw
    from rpbench.tasks.modes.rolellm.judging import win_rates
    from rpbench.tasks.modes.rolellm.rolebench import first_rows
    from rpbench.tasks.modes.rolellm.samples import samples
    from rpbench.tasks.modes.rolellm.tables import ANSWERS, QUESTIONS, RANKINGS

    rows = first_rows(data, limit)
    made = [a for p in answers for a in read_records(p, ANSWERS)]
    scores, failures = row_scores(rows, made, load_raw(raw) if raw else {}, "first" if combine == "first" else "max",
                                  "chars" if zh_tokens == "chars" else "jieba")
    ranked = [r for p in rankings for r in read_records(p, RANKINGS)]
    failures += [f for p in ranking_failures for f in read_records(p, FAILURES)]
    wins = {j: win_rates([r for r in ranked if r.judge == j], reference) for j in sorted({r.judge for r in ranked})}
    return Scored(scores, failures, len(rows), [(QUESTIONS, rows), (ANSWERS, made), (RANKINGS, ranked)],
                  {"raw": bool(raw), "combine": combine, "mode": prompting, "win_rates": wins, "zh_tokens": zh_tokens,
                   "reference": reference}, samples(rows, made, scores), summary={"win_rates": wins})
