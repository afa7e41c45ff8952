"""Schedules for annealed hyperparameters (beta of PER, epsilon of epsilon-greedy)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LinearSchedule"]


@dataclass(frozen=True)
class LinearSchedule:
    """value(t) = start + (end - start) * min(1, t / steps), then constant at `end`.

    For PER's beta: `LinearSchedule(0.4, 1.0, planned_updates)` anneals the importance-sampling
    correction to full (beta = 1) by the end of training (Schaul et al. 2015, section 3.4).
    `steps = 0` means the schedule is at `end` from the start.
    """

    start: float
    end: float
    steps: int

    def __post_init__(self) -> None:
        if isinstance(self.steps, bool) or not isinstance(self.steps, int) or self.steps < 0:
            raise ValueError(f"steps must be an integer >= 0, got {self.steps!r}")
        for name in ("start", "end"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value != value or abs(value) == float("inf"):
                raise ValueError(f"{name} must be a finite number, got {value!r}")

    def __call__(self, t: int) -> float:
        if t < 0:
            raise ValueError(f"t must be >= 0, got {t}")
        if self.steps == 0 or t >= self.steps:
            return float(self.end)
        return float(self.start + (self.end - self.start) * (t / self.steps))
