"""Ctrl-C, SIGTERM and SIGHUP on a command: stop cleanly, keep every reply that arrived, exit 128 + the signal.

A first signal stops sending (``tasks.llm.stopping``) and waits up to ``GRACE_S`` for the requests already on
the wire: their replies are written to the call cache as they arrive, so a rerun sends none of them again.
Then the held calls end their stages, the main thread is interrupted, the flow run ends (Crashed in Prefect)
and the command's usual shutdown stops the temporary Prefect server. Should that not finish within
``UNWIND_S``, or on a second signal, the command quits at once: what was recorded stays recorded (each cached
reply and journal line is on disk when written), and every process it started is killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from types import FrameType

from rpbench.tasks.llm.stopping import release_held, requests_on_the_wire, stop_sending, wait_for_the_wire

GRACE_S = 10.0  # for requests on the wire to be answered
UNWIND_S = 6.0  # for the flow to end and Prefect to shut down, after that
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _State:
    installed = False
    signum: int | None = None  # the first signal received
    nudge = False  # the next SIGINT is the stopper's own, sent to interrupt the main thread
    abandoned = 0  # requests still on the wire when the wait ended


_state = _State()


def install() -> None:
    """Handle the signals in this process (the command line's, from its main thread)."""
    for sig in SIGNALS:
        signal.signal(sig, _on_signal)
    _state.installed = True


def reclaim() -> None:
    """Take SIGTERM back from Prefect for the flow run now starting, in a process whose command installed these
    handlers. Prefect's own handler ends the flow at once, losing the replies on the wire; it puts back ours
    when the flow ends. (A served deployment's flow keeps Prefect's, which its runner's cancellation uses.)"""
    if _state.installed and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_signal)


def received() -> bool:
    """A signal stopped this command."""
    return _state.signum is not None


def exit_code() -> int:
    """The status of an interrupted command: 128 + the signal (130 for Ctrl-C, 143 for SIGTERM)."""
    return 128 + (_state.signum or signal.SIGINT)


def interrupted_line() -> str:
    abandoned = (f"; {_state.abandoned} request(s) still unanswered after {GRACE_S:.0f} s were abandoned and "
                 "will be sent again") if _state.abandoned else ""
    return ("interrupted: finished stages and every reply received are kept (the call cache)"
            f"{abandoned}; run the same command again to resume")


def say(line: str) -> None:
    # os.write: a signal handler may run while the main thread is inside a print to the same stream. A stream
    # nobody reads any more (the parent that piped it died, as it may with the same signal) must not stop the
    # stop: the line is lost, nothing else.
    with contextlib.suppress(OSError, ValueError):
        os.write(sys.stderr.fileno(), (line + "\n").encode())


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    if _state.nudge:  # the stopper's: the in-flight requests are settled, end the command's work now
        _state.nudge = False
        raise KeyboardInterrupt
    if _state.signum is not None:  # a second signal from the user
        quit_now("quitting now")
    _state.signum = signum
    stop_sending()
    threading.Thread(target=_stop, name="rpbench-stop", daemon=True).start()
    say(f"stopping ({signal.Signals(signum).name}): no new calls; waiting up to {GRACE_S:.0f} s for "
        f"{requests_on_the_wire()} request(s) in flight to be answered and recorded "
        "(press Ctrl-C again to quit at once)")


def _stop() -> None:
    _state.abandoned = wait_for_the_wire(GRACE_S)
    release_held()
    _state.nudge = True
    signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
    time.sleep(UNWIND_S)
    quit_now("the run did not end in time after the stop; quitting")


def quit_now(reason: str) -> None:
    """Kill what the command started and exit with the interrupted status, at once."""
    from rpbench.flows.kit.running.environment import kill_prefect_server
    from rpbench.tasks.llm.process_pool import kill_workers

    kill_workers()
    kill_prefect_server()
    say(f"{reason}: {interrupted_line().removeprefix('interrupted: ')}")
    os._exit(exit_code())
