"""Widget messages replayed from another browser never touch the run of the browser that sent
them.

A real server (`streamlit run app.py` on 127.0.0.1) and clients that speak Streamlit's protocol
(`tests.harness.streamlit_client`), each a browser of its own (its own ``rdqn_owner`` cookie).
Alice starts a run and drives it: Pause, Step, Resume, the speed, α (which restarts it). Her
client keeps the exact BackMsgs it sent. Bob, another browser, then sends them again: as they
are (bytes) from his own live page, and as widget states in his own page runs while he follows
Alice's class (``?follow=``) and while he watches her run (``?run=``). After each, once Alice's
page has refreshed twice more, her runs are as she left them in the store (status, config) and
on her page; every run the replays started belongs to Bob; no page shows an exception, and the
server's log has no traceback.

Bounded: every wait is a condition with a timeout (no sleeps); loopback only.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import sqlite3
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

from tests.harness.dashboard_server import start_dashboard
from tests.harness.streamlit_client import StreamlitClient

T = TypeVar("T")
TIMEOUT_S = 420.0
"""The whole scenario (a server's first page run imports torch: tens of seconds when loaded)."""
STEP_S = 120.0
LIVE = "steps=1000000"  # a budget no run finishes during the test
STATUS = re.compile(r"(?m)^(running|paused|created|stopped|finished|failed) · run `([0-9a-f]{12})`")
CLASS_CODE = re.compile(r"Class code `([A-HJ-NP-Z2-9]{4})`")


def runs_in_store(db: Path) -> dict[str, tuple[str, str, str | None]]:
    """run id -> (status, config JSON, owner hash), read-only."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)) as conn:
        rows = conn.execute("SELECT id, status, config_json, owner_hash FROM runs").fetchall()
    return {run: (status, config, owner) for run, status, config, owner in rows}


def shown(client: StreamlitClient) -> tuple[str, str] | None:
    """(status, run id) of the live page's status line, once it has one."""
    found = STATUS.search(client.page_text())
    return (found.group(1), found.group(2)) if found else None


async def until(client: StreamlitClient, condition: Any, what: str) -> Any:
    return await client.wait_for(condition, STEP_S, what)


async def refreshed(client: StreamlitClient, times: int = 2) -> None:
    """Wait until ``client``'s live fragment has finished ``times`` more runs."""
    done = sum(1 for run in client.runs if run.fragment and run.finished)
    await until(
        client,
        lambda: sum(1 for run in client.runs if run.fragment and run.finished) >= done + times,
        f"{times} more refreshes",
    )


def widget_messages(sent: list[bytes]) -> list[bytes]:
    """The page runs a browser asked for with a widget's value (a click, a slider)."""
    kept = []
    for data in sent:
        message = BackMsg.FromString(data)
        if (
            message.WhichOneof("type") == "rerun_script"
            and message.rerun_script.widget_states.widgets
        ):
            kept.append(data)
    return kept


def states_of(data: bytes) -> list[WidgetState]:
    return list(BackMsg.FromString(data).rerun_script.widget_states.widgets)


async def alice_drives_her_run(alice: StreamlitClient, db: Path) -> str:
    """Start, Pause, Step, Resume, a speed, α: each a message Alice's browser sends. Returns
    her run on screen at the end (α restarted it)."""
    await alice.click("live.start")
    _, first = await until(alice, lambda: (s := shown(alice)) and s[0] == "running" and s, "run")
    await alice.click("live.pause")
    await until(alice, lambda: runs_in_store(db)[first][0] == "paused", "her run paused")
    await alice.click("live.step")
    await alice.wait_run(STEP_S)
    await alice.click("live.start")  # Resume
    await until(alice, lambda: runs_in_store(db)[first][0] == "running", "her run resumed")
    await alice.set_value("live.speed", string_array_value=["100 steps/s"])
    await alice.wait_run(STEP_S)
    await alice.set_value("live.alpha", double_array_value=[0.3])
    _, second = await until(
        alice,
        lambda: (s := shown(alice)) and s[0] == "running" and s[1] != first and s,
        "her run restarted with the new α",
    )
    # The restart stops the first run as the new one starts: recorded once its worker ends.
    await until(alice, lambda: runs_in_store(db)[first][0] == "stopped", "her first run stopped")
    return second


async def bob_replays(
    bob: StreamlitClient, messages: list[bytes], *, raw: bool, alice: StreamlitClient
) -> None:
    """Bob sends Alice's widget messages: as they are, or their widget states in page runs of
    his own page; each time, Alice's page refreshes twice before the next."""
    for data in messages:
        if raw:
            await bob.send(data)
        else:
            await bob.rerun(states_of(data))
        await bob.wait_run(STEP_S)
        await refreshed(alice)


async def bounded(awaitable: Awaitable[T]) -> T:
    return await asyncio.wait_for(awaitable, TIMEOUT_S)


async def scenario(url: str, db: Path) -> None:
    warm = StreamlitClient(url, "/")  # the server's first page run imports the dashboard
    await warm.open(STEP_S)
    await warm.wait_run(STEP_S)
    await warm.close()
    alice = StreamlitClient(url, "/live", LIVE)
    await alice.open(STEP_S)
    await alice.wait_run(STEP_S)
    code = CLASS_CODE.search(alice.page_text())
    assert code, alice.page_text()
    clients = [alice]
    try:
        run = await alice_drives_her_run(alice, db)
        captured = widget_messages(alice.sent)
        assert len(captured) == 6, [states_of(m) for m in captured]
        before = runs_in_store(db)
        alice_owner = before[run][2]
        alices = {rid: row for rid, row in before.items() if row[2] == alice_owner}
        assert before[run][0] == "running" and len(alices) == 2  # the first run and its restart

        for page, raw in (("", True), (f"follow={code.group(1)}", False), (f"run={run}", False)):
            bob = StreamlitClient(url, "/live", page or LIVE)
            clients.append(bob)
            await bob.open(STEP_S)
            await bob.wait_run(STEP_S)
            await bob_replays(bob, captured, raw=raw, alice=alice)
            now = runs_in_store(db)
            assert {rid: row for rid, row in now.items() if row[2] == alice_owner} == alices, (
                f"Bob's replay on /live?{page} changed Alice's runs"
            )
            assert shown(alice) == ("running", run), alice.page_text()[-1500:]
            started = {row[2] for rid, row in now.items() if rid not in before}
            assert alice_owner not in started
            if raw:  # on his own live page her messages drove his page: Start started his run
                assert len(started) == 1, started
            before = now
            assert not bob.exceptions, bob.exceptions
        assert not alice.exceptions, alice.exceptions
    finally:
        await asyncio.gather(*(client.close() for client in clients))


def test_widget_messages_replayed_by_another_browser_leave_the_senders_run_alone(
    tmp_path: Path,
) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("RDQN_")}
    env |= {"RDQN_HOME": str(tmp_path), "RDQN_MAX_RUNS": "4", "RDQN_RELEASE_GRACE": "3"}
    log = tmp_path / "server.log"
    process, url = start_dashboard(env, log)
    try:
        asyncio.run(bounded(scenario(url, tmp_path / "rdqn.db")))
    finally:
        process.terminate()
        process.wait(timeout=30)
    text = log.read_text(encoding="utf-8", errors="replace")
    assert "Traceback (most recent call last)" not in text, text[-6000:]
