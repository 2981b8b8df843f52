"""`rpbench annotate push` and `rpbench annotate pull`: an evaluation's items to Label Studio and back."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from rpbench.flows.kit.front.settings import MIN_RESAMPLES
from rpbench.tasks.core.errors import InputError

app = typer.Typer(help="Human validation of the judge through Label Studio: push items as tasks, pull the "
                       "annotations back for `rpbench furina validate` (or `rpbench annotate agreement` for scored "
                       "replies). The token comes from LABEL_STUDIO_API_KEY.",
                  no_args_is_help=True)


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    from rpbench.storage.tables import atomic_write_bytes

    atomic_write_bytes(path, data)


URL = typer.Option("--url", help="The Label Studio server, e.g. http://localhost:8080.")
PROJECT = typer.Option("--project", help="The Label Studio project, by name.")


@app.command("push")
def push(
    eval_dir: Annotated[Path, typer.Option("--eval", help="The run folder the tasks come from (an evaluation, "
                                                          "rpbench furina eval --out, for dimension and pairwise; a "
                                                          "PingPong run for pingpong).")],
    task: Annotated[str, typer.Option("--task", help="The kind of task, one a benchmark mode offers: "
                                                     "dimension (which dimension an item tests), pairwise (the "
                                                     "model's reply against the base's, 1-5), pingpong (a "
                                                     "conversation on PingPong's three criteria); `rpbench "
                                                     "modes` lists them.")],
    url: Annotated[str | None, URL] = None,
    project: Annotated[str | None, PROJECT] = None,
    per_item: Annotated[int, typer.Option("--per-item", min=1, help="Annotators who see each task (Label "
                                                                    "Studio's overlap; 2 or more for agreement).")] = 2,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="At most this many items, sampled evenly "
                                                                     "over dimensions and languages.")] = None,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Seed of the sample and of the order replies are shown "
                                                     "in.")] = 0,
    language: Annotated[str, typer.Option("--language", help="Language of the project's instructions: en, zh, "
                                                             "or auto (the items' main language).")] = "auto",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Make the tasks and say how many there are, per "
                                                            "language; contact no server (--url and --project "
                                                            "are then not needed).")] = False,
) -> None:
    """Push a sample of an evaluation's items to a Label Studio project (made if missing) as annotation tasks.

    Pushing the same items again adds nothing: each task is keyed by item, model and task kind."""
    from rpbench.flows.kit.commands.settings_commands import flow_of_run
    from rpbench.flows.kit.front.registry import annotation_kinds, load_ref, mode_of_flow
    from rpbench.tasks.annotation.label_studio import LabelStudioProjects
    from rpbench.tasks.core.errors import unknown_name

    if language not in ("auto", "en", "zh"):
        raise InputError(f"--language: unknown language '{language}' (known: auto, en, zh)")
    offered = annotation_kinds()
    if task not in offered:
        raise InputError(f"--task: {unknown_name('task kind', task, offered)}")
    mode, ref = offered[task]
    ran = flow_of_run(eval_dir)
    if ran is not None and mode_of_flow(ran) != mode.name:  # another benchmark's run: say so, not what it lacks
        raise InputError(f"--eval: {eval_dir} is a run of {ran}; {task} tasks come from a {mode.name} run")
    kind = load_ref(ref)
    tasks = kind.tasks(eval_dir, limit, seed)
    if not tasks:
        raise InputError(f"{eval_dir}: no item has replies to show (every generation failed?)")
    languages = Counter(t["language"] for t in tasks)
    if language == "auto":
        language = "zh" if languages.most_common(1)[0][0] == "zh" else "en"
    if dry_run:
        per_language = ", ".join(f"{n} {lang}" for lang, n in sorted(languages.items()))
        typer.echo(f"dry run: {len(tasks)} {task} tasks from {eval_dir} ({per_language}); instructions in "
                   f"{language}; nothing sent")
        return
    if url is None or project is None:
        raise InputError("annotate push: --url and --project are needed (or --dry-run to only make the tasks)")
    server = LabelStudioProjects(url)
    project_id = server.project_id(project)
    if project_id is None:
        project_id = server.create_project(project, kind.config(language),
                                           f"rpbench {task} validation of {eval_dir}", per_item)
        typer.echo(f"created project '{project}' (id {project_id}, {task}, {language}, {per_item} per task)")
    elif f'name="{kind.field}"' not in server.label_config(project_id):
        raise InputError(f"--project: '{project}' is not a {task} project (push its own task kind, or name "
                         f"another project)")
    there = {str((t.get("data") or {}).get("rpbench_key")) for t in server.tasks(project_id)}
    new = [t for t in tasks if t["rpbench_key"] not in there]
    if new:
        server.import_tasks(project_id, new)
    typer.echo(f"pushed {len(new)} new tasks to '{project}' at {server.url} ({len(tasks) - len(new)} already there)")


@app.command("pull")
def pull(
    url: Annotated[str, URL],
    project: Annotated[str, PROJECT],
    out: Annotated[Path, typer.Option("--out", help="Annotations file to write (JSONL), for rpbench furina validate "
                                                    "--annotations.")],
) -> None:
    """Pull a project's annotations back as rows `rpbench furina validate` reads (pairwise scores un-randomised: 1 =
    the reply under test much better), or `rpbench pingpong agreement` for a pingpong project; skipped and
    unsure answers are counted, not scored."""
    from rpbench.flows.kit.front.registry import annotation_kinds, load_ref
    from rpbench.tasks.annotation.label_studio import LabelStudioProjects
    from rpbench.tasks.annotation.results import read_back

    if out.suffix.lower() not in (".jsonl", ".json"):
        raise InputError(f"--out: {out}: write annotations as .jsonl")
    server = LabelStudioProjects(url)
    project_id = server.require_project(project)
    kinds = {name: load_ref(ref) for name, (_mode, ref) in annotation_kinds().items()}
    result = read_back(server.tasks(project_id), server.users(), kinds)
    out.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write_bytes(out, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in result.rows).encode())
    summary = out.with_name(out.name + ".summary.json")
    _atomic_write_bytes(summary, json.dumps(result.summary(), ensure_ascii=False, indent=1).encode())
    typer.echo(f"{len(result.rows)} annotations to {out}; skipped {result.skipped}, unsure {result.unsure}, "
               f"duplicates {len(result.duplicates)} (the latest kept; listed in {summary.name})")


SCORED = typer.Option("--annotations", help="Pulled scores of replies (`rpbench annotate pull` of a reply-score "
                                            "project, such as characterbench's).")
SCORED_RUN = typer.Option("--run", help="The run whose replies were scored (its item table holds the judge's scores).")
RESAMPLES = typer.Option("--resamples", min=MIN_RESAMPLES, help="Bootstrap resamples for the intervals (at least "
                         f"{MIN_RESAMPLES}: fewer leave a 2.5% tail with no resample in it).")


@app.command("agreement")
def agreement(annotations: Annotated[Path, SCORED], run: Annotated[Path, SCORED_RUN],
              resamples: Annotated[int, RESAMPLES] = 1000) -> None:
    """The run's judge against your annotators on the same replies, per dimension and language: Pearson,
    Spearman, Kendall's tau-b and exact agreement with intervals, the table every benchmark with human scores
    writes (into the run folder as agreement_annotators.parquet)."""
    from rpbench.flows.kit.front.registry import get_mode, mode_of_flow
    from rpbench.storage.runs import manifest_of
    from rpbench.storage.schemas import AGREEMENT
    from rpbench.storage.tables import read_rows, write_table
    from rpbench.storage.user_files import load_rows
    from rpbench.tasks.annotation.reply_scores import pair_reply_scores
    from rpbench.tasks.reports.judges import agreement_rows, judge_agreement_lines

    if not run.is_dir():
        raise InputError(f"--run {run}: no such folder")
    mode = mode_of_flow((manifest_of(run) or {}).get("flow", ""))
    if mode is None:
        raise InputError(f"--run {run}: no finished benchmark run here (its manifest.json names none)")
    table = get_mode(mode).load_item_table()
    found = pair_reply_scores(annotations, load_rows(annotations, "an annotations file",
                                                     "item_id, model, language, score"),
                              read_rows(run / table.filename, table))
    if not found.pairs:
        raise InputError(f"{annotations}: no annotated reply is one {run} scored (annotations of another run?); "
                         f"{found.left_out()}")
    pairs = [(f"{mode} judge", str(row.get("dimension", "all")), str(row.get("language")), human,
              float(row["score"])) for row, human in found.pairs]
    rows = agreement_rows(mode, pairs, resamples)
    write_table(run / "agreement_annotators.parquet", [r.model_dump() for r in rows], AGREEMENT)
    typer.echo("\n".join(judge_agreement_lines(rows)))
    if found.left_out():
        typer.echo(f"note: {found.left_out()}", err=True)
    typer.echo(f"{len(pairs)} annotations paired; written: {run / 'agreement_annotators.parquet'}")
