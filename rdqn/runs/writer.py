"""Batched metric writes for one run: training never waits on SQLite for a row.

A `RunWriter` keeps episode and step rows in memory and hands them to
`RunStore.write_metrics` in one transaction when `flush_every` seconds have passed or
`max_pending` rows are waiting; the check on each add is one clock read. A greedy episode played
for the run's watchers (`add_played`: seconds apart) is written at once, with the rows pending.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from rdqn.runs.schema import EPISODE_KEYS, EVALUATION_KEYS, STEP_KEYS
from rdqn.validation import check_integer, check_real

if TYPE_CHECKING:  # the lifecycle writes through this writer
    from rdqn.runs.status import RunRecords
    from rdqn.training.episodes import PlayedEpisode

__all__ = ["RunWriter"]


class RunWriter:
    """Buffers one run's metric rows in memory and writes them in batches.

    A flush happens inside :meth:`add_episode` / :meth:`add_step` once ``flush_every`` seconds have
    passed since the last one or ``max_pending`` rows are waiting, so the per-row cost on the
    training thread is a list append and a clock compare. Rows, plus the run's counters as
    ``progress()`` (their owner, the trainer) gives them at that moment, go to the store in one
    transaction: the counters written are those of the rows written, whenever the flush comes
    (a copy of the counters taken earlier would lag a row added since, and stay behind for good
    if the next write failed: a full disk). If a write fails the rows stay pending, the error
    propagates, and the next automatic attempt waits for the next deadline.
    """

    def __init__(
        self,
        store: RunRecords,
        run_id: str,
        *,
        flush_every: float = 1.0,
        max_pending: int = 1000,
        clock: Callable[[], float] = time.monotonic,
        progress: Callable[[], Mapping[str, int]] | None = None,
    ) -> None:
        self.flush_every = check_real("flush_every", flush_every, minimum=0.0)
        self.max_pending = check_integer("max_pending", max_pending, minimum=1)
        self.store = store
        self.run_id = run_id
        self._clock = clock
        self._lock = threading.Lock()
        self._episodes: list[dict[str, Any]] = []
        self._steps: list[dict[str, Any]] = []
        self._greedy: list[dict[str, Any]] = []
        self._evaluations: list[dict[str, Any]] = []
        self._watched: PlayedEpisode | None = None
        self._progress = progress
        self._flush_at = max_pending
        self._deadline = clock() + self.flush_every
        self._closed = False

    @property
    def pending(self) -> int:
        """Rows waiting to be written."""
        return len(self._episodes) + len(self._steps) + len(self._greedy) + len(self._evaluations)

    def add_episode(self, row: Mapping[str, Any] | None = None, /, **values: Any) -> None:
        """Queue one episode row, as a mapping or keywords (``return_=`` stands for ``return``)."""
        merged = dict(row or {})
        merged.update(values)
        if "return_" in merged:
            merged["return"] = merged.pop("return_")
        if not merged.keys() <= EPISODE_KEYS or "episode" not in merged:
            raise ValueError(
                f"episode rows need 'episode' and only keys {sorted(EPISODE_KEYS)}, got "
                f"{sorted(merged)}"
            )
        self._add(self._episodes, merged)

    def add_step(self, **row: Any) -> None:
        """Queue one per-update row (keys of ``STEP_COLUMNS``; ``updates`` is required)."""
        if not row.keys() <= STEP_KEYS or "updates" not in row:
            raise ValueError(
                f"step rows need 'updates' and only keys {sorted(STEP_KEYS)}, got {sorted(row)}"
            )
        self._add(self._steps, row)

    def add_evaluation(self, **row: Any) -> None:
        """Queue one episode of a greedy evaluation (keys of ``EVALUATION_COLUMNS``;
        ``env_steps`` and ``episode`` are required)."""
        if not row.keys() <= EVALUATION_KEYS or not {"env_steps", "episode"} <= row.keys():
            raise ValueError(
                "evaluation rows need 'env_steps', 'episode' and only keys "
                f"{sorted(EVALUATION_KEYS)}, got {sorted(row)}"
            )
        self._add(self._evaluations, row)

    def add_played(self, played: int, episode: PlayedEpisode) -> None:
        """Write the run's ``played``-th greedy episode now: its return and length, and the
        episode itself as the latest one watched."""
        row = {
            "played": played,
            "env_steps": episode.env_steps,
            "return": episode.episode_return,
            "length": episode.length,
        }
        with self._lock:
            if self._closed:
                raise RuntimeError(f"RunWriter for run {self.run_id!r} is closed")
            self._greedy.append(row)
            self._watched = episode
            self._flush_locked()

    def _add(self, queue: list[dict[str, Any]], row: dict[str, Any]) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError(f"RunWriter for run {self.run_id!r} is closed")
            queue.append(row)
            if self.pending >= self._flush_at or self._clock() >= self._deadline:
                self._flush_locked()

    def _flush_locked(self) -> None:
        now = self._clock()
        self._deadline = now + self.flush_every
        if not (self.pending or self._progress is not None):
            return
        try:
            self.store.write_metrics(
                self.run_id,
                episodes=self._episodes,
                steps=self._steps,
                greedy=self._greedy,
                evaluations=self._evaluations,
                watched=self._watched,
                progress=None if self._progress is None else self._progress(),
            )
        except BaseException:
            self._flush_at = self.pending + self.max_pending
            raise
        self._episodes, self._steps, self._greedy, self._watched = [], [], [], None
        self._evaluations = []
        self._flush_at = self.max_pending

    def flush(self) -> None:
        """Write every pending row and the latest progress now."""
        with self._lock:
            self._flush_locked()

    def close(self) -> None:
        """Flush and refuse further rows. Idempotent."""
        with self._lock:
            if not self._closed:
                self._flush_locked()
                self._closed = True

    def __enter__(self) -> RunWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
