"""How long a run has left, and how long a queued run will wait, in words a class reads at a glance.

remaining = (total env steps - env steps done) / steps per second, measured over the run's recent
steps. A queued run waits for a training slot: the slots free as the runs training now end, and
each run ahead of it in the queue then holds a slot for its own duration (its budget at the
rate the training runs reach). So the run at place k starts when the k-th slot frees in that
schedule; with no run ahead, that is the k-th shortest remaining time (sooner if someone stops a
run).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Sequence

__all__ = ["duration_text", "queue_wait_seconds", "remaining_seconds"]


def remaining_seconds(env_steps: int, total_steps: int, steps_per_second: float) -> float | None:
    """Seconds until the budget is spent at the current rate; None while there is no rate."""
    if steps_per_second <= 0 or not math.isfinite(steps_per_second):
        return None
    return max(0, total_steps - env_steps) / steps_per_second


def queue_wait_seconds(
    place: int,
    remaining: Iterable[float | None],
    ahead: Sequence[float | None] | None = None,
) -> float | None:
    """About how long the run at ``place`` (1 = next) of the queue waits.

    ``remaining``: the remaining seconds of the runs training now (None: unknown, left out).
    ``ahead``: how long each run queued ahead of it trains once started, in queue order (None
    for one: unknown). Without ``ahead``, the place-th shortest remaining time, or None when
    fewer runs have a known end. With it, the slots free as the training runs end and each run
    ahead takes the first free one for its duration; the run at ``place`` starts when the next
    slot frees (None if a duration it waits for is unknown, or no slot has a known end)."""
    if place < 1:
        raise ValueError(f"place must be at least 1, got {place}")
    known = sorted(seconds for seconds in remaining if seconds is not None)
    if ahead is None:
        return known[place - 1] if place <= len(known) else None
    durations = list(ahead)[: place - 1]
    if not known or len(durations) < place - 1 or any(d is None for d in durations):
        return None
    slots = list(known)  # sorted: a heap already
    for duration in durations:
        assert duration is not None
        heapq.heappush(slots, heapq.heappop(slots) + duration)
    return slots[0]


def duration_text(seconds: float) -> str:
    """'under 10 s', 'about 40 s', 'about 3 min', 'about 1 h 5 min' (rounded up to the unit)."""
    if seconds < 10:
        return "under 10 s"
    if seconds < 60:
        return f"about {math.ceil(seconds / 10) * 10} s"
    minutes = math.ceil(seconds / 60)
    if minutes < 60:
        return f"about {minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"about {hours} h {minutes} min" if minutes else f"about {hours} h"
