"""Bad input at the command line: one line naming what is wrong, exit status 2, no traceback."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.helpers import CLI, TEST_KEY_ENV, Ran, rpbench

ROOT = Path(__file__).resolve().parent.parent
STARTERS = ROOT / "samples" / "characters" / "starter.en.yaml"
# Every role the shipped models file names, and FURINA's own roles (a FURINA command's names to refer to).
_DEFAULT_ROLES = {*tomllib.loads((ROOT / "tasks" / "llm" / "default_models.toml").read_text())["roles"],
                  "base", "checker", "director", "extractor", "judge", "scene", "source", "synthesizer", "test"}


def _run(*args: str) -> Ran:
    return rpbench(*args)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["eval", "--bench", "/nonexistent", "--model", "local-greedy", "--out", "OUT"], "/nonexistent: no items.parquet"),
        (["build", "--characters", str(STARTERS), "--pool", "/nonexistent", "--out", "OUT"], "/nonexistent: no scenes.parquet"),
        (["build", "--characters", str(STARTERS), "--pool", "/tmp", "--out", "OUT", "--only", "Nobody"],
         "no character named Nobody"),
        (["models", "--models-file", "/nonexistent.toml"], "/nonexistent.toml: models config not found"),
        (["characters", "synthesize", "--out", "OUT", "--lang", "fr"], "unknown language 'fr'"),
        # A world of one character would make a scene no pool takes (a scene has two characters or more).
        (["characters", "synthesize", "--out", "OUT", "--n", "1"], "--n: Input should be greater than or equal to 2"),
        (["characters", "synthesize", "--out", "OUT", "--pool", "/nonexistent"],
         "/nonexistent: no scenes.parquet (run `rpbench furina pool build` into it first)"),
        (["export", "/tmp", "--format", "csv"], "unknown format 'csv'"),
        (["dmt", "run", "--seeds", str(ROOT / "samples" / "dmt" / "seeds.yaml"), "--answers", "/dev/null",
          "--out", "OUT"], "--answers /dev/null: /dev/null: not a regular file of answers"),
        # An option that only shapes how a model is asked, given with answers alone, would change nothing.
        (["roleinteract", "run", "--data", str(ROOT / "samples" / "roleinteract" / "example.json"), "--answers",
          "a=a.jsonl", "--reask", "2", "--out", "OUT"],
         "--reask: shapes how a model under test is asked, and no --model is given (answers are scored as they stand)"),
        (["coser", "run", "--data", str(ROOT / "samples" / "coser" / "example.json"), "--answers", "s.json",
          "--without-thoughts", "--out", "OUT"], "--without-thoughts: shapes how a model under test is asked"),
        # A typo in a model name is an error listing the names there are, never the default model.
        (["eval", "--bench", "/nonexistent", "--model", "local-greedyy", "--out", "OUT"],
         f"--model: unknown model 'local-greedyy' (did you mean 'local-greedy'? known: {', '.join(sorted(_DEFAULT_ROLES))})"),
        (["eval", "--bench", "/nonexistent", "--model", "local/smollm2-13m", "--out", "OUT"],
         "--model: unknown local model 'smollm2-13m' (did you mean 'smollm2-135m'? known: smollm2-135m)"),
        (["build", "--characters", str(STARTERS), "--pool", str(ROOT / "tests"), "--out", "OUT", "--source", "sorce"],
         "no scenes.parquet"),
        (["characters", "synthesize", "--out", "OUT", "--seed-role", "synthesiser"],
         "--seed-role: unknown model 'synthesiser'"),
        (["build", "--characters", str(STARTERS), "--pool", "/tmp", "--out", "OUT", "--keep-grade", "great"],
         "--keep-grade: unknown grade great"),
        (["eval", "--bench", "/tmp", "--out", "OUT"],
         "error: give a model to ask (--model) or replies to score (--answers)"),
        (["train", "--data", "/nonexistent", "--out", "OUT"], "/nonexistent: no such file or folder"),
        (["train", "--data", str(ROOT / "samples" / "rolellm" / "rolebench"), "--part", "test", "--preset", "huge",
          "--out", "OUT"], "--preset: unknown preset 'huge' (known: rolellama, small)"),
        (["train", "--data", str(ROOT / "samples" / "rolellm" / "rolebench"), "--part", "test", "--preset", "smal",
          "--out", "OUT"], "--preset: unknown preset 'smal' (did you mean 'small'? known: rolellama, small)"),
        (["train", "--data", str(ROOT / "samples" / "rolellm" / "rolebench"), "--part", "test", "--base",
          "openai/gpt-4o", "--out", "OUT"], "--base: 'openai/gpt-4o' is not a local model"),
        (["train", "--data", str(ROOT / "samples" / "rolellm" / "rolebench"), "--objective", "dpo", "--out", "OUT"],
         "preference pairs come from benchmark folders"),
        # A mix the data cannot keep is one line before the flow (it was a traceback in the training stage).
        (["train", "--data", str(ROOT / "samples" / "rolellm" / "rolebench"), "--part", "test", "--mix", "general=0",
          "--mix", "role_specific=0", "--out", "OUT"], "--mix: keeps no sample (the data holds only general, "
         "role_specific, weighted 0)"),
        (["train", "--data", str(ROOT / "samples" / "rolellm" / "rolebench"), "--part", "test", "--mix", "dialogue=1",
          "--out", "OUT"], "--mix: no dialogue samples in the data to mix"),
        (["train", "--data", "/tmp", "--objective", "dpo", "--mix", "general=1", "--out", "OUT"],
         "--mix: mixes the kinds of sft samples"),
        # Checked against the base's modules built on the meta device, before its weights load.
        (["train", "--data", str(ROOT / "samples" / "rolellm" / "rolebench"), "--part", "test", "--target", "q_proj",
          "--target", "nosuch_proj", "--out", "OUT"],
         "--target nosuch_proj: no module of local/smollm2-135m is called that (its modules: act_fn, down_proj,"),
    ],
)
def test_bad_input_gives_one_line_and_exit_2(args, message, tmp_path):
    proc = _run(*[str(tmp_path / "out") if a == "OUT" else a for a in args])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip(" ╭╰─│")]
    assert message in proc.stderr and ("error: " in lines[0] or "Missing option" in proc.stderr)
    if "Missing option" not in message:
        assert len(lines) == 1 and lines[0].startswith("error: ")


def test_every_command_has_help():
    for args in (["--help"], ["pool", "build", "--help"], ["eval", "--help"], ["build", "--help"], ["modes"]):
        proc = _run(*args)
        assert proc.returncode == 0 and ("Usage" in proc.stdout or "furina" in proc.stdout), args
    # Options and their defaults come from the flows' settings models.
    build = _run("build", "--help").stdout
    assert "--threshold" in build and "[default: 10]" in build and "--wave-size" in build
    # The bounds the settings check are said in --help too (they were only found by breaking them).
    synthesize = " ".join(rpbench("furina", "characters", "synthesize", "--help").stdout.replace("│", " ").split())
    assert "(they share a world and a scene, and a scene takes two or more). From 2 to 6." in synthesize
    assert "Independent worlds to synthesize. At least 1." in synthesize
    coser = " ".join(rpbench("coser", "run", "--help").stdout.replace("│", " ").split())
    assert "(the critic is told so). From 0 to 19." in coser


def test_eval_from_the_command_line_is_clean_and_a_rerun_sends_nothing(loopback, tmp_path):
    """Stages run on several event loops at once: no library may print a traceback doing so."""
    from tests.test_flows import _bench, _respond

    loopback.responder = _respond
    models = tmp_path / "models.toml"
    models.write_text(f'[default]\nmodel = "openai/loopback"\napi_base = "{loopback.base_url}"\nschema_rules = "vllm"\n'
                      'api_key_env = "RPBENCH_CLI_KEY"\nstructured = "json_schema"\ntimeout = 5\n'
                      '[roles.warm]\ntemperature = 0.7\n')
    args = ["eval", "--bench", str(_bench(tmp_path)), "--model", "openai/under-test", "--model", "warm",
            "--out", str(tmp_path / "eval"), "--models-file", str(models), "--cache", str(tmp_path / "calls.sqlite")]
    env = {**os.environ, "RPBENCH_CLI_KEY": "sk-cli", "PREFECT_HOME": str(tmp_path / "prefect")}
    for expected in ("stages: 10 (0 cached)", "stages: 10 (10 cached); calls sent by this run: 0"):
        proc = subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
        output = proc.stdout + proc.stderr
        assert proc.returncode == 0 and "Traceback" not in output and "ERROR" not in output, output[-3000:]
        assert expected in proc.stdout and "report: " in proc.stdout


def test_help_and_modes_import_no_litellm_prefect_torch_or_scipy():
    """Start-up stays light: the command line lists everything from the modes' specs (checked in a fresh
    interpreter, as a user's first command runs)."""
    import json

    heavy = ["litellm", "prefect", "torch", "transformers", "rouge_score", "scipy", "pyarrow"]
    for args in (["--help"], ["roleinteract", "--help"], ["eval", "--help"]):
        script = ("import contextlib, io, json, sys\nfrom rpbench.flows.cli.main import run_cli\n"
                  f"with contextlib.redirect_stdout(io.StringIO()): code = run_cli({args!r})\n"
                  f"print(json.dumps([code, [m for m in {heavy!r} if m in sys.modules]]))")
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
        code, loaded = json.loads(proc.stdout.strip().splitlines()[-1])
        assert code == 0 and loaded == [], (args, loaded, proc.stderr[-2000:])


