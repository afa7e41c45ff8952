"""LinearSchedule: value(t) = start + (end - start) * min(1, t / steps)."""

from __future__ import annotations

import dataclasses

import pytest

from rdqn.replay import LinearSchedule


@pytest.mark.parametrize(
    ("t", "expected"),
    [
        (0, 0.4),
        (25, 0.55),  # 0.4 + 0.6 * 0.25
        (50, 0.7),  # 0.4 + 0.6 * 0.5
        (99, 0.994),  # 0.4 + 0.6 * 0.99
        (100, 1.0),
        (101, 1.0),
        (10**9, 1.0),
    ],
)
def test_beta_anneals_from_start_to_end(t: int, expected: float) -> None:
    schedule = LinearSchedule(0.4, 1.0, 100)
    value = schedule(t)
    assert isinstance(value, float)
    assert value == pytest.approx(expected, abs=1e-12)


def test_endpoints_are_exact() -> None:
    schedule = LinearSchedule(0.4, 1.0, 100)
    assert schedule(0) == 0.4
    assert schedule(100) == 1.0
    assert schedule(5000) == 1.0


def test_decreasing_schedule() -> None:
    """Epsilon-greedy style: 1.0 -> 0.05 over 10 steps; t = 5 gives 1 - 0.95 / 2 = 0.525."""
    schedule = LinearSchedule(1.0, 0.05, 10)
    assert schedule(5) == pytest.approx(0.525, abs=1e-12)
    assert schedule(10) == 0.05 and schedule(11) == 0.05


def test_monotone_between_endpoints() -> None:
    schedule = LinearSchedule(0.4, 1.0, 37)
    values = [schedule(t) for t in range(40)]
    assert all(a < b for a, b in zip(values[:37], values[1:38], strict=True))
    assert values[37:] == [1.0, 1.0, 1.0]


def test_zero_steps_is_at_end_from_the_start() -> None:
    schedule = LinearSchedule(0.4, 1.0, 0)
    assert schedule(0) == 1.0 and schedule(7) == 1.0


def test_constant_schedule() -> None:
    schedule = LinearSchedule(0.5, 0.5, 10)
    assert {schedule(t) for t in range(15)} == {0.5}


def test_is_frozen() -> None:
    schedule = LinearSchedule(0.4, 1.0, 10)
    with pytest.raises(dataclasses.FrozenInstanceError):
        schedule.steps = 5  # type: ignore[misc]


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((0.4, 1.0, -1), "steps"),
        ((0.4, 1.0, 1.5), "steps"),
        ((0.4, 1.0, True), "steps"),
        ((0.4, 1.0, "10"), "steps"),
        ((float("nan"), 1.0, 10), "start"),
        ((float("inf"), 1.0, 10), "start"),
        (("0.4", 1.0, 10), "start"),
        ((0.4, float("-inf"), 10), "end"),
        ((0.4, None, 10), "end"),
    ],
)
def test_bad_arguments(args: tuple, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        LinearSchedule(*args)


def test_negative_time_is_rejected() -> None:
    with pytest.raises(ValueError, match="t must be >= 0"):
        LinearSchedule(0.4, 1.0, 10)(-1)
