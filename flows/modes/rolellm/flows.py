"""RoleLLM's flows.

``rolellm-eval``: answers (per model, RoleGPT prompting) -> rankings (per judge, optional) -> the kit's report
stage (``analysis.scored``: Rouge-L scores, the per-split table). ``rolellm-context-instruct``: triplets (per
role) -> filtering and the RoleBench-layout files.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import yaml
from prefect import flow

from rpbench.flows.kit.front.checking import checked
from rpbench.flows.kit.running.finish import finish_run
from rpbench.flows.kit.running.run import flow_body
from rpbench.flows.kit.running.stage import StageResult, StageRun, slug, stage
from rpbench.flows.kit.running.stages import Stages
from rpbench.flows.kit.scale.runners import stage_runner
from rpbench.flows.modes.rolellm.checks import (
    BASELINE,
    _plan,
    check_eval,
    check_general,
    check_roles,
    read_scripts,
)
from rpbench.flows.modes.rolellm.settings import (
    ContextInstructSettings,
    EvalSettings,
    GeneralSettings,
    ProfileSettings,
    SelectSettings,
)
from rpbench.storage.schemas import FAILURES
from rpbench.storage.tables import atomic_write_bytes, read_records
from rpbench.storage.user_files import read_user_text
from rpbench.tasks.core.errors import InputError
from rpbench.tasks.core.records import Failure
from rpbench.tasks.llm.given import given_reply
from rpbench.tasks.modes.rolellm.answering import answer_all, paired, read_rolebench_answers
from rpbench.tasks.modes.rolellm.authoring import DISTINCT_ENOUGH, GENERATOR, AuthoringFailed, describe, select_roles
from rpbench.tasks.modes.rolellm.context_instruct import Plan, filter_triplets, generate, layout
from rpbench.tasks.modes.rolellm.general import (
    RESPONSES,
    ROLEGPT,
    general_layout,
    load_instructions,
    respond_all,
    select_instructions,
)
from rpbench.tasks.modes.rolellm.judging import rank_all
from rpbench.tasks.modes.rolellm.profiles import (
    load_profiles,
    role_turns,
)
from rpbench.tasks.modes.rolellm.records import BenchRow, Mode, RoleAnswer
from rpbench.tasks.modes.rolellm.rolebench import first_rows, read_file, write_rows
from rpbench.tasks.modes.rolellm.segments import Rules, segments
from rpbench.tasks.modes.rolellm.tables import (
    ANSWERS,
    GENERAL_RESPONSES,
    RANKINGS,
    SELECTION,
    TRIPLETS,
)

WORKERS = 4


@stage("rolellm-answers", batch=True, templates=("rolellm/system", "rolellm/question", "rolellm/examples"),
       roles=lambda p: [p["role"]], inputs=("data", "profiles"))
async def answers(run: StageRun, data: list[str], profiles: list[str], limit: int | None, mode: str, top_k: int,
                  role: str, name: str) -> StageResult:
    rows = first_rows(data, limit)
    known = load_profiles(profiles)
    how = cast(Mode, mode)
    async with run.gateway() as gateway:
        made = await answer_all(gateway, rows, known, role, name, how, top_k,
                                run.progress.track(f"answers of {name}", len(rows)))
    return run.written(ANSWERS, made)


@stage("rolellm-given-answers", inputs=("data", "given"))
async def given_answers(run: StageRun, data: list[str], limit: int | None, mode: str, given: list[str], kind: str,
                        name: str) -> StageResult:
    """Answers read from files, scored as the system ``name``'s: a user's (``--answers``; a question with no
    answer is a failure) or the RoleGPT baseline RoleBench ships (``baseline``; rows it does not cover are left
    out, not failed)."""
    rows = first_rows(data, limit)
    how = cast(Mode, mode)
    texts = _baseline_answers(given, rows) if kind == "baseline" else _user_answers(given[0], rows)
    if kind == "baseline":
        rows = [r for r in rows if r.row_id in texts]
    made = []
    for r in rows:
        res = given_reply(texts.get(r.row_id), name, missing=f"{given[0]} has no answer to this question")
        made.append(RoleAnswer(row_id=r.row_id, model=name, mode=how, text=res.text if res.ok else None,
                               status=res.status, error=res.error))
    return run.written(ANSWERS, made)


def _user_answers(path: str, rows: Sequence[BenchRow]) -> dict[str, str]:
    """Row id -> answer, from a JSONL keyed by ``id`` (the row id) or by ``role`` and ``question`` (a question asked
    twice takes its answers in order)."""
    by_key = read_rolebench_answers(path)
    keys = [r.row_id if r.row_id in by_key else f"{r.role}\n{r.question.strip()}" for r in rows]
    return {r.row_id: text for r, text in zip(rows, paired(keys, by_key), strict=True) if text is not None}


def _baseline_answers(files: Sequence[str], rows: Sequence[BenchRow]) -> dict[str, str]:
    """Row id -> the RoleGPT baseline's answer to the same question (same split, kind and role; a question asked
    twice takes the baseline's answers in the order both files hold them)."""
    ref: dict[str, list[str]] = {}
    for f in files:
        for b in read_file(Path(f)):
            ref.setdefault(f"{b.split}\n{b.kind}\n{b.role}\n{b.question.strip()}", []).append(b.generated[0])
    keys = [f"{r.split}\n{r.kind}\n{r.role}\n{r.question.strip()}" for r in rows]
    return {r.row_id: text for r, text in zip(rows, paired(keys, ref), strict=True) if text is not None}


