"""Command-line commands made from settings models: each field is an option (or an argument) with the
field's default and description, so a command can never drift from its flow's parameters."""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar, get_origin

import annotated_types
import typer
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from rich.markup import escape

from rpbench.flows.kit.front.registry import builtin_roles, models_config
from rpbench.flows.kit.front.settings import ModelsFileSettings, RunSettings, flag_of, output_fields, typed_settings
from rpbench.flows.kit.running.environment import launch_temporary_server
from rpbench.flows.kit.scale.run_workers import workers_for_run
from rpbench.flows.kit.scale.runners import chosen_runner
from rpbench.prompts.releases import use_releases
from rpbench.storage.folder_lock import folder_lock
from rpbench.tasks.core.errors import InputError, RunFailed, close_match, first_error
from rpbench.tasks.llm import ModelsConfig
from rpbench.tasks.llm.run_context import current_run, within

S = TypeVar("S", bound=BaseModel)
# Shared options go at the end of --help.
LAST = ("models_file", "cache", "max_cost", "batch", "keep_failures", "max_failure_share")
CONTEXT = "rpbench_context"  # the parameter typer passes a command's context in (no settings field is called so)


def _extra(model: type[BaseModel], name: str) -> dict[str, Any]:
    extra = model.model_fields[name].json_schema_extra
    return extra if isinstance(extra, dict) else {}


def _is_list(model: type[BaseModel], name: str) -> bool:
    return get_origin(model.model_fields[name].annotation) is list


def _deprecated(model: type[BaseModel], names: list[str]) -> dict[str, tuple[str, str]]:
    """Parameter name -> (the field it stands for, the old flag) for every deprecated flag of ``names``."""
    return {f"{name}__old{k}": (name, flag) for name in names
            for k, flag in enumerate(_extra(model, name).get("deprecated_flags") or [])}


def value_range(field: FieldInfo) -> str:
    """The bounds a field's value must keep, as --help says them ("At least 1.", "From 0 to 1."); empty when
    it has none or its description gives them already."""
    rules = {type(rule).__name__: getattr(rule, type(rule).__name__.lower()) for rule in field.metadata
             if isinstance(rule, annotated_types.Ge | annotated_types.Gt | annotated_types.Le)}
    if not rules or "at least" in (field.description or ""):
        return ""
    if "Ge" in rules and "Le" in rules:
        return f"From {rules['Ge']} to {rules['Le']}."
    said = [f"at least {rules['Ge']}" if "Ge" in rules else "", f"above {rules['Gt']}" if "Gt" in rules else "",
            f"at most {rules['Le']}" if "Le" in rules else ""]
    text = " and ".join(x for x in said if x)
    return text[0].upper() + text[1:] + "."


def _parameter(model: type[BaseModel], name: str) -> inspect.Parameter:
    field = model.model_fields[name]
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    default: Any = ... if field.is_required() else field.get_default(call_default_factory=True)
    # --help reads help as Rich markup: a bracketed word in a description ("no [thoughts]") would vanish.
    # The bounds are said too: they are checked when the settings are read, not by the option itself.
    described = escape(" ".join(x for x in (field.description or "", value_range(field)) if x))
    if extra.get("argument"):
        info = typer.Argument(default, help=described, show_default=False)
    elif field.annotation is bool:
        # A switch that is on by default can be turned off.
        flag, on = flag_of(model, name), default is True
        decls = f"{flag}/--no-{flag.removeprefix('--')}" if on else flag
        text = f"{described} On by default: --no-{flag.removeprefix('--')} turns it off." if on else described
        info = typer.Option(default, decls, help=text, show_default=False, hidden=bool(extra.get("hidden")))
    else:
        info = typer.Option(default, flag_of(model, name), help=described, hidden=bool(extra.get("hidden")))
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=field.annotation)


def parse_settings(model: type[S], values: dict[str, Any]) -> S:
    """Build the settings from what the user typed, turning a validation error into one line that names the
    option."""
    try:
        with typed_settings():
            return model.model_validate(values)
    except ValidationError as exc:
        field, msg = first_error(exc)
        name = field.split(".")[0]
        if not exc.errors()[0]["loc"]:  # a rule over several options: the message names them
            raise InputError(msg) from None
        where = flag_of(model, name) if name in model.model_fields else field
        raise InputError(f"{where}: {msg}") from None


