"""After storms of 200 reloads, once every browser has left, the server holds no more threads
than before them, and no more file descriptors after the second storm than after the first.

A real server (`streamlit run app.py` on 127.0.0.1) and clients that speak Streamlit's protocol
(`tests.harness.streamlit_client`): ten browsers (each its own ``rdqn_owner`` cookie) reload
the live page twenty times each, ten at a time; a reload is a new session whose page runs to
its end before the old one closes, as a browser's does.

Each session holds an event loop of its own (an epoll descriptor and a socket pair). Streamlit
keeps a closed tab's session for ``server.disconnectedSessionTTL`` seconds (120 by default, at
most 128 sessions) so that a browser whose network blinked gets its page back, and drops
expired ones at the next session that closes. Here the window is 5 s: after it, one more visit
sweeps the storm away. What stays is SQLite's: the files of connections closed while the store
held another stay open for the next connections, a pool bounded by the most open at once.
Before, a storm left a thread per browser for the ten minutes of its away window (a timer
each) and a store connection per page run's script thread until another thread connected.
Bounded: every wait is a condition with a timeout; loopback only.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path

from tests.harness.dashboard_server import start_dashboard
from tests.harness.streamlit_client import StreamlitClient, owner_token

BROWSERS = 10
RELOADS = 10
STORMS = 2
"""Two storms of 100 page loads: what the first leaves, the second must not add to."""
RECONNECT_WINDOW_S = 5
SETTLE_S = 120.0
"""How long the server may take to settle at its count (before) or be back at it (after)."""
SLACK = 2
"""Threads more than the baseline that still count as back (a thread-pool thread that has not
yet exited)."""
POOL = 4 * BROWSERS
"""Descriptors more than the baseline a storm may leave: SQLite's files of connections closed
while another was open (two each, for at most a connection per browser at once and the
threads that served them), kept for the next ones."""


def held(pid: int) -> tuple[int, int]:
    """(open file descriptors, threads) of process ``pid``."""
    return len(os.listdir(f"/proc/{pid}/fd")), len(os.listdir(f"/proc/{pid}/task"))


async def visit(url: str, owner: str) -> None:
    """One page load of the live page by browser ``owner``, run to its end, then closed."""
    client = StreamlitClient(url, "/live", owner=owner, auto_rerun=False)
    try:
        await client.open()
        await client.wait_run(timeout=SETTLE_S)
        assert not client.exceptions, client.exceptions
    finally:
        await client.close()


async def reload(url: str, owner: str, times: int) -> None:
    for _ in range(times):
        await visit(url, owner)


async def visits(
    url: str, pid: int, done: Callable[[list[tuple[int, int]]], bool], what: str
) -> list[tuple[int, int]]:
    """Visit once a second (each closing visit sweeps the sessions whose reconnect window has
    passed) until ``done`` says yes to the counts seen after each visit; those counts."""
    deadline = time.monotonic() + SETTLE_S
    owner, seen = owner_token(), []
    while True:
        await visit(url, owner)
        seen.append(held(pid))
        if done(seen):
            return seen
        assert time.monotonic() < deadline, f"{what} within {SETTLE_S} s: {seen}"
        await asyncio.sleep(1.0)  # a visit a second: the reconnect window passes meanwhile


def steady(seen: list[tuple[int, int]]) -> bool:
    """The same counts after every visit over more than a reconnect window."""
    window = RECONNECT_WINDOW_S + 2
    return len(seen) > window and len(set(seen[-window:])) == 1


async def scenario(url: str, pid: int) -> None:
    # The server's first page runs import the dashboard and start its thread pools; the
    # counts hold one visit's session, as after a storm.
    baseline = (await visits(url, pid, steady, "no steady (descriptors, threads)"))[-1]
    after = []
    for _ in range(STORMS):
        owners = [owner_token() for _ in range(BROWSERS)]
        await asyncio.gather(*(reload(url, owner, RELOADS) for owner in owners))
        during = held(pid)
        assert during[0] > baseline[0] + BROWSERS, (during, baseline)  # the storm's sessions
        after.append((await visits(url, pid, steady, "no steady count after a storm"))[-1])
    threads = [count for _, count in after]
    assert max(threads) <= baseline[1] + SLACK, (after, baseline)
    # Descriptors: SQLite keeps the files of a closed connection open for the next one while
    # another connection holds the database (`rdqn.runs.store_access`): a pool as large as the
    # most connections open at once, the same after every storm, never one more per reload.
    assert after[-1][0] <= after[0][0] <= baseline[0] + POOL, (after, baseline)


def test_reload_storms_leave_no_threads_and_no_growing_descriptors_behind(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("RDQN_")}
    env |= {
        "RDQN_HOME": str(tmp_path),
        "STREAMLIT_SERVER_DISCONNECTED_SESSION_TTL": str(RECONNECT_WINDOW_S),
    }
    log = tmp_path / "server.log"
    process, url = start_dashboard(env, log)
    try:
        asyncio.run(asyncio.wait_for(scenario(url, process.pid), 600))
    finally:
        process.terminate()
        process.wait(timeout=30)
    text = log.read_text(encoding="utf-8", errors="replace")
    assert "Traceback (most recent call last)" not in text, text[-6000:]