@stage("rolellm-rankings", batch=True, templates=("rolellm/rank",), roles=lambda p: [p["judge_role"]],
       inputs=("data", "baselines", "profiles", "answers"))
async def rankings(run: StageRun, data: list[str], baselines: list[str], profiles: list[str], limit: int | None,
                   answers: list[str], per_role: int, judge: str, judge_role: str) -> StageResult:
    rows = first_rows(data, limit)
    by_row: dict[str, dict[str, str]] = defaultdict(dict)
    for p in answers:
        for a in read_records(p, ANSWERS):
            if a.status == "ok" and a.text:
                by_row[a.row_id][a.model] = a.text
    for row_id, text in _baseline_answers(baselines, rows).items():
        by_row[row_id][BASELINE] = text
    seen: dict[tuple[str, str, str], int] = defaultdict(int)
    picked = []
    for r in rows:
        seen[(r.split, r.kind, r.role)] += 1
        if seen[(r.split, r.kind, r.role)] <= per_role:
            picked.append(r)
    async with run.gateway() as gateway:
        made = await rank_all(gateway, picked, load_profiles(profiles), by_row, judge_role, judge,
                              run.progress.track(f"rankings by {judge}", len(picked)))
    run.write(RANKINGS, made)
    run.write(FAILURES, [Failure(stage="rolellm-rankings", model=judge, item_id=r.row_id, kind=f"ranking:{judge}",
                                 error=r.error, scored=True) for r in made if r.status == "failed"])
    return run.result(ranked=sum(r.status == "ok" for r in made), failed=sum(r.status == "failed" for r in made))


@flow(name="rpbench-rolellm-eval", log_prints=True, task_runner=stage_runner(WORKERS))
@flow_body
def rolellm_eval(s: EvalSettings, stages: Stages) -> dict:
    """RoleLLM evaluation: models answer RoleBench questions in role; Rouge-L (CUS, RAW, SPE); optional ranking."""
    got = checked(check_eval, s)
    made = stages.map(answers, [{"data": got.data, "profiles": got.profiles, "limit": s.limit, "mode": s.mode,
                                 "top_k": s.top_k, "role": x.role, "name": x.name, "shard": x.shard}
                                for x in got.systems if x.role])
    # Systems whose answers are read, not asked: the user's --answers, and the RoleGPT baseline beside the data.
    read = [(x.name, [x.answers], "answers") for x in got.systems if x.answers]
    read += [(BASELINE, got.baselines, "baseline")] if got.baselines else []
    made += stages.map(given_answers, [{"data": got.data, "limit": s.limit, "mode": s.mode,
                                        "given": files, "kind": kind, "name": name, "shard": slug(name)}
                                       for name, files, kind in read])
    ranked = stages.map(rankings, [{"data": got.data, "baselines": got.baselines, "profiles": got.profiles,
                                    "limit": s.limit, "answers": [m.path("answers") for m in made],
                                    "per_role": s.judge_per_role, "judge": judge, "judge_role": role,
                                    "shard": slug(judge)} for judge, role in got.judges.items()])
    tables = {"answers": [m.path("answers") for m in made], "rankings": [r.path("rankings") for r in ranked],
              "ranking_failures": [r.path("failures") for r in ranked]}
    done = stages.score("rolellm", {"data": got.data, "limit": s.limit, **tables, "raw": s.raw, "combine": s.combine,
                                    "prompting": s.mode, "reference": s.reference, "zh_tokens": s.zh_tokens},
                        systems=[x.name for x in got.systems])
    return finish_run(s.out, stages, s, "rolellm-eval", rolellm=done.scores("by_split", "win_rates"),
                      rolellm_settings=s.recorded(s.out))


@stage("rolellm-triplets", templates=("rolellm/from_script", "rolellm/from_description"), roles=("rolellm-generator",),
       inputs=("roles",))
