"""Tests for rdqn.runs.control: requests honoured between steps, and the loop that records them."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from rdqn.runs import control
from rdqn.runs.control import PAUSE, RUN, STEP, STOP, RunControls, drive
from rdqn.runs.lifecycle import RecordedRun
from rdqn.runs.store import RunStore
from rdqn.training.telemetry import Telemetry
from tests.run_helpers import tiny, wait_for


def test_next_action_follows_the_requests() -> None:
    controls = RunControls()
    assert controls.next_action(paused_recorded=False) == RUN
    controls.pause()
    assert controls.next_action(paused_recorded=False) == PAUSE  # once, to record the pause
    controls.step_once()
    controls.step_once()
    assert controls.next_action(paused_recorded=True) == STEP
    assert controls.next_action(paused_recorded=True) == STEP
    controls.resume()
    assert controls.next_action(paused_recorded=True) == RUN
    controls.stop()
    assert controls.next_action(paused_recorded=False) == STOP


def test_a_paused_loop_blocks_until_a_request_wakes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    controls = RunControls(paused=True)
    wake = controls._wake
    waits: list[float | None] = []

    def counted_wait(timeout: float | None = None) -> bool:
        waits.append(timeout)
        return threading.Condition.wait(wake, timeout)

    monkeypatch.setattr(wake, "wait", counted_wait)
    answers: list[str] = []
    waiter = threading.Thread(target=lambda: answers.append(controls.next_action(True)))
    waiter.start()
    wait_for(lambda: len(waits) >= 2)  # it waited, woke with nothing asked, and waits again
    assert answers == [] and waiter.is_alive()
    controls.step_once()
    waiter.join(10)
    assert answers == [STEP]


def test_stop_keeps_the_first_reason() -> None:
    controls = RunControls()
    controls.stop("stopped: nobody watched this run for 120 s")
    controls.stop("stopped: the server shut down")
    assert controls.stopping
    assert controls.stop_reason == "stopped: nobody watched this run for 120 s"


@pytest.mark.parametrize(
    "request_",
    [
        RunControls.pause,
        RunControls.step_once,
        RunControls.resume,
        RunControls.stop,
        lambda controls: controls.set_speed(None),
    ],
    ids=["pause", "step", "resume", "stop", "speed"],
)
def test_every_request_wakes_a_throttled_loop(request_) -> None:  # noqa: ANN001
    """At a slow speed the loop waits for its next tick; a teacher's Pause (or any request)
    must not wait for it too."""
    controls = RunControls(speed=0.001)  # a step every 1,000 s
    waits: list[float | None] = []
    wake = controls._wake

    def counted_wait(timeout: float | None = None) -> bool:
        waits.append(timeout)
        return threading.Condition.wait(wake, timeout)

    wake.wait = counted_wait  # type: ignore[method-assign]
    waiter = threading.Thread(target=controls.throttle, args=(time.monotonic(),), daemon=True)
    waiter.start()
    wait_for(lambda: waits)  # it is waiting for its tick
    request_(controls)
    waiter.join(30)
    assert not waiter.is_alive()


@pytest.mark.parametrize(
    "request_",
    [RunControls.pause, RunControls.step_once, RunControls.stop],
    ids=["pause", "step", "stop"],
)
def test_a_request_made_while_a_slow_step_ran_does_not_wait_for_the_tick(request_) -> None:  # noqa: ANN001
    """The request comes before the loop waits (it was inside the step): its wake-up reached
    nobody, and the loop must not wait out the tick (1,000 s at this speed) all the same."""
    controls = RunControls(speed=0.001)
    request_(controls)
    waiter = threading.Thread(target=controls.throttle, args=(time.monotonic(),), daemon=True)
    waiter.start()
    waiter.join(30)
    assert not waiter.is_alive()


class StoppedClock:
    """`time` for rdqn.runs.control: a monotonic clock that moves only when the controls wait
    (by the wait's timeout, as if it had run out) or when the test moves it."""

    def __init__(self) -> None:
        self.now = 100.0
        self.waits: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def wait(self, timeout: float | None = None) -> bool:
        assert timeout is not None
        self.waits.append(timeout)
        self.now += timeout
        return False


def test_throttle_spaces_steps_by_the_speed(monkeypatch: pytest.MonkeyPatch) -> None:
    """At 20 steps/s each step waits for its tick, 0.05 s after the one before; a loop that
    fell behind (a slow step) catches up at most 1 s of steps; at full speed nothing waits."""
    clock = StoppedClock()
    monkeypatch.setattr(control, "time", clock)
    controls = RunControls(speed=20.0)
    monkeypatch.setattr(controls._wake, "wait", clock.wait)
    tick = clock.monotonic()
    for k in range(1, 11):
        tick = controls.throttle(tick)
        assert tick == pytest.approx(100.0 + 0.05 * k) and clock.now == tick
    assert clock.waits == pytest.approx([0.05] * 10)
    clock.now += 5.0  # a step that took 5 s
    tick = controls.throttle(tick)
    assert tick == pytest.approx(clock.now - 1.0)  # 1 s behind: 20 steps at once, then on
    assert clock.waits == pytest.approx([0.05] * 10)
    controls.set_speed(None)
    assert controls.throttle(tick) == clock.now and len(clock.waits) == 10
    with pytest.raises(ValueError, match=r"speed must be None \(full speed\) or > 0 steps/s"):
        controls.set_speed(-1)


def test_drive_records_pause_and_resume_and_ends_stopped(tmp_path: Path) -> None:
    snapshots: list[Telemetry] = []
    with RunStore(tmp_path / "rdqn.db") as store:
        run = RecordedRun(tiny(100_000), store)
        run_id = run.create()
        controls = RunControls()
        loop = threading.Thread(
            target=drive, args=(run, controls, snapshots.append), kwargs={"snapshot_interval": 0.05}
        )
        loop.start()
        wait_for(lambda: store.get_run(run_id).status == "running")
        controls.pause()
        wait_for(lambda: store.get_run(run_id).status == "paused")
        wait_for(lambda: snapshots[-1].status == "paused")  # pages see the run's own status
        frozen = snapshots[-1].env_steps
        controls.step_once()  # paused, the loop takes exactly the steps it is asked for
        wait_for(lambda: snapshots[-1].env_steps != frozen)
        assert snapshots[-1].env_steps == frozen + 1
        controls.resume()
        wait_for(lambda: store.get_run(run_id).status == "running")
        controls.stop("stopped by its owner")
        loop.join(10)
        record = store.get_run(run_id)
    assert record.status == "stopped" and record.error == "stopped by its owner"
    assert (snapshots[-1].status, snapshots[-1].error) == ("stopped", "stopped by its owner")
    assert record.env_steps == snapshots[-1].env_steps > frozen


def test_drive_records_a_crash_as_failed_and_returns(tmp_path: Path) -> None:
    def broken(_: Telemetry) -> None:
        raise RuntimeError("renderer gone")

    with RunStore(tmp_path / "rdqn.db") as store:
        run = RecordedRun(tiny(200), store)
        drive(run, RunControls(), broken)
        record = store.get_run(run.id)
    assert record.status == "failed"
    assert record.error == "RuntimeError: renderer gone"
