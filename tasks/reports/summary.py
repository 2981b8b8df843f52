"""A short Markdown summary of a run, from its manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# What a person opens first, when the run made it.
OPENABLE = (("report", "report.html"), ("samples", "viewer.html"))


def run_summary_markdown(manifest: dict[str, Any], run_dir: str) -> str:
    totals = manifest.get("totals", {})
    folder = Path(run_dir).resolve()
    lines = [f"# rpbench run `{run_dir}`", "", f"Run folder: `{folder}`", ""]
    opened = [f"[{name}]({(folder / file).as_uri()})" for name, file in OPENABLE if (folder / file).is_file()]
    if opened:
        lines += ["Open: " + " | ".join(opened) + f" (`{folder / OPENABLE[0][1]}`)", ""]
    outcome = manifest.get("outcome") or {}
    if outcome.get("status") == "failed":  # what went wrong comes first: the reasons, then failures by stage
        lines += ["**The run failed** (the work is written; the command exited 3):", ""]
        lines += [f"- {reason}" for reason in outcome.get("reasons", [])]
        lines.append("")
    budget = manifest.get("budget") or {}
    if outcome.get("status") == "stopped" and budget:
        lines += [f"**The run stopped at its budget** (the command exited 3): ${budget['spent_usd']:.4f} spent of "
                  f"${budget['budget_usd']:.4f}, ${budget['left_usd']:.4f} left. Every answered call is kept: the "
                  "same command with a larger budget continues, and the same command with --plan says what finishing "
                  "costs (calls already answered are free).", ""]
    elif outcome.get("status") == "stopped":
        lines += [f"**The run stopped before its end** ({'; '.join(outcome.get('reasons', [])) or 'stopped'}). "
                  "Every answered call is kept: the same command continues from there.", ""]
    for line in [*(manifest.get("self_judging") or []), *(manifest.get("embedded_roles") or [])]:
        lines += [f"**Warning:** {line}.", ""]
    failures = outcome.get("failures") or {}
    if failures:
        lines += ["| stage | failures by kind |", "|---|---|"]
        lines += [f"| {stage} | {', '.join(f'{k} {n}' for k, n in kinds.items())} |"
                  for stage, kinds in failures.items()]
        lines.append("")
    lines += ["| table | rows |", "|---|---|"]
    lines += [f"| {name} | {n} |" for name, n in manifest.get("row_counts", {}).items()]
    lines += [
        "",
        f"- models: {', '.join(manifest.get('models', [])) or '-'}",
        f"- calls: {totals.get('calls', 0)} ({totals.get('calls_sent', 0)} sent, "
        f"{totals.get('calls_cached', 0)} from cache)",
        f"- parse errors: {totals.get('parse_errors', 0)}, failed calls: {totals.get('failed', 0)}",
        f"- tokens: {totals.get('prompt_tokens', 0)} prompt, {totals.get('completion_tokens', 0)} completion",
        f"- cost: ${totals.get('cost_usd', 0.0):.4f}{unknown_cost(totals.get('cost_unknown_calls'))}",
        f"- wall time: {manifest.get('timings', {}).get('wall_s', 0):.1f} s",
    ]
    this_run = manifest.get("this_run")
    if this_run:
        lines.append(f"- this run: {this_run['stages']} stages, {this_run['cached']} of them cached; "
                     f"{this_run['calls_sent']} calls sent")
    plan = manifest.get("plan")
    if plan and this_run:
        lines += ["", "| | calls | prompt tokens | reply tokens | USD |", "|---|---|---|---|---|",
                  f"| planned (--plan) | {span_text(plan.get('calls'))} | {span_text(plan.get('prompt_tokens'))} | "
                  f"{span_text(plan.get('reply_tokens'))} | {span_text(plan.get('cost_usd'), 4)} |",
                  f"| spent by this run | {this_run.get('calls_sent', 0)} | "
                  f"{span_text(this_run.get('prompt_tokens'))} | "
                  f"{span_text(this_run.get('reply_tokens'))} | {span_text(this_run.get('cost_usd'), 4)} |"]
    return "\n".join(lines) + "\n"


def unknown_cost(calls: int | None) -> str:
    """Beside a cost: the calls it leaves out (a model with no known price, a request cut off in flight), so a
    run on an unpriced model does not read as free."""
    return f" (and {calls} call{'s' * (calls != 1)} of unknown cost)" if calls else ""


def span_text(value: Any, digits: int = 0, between: str = " to ") -> str:
    """A planned figure (a number or a [low, high] pair) or a spent one, as text."""
    if value is None:
        return "unknown"
    if isinstance(value, list):
        return f"{span_text(value[0], digits)}{between}{span_text(value[1], digits)}"
    return f"{value:,.{digits}f}"


def stopped_report_markdown(manifest: dict[str, Any], run_dir: str) -> str:
    """The report of a run that stopped before its end: what its manifest says (its outcome, what it answered
    and spent), and that the folder's tables are still an earlier finished run's, if any."""
    summary = run_summary_markdown(manifest, run_dir).replace(f"# rpbench run `{run_dir}`",
                                                              f"# rpbench run `{run_dir}`: stopped", 1)
    return summary + ("\nNo score is reported for a run that stopped: its report is written when it finishes. "
                      "Tables in this folder from an earlier finished run, if any, are that run's.\n")
