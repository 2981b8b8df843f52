"""From RoleInteract's answers to item scores, and what its report adds to the shared one: the paper's
nine-column table with its unweighted average, unreadable answers by column, memory by dialogue length,
group accuracy by group size, and the social-preference x group-polarity matrix with drift."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from rpbench.tasks.core.records import Failure
from rpbench.tasks.modes.roleinteract.catalog import (
    GROUP,
    MEMORY,
    NAMES,
    PAPER_AVG,
    PAPER_TABLE,
    PREFERENCES,
    REPORTED,
)
from rpbench.tasks.modes.roleinteract.records import Answer, Item, ItemScore
from rpbench.tasks.modes.roleinteract.release import letters_as_released
from rpbench.tasks.modes.roleinteract.scoring import Rule, choice_score, cover, covered_average, table_average
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
from rpbench.tasks.stats.similarity import tokens

Policy = Literal["skip", "zero"]
RULES = {"paper": "any chosen option that is not gold gives 0, and several gold options earn a share each "
                  "(Appendix C), single-gold items included.",
         "released": "as SocialBench's released code scores: each answer's letters read with its format_predict "
                     "pattern (any letter A-H standing apart, the article 'A' included), an answer with none "
                     "skipped, a single-gold item right when the first letter read is gold, several gold options "
                     "as in the paper."}
LENGTH_EDGES = (20, 40, 60, 80, 100)  # memory items binned by utterances: 1-20, 21-40, ..., over 100


def item_scores(items: Sequence[Item], answers: Sequence[Answer], policy: Policy, rule: Rule = "paper"
                ) -> tuple[list[ItemScore], list[Failure]]:
    """One row per (model, item). Under ``zero`` every item counts: an unreadable answer, and a failed call (an
    empty reply included), score 0, not right; under ``skip`` (the released code's) both are left out. A failed
    call is a failure either way (the failure share, the run's threshold). Choice items score by ``rule``: under
    ``released`` an answer's letters are read again from its text as SocialBench's ``format_predict`` reads them
    (an answer it reads no letter in is unreadable, as its ``compute_score`` skips it)."""
    by_id = {i.item_id: i for i in items}
    rows, failures = [], []
    for a in answers:
        item = by_id[a.item_id]
        status = a.status
        letters = a.letters or []
        if rule == "released" and status != "failed" and item.column not in MEMORY:
            letters = letters_as_released(a.text or "")
            status = "ok" if letters else "unparsed"
        if status == "ok":
            value = cover(a.text or "", item.label) if item.column in MEMORY else choice_score(letters, item.label,
                                                                                              rule)
            score: float | None = 100.0 * value
        elif status == "unparsed":
            score = 0.0 if policy == "zero" else None
        else:
            score = 0.0 if policy == "zero" else None
            failures.append(Failure(stage="roleinteract-answers", model=a.model, item_id=a.item_id, kind="answer",
                                    error=a.error))
        rows.append(ItemScore(model=a.model, item_id=a.item_id, column=item.column, language=item.language,
                              category=item.category, status="scored" if status == "ok" else status,
                              score=score, utterances=len(item.dialogue), group_size=item.group_size,
                              target_preference=item.target_preference, polarity=item.polarity))
    return rows, failures


def _mean(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return statistics.fmean(kept) if kept else None


def nine_columns(rows: Sequence[ItemScore]) -> dict[str, dict[str, float | None]]:
    """model -> column -> mean score (x100) over its scored items, and "Avg", the unweighted mean of the nine
    columns (None unless all nine have a score)."""
    out: dict[str, dict[str, float | None]] = {}
    for model in sorted({r.model for r in rows}):
        cols = {c: _mean(r.score for r in rows if r.model == model and r.column == c) for c in NAMES}
        out[model] = {**cols, "Avg": table_average(cols)}
    return out


def _length_bin(utterances: int) -> str:
    low = 1
    for edge in LENGTH_EDGES:
        if utterances <= edge:
            return f"{low}-{edge}"
        low = edge + 1
    return f"over {LENGTH_EDGES[-1]}"


def by_key(rows: Sequence[ItemScore], keep: Any, key: Any) -> dict[str, dict[str, tuple[float | None, int]]]:
    """model -> key value -> (mean score, items) over the scored rows ``keep`` accepts."""
    groups: dict[str, dict[str, list[float]]] = {}
    for r in rows:
        if keep(r) and r.score is not None:
            groups.setdefault(r.model, {}).setdefault(str(key(r)), []).append(r.score)
    return {m: {k: (statistics.fmean(v), len(v)) for k, v in g.items()} for m, g in groups.items()}


def preference_matrix(rows: Sequence[ItemScore]) -> dict[str, dict[str, dict[str, tuple[float | None, int]]]]:
    """model -> target preference -> group polarity -> (accuracy, items), for group items whose polarity is
    known."""
    out: dict[str, dict[str, dict[str, tuple[float | None, int]]]] = {}
    for model, cells in by_key(rows, lambda r: r.column in GROUP and r.polarity is not None,
                               lambda r: f"{r.target_preference}|{r.polarity}").items():
        for pair, cell in cells.items():
            target, polarity = pair.split("|")
            out.setdefault(model, {}).setdefault(target, {})[polarity] = cell
    return out


def drift(matrix: dict[str, dict[str, tuple[float | None, int]]]) -> dict[str, dict[str, float]]:
    """Drift(p, q) = Acc[p][p] - Acc[p][q]: how much an agent of preference p loses in a group of polarity q."""
    out: dict[str, dict[str, float]] = {}
    for p, row in matrix.items():
        home = row.get(p, (None, 0))[0]
        if home is None:
            continue
        out[p] = {q: home - v for q, (v, _) in row.items() if q != p and v is not None}
    return out


def _table(head: Sequence[str], body: Iterable[Sequence[str]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head), *("| " + " | ".join(r) + " |" for r in body)]


def _sections(rows: Sequence[ItemScore], context: dict[str, Any]) -> list[Section]:
    table = nine_columns(rows)
    rule = context.get("scoring", "paper")
    lines = ["Each column is the mean over its items (x100); Avg is the unweighted mean of the nine columns, as "
             "the paper's Table 2. A column without items shows -, and then Avg is undefined (-).",
             "", f"Choice items scored by the `{rule}` rule: " + RULES[rule], ""]
    lines += _table(["model", *NAMES, "Avg"], [[m, *(fmt(v, 2) for v in cols.values())] for m, cols in table.items()])
    partial = {m: covered_average({c: v for c, v in cols.items() if c != "Avg"}) for m, cols in table.items()
               if cols["Avg"] is None}
    if any(v is not None for v in partial.values()):
        lines += ["", "Not every column has items here, so there is no Avg; the mean of the columns that have "
                  "items (not comparable with the paper's Avg): "
                  + ", ".join(f"{m} {fmt(v, 2)}" for m, v in partial.items() if v is not None) + "."]
    lines += ["", "The paper's Table 2, for comparison (a few rows):", ""]
    lines += _table(["model", *NAMES, "Avg"], [[m, *(f"{v:.2f}" for v in PAPER_TABLE[m]), f"{PAPER_AVG[m]:.2f}"]
                                               for m in REPORTED])
    sections = [Section("The nine columns", "\n".join(lines))]

    unread = Counter((r.model, r.column) for r in rows if r.status == "unparsed")
    policy = context.get("policy", "skip")
    text = (f"Answers in which no option could be read, after the retries: policy `{policy}` "
            + ("(left out of the averages)." if policy == "skip" else "(counted as wrong)."))
    models = sorted({r.model for r in rows})
    body = [[m, *(str(unread.get((m, c), 0)) for c in NAMES), str(sum(unread.get((m, c), 0) for c in NAMES))]
            for m in models]
    sections.append(Section("Unreadable answers", "\n".join([text, "", *_table(["model", *NAMES, "total"], body)])))

    def cells(found: dict[str, dict[str, tuple[float | None, int]]], order: Sequence[str], title: str, note: str
              ) -> None:
        if not found:
            return
        body = [[m, *(f"{fmt(found[m][v][0], 1)} ({found[m][v][1]})" if v in found[m] else "-" for v in order)]
                for m in sorted(found)]
        sections.append(Section(title, "\n".join([note, "", *_table(["model", *order], body)])))

    memory = by_key(rows, lambda r: r.column in MEMORY, lambda r: _length_bin(r.utterances))
    bins = [_length_bin(e) for e in LENGTH_EDGES] + [f"over {LENGTH_EDGES[-1]}"]
    cells(memory, [b for b in bins if any(b in v for v in memory.values())], "Memory by dialogue length",
          "Keyword coverage of memory items by the number of utterances before the question (items in brackets).")
    sizes = by_key(rows, lambda r: r.column in GROUP and r.group_size is not None, lambda r: r.group_size)
    cells(sizes, sorted({s for v in sizes.values() for s in v}, key=int), "Group accuracy by group size",
          "Accuracy on group items by the number of members (items in brackets).")

    matrix = preference_matrix(rows)
    if matrix:
        polarities = [*PREFERENCES, "mixed"]
        lines = ["Accuracy by the target's designed preference (rows) and the group's majority preference "
                 "(columns, from the members' labels); drift(p, q) = Acc[p][p] - Acc[p][q].", ""]
        for model, m in sorted(matrix.items()):
            lines += [f"**{model}**", ""]
            lines += _table(["target \\ group", *polarities],
                            [[p, *(f"{fmt(m[p][q][0], 1)} ({m[p][q][1]})" if q in m.get(p, {}) else "-"
                                   for q in polarities)] for p in PREFERENCES if p in m])
            moved = drift(m)
            if moved:
                lines += ["", "drift: " + "; ".join(f"{p} in {q} groups {v:+.1f}" for p, d in moved.items()
                                                    for q, v in d.items())]
            lines.append("")
        sections.append(Section("Social preference and group polarity", "\n".join(lines)))
    else:
        sections.append(Section("Social preference and group polarity",
                                "No group item labels its members' preferences (`meta.member_preferences` or "
                                "`meta.polarity`), so the matrix and drift cannot be computed."))
    stats = context.get("data", {})
    if stats:
        body = [[c, str(v["questions"]), f"{v['utterances']:.1f}", f"{v['tokens']:.1f}", f"{v['speakers']:.1f}"]
                for c, v in stats.items()]
        sections.append(Section("The questions", "\n".join([
            "As the paper's Table 1 counts them: questions, utterances per dialogue, tokens per utterance (words; "
            "characters for Chinese) and speakers per dialogue.", "",
            *_table(["column", "questions", "utterances", "tokens / utterance", "speakers"], body)])))
    repaired = {f: n for f, n in context.get("repaired_bytes", {}).items() if n}
    dropped = context.get("dropped", [])
    if repaired or dropped:
        lines = []
        if repaired:
            lines.append("Bytes that were not UTF-8, read as Windows-1252: "
                         + ", ".join(f"{f} {n}" for f, n in sorted(repaired.items())) + ".")
        if dropped:
            lines += ["", f"Left out because no answer can be right (--drop-unanswerable): {len(dropped)}.", "",
                      *(f"- {d}" for d in dropped)]
        sections.append(Section("Input files", "\n".join(lines)))
    return sections


def data_stats(items: Sequence[Item]) -> dict[str, dict[str, float]]:
    """Per column: questions, mean utterances per dialogue, mean tokens per utterance, mean speakers."""
    out = {}
    for column in NAMES:
        mine = [i for i in items if i.column == column]
        if mine:
            texts = [u.text for i in mine for u in i.dialogue]
            out[column] = {"questions": len(mine), "utterances": statistics.fmean(len(i.dialogue) for i in mine),
                           "tokens": statistics.fmean(len(tokens(t)) for t in texts) if texts else 0.0,
                           "speakers": statistics.fmean(len({u.speaker for u in i.dialogue}) for i in mine)}
    return out


def _analyze(data: AnalysisInput) -> Analysis:
    rows = [r if isinstance(r, ItemScore) else ItemScore.model_validate(r) for r in data.records]
    unread = Counter(r.model for r in rows if r.status == "unparsed")
    for row in data.board:
        row["unreadable"] = float(unread.get(row["model"], 0))
    return Analysis(_sections(rows, data.context), {"table": nine_columns(rows), "policy": data.context.get("policy"),
                                                    "scoring": data.context.get("scoring", "paper")})


REPORT = ReportSpec(
    title="RoleInteract: social interaction of role-playing agents",
    unit="questions per model",
    scoring=Scoring(
        metrics=(MetricSpec("Avg", "the unweighted mean of the columns the data has items in (the paper's Avg when "
                                   "all nine do: self-awareness of style and knowledge, emotional perception of "
                                   "situations and emotions, short- and long-term memory, and keeping a positive, "
                                   "neutral or negative social preference in a group), each the mean over its items "
                                   "x100; intervals resample items within each column",
                            column="score", digits=2, macro_over="column", unit="% correct"),),
        groups=(GroupKey("column", "column", order=NAMES), GroupKey("language", "language", breakdown=False)),
        item_column="item_id",
    ),
    extra_columns=(Column("unreadable", "unreadable", 0, unit="items"),),
    analyze=_analyze,
)


def scored(data: list[str], columns: list[str], languages: list[str], limit: int | None, drop_unanswerable: bool,
           answers: list[str], policy: str, scoring: str) -> Scored:
    """The report stage's hook: item scores of every model's answers, one model's answers at a time (read again
    for the viewer rather than kept: a run of 100,000 answers holds their scores, never every answer at once);
    the answers table kept as the models' tables joined as columns."""
    from rpbench.storage.tables import read_records
    from rpbench.tasks.modes.roleinteract.samples import samples
    from rpbench.tasks.modes.roleinteract.selection import select
    from rpbench.tasks.modes.roleinteract.tables import ANSWERS, ITEMS

    items, repaired, dropped = select(data, columns, languages, limit, drop_unanswerable)
    pol: Policy = "zero" if policy == "zero" else "skip"
    rule: Rule = "released" if scoring == "released" else "paper"
    per_model = [item_scores(items, read_records(p, ANSWERS), pol, rule) for p in answers]
    shown = (s for p, (rows, _) in zip(answers, per_model, strict=True)
             for s in samples(items, read_records(p, ANSWERS), rows))
    return Scored([r for rows, _ in per_model for r in rows], [f for _, failed in per_model for f in failed],
                  len(items), [(ITEMS, items)],
                  {"policy": policy, "scoring": scoring, "repaired_bytes": repaired, "dropped": dropped,
                   "data": data_stats(items)}, shown, joined=[(ANSWERS, answers)],
                  summary={"unanswerable_left_out": len(dropped)})
