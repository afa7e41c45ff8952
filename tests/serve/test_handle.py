"""Tests for rdqn.serve.handle: RunHandle lifecycle, controls, persistence and self-stopping."""

from __future__ import annotations

import threading

import pytest

from rdqn.runs.store import RunStore
from rdqn.serve import handle as handle_module
from rdqn.serve.handle import RunHandle
from tests.run_helpers import ShiftedTime, tiny, wait_for


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
    assert handle.status == "paused"
    handle.stop()
    assert handle.status == "stopped"
    assert handle.snapshot().env_steps == 3  # its last snapshot: no step after the third


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
    wait_for(lambda: handle.status == "paused")  # the loop published its pause: it waits
    frozen = handle.snapshot().env_steps
    handle.step_once()  # one step on a paused run is exactly one
    wait_for(lambda: handle.snapshot().env_steps != frozen)
    assert handle.snapshot().env_steps == frozen + 1
    handle.resume()
    wait_for(lambda: handle.snapshot().env_steps > frozen + 20)
    handle.stop()


def test_speed_throttles_the_loop() -> None:
    """At one step per 1,000 s the loop takes its first step and waits; a request wakes it (a
    step, here: the first and the asked one, nothing between); full speed then runs on. The pace
    itself is rdqn.runs.control's (tests/runs/test_control.py, on a fake clock)."""
    handle = RunHandle(tiny(total_steps=100_000), snapshot_interval=0.0, speed=1e-3).start()
    wait_for(lambda: (handle.snapshot() or None) is not None and handle.snapshot().env_steps >= 1)
    handle.step_once()
    wait_for(lambda: handle.status == "paused")
    assert handle.snapshot().env_steps == 2
    with pytest.raises(ValueError, match="speed must be None"):
        handle.set_speed(0)
    handle.set_speed(None)
    handle.resume()
    wait_for(lambda: handle.snapshot().env_steps > 200)
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
    assert len(store.metrics.episodes(handle.id)) == handle.snapshot().episodes
    store.close()


def test_a_run_nobody_watches_stops_by_itself() -> None:
    handle = RunHandle(tiny(total_steps=100_000), idle_timeout=0.5).start()
    assert handle.join(30)
    assert handle.status == "stopped"
    assert "nobody watched this run for 0.5 s" in (handle.error or "")


def test_a_paused_run_nobody_watches_stays_paused() -> None:
    """It costs no CPU (the registry bounds how many are held): the idle rule is for runs that
    train. Resumed, it is idle again once nobody has polled it for the timeout."""
    handle = RunHandle(tiny(total_steps=100_000), idle_timeout=0.5).start(paused=True)
    wait_for(lambda: handle.status == "paused", 30)
    assert not handle.join(2.0)  # four idle timeouts later, still paused
    assert handle.status == "paused"
    handle.resume()
    assert handle.join(30)
    assert "nobody watched this run for 0.5 s" in (handle.error or "")


def test_polling_keeps_a_run_alive(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a clock the test moves: polled every 20 s for 100 s, a run whose idle timeout is 30 s
    trains on; left alone for 40 s, it stops by itself."""
    clock = ShiftedTime()
    monkeypatch.setattr(handle_module, "time", clock)
    handle = RunHandle(tiny(total_steps=100_000), idle_timeout=30.0, snapshot_interval=0.01)
    handle.start()
    wait_for(lambda: handle.status == "running")
    for _ in range(5):
        clock.skip(20.0)
        handle.snapshot()  # a watcher's poll
        polled = handle.snapshot(touch=False)
        # A later snapshot: the relay, which checks for idleness after each, has looked since.
        wait_for(lambda polled=polled: handle.snapshot(touch=False) is not polled)
    assert handle.status == "running"
    clock.skip(40.0)
    assert handle.join(30)
    assert (handle.status, handle.error) == ("stopped", "stopped: nobody watched this run for 30 s")


def _waiting_for_snapshot(handle: RunHandle) -> list:
    """`handle.wait_for_snapshot(3600)` in a thread; the list gets its result when it returns
    (a test waits for that with `wait_for`: a wait that missed its wake-up would fail it)."""
    result: list = []
    threading.Thread(
        target=lambda: result.append(handle.wait_for_snapshot(3600)), daemon=True
    ).start()
    return result


def test_wait_for_snapshot_ends_with_the_first_snapshot() -> None:
    handle = RunHandle(tiny()).start(paused=True)
    result = _waiting_for_snapshot(handle)
    wait_for(lambda: result, 60, what="the first snapshot did not end the wait")
    assert result[0] is not None and result[0].env_steps == 0
    handle.stop()


def test_wait_for_snapshot_of_a_run_not_started_returns_none_at_once() -> None:
    """A queued run may wait minutes for a slot: nobody waits for its first snapshot."""
    handle = RunHandle(tiny())
    result = _waiting_for_snapshot(handle)
    wait_for(lambda: result, 60, what="waited for a run that was never started")
    assert result == [None]


def test_wait_for_snapshot_ends_when_the_run_fails_before_sending_one() -> None:
    handle = RunHandle(tiny().with_overrides({"env.kwargs": {"bogus": 1}}))
    started = handle.start()
    result = _waiting_for_snapshot(started)
    wait_for(lambda: result, 60, what="a run that failed at once kept the wait going")
    assert handle.join(60) and handle.status == "failed"


def test_a_paused_run_plays_an_episode_and_sends_its_memory_on_request() -> None:
    """Play an episode now, and the memory explorer's view: asked through the handle, served by
    the paused run; the view is kept by the handle though later snapshots do not carry it, and
    a second request within its freshness is not sent."""
    handle = RunHandle(tiny(), snapshot_interval=0.05).start(paused=True)
    wait_for(lambda: handle.snapshot() is not None and handle.status == "paused")
    for _ in range(40):
        handle.step_once()
    wait_for(lambda: handle.snapshot().env_steps == 40)
    before = len(handle.snapshot().greedy)
    handle.play_episode()
    wait_for(lambda: len(handle.snapshot().greedy) == before + 1, what="no episode played")
    assert handle.snapshot().played.env_steps == 40
    assert handle.memories is None
    handle.request_memories()
    view = wait_for(lambda: handle.memories, what="no memory view")
    assert view.env_steps == 40 and view.size == 40
    handle.step_once()
    wait_for(lambda: handle.snapshot().env_steps == 41)
    assert handle.snapshot().memories is None and handle.memories is view
    sent = []
    send = handle._send  # noqa: SLF001 - what goes out
    handle._send = lambda *command: sent.append(command)  # noqa: SLF001
    handle.request_memories()  # fresh (received just now): not asked again
    handle.request_memories(max_age=0.0)
    handle._send = send  # noqa: SLF001
    assert sent == [("memories",)]
    handle.stop()
