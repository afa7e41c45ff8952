"""`rdqn.dashboard.live_run`'s pace for a starting run: the live page redraws fast only while its
run starts (`refresh_seconds`), and the page run right after Start waits for the run's first
snapshot (`wait_for_first_snapshot`)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rdqn.dashboard import live_run
from rdqn.dashboard.live_run import (
    REFRESH_S,
    STARTING_REFRESH_S,
    refresh_seconds,
    wait_for_first_snapshot,
)
from rdqn.runs.store import RunStore
from rdqn.serve.executors import ThreadExecutor
from rdqn.serve.handle import RunHandle
from rdqn.serve.protocol import WarmUp
from rdqn.serve.registry import RunRegistry
from tests.run_helpers import tiny, wait_for


@pytest.fixture
def runs(tmp_path: Path) -> Iterator[RunRegistry]:
    with RunStore(tmp_path / "rdqn.db") as store:
        registry = RunRegistry(store, executor=ThreadExecutor(), max_active=1)
        yield registry
        registry.shutdown()


def test_fast_while_the_run_is_handed_over_and_has_sent_nothing(runs: RunRegistry) -> None:
    assert STARTING_REFRESH_S < REFRESH_S
    starting = RunHandle(tiny(), store=runs.store, executor=ThreadExecutor())  # not started yet
    assert refresh_seconds(starting, runs) == STARTING_REFRESH_S


def test_the_usual_pace_with_no_run_a_training_run_and_a_queued_run(runs: RunRegistry) -> None:
    assert refresh_seconds(None, runs) == REFRESH_S
    training, queued = runs.enqueue([tiny(1_000_000), tiny(1_000_000)])
    wait_for(lambda: training.snapshot() is not None, 60)
    assert refresh_seconds(training, runs) == REFRESH_S
    assert runs.position(queued.id) == (1, 1)
    assert refresh_seconds(queued, runs) == REFRESH_S  # the queue can take minutes


def _in_a_thread(wait: Callable[[], None]) -> threading.Thread:
    """``wait`` in a thread (a test waits for it with `wait_for`: a wait that missed its end
    would fail it)."""
    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    return thread


def test_the_page_run_after_start_waits_for_the_runs_first_snapshot(
    runs: RunRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page that follows Start draws the run's counters, not "starting" (the bound raised:
    a busy test machine may take longer than a teacher's to build the run)."""
    monkeypatch.setattr(live_run, "FIRST_SNAPSHOT_WAIT_S", 3600.0)
    runs.executor.prepare()
    wait_for(lambda: runs.warm_up_progress().ready, 120, what="the kernels never loaded")
    started = runs.start(tiny(1_000_000))
    waiting = _in_a_thread(lambda: wait_for_first_snapshot(started, runs))
    wait_for(lambda: not waiting.is_alive(), 60, what="the first snapshot did not end the wait")
    assert started.snapshot() is not None


class _Workers:
    """A registry's warm-up as the page sees it: ready, or still loading the kernels (a fresh
    server's first seconds)."""

    def __init__(self, ready: bool) -> None:
        self.ready = ready

    def warm_up_progress(self) -> WarmUp:
        return WarmUp(5, 5) if self.ready else WarmUp(1, 5)


def test_no_wait_while_the_workers_warm_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """The page shows the warm-up's progress at once instead."""
    handle = RunHandle(tiny(), executor=ThreadExecutor())  # created, no snapshot yet
    asked: list[float] = []
    monkeypatch.setattr(handle, "wait_for_snapshot", asked.append)
    wait_for_first_snapshot(handle, _Workers(ready=False))  # type: ignore[arg-type]
    assert asked == []
    wait_for_first_snapshot(handle, _Workers(ready=True))  # type: ignore[arg-type]
    assert asked == [live_run.FIRST_SNAPSHOT_WAIT_S]


def test_no_wait_for_a_queued_run_or_none(
    runs: RunRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A queued run can wait minutes: the page shows its place in the queue at once."""
    monkeypatch.setattr(live_run, "FIRST_SNAPSHOT_WAIT_S", 3600.0)
    training, queued = runs.enqueue([tiny(1_000_000), tiny(1_000_000)])
    for handle in (queued, None):
        waiting = _in_a_thread(lambda h=handle: wait_for_first_snapshot(h, runs))
        wait_for(lambda w=waiting: not w.is_alive(), 60, what=f"waited for {handle}")
    assert queued.snapshot() is None
