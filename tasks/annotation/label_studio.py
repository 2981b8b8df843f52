"""The Label Studio server, through its own client (label-studio-sdk): projects, tasks and annotations.

The token comes from LABEL_STUDIO_API_KEY only (a personal access token from the user's Account & Settings
page, or a legacy token where the organisation allows them); it is never a command-line option, and the
log redaction scrubs it like every key. Every failure to reach or use the server is one InputError line.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rpbench.tasks.core.errors import InputError

TOKEN_ENV = "LABEL_STUDIO_API_KEY"


@contextmanager
def _said_plainly(url: str, doing: str) -> Iterator[None]:
    """The SDK's errors (HTTP status and body, connection failures) as one line naming the server."""
    import httpx
    from label_studio_sdk.core.api_error import ApiError

    try:
        yield
    except ApiError as exc:
        detail = exc.body.get("detail") if isinstance(exc.body, dict) else exc.body
        if exc.status_code == 401:
            raise InputError(f"{url}: the token in {TOKEN_ENV} was refused while {doing} ({detail})") from None
        raise InputError(f"{url}: Label Studio answered {exc.status_code} while {doing}: {detail}") from None
    except httpx.HTTPError as exc:
        raise InputError(f"{url}: no Label Studio answering while {doing} ({type(exc).__name__}: {exc})") from None


class LabelStudioProjects:
    """One Label Studio server, as rpbench uses it."""

    def __init__(self, url: str) -> None:
        try:
            from label_studio_sdk import LabelStudio
        except ImportError:
            raise InputError("rpbench annotate needs label-studio-sdk: pip install 'rpbench[annotate]'") from None
        token = os.environ.get(TOKEN_ENV, "").strip()
        if not token:
            raise InputError(f"{TOKEN_ENV} is not set: export a Label Studio access token (Account & Settings "
                             "> Personal Access Token)")
        self.url = url.rstrip("/")
        # Typed loosely: the SDK's generated pagers and models add nothing rpbench checks beyond the server's own.
        self.client: Any = LabelStudio(base_url=self.url, api_key=token, timeout=60)

    def project_id(self, name: str) -> int | None:
        with _said_plainly(self.url, "listing projects"):
            for project in self.client.projects.list():
                if project.title == name:
                    return int(project.id)
        return None

    def require_project(self, name: str) -> int:
        found = self.project_id(name)
        if found is None:
            with _said_plainly(self.url, "listing projects"):
                known = sorted(str(p.title) for p in self.client.projects.list())
            raise InputError(f"--project: unknown project '{name}' on {self.url} (known: {', '.join(known) or 'none'})")
        return found

    def create_project(self, name: str, label_config: str, description: str, per_item: int) -> int:
        """A project showing tasks with ``label_config``; ``per_item`` annotators see each task."""
        with _said_plainly(self.url, f"creating project '{name}'"):
            project = self.client.projects.create(
                title=name, label_config=label_config, description=description,
                maximum_annotations=per_item, overlap_cohort_percentage=100, show_skip_button=True)
        return int(project.id)

    def label_config(self, project_id: int) -> str:
        with _said_plainly(self.url, "reading the project"):
            return str(self.client.projects.get(id=project_id).label_config)

    def tasks(self, project_id: int) -> list[dict[str, Any]]:
        """Every task of the project with its annotations, as plain dicts."""
        with _said_plainly(self.url, "reading tasks"):
            out = []
            for task in self.client.tasks.list(project=project_id, fields="all"):
                out.append(task.model_dump(mode="json") if hasattr(task, "model_dump") else dict(task))
            return out

    def import_tasks(self, project_id: int, data: list[dict[str, Any]]) -> None:
        with _said_plainly(self.url, "importing tasks"):
            self.client.projects.import_tasks(id=project_id, request=[{"data": d} for d in data])

    def users(self) -> dict[int, str]:
        """User id -> e-mail, to name annotators."""
        with _said_plainly(self.url, "listing users"):
            return {int(u.id): str(u.email or u.username) for u in self.client.users.list()}