def test_the_entry_point_itself_imports_nothing_heavy_for_help_or_an_input_error(tmp_path):
    """The whole process as a user runs it, exit included: Prefect is shut down only if a command used it."""
    for args in (["--help"], ["roleinteract", "run", "--data", "/nonexistent", "--model", "x", "--out",
                              str(tmp_path / "o")]):
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "rpbench.flows.cli.main", *args],
                              capture_output=True, text=True, cwd=ROOT, timeout=120)
        imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if "import time:" in line}
        assert proc.returncode in (0, 2) and imported, proc.stderr[-2000:]
        assert not {m for m in imported if m.split(".")[0] in ("prefect", "litellm", "torch")}, args


def test_an_input_error_comes_before_prefect_or_the_gateway_is_imported(tmp_path):
    import json

    script = ("import contextlib, io, json, sys\nfrom rpbench.flows.cli.main import run_cli\n"
              "with contextlib.redirect_stderr(io.StringIO()) as err:\n"
              f"    code = run_cli(['roleinteract', 'run', '--data', '/nonexistent', '--model', 'x', '--out', "
              f"{str(tmp_path / 'o')!r}])\n"
              "print(json.dumps([code, err.getvalue(), [m for m in ('prefect', 'litellm') if m in sys.modules]]))")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
    code, said, loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    assert code == 2 and said.startswith("error: /nonexistent") and loaded == []