def settings_command(model: type[S], run: Callable[[S], None], *, starts_workers: bool = True,
                     plans: bool = True) -> Callable[..., None]:
    """A typer command taking ``model``'s fields as options and calling ``run`` with the settings.

    For a run (``RunSettings``) the gateway's worker processes start as soon as the settings are checked
    (``run_workers``), unless ``starts_workers`` is False (a command that sends no model calls). A run that
    calls models through its stages takes ``--plan``, unless ``plans`` is False (a command whose work is not
    its model calls, such as training, which a plan would carry out).
    """
    # The command's own options first, then those it shares with other commands (inherited), then LAST.
    own = [n for n in model.__annotations__ if n in model.model_fields and n not in LAST]
    names = own + [n for n in model.model_fields if n not in LAST and n not in own] + \
        [n for n in LAST if n in model.model_fields]

    old = _deprecated(model, names)
    also_arguments = [n for n in names if _extra(model, n).get("also_argument")]
    assert len(also_arguments) <= 1, f"{model.__name__}: one field at most may also be the command's argument"

    plans = plans and issubclass(model, RunSettings) and starts_workers  # it calls models: it can plan first

    def command(**values: Any) -> None:
        # Only what the user gave (on the command line or through an option's environment variable) is given to
        # the settings: a default typed out is a choice, and two typed choices that contradict each other are
        # refused rather than one of them moved (a Prefect form, which submits every default, moves defaults).
        ctx = values.pop(CONTEXT, None)
        if ctx is not None:
            values = {k: v for k, v in values.items() if k in ("plan", "plan_json")
                      or getattr(ctx.get_parameter_source(k), "name", "DEFAULT") not in ("DEFAULT", "DEFAULT_MAP")}
        plan, as_json = values.pop("plan", False), values.pop("plan_json", False)
        if as_json and not plan:
            raise InputError("--json: prints the plan; give it with --plan")
        for param, (name, flag) in old.items():
            given = values.pop(param, None)
            if given is None:
                continue
            new = flag_of(model, name)
            if values.get(name) is not None:
                raise InputError(f"{flag}: the old name of {new}; give one of them")
            typer.secho(f"warning: {flag} is deprecated and will go in the next release: use {new}", err=True,
                        fg=typer.colors.YELLOW)
            values[name] = given
        for name in also_arguments:
            given = values.pop(f"{name}__argument", None)
            if given is not None:
                if values.get(name) is not None:
                    raise InputError(f"{flag_of(model, name)}: given twice, as the option and as the argument; "
                                     "give it once")
                values[name] = given
        settings = parse_settings(model, values)
        if isinstance(settings, RunSettings):
            launch_temporary_server()  # it boots while the checks run and Prefect loads (a fresh command only)
            use_releases(settings.releases)  # before the checks: they look for the release files there
            if settings.max_cost is not None and chosen_runner() != "threads":
                raise InputError("--max-cost: the budget is kept by the process that sends the calls; on Dask each "
                                 "worker sends its own, so it could not hold: run with the threads runner")
            if settings.batch and chosen_runner() != "threads":
                raise InputError("--batch: it reaches the calls sent from this process only; on Dask each worker "
                                 "sends its own: write batch = true for the roles in the models file instead")
        the_run: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
        if isinstance(settings, ModelsFileSettings):
            # Read (and check) the models file now: an error in it is one line before any flow starts,
            # not Prefect's report of a failed flow run followed by the same line. The run carries what was
            # read here: its plan, checks, flows, stages and manifest do not read the file again.
            config = models_config(settings.models_file)
            the_run = within(dataclasses.replace(current_run(), models=config, models_file=settings.models_file))
            check_role_sections(config, settings.models_file, _names_given(settings))
            if isinstance(settings, RunSettings) and settings.batch:
                for role, spec in [("default", config.default), *config.roles.items()]:
                    if problem := spec.batch_key_problem():
                        raise InputError(f"--batch: role {role}: {problem}")
        with the_run:
            folder = run_folder(model, settings)
            # A folder that is also the command's input (a rejudge writes into the run it reads) is judged by the
            # mode's own check of that input, which says what it should hold, not as an --out the user never gave.
            if folder and folder not in _arguments(model, settings):
                refuse_another_modes_folder(run, folder, flag_of(model, "out"))
            lock = folder_lock(folder, flag_of(model, "out")) if folder else contextlib.nullcontext()
            if plan and isinstance(settings, RunSettings):
                with lock:  # a plan keeps plan.json in the folder: not while a run works there
                    _print_plan(run, settings, as_json)
                return
            if plans and isinstance(settings, RunSettings) and settings.max_cost is not None:
                with lock:
                    refuse_a_budget_it_cannot_keep(run, settings)
            workers = (workers_for_run(settings.models_file) if isinstance(settings, RunSettings) and starts_workers
                       else contextlib.nullcontext())
            with folder_lock(folder, flag_of(model, "out")) if folder else contextlib.nullcontext(), workers:
                run(settings)

    # An old flag takes what its field takes (repeated, for a field given once per value, as --player is).
    hidden = [inspect.Parameter(param, inspect.Parameter.KEYWORD_ONLY,
                                annotation=list[str] | None if _is_list(model, n) else str | None,
                                default=typer.Option(None, flag, hidden=True)) for param, (n, flag) in old.items()]
    planning = [
        inspect.Parameter("plan", inspect.Parameter.KEYWORD_ONLY, annotation=bool, default=typer.Option(
            False, "--plan", help="Send nothing: print the calls, tokens and dollars this command would spend, by "
            "stage and role (calls in the call cache are free), and keep the plan as plan.json in the output "
            "folder, where the run's summary shows it beside what was spent.")),
        inspect.Parameter("plan_json", inspect.Parameter.KEYWORD_ONLY, annotation=bool, default=typer.Option(
            False, "--json", help="With --plan: the plan as one JSON object (its 'total' holds "
            "calls, prompt_tokens, reply_tokens and cost_usd, each a number or a \\[low, high] pair)."))
    ] if plans else []
    arguments = [inspect.Parameter(f"{name}__argument", inspect.Parameter.KEYWORD_ONLY, annotation=str | None,
                                   default=typer.Argument(None, metavar=name, show_default=False,
                                                          help=f"The same as {flag_of(model, name)}."))
                 for name in also_arguments]
    # Typer hands the command its context: where each value came from (typed, or the default).
    context = [inspect.Parameter(CONTEXT, inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)]
    command.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        arguments + [_parameter(model, n) for n in names] + planning + hidden + context)
    command.__doc__ = run.__doc__
    command.__name__ = run.__name__
    return command


