"""Final statuses a full disk kept out of the store's file, held in memory until written.

When the disk fills, the write that records a run's end (``failed``, ``finished``, ``stopped``)
fails with it. Without a memory of it, the run would read ``running`` on every page until its
server ended, and ``interrupted`` after. `RunStore` keeps such a status here, reads the run with
it, and writes it at the first read, every few seconds, that finds space (`RunStore.set_status`).
"""

from __future__ import annotations

import threading

__all__ = ["UnwrittenStatuses"]


class UnwrittenStatuses:
    """Run id -> (status, error) not yet in the file. Thread-safe; cheap to ask while empty."""

    def __init__(self) -> None:
        self._statuses: dict[str, tuple[str, str | None]] = {}
        self._lock = threading.Lock()

    def __bool__(self) -> bool:
        return bool(self._statuses)

    def keep(self, run_id: str, status: str, error: str | None) -> None:
        """Hold the status the file could not take (a later one replaces it)."""
        with self._lock:
            self._statuses[run_id] = (status, error)

    def written(self, run_id: str) -> None:
        """The file has the run's status now (or the run is gone): nothing is left to write."""
        if self._statuses:
            with self._lock:
                self._statuses.pop(run_id, None)

    def get(self, run_id: str, stored: tuple[str, str | None]) -> tuple[str, str | None]:
        """The run's (status, error): the one held here, else ``stored`` (as the file has it)."""
        return self._statuses.get(run_id, stored)

    def copy(self) -> dict[str, tuple[str, str | None]]:
        """What is held now, by run id."""
        with self._lock:
            return dict(self._statuses)
