"""The parameters of the suite flow (flow signature, CLI options and deployment parameters in one place)."""

from __future__ import annotations

from pydantic import Field

from rpbench.flows.kit.front.settings import MIN_RESAMPLES, MaybeInputPath, OutputFolder, RunSettings, cli
from rpbench.samples import sample_path

DEFAULT_SUITE = str(sample_path("suites", "default.toml"))


class SuiteSettings(RunSettings):
    """Every benchmark of a suite file for the same models: each mode's own run, then one profile."""

    models: list[str] = Field(min_length=1, json_schema_extra=cli("--model"),
                              description="Model under test: a litellm model string, or a role name. Repeat.")
    suite: MaybeInputPath = Field(
        default=None, json_schema_extra=cli(also_argument=True),
        description="Suite file (TOML): a table per benchmark mode with its data and settings, and a weights table "
                    "if a weighted percentile is wanted. Default: the shipped samples of every mode, small enough "
                    "for the embedded model (rpbench suite show prints it).")
    only: list[str] = Field(default_factory=list, json_schema_extra=cli("--mode"),
                            description="Only these modes of the suite file. Repeat. Default: all of them.")
    out: OutputFolder = Field(default="runs/suite", description="Folder for the profile; each mode's run goes in "
                                                                "a folder of its own below it (out/<mode>).")
    limit: int | None = Field(default=None, ge=1, description="Each benchmark's own --limit (a trial run), over "
                              "any limit the suite file sets.")
    resamples: int = Field(default=1000, ge=MIN_RESAMPLES, description="Bootstrap resamples of the agreement "
                           f"intervals (at least {MIN_RESAMPLES}).")
    seed: int = Field(default=0, ge=0, description="Bootstrap seed.")

    def suite_file(self) -> str:
        return self.suite or DEFAULT_SUITE