def _print_plan(run: Callable[[Any], None], settings: RunSettings, as_json: bool) -> None:
    import json

    from rpbench.flows.kit.running.plan import budget_verdict, keep_plan, make_plan, plan_text

    plan = make_plan(run, settings)
    if settings.max_cost is not None:
        plan["budget"] = budget_verdict(plan, settings.max_cost)
    kept = keep_plan(plan, settings)
    if as_json:
        typer.echo(json.dumps(plan, ensure_ascii=False))
        return
    typer.echo(plan_text(plan))
    for path in kept:
        typer.echo(f"plan kept in {path}")


def refuse_a_budget_it_cannot_keep(run: Callable[[Any], None], settings: RunSettings) -> None:
    """Under --max-cost, the command is planned first (nothing is sent): a model whose price is unknown, or a budget
    below the least the run could cost, is one line before anything starts, not a stop minutes into the run. The
    plan stops as soon as the least its calls can cost passes the budget, so a refusal takes seconds even for a
    suite; only the pass whose dialogues end first is made (the least a run can cost is that pass's)."""
    from rpbench.flows.kit.running.plan import budget_verdict, make_plan
    from rpbench.tasks.llm.planning import CallPlan

    assert settings.max_cost is not None
    counted = CallPlan(floor_limit=settings.max_cost)
    plan = make_plan(run, settings, shortest_only=True, calls=counted)
    passed = counted.passed
    if counted.too_costly is not None:
        from rpbench.tasks.llm.config import role_shown

        role, model, most, max_tokens = counted.too_costly
        raise InputError(f"--max-cost: one request of role '{role_shown(role)}' ({model}) can cost ${most:.4f} (its "
                         f"prompt and up to {max_tokens} tokens of reply), ${most - settings.max_cost:.4f} more than "
                         f"the whole budget ${settings.max_cost:.4f}: the run could never send it; give a larger "
                         "budget, or a smaller max_tokens for that role")
    if passed is not None:
        raise InputError(f"--max-cost: the budget ${settings.max_cost:.4f} is below the least this run could cost "
                         f"(its prompts, with one token of reply a call, came to ${passed:.4f} before the plan was "
                         "done; calls in the call cache are free): it would stop before finishing; give a larger "
                         "one (--plan says what the whole run costs)")
    verdict = budget_verdict(plan, settings.max_cost)
    if verdict["status"] in ("unpriced", "below_floor"):
        raise InputError(f"--max-cost: {verdict['text']}")


