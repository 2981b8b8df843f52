"""The one typed model of a flow's parameters: the flow signature, the CLI options and the deployment
parameters are all made from it, so no default is written twice."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from rpbench.storage.user_files import check_cache_file, check_output_file, check_output_folder

# Paths a run writes to, checked when the settings are made (before any flow starts): a folder that is a
# file, an unwritable place or a cache that is not SQLite is one line, not a traceback halfway through.
OutputFolder = Annotated[str, AfterValidator(check_output_folder)]
OutputFile = Annotated[str, AfterValidator(check_output_file)]
CacheFile = Annotated[str | None, AfterValidator(check_cache_file)]


def cli(flag: str | None = None, *, argument: bool = False, hidden: bool = False,
        deprecated: tuple[str, ...] = ()) -> dict[str, Any]:
    """How a settings field appears on the command line (``json_schema_extra`` of the field); ``deprecated``
    flags still work for a release, with a warning naming the new one."""
    out: dict[str, Any] = {}
    if flag:
        out["cli"] = flag
    if deprecated:
        out["deprecated_flags"] = list(deprecated)
    if argument:
        out["argument"] = True
    if hidden:
        out["hidden"] = True
    return out


class RunSettings(BaseModel):
    """What every flow that calls models takes: which models file and which call cache."""

    model_config = ConfigDict(extra="forbid")

    models_file: str | None = Field(
        default=None, json_schema_extra=cli("--models-file", deprecated=("--models",)),
        description="Models config (TOML or YAML), or a shipped preset by name (furina-paper, vllm), binding "
        "model roles to model strings and sampling settings. Default: every role uses the embedded local "
        "model. Env overrides: RPBENCH_<ROLE>_<FIELD>. (--models is the old name of this option.)")
    cache: CacheFile = Field(
        default=None, description="SQLite call cache; a rerun repeats no call found here. "
        "Default: .rpbench/calls.sqlite")
    keep_failures: bool = Field(
        default=False, description="Replay the failures of an earlier run of the same stages exactly. By default a "
        "rerun heals: calls that got no usable reply are sent again, and a reply that could not be read gets fresh "
        "attempts.")
    max_failure_share: float = Field(
        default=0.1, ge=0, le=1,
        description="The run fails (Failed in Prefect, exit status 3, after writing everything it made) when a "
        "model has more than this share of its items failed, or a stage got no usable reply to any call.")
