"""Tests for rdqn.serve.registry: the cap on concurrent runs, the queue, stopping and reaping."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from rdqn.runs.resume import resumable
from rdqn.runs.schema import FINAL_STATUSES
from rdqn.runs.store import RunStore, owner_hash
from rdqn.serve.executors import _ThreadWorker
from rdqn.serve.registry import RunRegistry, ServerBusy
from tests.run_helpers import rdqn_threads, tiny, wait_for


@pytest.mark.slow  # 100 runs started and stopped
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


def test_shutdown_waits_for_a_run_that_ended_but_is_still_closing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run's status turns final before its worker thread has finished closing; shutdown (at
    interpreter exit) must wait for that too: a daemon worker still inside torch while the
    interpreter finalizes aborts the process (seen once in a few runs of a short test file)."""
    join = _ThreadWorker.join
    shutting_down = threading.Event()

    def slow_join(worker: _ThreadWorker, timeout: float) -> None:
        shutting_down.wait(timeout=60)  # the worker's last work, until shutdown waits for it
        join(worker, timeout)

    monkeypatch.setattr(_ThreadWorker, "join", slow_join)
    registry = RunRegistry(max_active=1)
    handle = registry.start(tiny(total_steps=60), owner="tab")
    wait_for(lambda: handle.status == "finished", timeout=60)
    assert not handle.join(timeout=0)  # ended, still closing
    handle_join = handle.join

    def join_once_asked(timeout: float | None = None) -> bool:
        shutting_down.set()
        return handle_join(timeout)

    monkeypatch.setattr(handle, "join", join_once_asked)
    registry.shutdown()
    assert shutting_down.is_set() and handle_join(timeout=0)


def test_registry_cap_answers_busy_at_once_and_queue_drains() -> None:
    registry = RunRegistry(max_active=1)
    first = registry.start(tiny(total_steps=100_000), owner="a")
    with pytest.raises(ServerBusy, match=r"server busy: 1 runs training \(limit 1\)"):
        registry.start(tiny(), owner="b")
    # At once: the refusal came while the run holding the slot trains, and left nothing behind.
    assert first.status not in FINAL_STATUSES and registry.runs(owner="b") == []
    queued = registry.enqueue([tiny(total_steps=60), tiny(total_steps=60)], owner="b")
    assert [h.status for h in queued] == ["created", "created"]
    assert registry.get(first.id) is first
    registry.stop(first.id)
    wait_for(lambda: all(h.status == "finished" for h in queued), timeout=60)
    registry.shutdown()


def test_a_queued_start_waits_its_turn_and_starts_paused_if_asked() -> None:
    registry = RunRegistry(max_active=1)
    first = registry.start(tiny(total_steps=100_000), owner="a")
    second = registry.start(tiny(total_steps=100_000), owner="b", queue=True, paused=True)
    third = registry.start(tiny(total_steps=100_000), owner="c", queue=True)
    assert (second.status, third.status) == ("created", "created")
    assert (registry.position(second.id), registry.position(third.id)) == ((1, 2), (2, 2))
    assert registry.position(first.id) is None
    registry.stop(third.id)  # leaving the queue: never started, recorded as stopped
    assert third.status == "stopped" and registry.position(second.id) == (1, 1)
    registry.stop(first.id)
    wait_for(lambda: second.status == "paused")
    assert registry.position(second.id) is None
    registry.shutdown()


def test_stop_owner_stops_only_that_sessions_runs() -> None:
    registry = RunRegistry(max_active=3, idle_timeout=60.0)
    mine = registry.start(tiny(total_steps=100_000), owner="tab-1")
    other = registry.start(tiny(total_steps=100_000), owner="tab-2")
    assert registry.stop_owner("tab-1") == 1  # asks, without waiting
    assert mine.join(30)
    assert mine.status == "stopped" and other.status in ("running", "paused")
    registry.shutdown()
    assert other.status == "stopped" and other.error == "stopped: the server shut down"


def test_an_away_owners_training_runs_pause_and_go_on_when_it_is_back() -> None:
    """`pause_owner` pauses only that owner's training runs (not one it paused itself, not
    another owner's); `unpause_runs` sets those training again."""
    registry = RunRegistry(max_active=3, idle_timeout=60.0)
    mine = registry.start(tiny(total_steps=100_000), owner="tab-1")
    held = registry.start(tiny(total_steps=100_000), owner="tab-1")
    other = registry.start(tiny(total_steps=100_000), owner="tab-2")
    wait_for(lambda: all(h.status == "running" for h in (mine, held, other)), 60)
    registry.pause(held.id, owner="tab-1")
    wait_for(lambda: held.status == "paused", 30)
    assert registry.pause_owner("tab-1") == [mine.id]
    wait_for(lambda: mine.status == "paused", 30)
    assert other.status == "running"
    registry.unpause_runs("tab-1", [mine.id])
    wait_for(lambda: mine.status == "running", 30)
    assert held.status == "paused"  # paused by its owner: it stays so
    registry.shutdown()


