"""Tests for rdqn.runs.writer: batched metric writes, flush rules, validation, failures, cost."""

from __future__ import annotations

import math

import pytest

from rdqn.runs.store import RunStore
from rdqn.runs.writer import RunWriter
from tests.runs.store_helpers import new_run, step_rows


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_writer_flushes_on_max_pending(store: RunStore) -> None:
    run_id = new_run(store)
    writer = RunWriter(store, run_id, flush_every=3600, max_pending=5, clock=FakeClock())
    for row in step_rows(4):
        writer.add_step(**row)
    assert writer.pending == 4 and store.metrics.steps(run_id).empty
    writer.add_step(**step_rows(1, start=4)[0])
    assert writer.pending == 0 and len(store.metrics.steps(run_id)) == 5


def test_writer_flushes_on_time(store: RunStore) -> None:
    run_id = new_run(store)
    clock = FakeClock()
    writer = RunWriter(store, run_id, flush_every=1.0, max_pending=1000, clock=clock)
    writer.add_episode({"episode": 0, "return": 1.0})
    clock.now = 0.5
    writer.add_episode(episode=1, return_=2.0, length=3)
    assert store.metrics.episodes(run_id).empty
    clock.now = 1.0
    writer.add_episode(episode=2)
    episodes = store.metrics.episodes(run_id)
    assert list(episodes["episode"]) == [0, 1, 2]
    assert list(episodes["return"].iloc[:2]) == [1.0, 2.0]


def test_the_counters_written_are_those_of_the_rows_written(store: RunStore) -> None:
    """The counters come from their owner at each flush: a flush that an episode's row sets
    off writes that episode in the counters too, and the next flush failing (a full disk)
    cannot leave the run's counters behind its rows."""
    run_id = new_run(store)
    clock = FakeClock()
    counters = {"env_steps": 0, "updates": 0, "episodes": 0}
    writer = RunWriter(store, run_id, flush_every=1.0, clock=clock, progress=counters.copy)
    for episode in (1, 2, 3):
        clock.now = float(episode - 1)
        counters.update(env_steps=10 * episode, episodes=episode)
        writer.add_episode(episode=episode, length=10)
    record = store.get_run(run_id)
    assert (
        (record.episodes, record.env_steps) == (3, 30) == (len(store.metrics.episodes(run_id)), 30)
    )
    writer.flush()  # with no new row: the counters alone
    counters.update(env_steps=35, updates=2)
    writer.flush()
    assert (store.get_run(run_id).env_steps, store.get_run(run_id).updates) == (35, 2)


def test_writer_close_flushes_and_refuses_more(store: RunStore) -> None:
    run_id = new_run(store)
    with RunWriter(store, run_id, flush_every=3600) as writer:
        writer.add_step(updates=1, loss=0.5)
        writer.add_episode(episode=0, length=5)
    assert len(store.metrics.steps(run_id)) == 1 and len(store.metrics.episodes(run_id)) == 1
    writer.close()
    with pytest.raises(RuntimeError, match="closed"):
        writer.add_step(updates=2)


def test_writer_rejects_bad_rows_at_add_time(store: RunStore) -> None:
    writer = RunWriter(store, new_run(store))
    with pytest.raises(ValueError, match="step rows need 'updates'"):
        writer.add_step(loss=1.0)
    with pytest.raises(ValueError, match="only keys"):
        writer.add_step(updates=1, lr=0.1)
    with pytest.raises(ValueError, match="episode rows need 'episode'"):
        writer.add_episode(reward=1.0)
    assert writer.pending == 0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"flush_every": -1}, "flush_every must be a finite number >= 0, got -1"),
        ({"flush_every": math.inf}, "flush_every must be a finite number >= 0, got inf"),
        ({"max_pending": 0}, "max_pending must be an integer >= 1"),
    ],
)
def test_writer_validates_arguments(store: RunStore, kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        RunWriter(store, new_run(store), **kwargs)


def test_writer_keeps_rows_when_a_flush_fails(store: RunStore) -> None:
    run_id = new_run(store)
    writer = RunWriter(store, run_id, flush_every=3600, max_pending=2, clock=FakeClock())
    store.delete_run(run_id)
    writer.add_step(updates=0)
    with pytest.raises(KeyError):
        writer.add_step(updates=1)
    assert writer.pending == 2
    writer.add_step(updates=2)  # no retry on every add after a failure
    assert writer.pending == 3


class CountedStore:
    """A run store that counts its `write_metrics` calls and the rows of each."""

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self.writes: list[int] = []

    def write_metrics(self, run_id: str, **rows: object) -> None:
        self.writes.append(len(rows.get("episodes", ())) + len(rows.get("steps", ())))
        self.store.write_metrics(run_id, **rows)

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)


def test_writer_costs_one_transaction_per_thousand_rows(store: RunStore) -> None:
    """What keeps a row cheap on the training thread (about 8 us, flush included): 10,000
    add_step calls and a flush are ten transactions of a thousand rows (`max_pending`), none
    on the other adds."""
    run_id = new_run(store)
    counted = CountedStore(store)
    writer = RunWriter(counted, run_id, flush_every=3600, clock=FakeClock())  # type: ignore[arg-type]
    for row in step_rows(10_000):
        writer.add_step(**row)
    writer.flush()
    assert counted.writes == [1_000] * 10
    assert len(store.metrics.steps(run_id)) == 10_000