def test_models_file_is_the_option_and_models_still_works_with_a_warning(tmp_path):
    missing = str(tmp_path / "none.toml")
    new = rpbench("models", "--models-file", missing)
    old = rpbench("models", "--models", missing)
    assert new.returncode == old.returncode == 2
    assert "models config not found" in new.stderr and "deprecated" not in new.stderr
    assert "--models is deprecated" in old.stderr and "use --models-file" in old.stderr
    assert "models config not found" in old.stderr
    both = rpbench("models", "--models", missing, "--models-file", missing)
    assert both.returncode == 2 and "give one of them" in both.stderr


def test_each_modes_models_file_help_names_that_modes_roles():
    from rpbench.flows.kit.front.registry import modes

    for args, mode in ((["roleinteract", "run", "--help"], "roleinteract"), (["pingpong", "run", "--help"],
                                                                              "pingpong"), (["eval", "--help"], "furina")):
        shown = " ".join(rpbench(*args).stdout.replace("│", " ").split())
        roles = list(modes()[mode].roles)
        assert f"Roles of {mode}: {', '.join(roles)}" in shown, (args, shown[-600:])
    assert "extractor" not in " ".join(rpbench("roleinteract", "run", "--help").stdout.split())


def test_a_modes_commands_listed_by_its_spec_are_the_ones_it_adds():
    """The one-line help `rpbench --help` shows before a mode loads is the loaded command's own first line."""
    from rpbench.flows.cli.main import make_cli
    from rpbench.flows.kit.front.registry import modes

    cli = make_cli()
    for mode in modes().values():
        names = list(mode.top_commands) or [mode.name]
        cli._load(mode)
        for name in names:
            loaded = cli.commands[name]
            assert not type(loaded).__name__.startswith("_Placeholder"), name
            if mode.top_commands:
                first = " ".join((loaded.help or "").split())
                assert first.startswith(" ".join(mode.top_commands[name].split())), (name, first)


