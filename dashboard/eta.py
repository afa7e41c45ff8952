"""How long a run has left, and how long a queued run will wait, in words a class reads at a glance.

remaining = (total env steps - env steps done) / steps per second, measured over the run's recent
steps. A queued run at place k starts when k of the runs training now have ended, so it waits
about the k-th shortest of their remaining times (sooner if someone stops a run).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = ["duration_text", "queue_wait_seconds", "remaining_seconds"]


def remaining_seconds(env_steps: int, total_steps: int, steps_per_second: float) -> float | None:
    """Seconds until the budget is spent at the current rate; None while there is no rate."""
    if steps_per_second <= 0 or not math.isfinite(steps_per_second):
        return None
    return max(0, total_steps - env_steps) / steps_per_second


def queue_wait_seconds(place: int, remaining: Iterable[float | None]) -> float | None:
    """About how long the run at ``place`` (1 = next) of the queue waits: the place-th shortest
    remaining time of the runs training now. None when fewer of them have a known end."""
    if place < 1:
        raise ValueError(f"place must be at least 1, got {place}")
    known = sorted(seconds for seconds in remaining if seconds is not None)
    return known[place - 1] if place <= len(known) else None


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
