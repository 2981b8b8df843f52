"""The viewer's samples when a mode gives none: one per row of its item table.

A mode with something better to show (the question asked, a dialogue turn by turn) gives its own ``samples``
in ``Scored``. Without them, each row becomes a sample: its model, its item, its metrics as the score line, its
grouping columns as the filters, and its other fields as labelled blocks (text in full, the rest as it reads).
So a new benchmark has a viewer from its first run.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from rpbench.tasks.reports.spec import Scoring
from rpbench.tasks.reports.viewer import Part, Sample, gist


def _fields(row: Any) -> dict[str, Any]:
    if isinstance(row, Mapping):
        return dict(row)
    return dict(row.model_dump()) if hasattr(row, "model_dump") else dict(vars(row))


def _shown(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def rows_as_samples(rows: Iterable[Any], scoring: Scoring) -> Iterator[Sample]:
    """A sample per row of the item table, as described above, in the table's order."""
    metric_columns = {m.column: m.name for m in scoring.metrics}
    group_columns = {k.column: k.label for k in scoring.groups}
    taken = {scoring.model_column, scoring.item_column, *metric_columns, *group_columns}
    for n, row in enumerate(rows):
        values = _fields(row)
        model = _shown(values.get(scoring.model_column, ""))
        item = _shown(values.get(scoring.item_column)) if scoring.item_column else str(n)
        shown = {name: _shown(value) for name, value in values.items() if name not in taken and value is not None}
        parts = [Part(name, text) for name, text in shown.items() if text]
        yield Sample(id=f"{model}/{item}/{n}", item=item, model=model,
                     title=f"{item}: {gist(parts[0].text, 70)}" if parts else item,
                     score=", ".join(f"{name} {_shown(values[column])}" for column, name in metric_columns.items()
                                     if values.get(column) is not None),
                     parts=parts,
                     facets={label: _shown(values[column]) for column, label in group_columns.items()
                             if values.get(column) is not None})