def test_a_command_that_ends_with_an_exit_code_returns_it(monkeypatch):
    """The command's own exit status is what the process returns (click hands it back, not raises it)."""
    import typer

    from rpbench.flows.cli import main

    def fake_show_modes() -> None:
        raise typer.Exit(3)

    monkeypatch.setattr(main, "show_modes", fake_show_modes)
    assert rpbench("modes").returncode == 3


def test_a_full_disk_is_one_line_naming_the_file_not_a_traceback(monkeypatch):
    import errno

    from rpbench.flows.cli import main

    def full_disk() -> None:
        raise OSError(errno.ENOSPC, "No space left on device", "runs/demo/items.parquet")

    monkeypatch.setattr(main, "show_modes", full_disk)
    ran = rpbench("modes")
    assert ran.returncode == 1
    assert "No space left on device: runs/demo/items.parquet" in ran.stderr
    assert "finished work is kept" in ran.stderr and "Traceback" not in ran.stderr


def test_an_os_error_of_our_own_making_keeps_its_traceback(monkeypatch):
    import errno

    import pytest

    from rpbench.flows.cli import main

    def bug() -> None:
        raise OSError(errno.EBADF, "Bad file descriptor")

    monkeypatch.setattr(main, "show_modes", bug)
    with pytest.raises(OSError):
        rpbench("modes")


def test_models_check_asks_each_role_once_and_says_which_answer(loopback, tmp_path, monkeypatch):
    monkeypatch.setenv(TEST_KEY_ENV, "sk-test-check-0123456789")
    models = tmp_path / "models.toml"
    models.write_text(f'[default]\nmodel = "openai/fine"\napi_base = "{loopback.base_url}"\nschema_rules = "vllm"\n'
                      f'api_key_env = "{TEST_KEY_ENV}"\n[roles.judge]\nmodel = "openai/refused"\n'
                      '[roles.director]\nmodel = "openai/down"\n')
    loopback.model_faults.update({"refused": "401", "down": "500"})
    ran = rpbench("models", "check", "--models-file", str(models))
    assert ran.returncode == 3
    assert "default: openai/fine answers" in ran.stdout and "1 of 3 roles answer" in ran.stdout
    # a role that does not answer is named with the server it was asked at
    assert f"judge: openai/refused at {loopback.base_url} does not answer: AuthenticationError" in ran.stderr
    assert f"(key read from {TEST_KEY_ENV})" in ran.stderr and "sk-test-check" not in ran.stderr
    assert f"director: openai/down at {loopback.base_url} does not answer: InternalServerError" in ran.stderr
    assert len(loopback.requests) == 3  # one each, no retries, no cache
    assert all(r["max_tokens"] == 8 for r in loopback.requests)
    loopback.model_faults.clear()
    assert rpbench("models", "check", "--models-file", str(models)).returncode == 0
    assert rpbench("models", "chek").returncode == 2


def test_a_misspelled_role_section_is_refused_with_a_suggestion(tmp_path):
    models = tmp_path / "models.toml"
    data = ["roleinteract", "run", "--data", str(tmp_path / "none.json")]  # an error after the models file's
    models.write_text('[roles.judgee]\ntemperature = 0.5\n[roles.warm]\ntemperature = 0.9\n')
    ran = rpbench(*data, "--model", "warm", "--out", str(tmp_path / "o"), "--models-file", str(models))
    assert ran.returncode == 2
    assert ran.stderr.strip() == (f"error: {models}: [roles.judgee] names no role of any mode: did you mean "
                                  "[roles.judge]? (a role of your own, for --model, needs a name further from the "
                                  "modes' roles: rpbench models lists them)")
    # The user's own roles stay allowed: one named on the command line, a numbered second judge, a far name.
    models.write_text('[roles.judge2]\ntemperature = 0.5\n[roles.warm]\ntemperature = 0.9\n'
                      '[roles.scenes]\ntemperature = 0.1\n')
    for extra in (["--model", "scenes"], ["--model", "warm", "--model", "scenes"]):
        ran = rpbench(*data, *extra, "--out", str(tmp_path / "o"), "--models-file", str(models))
        assert ran.returncode == 2 and "none.json: no such file" in ran.stderr, ran.stderr



