"""Where a training loop's time goes: named, accumulating wall-clock timers.

The trainer wraps each phase of a step in ``timings.measure(PHASE)``; the run manifest
(`rdqn.runs.manifest`) reports the totals. The phases, each measured separately, so that a
slow run says which part of the loop is slow:

    init    building env, networks, replay memory and optimizer (and any compilation)
    env     stepping and resetting the environment
    act     choosing actions: the acting forward pass on one window, and epsilon-greedy
    sample  data preparation: drawing a replay batch, gathering its windows, and writing the
            new priorities back
    update  the learner: forward passes of the online and target networks, loss, backward
            pass, gradient clipping, optimizer step and target update
    evaluation  greedy evaluation episodes

Accelerator work is asynchronous, so for CUDA pass ``synchronize=torch.cuda.synchronize``: it runs
on entry and exit of every timed region, otherwise a region would be charged for kernels queued by
the one before.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

from rdqn.validation import is_integer, is_real, shown

__all__ = ["ACT", "ENV", "EVALUATION", "INIT", "PHASES", "SAMPLE", "UPDATE", "Timings"]

INIT = "init"
ENV = "env"
ACT = "act"
SAMPLE = "sample"
UPDATE = "update"
EVALUATION = "evaluation"
PHASES: tuple[str, ...] = (INIT, ENV, ACT, SAMPLE, UPDATE, EVALUATION)
"""Every phase a `rdqn.training.trainer.Trainer` measures, in the order of a step."""


class _Measure:
    """Context manager for one timed region; allocated per use so regions may nest."""

    __slots__ = ("_name", "_start", "_timings")

    def __init__(self, timings: Timings, name: str) -> None:
        self._timings = timings
        self._name = name
        self._start = 0.0

    def __enter__(self) -> None:
        timings = self._timings
        if timings._synchronize is not None:
            timings._synchronize()
        self._start = timings._clock()

    def __exit__(self, *exc_info: object) -> None:
        timings = self._timings
        if timings._synchronize is not None:
            timings._synchronize()
        timings.add(self._name, timings._clock() - self._start)


class Timings:
    """Named, accumulating wall-clock timers.

    ``with timings.measure(SAMPLE): ...`` adds the region's duration to ``SAMPLE``;
    :meth:`add` adds a duration measured elsewhere. Overhead is two clock reads and two dict
    updates per region (about a microsecond). Written by one thread; :meth:`totals` and
    :meth:`counts` return copies, so another thread may read them at any time.
    ``clock`` (default ``time.perf_counter``) can be injected for tests; ``synchronize`` is
    called around each region (``torch.cuda.synchronize`` when timing GPU work).
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.perf_counter,
        synchronize: Callable[[], object] | None = None,
    ) -> None:
        self._clock = clock
        self._synchronize = synchronize
        self._totals: dict[str, float] = {}
        self._counts: dict[str, int] = {}

    def measure(self, name: str) -> _Measure:
        """A context manager that adds the wall-clock time of its body to ``name``."""
        return _Measure(self, name)

    def add(self, name: str, seconds: float) -> None:
        """Add ``seconds`` (finite, >= 0) to ``name`` and count one occurrence."""
        if not (seconds >= 0 and math.isfinite(seconds)):
            raise ValueError(f"seconds must be finite and >= 0, got {seconds!r}")
        self._totals[name] = self._totals.get(name, 0.0) + seconds
        self._counts[name] = self._counts.get(name, 0) + 1

    def totals(self) -> dict[str, float]:
        """Seconds accumulated per name."""
        return dict(self._totals)

    def counts(self) -> dict[str, int]:
        """Number of measured regions (or :meth:`add` calls) per name."""
        return dict(self._counts)

    def state_dict(self) -> dict[str, dict[str, float] | dict[str, int]]:
        """Totals and counts so far (a resumed run keeps adding to them)."""
        return {"totals": self.totals(), "counts": self.counts()}

    @staticmethod
    def check_state(state: Any, expected_counts: Mapping[str, int]) -> None:
        """Raise ``ValueError`` naming what is wrong with a :meth:`state_dict` read back from a
        checkpoint; changes nothing. Totals and counts name the same phases, of `PHASES`; every
        total a finite number of seconds >= 0, every count an integer >= 0; a phase of
        ``expected_counts`` was measured exactly that many times (absent: none)."""
        if not isinstance(state, Mapping) or set(state) != {"totals", "counts"}:
            raise ValueError(f"timings must be a dict of totals and counts, got {shown(state)}")
        totals, counts = state["totals"], state["counts"]
        if not (isinstance(totals, Mapping) and isinstance(counts, Mapping)):
            raise ValueError("timings totals and counts must be dicts")
        if set(totals) != set(counts) or not set(totals) <= set(PHASES):
            raise ValueError(
                f"timings must time phases of {PHASES}, totals and counts the same ones; got "
                f"{shown(sorted(map(str, totals)))} and {shown(sorted(map(str, counts)))}"
            )
        for name, seconds in totals.items():
            if not (is_real(seconds) and seconds >= 0):
                raise ValueError(
                    f"timings total of {name} must be a finite number of seconds >= 0, got "
                    f"{shown(seconds)}"
                )
            count = counts[name]
            if not (is_integer(count) and count >= 0):
                raise ValueError(
                    f"timings count of {name} must be an integer >= 0, got {shown(count)}"
                )
        for name, count in expected_counts.items():
            if counts.get(name, 0) != count:
                raise ValueError(
                    f"timings count of {name} is {shown(counts.get(name, 0))}, but the counters "
                    f"give {count:,}"
                )

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._totals = {str(k): float(v) for k, v in state["totals"].items()}
        self._counts = {str(k): int(v) for k, v in state["counts"].items()}
