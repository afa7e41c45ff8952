"""Time left and queue waits, computed by hand."""

import pytest

from dashboard.eta import duration_text, queue_wait_seconds, remaining_seconds


def test_remaining_time_is_steps_left_over_the_rate() -> None:
    assert remaining_seconds(2_000, 10_000, 400.0) == pytest.approx(20.0)
    assert remaining_seconds(12_000, 10_000, 400.0) == 0.0
    assert remaining_seconds(2_000, 10_000, 0.0) is None


def test_the_kth_in_line_waits_for_the_kth_shortest_run() -> None:
    remaining = [300.0, None, 60.0, 120.0]
    assert queue_wait_seconds(1, remaining) == 60.0
    assert queue_wait_seconds(3, remaining) == 300.0
    assert queue_wait_seconds(4, remaining) is None  # a run with no known end
    with pytest.raises(ValueError, match="place must be at least 1, got 0"):
        queue_wait_seconds(0, remaining)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (3, "under 10 s"),
        (41, "about 50 s"),
        (61, "about 2 min"),
        (3_600, "about 1 h"),
        (3_900, "about 1 h 5 min"),
    ],
)
def test_durations_read_at_a_glance(seconds: float, text: str) -> None:
    assert duration_text(seconds) == text
