"""Tests for dashboard.classroom.sessions: a browser's runs end with its last session."""

from __future__ import annotations

from dashboard.classroom.live_pages import LivePages
from dashboard.classroom.sessions import BrowserSessions


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
