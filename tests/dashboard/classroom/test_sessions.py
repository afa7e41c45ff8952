"""Tests for rdqn.dashboard.classroom.sessions: a browser's runs end with its last session."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable

from rdqn.dashboard.classroom.live_pages import LivePages
from rdqn.dashboard.classroom.sessions import BrowserSessions, Later


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


def away_sessions() -> tuple[BrowserSessions, Clock, dict[str, list], LivePages]:
    """A 10 s grace and a 600 s away window on a fake clock; what was paused, resumed, stopped."""
    clock = Clock()
    calls: dict[str, list] = {"paused": [], "resumed": [], "stopped": []}

    def pause_owner(owner: str) -> list[str]:
        calls["paused"].append(owner)
        return [f"{owner}-run"]

    def stop_owner(owner: str, reason: str) -> int:
        calls["stopped"].append((owner, reason))
        return 1

    pages = LivePages()
    browsers = BrowserSessions(
        pages,
        stop_owner,
        grace=10.0,
        later=clock.later,
        pause_owner=pause_owner,
        resume_runs=lambda owner, ids: calls["resumed"].append((owner, ids)),
        away=600.0,
    )
    return browsers, clock, calls, pages


def test_an_away_browsers_runs_pause_and_train_again_when_it_comes_back() -> None:
    """A tab closed by mistake: 10 s later the runs pause; the browser back 5 min later finds
    them training again, its class still on, and nothing stops them later."""
    browsers, clock, calls, pages = away_sessions()
    browsers.attach("browser", "tab")
    pages.show("browser", "browser-run")
    browsers.went_away("browser", "tab", "gone")
    clock.advance(9.9)
    assert calls["paused"] == []  # within the grace
    clock.advance(0.2)
    assert calls["paused"] == ["browser"] and browsers.away("browser") == ["browser-run"]
    clock.advance(300)
    browsers.attach("browser", "back")
    assert calls["resumed"] == [("browser", ["browser-run"])] and browsers.away("browser") == []
    assert pages.live_run("browser") == "browser-run"  # the class went on meanwhile
    clock.advance(600)
    assert calls["stopped"] == []


def test_an_away_browser_not_back_within_the_window_has_its_runs_stopped() -> None:
    browsers, clock, calls, pages = away_sessions()
    browsers.attach("browser", "tab")
    pages.show("browser", "browser-run")
    browsers.went_away("browser", "tab", "gone")
    clock.advance(10 + 599)
    assert calls["stopped"] == [] and calls["paused"] == ["browser"]
    clock.advance(2)
    assert calls["stopped"] == [("browser", "gone")] and pages.live_run("browser") is None
    assert calls["resumed"] == [] and browsers.away("browser") == []
    browsers.attach("browser", "much later")  # nothing paused is left to resume
    assert calls["resumed"] == []


def test_a_browser_away_twice_is_judged_by_its_latest_absence() -> None:
    """Away, back, away again: the first absence's window ending stops nothing."""
    browsers, clock, calls, _ = away_sessions()
    browsers.attach("browser", "tab")
    browsers.went_away("browser", "tab", "gone")
    clock.advance(100)  # away since t = 10
    browsers.attach("browser", "back")
    browsers.went_away("browser", "back", "gone")
    clock.advance(520)  # the first absence's window ends at t = 610: nothing stops
    assert calls["stopped"] == [] and len(calls["paused"]) == 2
    clock.advance(100)  # the second one's at t = 710
    assert calls["stopped"] == [("browser", "gone")]


def test_later_runs_every_timer_in_its_order_on_one_thread() -> None:
    """Hundreds of grace and away timers (a class reloading) share one thread; they run in the
    order they fall due, whatever the order they were set in, and one that raises does not stop
    the others."""
    now = [0.0]  # a clock the test moves: only what is due runs
    later = Later(clock=lambda: now[0])
    ran: list[tuple[int, str]] = []
    done = threading.Event()
    before = threading.active_count()

    def note(number: int) -> Callable[[], None]:
        return lambda: ran.append((number, threading.current_thread().name))

    def fail() -> None:
        raise RuntimeError("a timer that fails")

    for number in range(200):
        later(199.0 - number, note(number))  # set last, due first
    later(0.5, fail)
    assert threading.active_count() <= before + 1
    now[0] = 1000.0
    later(0.0, done.set)  # due after the others; setting it wakes the thread
    assert done.wait(30)
    assert [number for number, _ in ran] == list(range(199, -1, -1))
    assert {name for _, name in ran} == {"rdqn-later"}
    assert later.pending() == 0