def test_an_environment_override_that_cannot_apply_names_the_variable_not_the_file(tmp_path, monkeypatch):
    """A misspelt override (of [default]'s or a role's setting) would be ignored without a word; a bad value or
    a misspelt role set by a variable is the variable's error, not the models file's. A key's variable named
    after a role (RPBENCH_JUDGE_API_KEY) is no setting and stays allowed."""
    models = tmp_path / "models.toml"
    models.write_text('[roles.warm]\ntemperature = 0.9\n')
    data = ["roleinteract", "run", "--data", str(tmp_path / "none.json"), "--model", "warm", "--out",
            str(tmp_path / "o"), "--models-file", str(models)]
    cases = {"RPBENCH_DEFAULT_TEMPERATUR": ("0.3", "error: environment variable RPBENCH_DEFAULT_TEMPERATUR: did you "
                                                   "mean RPBENCH_DEFAULT_TEMPERATURE? not a setting of a role"),
             "RPBENCH_JUDGE_TEMPERATUR": ("0.3", "error: environment variable RPBENCH_JUDGE_TEMPERATUR: did you "
                                                 "mean RPBENCH_JUDGE_TEMPERATURE? 'temperatur' is not a setting"),
             "RPBENCH_DMT_JUDGE_MAXTOKENS": ("9", "error: environment variable RPBENCH_DMT_JUDGE_MAXTOKENS: did you "
                                                 "mean RPBENCH_DMT_JUDGE_MAX_TOKENS?"),
             "RPBENCH_DEFAULT_EXTRA": ("{}", "error: environment variable RPBENCH_DEFAULT_EXTRA: extra is set in the "
                                                 "models file only"),
             "RPBENCH_JUDGE_BATCH": ("yes", "error: environment variable RPBENCH_JUDGE_BATCH: field "
                                            "'roles.judge.batch': Input should be a valid boolean"),
             "RPBENCH_JUDGEE_MODEL": ("openai/x", "error: environment variable RPBENCH_JUDGEE_MODEL: role 'judgee' is "
                                                  "no role of any mode: did you mean role 'judge' (RPBENCH_JUDGE_MODEL)?")}
    for variable, (value, message) in cases.items():
        monkeypatch.setenv(variable, value)
        ran = rpbench(*data)
        monkeypatch.delenv(variable)
        assert ran.returncode == 2 and ran.stderr.strip().startswith(message), (variable, ran.stderr)
    monkeypatch.setenv("RPBENCH_JUDGE_API_KEY", "sk-not-a-setting")
    ran = rpbench(*data)  # with none of them set, the run gets as far as the data
    assert ran.returncode == 2 and "none.json: no such file" in ran.stderr, ran.stderr


def test_a_dask_address_is_checked_before_any_flow(tmp_path, monkeypatch):
    import socket

    # The options set these for the process: put them back after the test, whatever happens.
    monkeypatch.setenv("RPBENCH_RUNNER", "")
    monkeypatch.setenv("RPBENCH_DASK_ADDRESS", "")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once the socket is closed
    data = ["roleinteract", "run", "--data", str(ROOT / "samples" / "roleinteract" / "example.json"), "--model",
            "roleinteract-player", "--out", str(tmp_path / "o")]
    for address, message in ((f"tcp://127.0.0.1:{port}", "no scheduler answers there"),
                             ("not an address", "expected tcp://HOST:PORT")):
        ran = rpbench("--runner", "dask", "--dask-address", address, *data)
        assert ran.returncode == 2 and ran.stderr.strip().splitlines() == [ran.stderr.strip()], ran.stderr
        assert ran.stderr.startswith(f"error: --dask-address {address}: {message}"), ran.stderr