def test_shutdown_all_stops_the_runs_of_every_open_registry_once() -> None:
    """What the server's shutdown calls (an ASGI server ends on SIGTERM without atexit)."""
    from rdqn.serve.registry import shutdown_all

    first, second = RunRegistry(max_active=1), RunRegistry(max_active=1)
    runs = [r.start(tiny(total_steps=100_000), owner="a") for r in (first, second)]
    assert shutdown_all() >= 2
    assert [(run.status, run.error) for run in runs] == [
        ("stopped", "stopped: the server shut down")
    ] * 2
    assert shutdown_all() == 0  # shut down: not again


def test_registry_rejects_a_bad_cap() -> None:
    with pytest.raises(ValueError, match="max_active must be an integer >= 1, got 0"):
        RunRegistry(max_active=0)


def test_pausing_frees_the_training_slot_and_resuming_waits_for_one() -> None:
    registry = RunRegistry(max_active=1, idle_timeout=None)
    first = registry.start(tiny(total_steps=100_000), owner="a")
    second = registry.start(tiny(total_steps=100_000), owner="b", queue=True)
    assert second.status == "created" and registry.position(second.id) == (1, 1)
    registry.pause(first.id)  # a paused run holds memory, not a CPU slot
    assert first.expected_status == "paused"  # at once, for the slots; its worker then says so
    wait_for(lambda: second.status == "running" and first.status == "paused")
    assert registry.unpause(first.id) == (1, 1)  # no slot: it waits, paused
    assert first.status == first.expected_status == "paused"
    registry.pause(second.id)
    wait_for(lambda: first.status == "running" and second.status == "paused")
    assert registry.position(first.id) is None
    registry.shutdown()


def test_past_the_memory_cap_the_run_paused_longest_stops_resumable(tmp_path: Path) -> None:
    registry = RunRegistry(RunStore(tmp_path / "runs.db"), max_active=3, max_paused=1)
    oldest, newer = (registry.start(tiny(total_steps=100_000), owner="a") for _ in range(2))
    wait_for(lambda: oldest.snapshot() is not None and newer.snapshot() is not None)
    registry.pause(oldest.id)
    registry.pause(newer.id)
    # Each status is what its worker reports: under load the newer run's pause may land after
    # the older one has stopped (this once failed the test).
    wait_for(lambda: oldest.status == "stopped" and newer.status == "paused")
    assert "to free memory" in (oldest.error or "")
    registry.shutdown()
    assert resumable(registry.store, oldest.id)


def test_registry_rejects_a_bad_memory_cap() -> None:
    with pytest.raises(ValueError, match="max_paused must be an integer >= 0, got -1"):
        RunRegistry(max_paused=-1)


def test_a_run_past_the_servers_limits_is_refused_before_anything_is_filed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RDQN_LIMIT_CAPACITY", "1000")
    store = RunStore(tmp_path / "rdqn.db")
    registry = RunRegistry(store, max_active=1)
    too_big = tiny(**{"replay.capacity": 1001})
    with pytest.raises(ValueError, match=r"replay.capacity.*1,?001.*RDQN_LIMIT_CAPACITY"):
        registry.start(too_big, owner="a")
    with pytest.raises(ValueError, match="RDQN_LIMIT_CAPACITY"):
        registry.enqueue([tiny(), too_big], owner="a")  # one past the limit refuses them all
    first = registry.start(tiny(total_steps=100_000), owner="a")
    with pytest.raises(ValueError, match="RDQN_LIMIT_CAPACITY"):
        registry.replace(first.id, too_big, owner="a")
    assert first.expected_status == "running"  # a refused restart leaves the run as it was
    assert store.list_runs()["id"].tolist() == [first.id]
    registry.shutdown()
    store.close()


def test_runs_started_or_resumed_with_an_owner_keep_its_hash_in_the_store(
    tmp_path: Path,
) -> None:
    store = RunStore(tmp_path / "rdqn.db")
    registry = RunRegistry(store, max_active=2)
    mine = registry.start(tiny(total_steps=100_000), owner="browser")
    cli = registry.start(tiny(total_steps=40))
    assert store.get_run(mine.id).owner_hash == owner_hash("browser")
    assert store.get_run(cli.id).owner_hash is None
    registry.stop_owner("browser")  # its browser went away: the run is nobody's now
    assert mine.join(15) and resumable(store, mine.id)
    again = registry.resume(mine.id, owner="another browser", paused=True)
    assert store.get_run(again.id).owner_hash == owner_hash("another browser")
    registry.shutdown()
    store.close()


def test_a_registry_shut_down_starts_queues_and_resumes_nothing(tmp_path: Path) -> None:
    with RunStore(tmp_path / "rdqn.db") as store:
        registry = RunRegistry(store, max_active=1)
        registry.shutdown()
        for refused in (
            lambda: registry.start(tiny(), owner="tab"),
            lambda: registry.start(tiny(), owner="tab", queue=True),
            lambda: registry.enqueue([tiny()], owner="tab"),
        ):
            with pytest.raises(ServerBusy, match="shutting down"):
                refused()
        assert registry.runs() == [] and store.list_runs().empty  # nothing filed, nothing queued
