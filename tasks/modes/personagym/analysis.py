"""PersonaGym's report section: the run's task grades and PersonaScore beside the six released models'."""

from __future__ import annotations

import dataclasses

from rpbench.tasks.judged.rubric import judged_report
from rpbench.tasks.modes.personagym import release
from rpbench.tasks.reports.render import fmt
from rpbench.tasks.reports.spec import Analysis, AnalysisInput, Section

HEADLINE = "PersonaScore"  # the report's headline: the mean of the tasks' mean grades, as run.py's main() makes it


def released_key(task: str, released: dict[str, float]) -> str | None:
    """The released scores' name for ``task`` (they write "Toxicity Control" for the task "Toxicity")."""
    return task if task in released else next((k for k in released if k.startswith(task)), None)


def beside_released(inp: AnalysisInput) -> Analysis:
    """A table of each task's mean grade and the PersonaScore: the run's models, then the release's, marked."""
    tasks = release.tasks()
    mine = {(s["model"], s["dimension"]): s["score"] for s in inp.scores if s["metric"] == HEADLINE
            and s["group"] == "all" and s["language"] == "all"}
    lines = ["| model | " + " | ".join(tasks) + " | PersonaScore |", "|" + "---|" * (len(tasks) + 2)]
    for row in inp.board:
        model = str(row["model"])
        lines.append(f"| {model} | " + " | ".join(fmt(mine.get((model, t)), 2) for t in tasks)
                     + f" | {fmt(mine.get((model, 'all')), 2)} |")
    for name, scores in release.released_scores().items():
        cells = [fmt(scores.get(released_key(t, scores) or ""), 2) for t in tasks]
        lines.append(f"| {name} (released) | " + " | ".join(cells) + f" | {fmt(scores.get('PersonaScore'), 2)} |")
    note = ("The released rows are PersonaGym's `evaluations/*/scores.json` at "
            f"{release.RELEASE.name}, as published (its judges, its questions); a run is comparable with them only "
            "on the same evaluators and the release's questions.")
    return Analysis([Section("Beside PersonaGym's released scores", "\n".join([note, "", *lines]))])


# The kit's judged report (grades 1-5, a dimension per task, by persona), this table beside it.
REPORT = dataclasses.replace(judged_report("rpbench personagym", "persona", 1, 5, dimensions=None,
                                           dimension_label="task", headline=HEADLINE, group_columns=False),
                             analyze=beside_released)
