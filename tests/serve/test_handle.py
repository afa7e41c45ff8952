"""Tests for rdqn.serve.handle: RunHandle lifecycle, controls, persistence and self-stopping."""

from __future__ import annotations

import threading
import time

import pytest

from rdqn.runs.store import RunStore
from rdqn.serve.handle import RunHandle
from tests.run_helpers import tiny, wait_for


def test_a_run_finishes_and_publishes_its_last_snapshot() -> None:
    handle = RunHandle(tiny(), snapshot_interval=0.05).start()
    assert handle.join(60)
    assert handle.status == "finished"
    snap = handle.snapshot()
    assert snap is not None and snap.env_steps == 400 and snap.status == "finished"


def test_join_from_another_thread_while_the_run_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    """`join` reads the relay thread without the lock: while `start` is starting it, a join
    from another thread (the CLI's compare watches its runs so) must not see it unstarted
    (a clean-clone CI run once raised "cannot join thread before it is started")."""
    handle = RunHandle(tiny())
    joins: list[bool] = []
    start = threading.Thread.start

    def start_and_join(thread: threading.Thread) -> None:
        if thread.name.startswith("rdqn-relay-"):
            joins.append(handle.join(0))  # the moment a watcher could look
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", start_and_join)
    handle.start()
    assert joins == [False]
    handle.stop()
    assert handle.join(0) and handle.status == "stopped"


def test_paused_start_then_step_once_advances_exactly_one_step() -> None:
    handle = RunHandle(tiny()).start(paused=True)
    wait_for(lambda: handle.snapshot() is not None)
    assert handle.snapshot().env_steps == 0
    for expected in (1, 2, 3):
        handle.step_once()
        wait_for(lambda expected=expected: handle.snapshot().env_steps == expected)
    time.sleep(0.3)
    assert handle.snapshot().env_steps == 3
    assert handle.status == "paused"
    handle.stop()
    assert handle.status == "stopped"


def test_step_once_past_learning_starts_makes_exactly_one_update() -> None:
    handle = RunHandle(tiny()).start(paused=True)
    wait_for(lambda: handle.snapshot() is not None)
    for _ in range(33):
        handle.step_once()
    wait_for(lambda: handle.snapshot().env_steps == 33)
    assert handle.snapshot().updates == 1
    handle.step_once()
    wait_for(lambda: handle.snapshot().env_steps == 34)
    assert handle.snapshot().updates == 2
    handle.stop()


def test_pause_really_pauses_and_resume_continues() -> None:
    handle = RunHandle(tiny(total_steps=100_000), snapshot_interval=0.02).start()
    wait_for(lambda: (handle.snapshot() or None) is not None and handle.snapshot().env_steps > 50)
    handle.pause()
    time.sleep(0.2)  # let the step in flight finish and publish
    frozen = handle.snapshot().env_steps
    time.sleep(0.5)
    assert handle.snapshot().env_steps == frozen
    handle.resume()
    wait_for(lambda: handle.snapshot().env_steps > frozen + 20)
    handle.stop()


def test_speed_throttles_the_loop() -> None:
    handle = RunHandle(tiny(total_steps=100_000), snapshot_interval=0.05, speed=20.0).start()
    wait_for(lambda: handle.snapshot() is not None)
    time.sleep(0.2)
    start = handle.snapshot().env_steps
    time.sleep(1.0)
    advanced = handle.snapshot().env_steps - start
    assert 5 <= advanced <= 40, advanced
    with pytest.raises(ValueError, match="speed must be None"):
        handle.set_speed(0)
    handle.set_speed(None)
    wait_for(lambda: handle.snapshot().env_steps > start + 200)
    handle.stop()


def test_failure_inside_the_run_is_recorded_not_raised(tmp_path) -> None:  # noqa: ANN001
    store = RunStore(tmp_path / "rdqn.db")
    config = tiny().with_overrides(
        {"env.id": "rdqn/SyntheticMarket-v0", "env.kwargs": {"prices_csv": str(tmp_path / "x.csv")}}
    )
    handle = RunHandle(config, store=store).start()
    assert handle.join(30)
    assert handle.status == "failed" and "x.csv" in (handle.error or "")
    assert store.get_run(handle.id).status == "failed"
    store.close()


def test_store_records_progress_manifest_and_checkpoint(tmp_path) -> None:  # noqa: ANN001
    store = RunStore(tmp_path / "rdqn.db")
    handle = RunHandle(tiny(), store=store).start()
    assert handle.join(60)
    record = store.get_run(handle.id)
    assert record.status == "finished" and record.env_steps == 400
    assert record.manifest is not None and record.checkpoint_path
    assert len(store.episodes(handle.id)) == handle.snapshot().episodes
    store.close()


@pytest.mark.parametrize("paused", [False, True])
def test_a_run_nobody_watches_stops_by_itself(paused: bool) -> None:
    handle = RunHandle(tiny(total_steps=100_000), idle_timeout=0.5).start(paused=paused)
    assert handle.join(30)
    assert handle.status == "stopped"
    assert "nobody watched this run for 0.5 s" in (handle.error or "")


def test_polling_keeps_a_run_alive() -> None:
    handle = RunHandle(tiny(total_steps=100_000), idle_timeout=0.5).start()
    for _ in range(15):
        handle.snapshot()
        time.sleep(0.1)
    assert handle.status == "running"
    handle.stop()
