"""Leased shared limits, against a fake server that counts slots as Prefect's does: two holders of one limit
never have more than the limit in use together, a request costs no server call once a block is leased,
idle blocks go back, and a request that gives up while waiting leaks nothing."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid

import pytest

from rpbench.flows.kit.scale import leases
from rpbench.flows.kit.scale.leases import Leaser, block_size


class FakeServer:
    """A global concurrency limit: leases of k slots, granted only while the total stays within the limit."""

    def __init__(self, limit: int) -> None:
        self.limit, self.used, self.calls = limit, 0, 0
        self.answer_s = 0.0  # how long the server takes to answer a lease
        self.asking = self.most_asking = 0  # lease requests waiting for an answer, now and at most
        self.leases: dict[uuid.UUID, int] = {}
        self.lock = threading.Lock()

    async def lease(self, name: str, slots: int) -> uuid.UUID:
        with self.lock:
            self.asking += 1
            self.most_asking = max(self.most_asking, self.asking)
        try:
            await asyncio.sleep(self.answer_s)
            return await self._lease(slots)
        finally:
            with self.lock:
                self.asking -= 1

    async def _lease(self, slots: int) -> uuid.UUID:
        while True:
            with self.lock:
                self.calls += 1
                if self.used + slots <= self.limit:
                    self.used += slots
                    lease_id = uuid.uuid4()
                    self.leases[lease_id] = slots
                    return lease_id
            await asyncio.sleep(0.01)  # Prefect answers 423 Locked; the client retries

    async def release(self, lease_id: uuid.UUID) -> None:
        with self.lock:
            self.calls += 1
            self.used -= self.leases.pop(lease_id)

    async def renew(self, lease_id: uuid.UUID, duration: float) -> None:
        self.calls += 1


def _leaser(server: FakeServer, limit: int) -> Leaser:
    return Leaser("limit", limit, lease=server.lease, release=server.release, renew=server.renew)


def _wait_until(condition, within_s: float = 10.0) -> None:
    """Wait for the service loop to act (a deadline, not a timing claim: a loaded machine may take a while)."""
    deadline = time.monotonic() + within_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)


def _run_requests(leaser: Leaser, n: int, seconds: float, state: dict) -> None:
    async def one() -> None:
        await leaser.take()
        try:
            with state["lock"]:
                state["now"] += 1
                state["peak"] = max(state["peak"], state["now"])
            await asyncio.sleep(seconds)
            with state["lock"]:
                state["now"] -= 1
        finally:
            leaser.give()

    async def all_of_them() -> None:
        await asyncio.gather(*(one() for _ in range(n)))

    asyncio.run(all_of_them())


def test_two_holders_of_one_limit_stay_within_it_together_and_lease_in_blocks(monkeypatch):
    monkeypatch.setattr(leases, "IDLE_S", 0.2)
    server = FakeServer(16)
    a, b = _leaser(server, 16), _leaser(server, 16)  # two processes, each told the limit is 16
    state = {"now": 0, "peak": 0, "lock": threading.Lock()}
    threads = [threading.Thread(target=_run_requests, args=(leaser, 200, 0.02, state))
               for leaser in (a, a, b, b)]  # two event loops per holder, as stage shards are
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert state["peak"] == 16 and state["now"] == 0  # the whole limit in use at once, never more
    assert a.stats.taken == b.stats.taken == 400
    leased = a.stats.leases + b.stats.leases
    assert leased * block_size(16) >= 16 and leased <= 800 / 10  # blocks of 2: far fewer leases than requests
    _wait_until(lambda: server.used == 0 and not server.leases)  # idle blocks went back, late ones too


def test_requests_waiting_together_lease_their_blocks_side_by_side_within_the_limit(monkeypatch):
    """A stage starts with all its requests at once: the blocks they need are asked for together (one wait
    for a busy server, not one per block in a row), and together never more than the limit."""
    monkeypatch.setattr(leases, "IDLE_S", 0.2)
    server = FakeServer(64)
    server.answer_s = 0.2
    leaser = _leaser(server, 64)  # blocks of 8
    state = {"now": 0, "peak": 0, "lock": threading.Lock()}
    _run_requests(leaser, 64, 0.3, state)
    assert state["peak"] == 64 and server.most_asking > 1  # (one at a time, the first lease would block the rest)
    assert leaser.stats.leases == 8 and leaser._held <= 64
    # More waiting than the limit allows: no more blocks than the limit holds are asked for, however many wait.
    server2 = FakeServer(16)
    server2.answer_s = 0.05
    other = _leaser(server2, 16)
    state2 = {"now": 0, "peak": 0, "lock": threading.Lock()}
    _run_requests(other, 100, 0.05, state2)
    assert state2["peak"] == 16 and server2.most_asking <= 16 // block_size(16)
    _wait_until(lambda: server.used == 0 and server2.used == 0)


def test_a_request_that_gives_up_waiting_leaks_no_slot(monkeypatch):
    monkeypatch.setattr(leases, "IDLE_S", 0.1)
    server = FakeServer(1)
    leaser = _leaser(server, 1)

    async def go() -> None:
        await leaser.take()  # the only slot
        waiting = asyncio.ensure_future(leaser.take())
        await asyncio.sleep(0.05)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        leaser.give()
        await asyncio.wait_for(leaser.take(), 2)  # the slot came back, and only one was ever used
        leaser.give()

    asyncio.run(go())
    _wait_until(lambda: server.used == 0)
    assert server.used == 0 and leaser.stats.taken == 2


def test_a_refused_lease_fails_the_waiting_requests():
    async def refuse(name: str, slots: int) -> uuid.UUID:
        raise RuntimeError("Concurrency limits ['limit'] must be created before acquiring slots")

    leaser = Leaser("limit", 4, lease=refuse)

    async def go() -> None:
        results = await asyncio.gather(*(leaser.take() for _ in range(3)), return_exceptions=True)
        assert all(isinstance(r, RuntimeError) for r in results), results

    asyncio.run(go())


def test_rate_tokens_come_from_the_server_in_blocks():
    server = FakeServer(8)
    asked: list[int] = []

    async def tokens(name: str, n: int) -> None:
        assert name == "limit-rpm"
        asked.append(n)

    leaser = Leaser("limit", 8, "limit-rpm", 240, lease=server.lease, release=server.release, renew=server.renew,
                    tokens=tokens)
    state = {"now": 0, "peak": 0, "lock": threading.Lock()}
    _run_requests(leaser, 120, 0.001, state)
    assert sum(asked) >= 120 and max(asked) <= block_size(240) == 30  # every request spent a token of the server's
    assert len(asked) <= 120 // 10 and state["peak"] <= 8


def test_a_busy_holder_gives_its_oldest_lease_back_so_another_gets_a_turn(monkeypatch):
    monkeypatch.setattr(leases, "ROTATE_S", 0.2)
    monkeypatch.setattr(leases, "RENEW_S", 0.05)
    monkeypatch.setattr(leases, "IDLE_S", 0.1)
    server = FakeServer(16)
    busy, late = _leaser(server, 16), _leaser(server, 16)
    state = {"now": 0, "peak": 0, "lock": threading.Lock()}
    ended: dict[str, float] = {}

    def stream(name: str, leaser: Leaser, n: int, delay: float) -> None:
        time.sleep(delay)
        _run_requests(leaser, n, 0.02, state)
        ended[name] = time.monotonic()

    threads = [threading.Thread(target=stream, args=("busy", busy, 1600, 0.0)),  # about 2 s holding all 16
               threading.Thread(target=stream, args=("late", late, 16, 0.3))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert state["peak"] <= 16
    assert ended["late"] < ended["busy"] - 0.5  # its turn came while the busy one was still streaming
    assert busy.stats.released >= 1


_EXITING = """
import asyncio, sys, uuid
from rpbench.flows.kit.scale import leases