def test_a_switch_takes_no_value_and_one_on_by_default_can_be_turned_off(monkeypatch):
    import typer
    from pydantic import BaseModel, Field
    from typer.testing import CliRunner

    from rpbench.flows.kit.commands.settings_commands import settings_command

    class Switches(BaseModel):
        aware: bool = Field(default=True, description="Move chunk endings.")
        strict: bool = Field(default=False, description="Be strict.")

    seen: list[Switches] = []

    def run(settings: Switches) -> None:
        """Run."""
        seen.append(settings)

    app = typer.Typer()
    app.command()(settings_command(Switches, run, starts_workers=False))
    runner = CliRunner()
    assert runner.invoke(app, ["--no-aware", "--strict"]).exit_code == 0
    assert runner.invoke(app, []).exit_code == 0
    assert [(s.aware, s.strict) for s in seen] == [(False, True), (True, False)]
    shown = runner.invoke(app, ["--help"], env={"COLUMNS": "200"}).output
    assert "--no-aware" in shown and "turns it off" in shown
    # A switch shows no value to give (a user reading "<bool>" types "--judge-released true" and is refused),
    # whether a settings field or a command's own (--plan, --new).
    monkeypatch.setenv("COLUMNS", "200")
    for args, switches in ((["furina", "pool", "build"], ["--plot-aware", "--no-plot-aware"]),
                           (["characterbench", "run"], ["--judge-released", "--plan"]),
                           (["furina", "pool", "add"], ["--new"])):
        shown = rpbench(*args, "--help").stdout
        lines = [ln for ln in shown.splitlines() if any(f"{flag} " in ln for flag in switches)]
        assert lines and not any("<bool>" in ln for ln in lines), (args, lines)
    # Nor does --help (made apart from a command's params), at the top or below; a repeated option shows the
    # one value each use takes.
    for args in ([], ["suite", "run"], ["coser", "run"], ["trigger"]):
        shown = rpbench(*args, "--help").stdout
        assert "--help" in shown and "<bool>" not in shown and "<list[" not in shown, (args, shown)
    assert re.search(r"--model +<str>", rpbench("suite", "run", "--help").stdout)


def test_every_command_s_help_is_reflowed_for_help_to_wrap():
    """typer keeps a docstring's line breaks, which cut `rpbench --help`'s listing mid-sentence: every
    command's help reaches it as paragraphs of one line each."""
    from rpbench.flows.cli.reference import all_commands

    broken = [words for words, cmd in all_commands()
              if any("\n" in paragraph for paragraph in (cmd.help or "").split("\n\n"))]
    assert not broken, broken


def test_a_mistyped_choice_is_refused_in_plain_words_with_the_likely_one():
    """typer reads a choice through pydantic, whose 'Value error, ' leaked into the message."""
    ran = rpbench("characterbench", "run", "--data", "x.json", "--judge-output", "numbr")
    said = ran.stdout + ran.stderr
    assert ran.returncode == 2 and "Value error" not in said, said
    assert "'numbr' is not one of 'json', 'number' (did you mean 'number'?)" in said, said
    far = rpbench("rolellm", "eval", "--data", "x", "--mode", "xyz")
    assert far.returncode == 2 and "'xyz' is not one of 'opencompass', 'zsp', 'fsp', 'fsd'." in far.stdout + far.stderr


def test_trigger_refuses_a_timeout_that_is_no_number_of_seconds(monkeypatch):
    """Checked before any server is asked: a negative, NaN or infinite --timeout is an input error."""
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")  # nothing answers there: never reached
    for value, message in (("-5", "Invalid value for '--timeout'"), ("nan", "Invalid value for '--timeout'"),
                           ("inf", "error: --timeout: inf is not a number of seconds")):
        ran = rpbench("trigger", "rpbench-evaluate/nightly", "--timeout", value)
        assert ran.returncode == 2 and message in ran.stderr and "no Prefect server" not in ran.stderr, ran.stderr


def test_an_option_given_alone_moves_the_defaults_it_would_contradict(tmp_path):
    """A default yields to an option given alone (--max-tokens 2048 brings the default target down to it;
    --max-rounds 4 brings the default --min-rounds 6 down): only options given can contradict one another, on
    the command line or in a form that fills in every default."""
    from rpbench.flows.modes.furina.settings import BuildSettings, ChunkSettings

    book = ROOT / "samples" / "books" / "the_keepers_ledger.en.txt"
    ran = _run("pool", "build", str(book), "--out", str(tmp_path / "p"), "--plan", "--max-tokens", "2048")
    assert ran.returncode == 0, ran.stderr
    chunks = ChunkSettings.model_validate({"books": [str(book)], "max_tokens": 2048})
    assert chunks.min_tokens <= chunks.target_tokens == 2048
    chunks = ChunkSettings.model_validate({"books": [str(book)], "min_tokens": 9000})
    assert chunks.target_tokens >= 9000 and chunks.max_tokens >= chunks.target_tokens
    base = {"characters": str(STARTERS), "pool": str(tmp_path), "out": str(tmp_path / "b")}
    assert BuildSettings.model_validate({**base, "max_rounds": 4}).min_rounds == 4
    with pytest.raises(ValueError, match="--min-rounds 10 is above --max-rounds 4"):
        BuildSettings.model_validate({**base, "max_rounds": 4, "min_rounds": 10})
    with pytest.raises(ValueError, match=r"--min-tokens 5000, --max-tokens 1000 \(each"):
        ChunkSettings.model_validate({"books": [str(book)], "min_tokens": 5000, "max_tokens": 1000})
    # A Prefect UI form fills in every default and submits them: a default still yields to the one changed.
    form = BuildSettings.model_construct(**base).model_dump()
    assert BuildSettings.model_validate({**form, "max_rounds": 4}).min_rounds == 4
    with pytest.raises(ValueError, match="--min-rounds 10 is above --max-rounds 4"):
        BuildSettings.model_validate({**form, "max_rounds": 4, "min_rounds": 10})
    form = ChunkSettings.model_construct(books=[str(book)]).model_dump()
    chunks = ChunkSettings.model_validate({**form, "max_tokens": 2048})
    assert chunks.min_tokens <= chunks.target_tokens == 2048