def _arguments(model: type[BaseModel], settings: BaseModel) -> set[str]:
    """The values of the command's arguments (the input it works on)."""
    return {str(getattr(settings, name)) for name in model.model_fields if _extra(model, name).get("argument")}


def flow_of_run(folder: Path) -> str | None:
    """The flow a run folder's manifest says made it; None without a manifest, or with one that cannot say. A
    manifest that is not one (damaged, or written by hand) is an input error naming it."""
    from rpbench.storage.runs import manifest_of

    made_by = (manifest_of(folder) or {}).get("flow")
    return made_by if isinstance(made_by, str) else None


def refuse_another_modes_folder(run: Callable[[Any], None], folder: str, flag: str) -> None:
    """An output folder that holds another benchmark's finished run, or another flow's of the same benchmark
    (a FURINA benchmark given as an evaluation's --out), is refused: its manifest says which flow made it, and
    this run's tables and manifest beside (or over) that one's would mix two runs in one folder."""
    from rpbench.flows.kit.front.registry import mode_of_flow, mode_of_module

    made_by = flow_of_run(Path(folder))
    if made_by is None:
        return  # no run there yet, or one whose manifest does not say what made it
    mine, theirs = getattr(run, "rpbench_mode", None) or mode_of_module(run.__module__), mode_of_flow(made_by)
    if mine is not None and theirs != mine:
        raise InputError(f"{flag} {folder}: the folder holds a finished {theirs or made_by} run ({made_by}); give "
                         f"this {mine} run a folder of its own")
    flows = getattr(run, "rpbench_flows", None)
    if flows and made_by not in flows:
        raise InputError(f"{flag} {folder}: the folder holds a finished {made_by} run of {mine}; give this "
                         f"{'/'.join(sorted(flows))} run a folder of its own (its manifest would replace that one's)")


def _names_given(settings: BaseModel) -> set[str]:
    """Every text value of the settings (a role named with --model or --judge is among them)."""
    out: set[str] = set()
    for value in settings.model_dump().values():
        for v in value if isinstance(value, list | tuple) else [value]:
            if isinstance(v, str):
                out.add(v)
    return out


def check_role_sections(config: ModelsConfig, models_file: str | None,
                        given: frozenset[str] | set[str] = frozenset()) -> None:
    """A ``[roles.X]`` section a letter or two off a role some mode calls ("judgee" for "judge"), and named by
    no option of the command, is a typo: left alone, the mode would quietly use [default] for the role meant.
    Other names are the user's own roles (models under test such as ``[roles.warm]``, a second judge
    ``[roles.judge2]`` given with --judge), which stay allowed."""
    known = builtin_roles()
    for name in config.roles:
        if name in known or name in given or re.fullmatch(r".+?[-_]?\d+", name):
            continue
        if close_match(name, given, cutoff=0.8):
            continue  # the user's own role, and the name given for it the typo: resolving that name says so
        close = close_match(name, known, cutoff=0.8)
        if close:
            variables = config.environment_only(name)
            if variables:  # bound by a variable, not by the file: name the variable, and the one meant
                meant = variables[0].replace(name.upper().replace("-", "_"), close.upper().replace("-", "_"), 1)
                raise InputError(f"environment variable {variables[0]}: role '{name}' is no role of any mode: did "
                                 f"you mean role '{close}' ({meant})?")
            where = models_file or "the models file"
            raise InputError(f"{where}: [roles.{name}] names no role of any mode: did you mean [roles.{close}]? "
                             "(a role of your own, for --model, needs a name further from the modes' roles: "
                             "rpbench models lists them)")


