"""Tests for rdqn.dashboard.classroom.sessions: a browser's runs end with its last session."""

from __future__ import annotations

import math
from collections.abc import Callable

from rdqn.dashboard.classroom.live_pages import LivePages
from rdqn.dashboard.classroom.sessions import BrowserSessions


def sessions() -> tuple[BrowserSessions, LivePages, list[tuple[str, str]]]:
    stopped: list[tuple[str, str]] = []

    def stop_owner(owner: str, reason: str) -> int:
        stopped.append((owner, reason))
        return 1

    pages = LivePages()
    return BrowserSessions(pages, stop_owner), pages, stopped


def test_a_browsers_runs_stop_only_when_its_last_session_is_released() -> None:
    browsers, pages, stopped = sessions()
    browsers.attach("browser", "tab")
    pages.show("browser", "run-1")
    browsers.attach("browser", "reload")  # a reload (or a second tab) of the same browser
    assert browsers.release("browser", "tab", "stopped: gone") == 0  # one is still open
    assert stopped == [] and pages.live_run("browser") == "run-1"
    assert browsers.release("browser", "reload", "stopped: gone") == 1  # the last one
    assert stopped == [("browser", "stopped: gone")] and pages.live_run("browser") is None


def test_a_session_released_twice_or_early_never_ends_an_open_one() -> None:
    """Sessions are a set, not a counter: in a reload storm a release may come twice, or for a
    session whose attach the storm cut short; the browser's open tab keeps its runs."""
    browsers, _, stopped = sessions()
    browsers.attach("browser", "old")
    browsers.attach("browser", "open")
    assert browsers.release("browser", "old", "gone") == 0
    assert browsers.release("browser", "old", "gone") == 0  # released again
    assert browsers.release("browser", "never-attached", "gone") == 0
    assert stopped == [] and browsers.open_sessions("browser") == 1
    assert browsers.release("browser", "open", "gone") == 1
    assert browsers.release("nobody", "x", "gone") == 1  # a browser with no session: stop its runs


class Clock:
    """A fake clock with the timers `BrowserSessions` schedules on it."""

    def __init__(self) -> None:
        self.now = 0.0
        self.timers: list[tuple[float, Callable[[], None]]] = []

    def later(self, seconds: float, then: Callable[[], None]) -> None:
        self.timers.append((self.now + seconds, then))

    def advance(self, seconds: float) -> None:
        """Move time on, firing the timers that come due, in order."""
        end = self.now + seconds
        while due := sorted((t for t in self.timers if t[0] <= end), key=lambda t: t[0]):
            when, then = due[0]
            self.timers.remove(due[0])
            self.now = when
            then()
        self.now = end


def storm_sessions(
    heard: dict[str, float],
) -> tuple[BrowserSessions, Clock, list[tuple[str, str]]]:
    """Sessions with a 10 s grace on a fake clock; ``heard`` is when each browser was last heard
    from (`Presence.quiet_for` reads it)."""
    clock = Clock()
    stopped: list[tuple[str, str]] = []

    def stop_owner(owner: str, reason: str) -> int:
        stopped.append((owner, reason))
        return 1

    browsers = BrowserSessions(
        LivePages(),
        stop_owner,
        grace=10.0,
        quiet_for=lambda owner: clock.now - heard.get(owner, -math.inf),
        later=clock.later,
    )
    return browsers, clock, stopped


def test_a_reload_storm_keeps_the_browsers_runs_while_it_is_heard_from() -> None:
    """F5 held down: the browser's page requests keep coming but no page script runs, so no
    session attaches for longer than the grace; the runs stay while requests come, and stop
    exactly a grace after the last one if no page ever attaches."""
    heard: dict[str, float] = {}
    browsers, clock, stopped = storm_sessions(heard)
    browsers.attach("browser", "tab")
    browsers.went_away("browser", "tab", "gone")  # the storm begins at t = 0
    for _ in range(300):  # a reload every 0.1 s for 30 s, none of which attaches
        clock.advance(0.1)
        heard["browser"] = clock.now
    assert stopped == []
    clock.advance(9.9)
    assert stopped == []
    clock.advance(0.2)  # 10 s after the storm's last request
    assert stopped == [("browser", "gone")]


def test_a_storm_that_ends_with_an_attached_page_keeps_the_runs_for_good() -> None:
    heard: dict[str, float] = {}
    browsers, clock, stopped = storm_sessions(heard)
    browsers.attach("browser", "tab")
    browsers.went_away("browser", "tab", "gone")
    for _ in range(200):
        clock.advance(0.1)
        heard["browser"] = clock.now
    browsers.attach("browser", "last reload")  # the page after the storm runs its script
    clock.advance(600)
    assert stopped == [] and browsers.open_sessions("browser") == 1 and clock.timers == []


def test_a_closed_tab_stops_its_runs_one_grace_after_its_last_sign_of_life() -> None:
    heard = {"browser": 0.0, "other": 0.0}
    browsers, clock, stopped = storm_sessions(heard)
    browsers.attach("browser", "tab")
    clock.advance(4.0)  # the tab's last request at t = 0; it is closed at t = 4
    browsers.went_away("browser", "tab", "closed")
    clock.advance(10.0)  # the grace ends at t = 14: quiet for 14 s
    assert stopped == [("browser", "closed")]
    assert clock.timers == []


def test_another_browsers_requests_keep_nothing_alive() -> None:
    heard: dict[str, float] = {}
    browsers, clock, stopped = storm_sessions(heard)
    browsers.attach("browser", "tab")
    browsers.went_away("browser", "tab", "closed")
    for _ in range(150):
        clock.advance(0.1)
        heard["someone else"] = clock.now
    assert stopped == [("browser", "closed")]