async def triplets(run: StageRun, roles: list[str], role: str, plan: dict[str, Any], max_segments: int,
                   seed: int) -> StageResult:
    profile = load_profiles(roles)[role]
    steps = Plan(**plan)
    cut = segments(profile, Rules(max_segments=max_segments), seed)
    async with run.gateway() as gateway:
        made, failed = await generate(gateway, profile, cut, steps, run.progress.track(
            f"triplets of {role}", len(cut) + steps.description_calls))
    run.write(TRIPLETS, made)
    run.write(FAILURES, failed)
    return run.result(segments=len(cut), candidates=len(made), failed=len(failed))


@stage("rolellm-layout", inputs=("triplets", "failures"))
async def write_layout(run: StageRun, triplets: list[str], failures: list[str], languages: dict[str, str],
                       turns: dict[str, int], plan: dict[str, Any], seed: int) -> StageResult:
    made = filter_triplets([t for p in triplets for t in read_records(p, TRIPLETS)], Plan(**plan))
    files, notes = layout(made, languages, seed)
    for rel, rows in files.items():
        write_rows(run.final_folder / rel, rows)
    run.write(TRIPLETS, made, final=True)
    run.write(FAILURES, [f for p in failures for f in read_records(p, FAILURES)], final=True)
    counts = {role: {o: sum(t.role == role and t.outcome == o for t in made)
                     for o in ("kept", "test", "duplicate", "low", "unclean")} for role in languages}
    summary = "\n".join([f"- {role}: {turns[role]} turns; " + ", ".join(f"{o} {n}" for o, n in c.items())
                         for role, c in counts.items()] + [f"- {n}" for n in notes])
    atomic_write_bytes(run.final_folder / "summary.md", f"# Context-Instruct\n\n{summary}\n".encode())
    return run.result(files={rel: len(rows) for rel, rows in files.items()}, counts=counts, notes=notes)


@flow(name="rpbench-rolellm-context-instruct", log_prints=True, task_runner=stage_runner(WORKERS))
@flow_body
def context_instruct(s: ContextInstructSettings, stages: Stages) -> dict:
    """Context-Instruct: question-confidence-answer triplets from each role's profile, filtered, in RoleBench's
    layout (instruction- and role-generalisation splits)."""
    files, kept, dropped = checked(check_roles, s)
    plan = _plan(s)
    made = stages.map(triplets, [{"roles": files, "role": name, "plan": plan, "max_segments": s.max_segments,
                                  "seed": s.seed, "shard": slug(name)} for name in sorted(kept)])
    done = stages.run(write_layout, triplets=[m.path("triplets") for m in made],
                      failures=[m.path("failures") for m in made],
                      languages={n: p.language for n, p in kept.items()},
                      turns={n: role_turns(p) for n, p in kept.items()}, plan=plan, seed=s.seed)
    return finish_run(s.out, stages, s, "rolellm-context-instruct",
                      context_instruct={**done.summary, "left_out": dropped},
                      context_instruct_settings=s.recorded(s.out))


@stage("rolellm-general-responses", templates=("rolellm/system", "rolellm/question", "rolellm/examples"),
       roles=(ROLEGPT,), inputs=("roles", "instructions"))
async def general_responses(run: StageRun, roles: list[str], role: str, instructions: str, duplicate_share: float,
                            limit: int | None, mode: str, top_k: int) -> StageResult:
    profile = load_profiles(roles)[role]
    kept = select_instructions(load_instructions(instructions), duplicate_share)[:limit]
    how: Mode = "zsp" if mode == "zsp" else "fsp" if mode == "fsp" else "fsd"
    n = sum(i.language == profile.language for i in kept) * RESPONSES
    async with run.gateway() as gateway:
        made = await respond_all(gateway, profile, kept, how, top_k, run.progress.track(f"answers as {role}", n))
    run.write(GENERAL_RESPONSES, made)
    return run.result(responses=len(made), failed=sum(r.status == "failed" for r in made))


@stage("rolellm-general-layout", inputs=("responses", "instructions"))
async def general_files(run: StageRun, responses: list[str], instructions: str, duplicate_share: float,
                        limit: int | None, languages: dict[str, str], seed: int) -> StageResult:
    made = [r for p in responses for r in read_records(p, GENERAL_RESPONSES)]
    files = general_layout(made, languages, seed)
    for rel, rows in files.items():
        write_rows(run.final_folder / rel, rows)
    kept = select_instructions(load_instructions(instructions), duplicate_share)[:limit]
    write_rows(run.final_folder / "raw.jsonl", [{"question": i.question, "generated": [i.answer]} for i in kept],
               keys=("question", "generated"))
    run.write(GENERAL_RESPONSES, made, final=True)
    failed = [Failure(stage="rolellm-general-responses", model=r.role, item_id=f"{r.question[:60]}:{r.index}",
                      kind="answer", error=r.error) for r in made if r.status == "failed"]
    run.write(FAILURES, failed, final=True)
    counts = {o: sum(r.outcome == o for r in made) for o in ("reference", "baseline", "unclean", "failed")}
    return run.result(files={rel: len(rows) for rel, rows in files.items()}, counts=counts,
                      instructions=len(kept))


