"""RoleLLM's samples for the viewer: the role and question, the references it is scored against, the answer
and its Rouge-L against each reference set."""

from __future__ import annotations

from collections.abc import Sequence

from rpbench.tasks.modes.rolellm.records import BenchRow, RoleAnswer, RowScore
from rpbench.tasks.reports.viewer import Part, Sample, failed_text, gist


def samples(rows: Sequence[BenchRow], answers: Sequence[RoleAnswer], scores: Sequence[RowScore]) -> list[Sample]:
    by_row = {r.row_id: r for r in rows}
    rouge: dict[tuple[str, str], list[RowScore]] = {}
    for s in scores:
        rouge.setdefault((s.model, s.row_id), []).append(s)
    out = []
    for a in answers:
        row = by_row.get(a.row_id)
        if row is None:
            continue
        mine = sorted(rouge.get((a.model, a.row_id), []), key=lambda s: s.reference)
        parts = [Part("Question", row.question)]
        parts += [Part(f"Reference {n}", text) for n, text in enumerate(row.generated, 1)]
        parts.append(Part(f"Answer ({a.model}, {a.mode})", failed_text(a.text, a.error)))
        score = ("Rouge-L " + "  ".join(f"{s.reference} {s.rouge_l:.1f}" for s in mine) if mine
                 else "failed" if a.status == "failed" else "not scored")
        out.append(Sample(id=f"{a.model}/{a.row_id}", item=a.row_id, model=a.model, title=gist(row.question),
                          score=score, parts=parts,
                          facets={"split": row.split, "kind": row.kind, "role": row.role, "language": row.language,
                                  "status": a.status}))
    return out