def test_every_old_flag_works_alone_with_a_note():
    """Each old flag the reference's table names (every one there is) stands for its new option when given alone:
    a note that it goes in the next release, then the command goes on as with the new option."""
    from rpbench.flows.cli.reference import old_names

    flags = [(old.strip("`"), new.strip("`"), where) for old, new, where in old_names() if where.startswith("option")]
    assert {(o, n) for o, n, _ in flags} >= {("--player", "--model"), ("--models", "--models-file")}
    cases = {"--player": ["pingpong", "run", "--settings", str(ROOT / "samples" / "pingpong" / "settings.yaml"),
                          "--player", "no-such-model", "--out", "/tmp/rpbench-old-flag"],
             "--models": ["models", "--models", "/nonexistent/models.toml"]}
    for old, new, _where in flags:
        ran = rpbench(*cases[old])
        said = ran.stdout + ran.stderr
        assert f"{old} is deprecated and will go in the next release: use {new}" in said, said
        assert "the old name of" not in said, said
    assert "unknown model 'no-such-model'" in rpbench(*cases["--player"]).stderr
    assert "/nonexistent/models.toml" in rpbench(*cases["--models"]).stderr


def test_a_typed_contradiction_is_refused_where_a_default_would_yield(tmp_path):
    """On the command line and in a suite file, rpbench knows what the user typed: --min-rounds 6 --max-rounds 4
    (6 being the default, typed out) is refused; --max-rounds 4 alone still brings the default down. A Prefect form,
    which submits every default, keeps the yield (the test above)."""
    from rpbench.flows.kit.front.settings import typed_settings
    from rpbench.flows.modes.furina.settings import BuildSettings

    base = ["furina", "build", "--characters", str(STARTERS), "--pool", str(tmp_path), "--out", str(tmp_path / "b")]
    typed = rpbench(*base, "--min-rounds", "6", "--max-rounds", "4")
    assert typed.returncode == 2 and "--min-rounds 6 is above --max-rounds 4" in typed.stderr, typed.stderr
    alone = rpbench(*base, "--max-rounds", "4", "--plan")
    assert "--min-rounds" not in alone.stderr, alone.stderr
    with typed_settings(), pytest.raises(ValueError, match="--min-rounds 6 is above --max-rounds 4"):
        BuildSettings.model_validate({"characters": str(STARTERS), "pool": str(tmp_path), "out": str(tmp_path),
                                      "max_rounds": 4, "min_rounds": 6})
    shipped = (ROOT / "samples" / "suites" / "default.toml").read_text(encoding="utf-8")
    suite = tmp_path / "suite.toml"  # the shipped one, its paths made absolute, its rounds typed out of order
    suite.write_text(shipped.replace('"../', f'"{ROOT / "samples"}/').replace(
        "min_rounds = 2\nmax_rounds = 8", "min_rounds = 6\nmax_rounds = 4"), encoding="utf-8")
    ran = rpbench("suite", "run", "--suite", str(suite), "--model", "local-greedy", "--mode", "furina", "--plan",
                  "--out", str(tmp_path / "s"))
    assert ran.returncode == 2 and "'min_rounds' 6 is above 'max_rounds' 4" in ran.stderr, ran.stderr