async def lease(name, slots):
    return uuid.uuid4()

async def release(lease_id):
    with open(sys.argv[1], "a") as fh:
        fh.write(f"{lease_id}\\n")

async def renew(lease_id, duration):
    pass

leaser = leases.Leaser("limit", 16, lease=lease, release=release, renew=renew)
leases._leasers[("fake-server", "limit")] = leaser

async def go():
    for _ in range(3):
        await leaser.take()
    for _ in range(3):
        leaser.give()

asyncio.run(go())
print(leaser.stats.leases)  # and exit at once, long before the idle blocks would go back by themselves
"""


def test_a_process_that_ends_gives_its_leases_back_rather_than_letting_them_run_out(tmp_path):
    import subprocess
    import sys

    released = tmp_path / "released.txt"
    proc = subprocess.run([sys.executable, "-c", _EXITING, str(released)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    leased = int(proc.stdout.strip())
    assert leased >= 1
    assert len(released.read_text().split()) == leased


def test_an_endpoints_limits_are_made_once_however_many_requests_start_together(monkeypatch):
    """64 requests starting at once: one of them creates the limits on the server and its leaser; the others
    wait for it and share it. When making them fails, every waiting request hears why, and a later one tries
    again."""
    from rpbench.flows.kit.scale import shared_limits

    made: list[str] = []
    fail = {"now": True}

    async def ensure(name: str, limit: int, decay: float | None = None) -> None:
        made.append(name)
        await asyncio.sleep(0.05)
        if fail["now"]:
            raise RuntimeError("the server refused")

    monkeypatch.setattr(shared_limits, "_ensure", ensure)
    monkeypatch.setattr(shared_limits, "_ready", {})
    monkeypatch.setattr(leases, "leaser_for", lambda *args: object())

    async def start(n: int) -> list:
        return await asyncio.gather(*(shared_limits._leaser("http://server", "openai/m@x", 64, None)
                                      for _ in range(n)), return_exceptions=True)

    refused = asyncio.run(start(64))
    assert len(made) == 1 and all(isinstance(r, RuntimeError) for r in refused)
    fail["now"] = False
    got = asyncio.run(start(64))
    assert len(made) == 2 and len({id(g) for g in got}) == 1 and not isinstance(got[0], Exception)
    assert asyncio.run(start(1))[0] is got[0] and len(made) == 2
    assert shared_limits._making == {}
