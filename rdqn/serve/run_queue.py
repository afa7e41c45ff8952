"""The queue of a registry's runs waiting for a training slot (`rdqn.serve.registry`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from rdqn.serve.handle import RunHandle

__all__ = ["QueuedRun", "RunQueue"]


class QueuedRun(NamedTuple):
    """One entry of a `RunQueue`: a run and how it goes on when a slot frees."""

    handle: RunHandle
    """The run: a new one waiting to start, or a paused one waiting to train again
    (`RunRegistry.unpause`)."""
    start_paused: bool
    """Start the new run paused (it then holds no training slot); False for a paused run."""


class RunQueue:
    """Runs waiting for a training slot, first in line first (`QueuedRun` entries).

    Not thread-safe by itself: the registry's lock guards it.
    """

    def __init__(self) -> None:
        self._entries: list[QueuedRun] = []

    def append(self, handle: RunHandle, start_paused: bool = False) -> None:
        """Queue ``handle`` last."""
        self._entries.append(QueuedRun(handle, start_paused))

    def extend(self, handles: Iterable[RunHandle]) -> None:
        """Queue ``handles`` last, in order, none to start paused."""
        self._entries.extend(QueuedRun(handle, False) for handle in handles)

    def insert(self, place: int, handle: RunHandle, start_paused: bool = False) -> None:
        """Queue ``handle`` at 0-based ``place`` (as `list.insert`: past the end is last)."""
        self._entries.insert(place, QueuedRun(handle, start_paused))

    def pop_first(self) -> QueuedRun:
        """Take the first entry out of the queue; `IndexError` if it is empty."""
        return self._entries.pop(0)

    def discard(self, handle: RunHandle) -> None:
        """Take ``handle``'s entries out of the queue, if it has any."""
        self._entries = [entry for entry in self._entries if entry.handle is not handle]

    def index_of(self, handle: RunHandle) -> int | None:
        """The 0-based place of ``handle``'s first entry; None if it is not queued."""
        for place, entry in enumerate(self._entries):
            if entry.handle is handle:
                return place
        return None

    def position(self, run_id: str) -> tuple[int, int] | None:
        """(1-based place, length) of the run ``run_id`` in the queue; None if it is not
        queued."""
        ids = self.ids()
        return (ids.index(run_id) + 1, len(ids)) if run_id in ids else None

    def ids(self) -> list[str]:
        """The ids of the queued runs, first in line first."""
        return [entry.handle.id for entry in self._entries]

    def clear(self) -> None:
        """Empty the queue."""
        self._entries.clear()

    def __iter__(self) -> Iterator[QueuedRun]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)
