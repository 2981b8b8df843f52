"""Prefect tasks that close a run: accounting, manifest, and a summary in the Prefect UI."""

from __future__ import annotations

from prefect import task
from prefect.artifacts import create_markdown_artifact

from rpbench.storage.runs import RunDir
from rpbench.tasks.reports.summary import run_summary_markdown
from rpbench.flows.kit.runtime import get_runtime


@task(name="publish-run-summary")
def publish_run_summary(run_dir: str, key: str) -> str:
    """A Markdown artifact summarising the run's manifest (tables, row counts, calls, tokens)."""
    markdown = run_summary_markdown(RunDir(run_dir).read_manifest(), run_dir)
    create_markdown_artifact(markdown=markdown, key=key, description="rpbench run summary", _sync=True)
    return markdown


@task(name="finish-run")
def finish_run(run_dir: str, models: str | None = None, cache: str | None = None, **sections) -> dict:
    """Write the run's call accounting and manifest."""
    return get_runtime(run_dir, models, cache).finish(**sections)