def run_folder(model: type[BaseModel], settings: BaseModel) -> str | None:
    """The folder the command writes its run into (an ``out`` field checked as a folder), if it has one."""
    if "out" not in output_fields(model, folders_only=True):
        return None
    out = settings.model_dump()["out"]
    return str(out) if out else None


def stages_line(manifest: dict[str, Any]) -> str:
    """What a finished run did itself: stages run and taken from the cache, calls sent."""
    this = manifest.get("this_run") or {}
    plan = manifest.get("plan")
    planned = ""
    if plan:
        from rpbench.flows.kit.running.plan import fmt_range

        planned = f" (planned: {fmt_range(plan.get('calls'))}, USD {fmt_range(plan.get('cost_usd'), 4)})"
    from rpbench.tasks.reports.summary import unknown_cost

    return (f"stages: {this.get('stages', 0)} ({this.get('cached', 0)} cached); "
            f"calls sent by this run: {this.get('calls_sent', 0)}, USD {this.get('cost_usd') or 0:.4f}"
            f"{unknown_cost(this.get('cost_unknown_calls'))}{planned}")


def run_evaluation(settings: BaseModel, check: str | None, flow: str, section: str,
                   lines: Callable[[dict[str, Any]], Iterable[str]] = lambda _r: ()) -> dict[str, Any]:
    """What every command that runs a flow does: check the input (Prefect-free, so a typo is one line at once),
    run the flow, print the mode's own lines about its section of the manifest (``lines``), what the run did, and
    where its report is (if it made one). ``check`` and ``flow`` are ``module:attribute`` references, imported
    only here, in that order. Returns the manifest's section."""
    from rpbench.flows.kit.front.checking import checked
    from rpbench.flows.kit.front.registry import load_ref

    if check is not None:
        checked(load_ref(check), settings)
    from rpbench.flows.kit.running.run import run_flow

    try:
        manifest = run_flow(load_ref(flow), settings=settings)
    except RunFailed as failed:
        # Failed by the failure rule, after writing everything: what it did measure (the other models'
        # scores, the report) is printed first, and why it failed after it.
        from rpbench.storage.runs import RunDir

        written = RunDir(Path(failed.out)).read_manifest()
        echo_run(written, section, lines if section in written else lambda _r: ())
        raise
    return echo_run(manifest, section, lines)


def echo_run(manifest: dict[str, Any], section: str,
             lines: Callable[[dict[str, Any]], Iterable[str]]) -> dict[str, Any]:
    """Print the mode's lines about its section of ``manifest``, what the run did, and where its report is;
    returns the section."""
    found = manifest.get(section, {})
    for line in lines(found):
        typer.echo(line)
    if manifest:
        typer.echo(stages_line(manifest))
    if found.get("report"):  # an evaluation's; a flow that makes data has none
        typer.echo(f"report: {found['report']}")
    return dict(found)


def leaderboard_lines(section: dict[str, Any], headline: str) -> Iterator[str]:
    """A mode's leaderboard as a command prints it (the headline with its interval, items, failures), then
    each judge's agreement with people where the run had human scores."""
    from rpbench.tasks.reports.render import fmt

    for row in section.get("leaderboard", []):
        yield (f"{row['model']}: {headline} {fmt(row.get(headline), 2)} [{fmt(row.get('ci_low'), 2)}, "
               f"{fmt(row.get('ci_high'), 2)}]  n={row['n']} failed={row['failed']}")
    for a in section.get("agreement", []):
        yield (f"{a['judge']} vs people, {a['group']} ({a['language']}): Pearson {fmt(a['pearson'], 3)} "
               f"Spearman {fmt(a['spearman'], 3)} Kendall {fmt(a['kendall'], 3)} exact {fmt(a['exact'], 3)} "
               f"n={a['n']}")

