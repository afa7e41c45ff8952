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


def test_runs_queued_ahead_hold_a_slot_for_their_own_duration() -> None:
    """One slot, its run ends in 60 s; the runs at places 1 and 2 each train 100 s. Place 2
    starts when place 1 ends: 60 + 100 = 160 s; place 3 at 60 + 100 + 100 = 260 s. Two slots
    (60 s and 90 s left): place 3 waits for the first slot to free again, 60 + 100 = 160 s."""
    assert queue_wait_seconds(1, [60.0], ahead=[]) == 60.0
    assert queue_wait_seconds(2, [60.0], ahead=[100.0]) == 160.0
    assert queue_wait_seconds(3, [60.0], ahead=[100.0, 100.0]) == 260.0
    assert queue_wait_seconds(3, [90.0, 60.0], ahead=[100.0, 100.0]) == 160.0
    assert queue_wait_seconds(2, [60.0], ahead=[None]) is None  # a run ahead with no rate yet
    assert queue_wait_seconds(2, [None], ahead=[100.0]) is None  # no slot with a known end
