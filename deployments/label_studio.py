"""Label Studio for human validation, in an environment of its own.

Label Studio pins about a hundred packages of its own (numpy, openai and Django among them), so it never
shares rpbench's environment: ``setup`` makes a virtual environment for it beside rpbench's data, and
``start`` runs the server from there. rpbench talks to it only over HTTP (label-studio-sdk).

    python -m rpbench.deployments.label_studio setup                 # once: .rpbench/label-studio/venv
    LABEL_STUDIO_USERNAME=you@example.com LABEL_STUDIO_PASSWORD=... \\
        python -m rpbench.deployments.label_studio start --port 8080  # the first start makes that admin

The admin's e-mail and password come from the environment and go to Label Studio alone; rpbench stores
no password. Annotators join through the invitation link of the organisation (Organization > Add People
in the UI) and each makes a personal access token on their Account & Settings page.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from rpbench.deployments.cluster import healthy

VERSION = "1.23.2"  # the Label Studio release rpbench's configs and tests are checked against
DEFAULT_FOLDER = Path(".rpbench") / "label-studio"


def venv_python(folder: Path) -> Path:
    return folder / "venv" / "bin" / "python"


def executable(folder: Path) -> Path:
    return folder / "venv" / "bin" / "label-studio"


def installed(folder: Path) -> bool:
    return executable(folder).is_file()


def setup(folder: Path, python: str = sys.executable) -> None:
    """Make ``folder``/venv with Label Studio ``VERSION`` in it (nothing to do when it is there)."""
    if installed(folder):
        return
    folder.mkdir(parents=True, exist_ok=True)
    wanted = f"label-studio=={VERSION}"
    # uv (installed beside rpbench by the set-up script) installs Label Studio's many packages in seconds, and
    # needs no pip inside the environment: the environment is made without one, which also skips ensurepip.
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if uv is not None:
        subprocess.run([python, "-m", "venv", "--without-pip", str(folder / "venv")], check=True)
        if subprocess.run([uv, "pip", "install", "--quiet", "--compile-bytecode",
                           "--python", str(venv_python(folder)), wanted]).returncode == 0:
            return
        print("uv could not install Label Studio; trying pip", file=sys.stderr)
    subprocess.run([python, "-m", "venv", str(folder / "venv")], check=True)
    subprocess.run([str(venv_python(folder)), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    wanted], check=True)


def server_command(folder: Path, port: int, data: Path, host: str = "127.0.0.1",
                   legacy_token: bool = False) -> list[str]:
    cmd = [str(executable(folder)), "start", "--no-browser", "--host", host, "--port", str(port),
           "--data-dir", str(data)]
    if legacy_token:
        # Label Studio 1.23 turns legacy tokens off for a new organisation; the admin token given in
        # LABEL_STUDIO_USER_TOKEN (automation, tests) needs them on.
        cmd.append("--enable-legacy-api-token")
    return cmd


def server_env(data: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "LABEL_STUDIO_BASE_DATA_DIR": str(data), "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true",
            # No calls home from a server that holds annotators' work.
            "LABEL_STUDIO_COLLECT_ANALYTICS": "false", **extra}


def wait_until_healthy(url: str, proc: subprocess.Popen[bytes], seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"Label Studio exited with {proc.returncode} before it was ready")
        if healthy(url):
            return
        time.sleep(1)
    raise RuntimeError(f"Label Studio at {url} not ready after {seconds:.0f} s")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rpbench.deployments.label_studio",
                                     description="Install and start Label Studio in an environment of its own.")
    parser.add_argument("--folder", type=Path, default=DEFAULT_FOLDER,
                        help=f"Where its environment and data live (default {DEFAULT_FOLDER}).")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("setup", help=f"Create the environment with label-studio=={VERSION}.")
    start = sub.add_parser("start", help="Start the server (admin from LABEL_STUDIO_USERNAME and "
                                         "LABEL_STUDIO_PASSWORD on the first start).")
    start.add_argument("--port", type=int, default=8080)
    start.add_argument("--host", default="127.0.0.1", help="0.0.0.0 to let annotators on other machines in.")
    args = parser.parse_args(argv)
    if args.command == "setup":
        try:
            setup(args.folder)
        except (subprocess.CalledProcessError, OSError) as exc:
            free_gb = shutil.disk_usage(args.folder if args.folder.exists() else Path.cwd()).free / 1e9
            print(f"error: could not make Label Studio's environment in {args.folder}: {exc} "
                  f"({free_gb:.1f} GB free on that disk)", file=sys.stderr)
            sys.exit(1)
        print(f"Label Studio {VERSION} in {args.folder / 'venv'}")
        return
    if not installed(args.folder):
        print(f"error: no Label Studio in {args.folder}: run `python -m rpbench.deployments.label_studio setup` "
              "first", file=sys.stderr)
        sys.exit(2)
    data = args.folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    os.execve(str(executable(args.folder)), server_command(args.folder, args.port, data, args.host),
              server_env(data))


if __name__ == "__main__":
    main()
