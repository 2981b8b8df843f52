"""MkDocs hooks: the command reference made from the command line itself, and the screenshots the tests take
served beside the pages (they live in samples/screenshots/, where the tests write them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
MARKER = "<!-- rpbench-cli-reference -->"


def on_files(files: Files, config: Any) -> Files:
    for png in sorted((ROOT / "samples" / "screenshots").glob("*.png")):
        files.append(File(f"screenshots/{png.name}", str(png.parent.parent), config["site_dir"],
                          config["use_directory_urls"]))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    if MARKER not in markdown:
        return markdown
    from rpbench.flows.cli.reference import reference_markdown

    return markdown.replace(MARKER, reference_markdown())
