"""Tests for rdqn.serve.run_queue: the queue of runs waiting for a training slot."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from rdqn.serve.run_queue import QueuedRun, RunQueue


@dataclass(eq=False)  # compared by identity, as the queue compares handles
class Handle:
    """A stand-in for a `RunHandle`: the queue reads only its id."""

    id: str


def entries(queue: RunQueue) -> list[tuple[str, bool]]:
    return [(entry.handle.id, entry.start_paused) for entry in queue]


def queue_of(*handles: Any) -> RunQueue:
    queue = RunQueue()
    queue.extend(handles)
    return queue


def test_an_empty_queue() -> None:
    queue = RunQueue()
    assert not queue and len(queue) == 0
    assert queue.ids() == [] and list(queue) == []
    assert queue.position("a") is None
    assert queue.index_of(Handle("a")) is None
    with pytest.raises(IndexError):
        queue.pop_first()


def test_runs_leave_first_in_first_out_with_how_they_start() -> None:
    a, b, c = Handle("a"), Handle("b"), Handle("c")
    queue = RunQueue()
    queue.append(a)
    queue.append(b, start_paused=True)
    queue.extend([c])
    assert queue and len(queue) == 3
    assert entries(queue) == [("a", False), ("b", True), ("c", False)]
    first = queue.pop_first()
    assert first == QueuedRun(a, False) and first.handle is a and not first.start_paused
    handle, start_paused = queue.pop_first()  # an entry unpacks as (handle, start_paused)
    assert handle is b and start_paused
    assert queue.ids() == ["c"]


def test_insert_at_a_place() -> None:
    a, b, c, d = Handle("a"), Handle("b"), Handle("c"), Handle("d")
    queue = queue_of(a, b)
    queue.insert(0, c, start_paused=True)
    assert entries(queue) == [("c", True), ("a", False), ("b", False)]
    queue.insert(10, d)  # past the end: last
    assert queue.ids() == ["c", "a", "b", "d"]


def test_discard_takes_out_every_entry_of_that_handle_only() -> None:
    a, b = Handle("a"), Handle("b")
    twin = Handle("a")  # the same id, another handle (a resumed run's)
    queue = queue_of(a, b, twin, a)
    queue.discard(a)
    assert [entry.handle for entry in queue] == [b, twin]
    queue.discard(Handle("zz"))  # not queued: nothing changes
    queue.discard(a)
    assert [entry.handle for entry in queue] == [b, twin]


def test_index_of_is_the_0_based_place_of_a_handles_first_entry() -> None:
    a, b, c = Handle("a"), Handle("b"), Handle("c")
    queue = queue_of(a, b, b)
    assert queue.index_of(a) == 0  # 0, not None: a falsy place is still a place
    assert queue.index_of(b) == 1
    assert queue.index_of(c) is None
    assert queue.index_of(Handle("a")) is None  # by identity, not id


def test_position_is_the_1_based_place_and_length_by_run_id() -> None:
    queue = queue_of(Handle("a"), Handle("b"), Handle("c"))
    assert queue.position("a") == (1, 3)
    assert queue.position("c") == (3, 3)
    assert queue.position("d") is None
    queue.pop_first()
    assert queue.position("c") == (2, 2)


def test_clear_empties_it() -> None:
    queue = queue_of(Handle("a"), Handle("b"))
    queue.clear()
    assert not queue and queue.ids() == []
