"""Publishing to the Prefect UI: tables and Markdown as artifacts with stable kebab-case keys.

Only inside a flow or task run (outside one, Prefect would start a temporary
server just to store them), and never at the cost of finished work: the UI is
a view of the run folder, which is the record.
"""

from __future__ import annotations

import contextlib
import logging
import math
from typing import Any

from rpbench.flows.kit.running.progress import in_prefect_run

log = logging.getLogger("rpbench")


def readable(value: Any) -> Any:
    """A number as a table in the UI shows it: four significant digits (3.888, not 3.8879999999999995)."""
    if isinstance(value, float) and math.isfinite(value):
        return float(f"{value:.4g}")
    return value


async def publish_table(key: str, table: list[dict[str, Any]], description: str) -> None:
    if not in_prefect_run():
        return
    from prefect.artifacts import acreate_table_artifact

    rows = [{k: readable(v) for k, v in row.items()} for row in table] or [{"rows": 0}]
    with contextlib.suppress(Exception):
        await acreate_table_artifact(table=rows, key=key, description=description)


async def publish_markdown(key: str, markdown: str, description: str) -> None:
    if not in_prefect_run():
        return
    from prefect.artifacts import acreate_markdown_artifact

    with contextlib.suppress(Exception):
        await acreate_markdown_artifact(markdown=markdown, key=key, description=description)


def publish_markdown_now(key: str, markdown: str, description: str) -> None:
    """The same, from synchronous code (a flow's body)."""
    if not in_prefect_run():
        return
    from prefect.artifacts import create_markdown_artifact

    with contextlib.suppress(Exception):
        create_markdown_artifact(markdown=markdown, key=key, description=description, _sync=True)  # type: ignore[call-arg]
