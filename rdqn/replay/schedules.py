"""Schedules for annealed hyperparameters (beta of PER, epsilon of epsilon-greedy)."""

from __future__ import annotations

from dataclasses import dataclass

from rdqn.validation import check_integer, check_real

__all__ = ["LinearSchedule"]


@dataclass(frozen=True)
class LinearSchedule:
    """value(t) = start + (end - start) * min(1, t / steps), then constant at `end`.

    For PER's beta over U updates numbered u = 0..U-1: `LinearSchedule(0.4, 1.0, U - 1)` gives
    beta0 at the first and exactly 1 (full importance-sampling correction) at the last (Schaul et
    al. 2015, section 3.4); with `steps = U` the last update would use 1 - 0.6 / U.
    `steps = 0` means the schedule is at `end` from the start.
    """

    start: float
    end: float
    steps: int

    def __post_init__(self) -> None:
        check_integer("steps", self.steps, minimum=0)
        check_real("start", self.start)
        check_real("end", self.end)

    def __call__(self, t: int) -> float:
        if t < 0:
            raise ValueError(f"t must be >= 0, got {t}")
        if self.steps == 0 or t >= self.steps:
            return float(self.end)
        return float(self.start + (self.end - self.start) * (t / self.steps))