@flow(name="rpbench-rolellm-general", log_prints=True, task_runner=stage_runner(WORKERS))
@flow_body
def rolebench_general(s: GeneralSettings, stages: Stages) -> dict:
    """RoleBench-general: every role answers the general instructions six times in role; five answers are
    references, the sixth the RoleGPT baseline; split 4:1 by instruction and by held-out roles."""
    files, profiles, _ = checked(check_general, s)
    common = {"instructions": s.instructions, "duplicate_share": s.duplicate_share, "limit": s.limit}
    made = stages.map(general_responses, [{**common, "roles": files, "role": name, "mode": s.mode, "top_k": s.top_k,
                                           "shard": slug(name)}
                                          for name in sorted(profiles)])
    done = stages.run(general_files, **common, responses=[m.path("general_responses") for m in made],
                      languages={n: p.language for n, p in profiles.items()}, seed=s.seed)
    return finish_run(s.out, stages, s, "rolellm-general", general=done.summary,
                      general_settings=s.recorded(s.out))


# -- role profiles and role selection ---------------------------------------------------------------
@stage("rolellm-profile", templates=("rolellm/describe", "rolellm/second_person", "rolellm/catchphrases"),
       roles=(GENERATOR,), inputs=("script",))
async def write_profile(run: StageRun, name: str, script_name: str, language: str, script: str | None,
                        aliases: list[str]) -> StageResult:
    text = read_user_text(script, "a script (text)") if script else ""
    async with run.gateway() as gateway:
        try:
            description, phrases = await describe(gateway, name, script_name, language, excerpt=text[:4000])
        except AuthoringFailed as exc:
            raise InputError(f"the generator gave no usable {exc} (see calls.parquet)") from None
    body: dict[str, object] = {"name": name, "language": language, "script_name": script_name,
                               "description": description, "catchphrases": phrases}
    if aliases:
        body["aliases"] = aliases
    if text:
        body["script"] = text
    path = run.final_folder / f"{slug(name)}.{language}.yaml"
    atomic_write_bytes(path, yaml.safe_dump(body, allow_unicode=True, sort_keys=False, width=110).encode("utf-8"))
    run.tables["role_file"] = str(path)
    return run.result(catchphrases=phrases)


@flow(name="rpbench-rolellm-profile", log_prints=True)
@flow_body
def role_profile(s: ProfileSettings, stages: Stages) -> dict:
    """A role file: the generator describes the role (third person, then second) and names its catchphrases."""
    done = stages.run(write_profile, name=s.name, script_name=s.script_name, language=s.language, script=s.script,
                      aliases=s.aliases)
    return finish_run(s.out, stages, s, "rolellm-profile", profile={
        "role_file": done.path("role_file"), "catchphrases": done.summary["catchphrases"]})


@stage("rolellm-select", templates=("rolellm/select",), roles=(GENERATOR,), inputs=("scripts",))
async def select(run: StageRun, scripts: str, language: str) -> StageResult:
    wanted = read_scripts(scripts)
    async with run.gateway() as gateway:
        made = await select_roles(gateway, wanted, language, run.progress.track("scripts", len(wanted)))
    run.write(SELECTION, made, final=True)
    lines = ["# Role selection", "", "| script | character | speech | reason |", "|---|---|---|---|"]
    lines += [f"| {c.script} | {c.character or '-'} | {c.distinctness or 'failed: ' + (c.error or '')} | "
              f"{(c.reason or '').replace('|', '/')} |" for c in made]
    chosen = [c for c in made if c.distinctness in DISTINCT_ENOUGH]
    lines += ["", f"Worth auditing ({' or '.join(DISTINCT_ENOUGH)}): "
              + (", ".join(f"{c.character} ({c.script})" for c in chosen) or "none")]
    atomic_write_bytes(run.final_folder / "selection.md", ("\n".join(lines) + "\n").encode("utf-8"))
    return run.result(chosen=[c.character for c in chosen], failed=sum(c.status == "failed" for c in made))


@flow(name="rpbench-rolellm-select", log_prints=True)
@flow_body
def role_selection(s: SelectSettings, stages: Stages) -> dict:
    """Role selection: for each script, its main character and how distinct that character's speech is."""
    read_scripts(s.scripts)
    done = stages.run(select, scripts=s.scripts, language=s.language)
    return finish_run(s.out, stages, s, "rolellm-select", selection=done.summary)
