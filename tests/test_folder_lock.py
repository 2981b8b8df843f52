"""One command at a time per run folder: a second one on a folder in use exits 2 naming the holder; a killed
holder leaves no lock behind."""

from __future__ import annotations

import subprocess
import sys

from rpbench.samples import sample_path
from rpbench.storage.folder_lock import lock_path
from tests.helpers import rpbench

HOLD = ("import sys, time\nfrom rpbench.storage.folder_lock import folder_lock\n"
        "with folder_lock(sys.argv[1]):\n    print('held', flush=True)\n    time.sleep(120)\n")


def test_a_second_command_on_a_folder_in_use_exits_2_naming_the_holder(tmp_path):
    out = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        args = ["roleinteract", "run", "--data", str(sample_path("roleinteract", "example.json")), "--model",
                "roleinteract-player", "--out", str(out)]
        ran = rpbench(*args)
        assert ran.returncode == 2
        lines = ran.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"error: --out {out}: in use by process {holder.pid} (since ")
        assert "wait for it to finish or give another folder" in lines[0]
    finally:
        holder.kill()
        holder.wait()
    # The kernel let go of the lock with the process: the folder is free (shown without running a flow: the
    # lock is taken, then an input error of the command's own).
    again = rpbench("roleinteract", "run", "--data", str(sample_path("roleinteract", "example.json")), "--model",
                    "roleinteract-playr", "--out", str(out))
    assert again.returncode == 2 and "unknown model 'roleinteract-playr'" in again.stderr, again.stderr
    assert "in use" not in again.stderr
    # The lock lives outside the run folder: a command stopped by bad input left the folder untouched.
    assert lock_path(out).is_file() and not out.exists()


def test_a_lock_read_while_its_holder_writes_itself_in_names_another_process(tmp_path):
    """The holder empties the lock file before it writes itself in: a second command reading in between (or a
    half-written file) is told "another process", never "process ? (since 1970-01-01 ...)"."""
    from rpbench.storage.folder_lock import _holder

    path = tmp_path / "x.lock"
    for text in ("", "{}", '{"pid": 12', '{"pid": 12}'):
        path.write_text(text)
        assert _holder(path) == "another process", text
    path.write_text('{"pid": 12, "started": 0, "command": "rpbench quiz run"}')
    assert _holder(path).startswith("process 12 (since ")
