"""Prefect tasks that publish what a run produced to the Prefect UI."""

from __future__ import annotations

from prefect import task
from prefect.artifacts import create_markdown_artifact

from storage.runs import RunDir
from tasks.reports.summary import run_summary_markdown


@task(name="publish-run-summary")
def publish_run_summary(run_dir: str, key: str) -> str:
    """A Markdown artifact summarising the run's manifest (tables, row counts, calls, tokens)."""
    markdown = run_summary_markdown(RunDir(run_dir).read_manifest(), run_dir)
    create_markdown_artifact(markdown=markdown, key=key, description="rpbench run summary")
    return markdown
