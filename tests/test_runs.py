"""Tests for rdqn.runs: RunHandle lifecycle and controls, RunRegistry cap, queue and reaping."""

from __future__ import annotations

import threading
import time

import pytest

from rdqn.config import preset
from rdqn.runs import RunHandle, RunRegistry, ServerBusy
from rdqn.store import RunStore


def tiny(total_steps: int = 400, **overrides: object):  # noqa: ANN201
    values = {
        "train.total_steps": total_steps,
        "train.learning_starts": 32,
        "replay.capacity": 256,
        "replay.batch_size": 16,
    }
    values.update(overrides)
    return preset("per-notebook").with_overrides(values)


def wait_for(condition, timeout: float = 20.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.01)


def rdqn_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("rdqn-run-")]


def test_a_run_finishes_and_publishes_its_last_snapshot() -> None:
    handle = RunHandle(tiny(), snapshot_interval=0.05).start()
    assert handle.join(60)
    assert handle.status == "finished"
    snap = handle.snapshot()
    assert snap is not None and snap.env_steps == 400 and snap.status == "finished"


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


def test_no_thread_left_after_100_start_stop_cycles() -> None:
    before = len(rdqn_threads())
    registry = RunRegistry(max_active=2)
    handle = registry.start(tiny(total_steps=10_000), owner="tab")
    for k in range(100):
        replacement = tiny(total_steps=10_000, seed=k % 3)
        registry.stop(handle.id)
        handle = registry.start(replacement, owner="tab", paused=k % 2 == 0)
    registry.stop(handle.id)
    registry.shutdown()
    wait_for(lambda: len(rdqn_threads()) == before, timeout=30)


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


def test_registry_cap_answers_busy_at_once_and_queue_drains() -> None:
    registry = RunRegistry(max_active=1)
    first = registry.start(tiny(total_steps=100_000), owner="a")
    started = time.monotonic()
    with pytest.raises(ServerBusy, match=r"server busy: 1 runs active \(limit 1\)"):
        registry.start(tiny(), owner="b")
    assert time.monotonic() - started < 1.0
    queued = registry.enqueue([tiny(total_steps=60), tiny(total_steps=60)], owner="b")
    assert [h.status for h in queued] == ["created", "created"]
    assert registry.get(first.id) is first
    registry.stop(first.id)
    wait_for(lambda: all(h.status == "finished" for h in queued), timeout=60)
    assert registry.active_count == 0
    registry.shutdown()


def test_stop_owner_and_reap_idle() -> None:
    registry = RunRegistry(max_active=3, idle_timeout=5.0)
    mine = registry.start(tiny(total_steps=100_000), owner="tab-1")
    other = registry.start(tiny(total_steps=100_000), owner="tab-2")
    assert registry.stop_owner("tab-1") == 1
    assert mine.status == "stopped" and other.status in ("running", "paused")
    assert registry.reap_idle(now=time.monotonic()) == []
    assert registry.reap_idle(now=time.monotonic() + 60) == [other.id]
    assert other.status == "stopped"
    registry.shutdown()


def test_registry_rejects_a_bad_cap() -> None:
    with pytest.raises(ValueError, match="max_active must be an integer >= 1, got 0"):
        RunRegistry(max_active=0)


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
