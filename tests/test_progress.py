"""Progress a person can watch: a line as each phase starts, and a heartbeat while nothing finishes."""

from __future__ import annotations

import logging
import time

from rpbench.flows.kit.running.progress import StageProgress


def test_a_silent_wait_still_logs_a_line_every_heartbeat(caplog):
    caplog.set_level(logging.INFO, logger="rpbench")
    with StageProgress("slow-stage", heartbeat_s=0.1, every_s=60.0) as progress:
        done = progress.track("dialogues", 4)
        time.sleep(0.35)  # a slow model: nothing finishes for a while
        done(1, 4)
        done(4, 4)
    lines = [r.getMessage() for r in caplog.records if r.name == "rpbench"]
    assert lines[0] == "slow-stage: started" and lines[1].startswith("slow-stage: dialogues 0/4 (0%")
    beats = [ln for ln in lines if "still working: dialogues 0/4" in ln]
    assert len(beats) >= 2  # one at least every heartbeat while it waited
    assert any(ln.startswith("slow-stage: dialogues 4/4 (100%") for ln in lines)  # the end is always reported
    assert not any("dialogues 1/4" in ln for ln in lines)  # in between, at most one line per `every_s`
    assert lines[-1].startswith("slow-stage: finished in")
