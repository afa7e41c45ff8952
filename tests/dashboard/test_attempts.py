"""WrongTries: at most `limit` wrong tries in any `window` seconds, counted across sessions."""

from __future__ import annotations

import threading

import pytest

from rdqn.dashboard.attempts import AdminBrake, WrongTries


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_limit_brakes_until_the_oldest_try_leaves_the_window() -> None:
    clock = Clock()
    tries = WrongTries(limit=3, window=60.0, clock=clock)
    for step in (0.0, 10.0, 20.0):
        clock.now = 100.0 + step
        assert tries.wait() == 0.0
        tries.record()
    assert tries.wait() == pytest.approx(40.0)  # the first try (t = 100) leaves at t = 160
    clock.now = 159.0
    assert tries.wait() == pytest.approx(1.0)
    clock.now = 160.0
    assert tries.wait() == 0.0  # one more try: the window holds two
    tries.record()
    assert tries.wait() == pytest.approx(10.0)  # until the second (t = 110) leaves at 170
    clock.now = 10_000.0
    assert tries.wait() == 0.0


def test_tries_from_many_threads_are_all_counted() -> None:
    tries = WrongTries(limit=400, window=60.0)
    threads = [
        threading.Thread(target=lambda: [tries.record() for _ in range(50)]) for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert tries.wait() > 0.0  # 400 counted: braked
    assert len(tries._times) == 400


@pytest.mark.parametrize(("limit", "window"), [(0, 60.0), (3, 0.0), (3, -1.0)])
def test_a_limit_below_one_or_an_empty_window_is_refused(limit: int, window: float) -> None:
    with pytest.raises(ValueError, match="limit must be >= 1 and window > 0"):
        WrongTries(limit=limit, window=window)


def test_a_guessing_student_never_locks_the_teacher_out() -> None:
    """Regression: ten wrong tokens from one student used to refuse the teacher's right one for a
    minute, again and again. Now the student's browser is braked, the teacher's is checked."""
    now = [0.0]
    brake = AdminBrake(per_browser=10, server_wide=30, window=60.0, clock=lambda: now[0])
    for _ in range(10):
        assert brake.wait("student") == 0.0
        brake.record("student")
    assert brake.wait("student") == 60.0  # braked until the first guess is a minute old
    assert brake.wait("teacher") == 0.0  # checked
    now[0] = 30.0
    assert brake.wait("student") == 30.0
    now[0] = 60.0
    assert brake.wait("student") == 0.0


def test_the_server_wide_brake_stops_browsers_that_guessed_but_not_a_new_one() -> None:
    """A script with many browsers: past 30 wrong tries in a minute, each browser that guessed
    waits until its own last guess is a minute old (one check per new browser); a browser that
    never guessed is still checked."""
    now = [0.0]
    brake = AdminBrake(per_browser=10, server_wide=30, window=60.0, clock=lambda: now[0])
    for browser in range(30):
        now[0] = browser * 0.5
        assert brake.wait(f"bot-{browser}") == 0.0
        brake.record(f"bot-{browser}")
    now[0] = 20.0
    assert brake.wait("bot-0") == 40.0  # its guess at t = 0 leaves the window at 60
    assert brake.wait("bot-29") == pytest.approx(54.5)  # its guess at 14.5
    assert brake.wait("teacher") == 0.0
    now[0] = 61.0  # the first wrong tries leave the window: below 30 again
    assert brake.wait("bot-29") == 0.0
