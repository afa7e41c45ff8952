"""How long a run has left, and how long a queued run will wait, in words a class reads at a glance.

remaining = (total env steps - env steps done) / steps per second, at the run's smoothed rate
(`smooth_rate`): the rate its worker measures over the last few seconds swings with everything
else the machine does (other runs, evaluation episodes), and the time left swung with it
(2 min, 50 s, 2 min again on one page).

A queued run waits for a training slot: the slots free as the runs training now end, and each
run ahead of it in the queue then holds a slot for its own duration (its budget at the rate the
training runs reach). So the run at place k starts when the k-th slot frees in that schedule;
with no run ahead, that is the k-th shortest remaining time (sooner if someone stops a run).
"""

from __future__ import annotations

import heapq
import math
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "FORGET_AFTER_S",
    "HALF_LIFE_S",
    "RunRates",
    "SmoothedRate",
    "duration_text",
    "queue_wait_seconds",
    "remaining_seconds",
    "smooth_rate",
]

HALF_LIFE_S = 10.0
"""Seconds after which a measured rate counts half in the smoothed one: a rate that doubles
for a second moves the time left by about 7 %; a new speed shows within half a minute."""
FORGET_AFTER_S = 600.0
"""A run not seen for this long is forgotten (`RunRates`)."""


@dataclass(frozen=True)
class SmoothedRate:
    """A run's exponentially smoothed rate (env steps per second)."""

    rate: float
    seen_at: float
    """When the last measured rate was folded in (seconds of a monotonic clock)."""
    speed: float | None
    """The run's speed setting then (None: full speed); another speed starts afresh."""


def smooth_rate(
    previous: SmoothedRate | None,
    measured: float,
    now: float,
    *,
    speed: float | None = None,
    half_life: float = HALF_LIFE_S,
) -> SmoothedRate:
    """Fold the rate ``measured`` at time ``now`` into the smoothed rate ``previous``.

    An exponential moving average over time, not over readings (pages redraw about once a
    second, several pages may read one run, a busy server redraws late):

        r_now = r_prev + a * (x - r_prev),   a = 1 - 2^(-dt / h)

    with x the measured rate, dt = now - seen_at the seconds since the last reading and h the
    half-life: a reading's weight halves every h seconds, whatever the number of readings in
    between, and two readings at the same moment count as one. The first reading (``previous``
    None), or the first after the run's speed setting changed, is taken as it is. A run held to
    ``speed`` steps/s goes no faster: a reading above it counts as ``speed`` (the first reading
    after a teacher slows a run to 1 step/s was measured at full speed, and the time left said
    19 min, then 41 min, then 1 h 25 min for 16 h of work while it decayed). A reading that is
    not a positive finite rate (a paused run, no steps yet) changes nothing.

    h = 10 s: from r = 100 a reading x = 200 one second later gives a = 1 - 2^-0.1 = 0.0670,
    r = 106.7; ten seconds later, a = 0.5 and r = 150.
    """
    if not math.isfinite(measured) or measured <= 0:
        return previous if previous is not None else SmoothedRate(0.0, now, speed)
    if speed is not None:
        measured = min(measured, speed)
    if previous is None or previous.rate <= 0 or previous.speed != speed:
        return SmoothedRate(measured, now, speed)
    weight = 1.0 - 2.0 ** (-max(0.0, now - previous.seen_at) / half_life)
    return SmoothedRate(previous.rate + weight * (measured - previous.rate), now, speed)


class RunRates:
    """The smoothed rate of every run this server trains, by run id: the one place the dashboard
    keeps it, so every page that shows a run (its owner's, followers', a queued student's)
    reads the same time left. A run's snapshots say what its worker measured; this keeps only
    the smoothing across page redraws. Safe to use from several sessions' threads."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._rates: dict[str, SmoothedRate] = {}
        self._lock = threading.Lock()

    def observe(self, run_id: str, measured: float, *, speed: float | None = None) -> float:
        """Fold in the rate a run's latest snapshot reports; its smoothed rate (0: none yet)."""
        now = self._clock()
        with self._lock:
            smoothed = smooth_rate(self._rates.get(run_id), measured, now, speed=speed)
            self._rates[run_id] = smoothed
            for old in [key for key, r in self._rates.items() if now - r.seen_at > FORGET_AFTER_S]:
                del self._rates[old]
        return smoothed.rate


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
