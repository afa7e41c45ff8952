"""Browser sessions: a browser's runs live while any page of it is open.

A browser (an owner: `rdqn.dashboard.state.Session.owner`, the same for its tabs and reloads) opens
sessions, one per tab and per reload. Its runs, and its class (`LivePages`), end when its last
session has gone: a grace period after a session goes away (`went_away`), the browser's runs
stop unless another session of it is attached by then, or the browser has shown a sign of life
within the grace (`presence.Presence`: a page request, an open connection; a reload storm runs
no page script for as long as it lasts), in which case it is asked again once the grace after
that sign has passed.
Sessions are a set of their keys, not a counter, so a session released twice or released
before it was attached never ends another session's browser.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable

from rdqn.dashboard.classroom.live_pages import LivePages

__all__ = ["BrowserSessions"]


def _timer(seconds: float, then: Callable[[], None]) -> None:
    timer = threading.Timer(seconds, then)
    timer.daemon = True
    timer.start()


class BrowserSessions:
    """The open sessions of each browser; the last one to go ends its runs and its class.

    Args:
        live_pages: the run each browser shows (forgotten with the browser).
        stop_owner: stops an owner's runs, with a reason (`RunRegistry.stop_owner`); returns how
            many it stopped.
        grace: seconds a browser with no session has to come back before its runs stop.
        quiet_for: seconds since a browser's last sign of life, 0 while it holds a connection
            open (`Presence.quiet_for`); never heard from (infinity), by default.
        later: runs a function after some seconds (a daemon timer; a test's fake clock).
    """

    def __init__(
        self,
        live_pages: LivePages,
        stop_owner: Callable[[str, str], int],
        *,
        grace: float = 10.0,
        quiet_for: Callable[[str], float] = lambda owner: math.inf,
        later: Callable[[float, Callable[[], None]], None] = _timer,
    ) -> None:
        self._lock = threading.Lock()
        self._open: dict[str, set[str]] = {}  # owner -> keys of its sessions open now
        self._live_pages = live_pages
        self._stop_owner = stop_owner
        self._grace = grace
        self._quiet_for = quiet_for
        self._later = later

    def attach(self, owner: str, key: str) -> None:
        """Session ``key`` of browser ``owner`` opened (a tab, or the same tab reloaded)."""
        with self._lock:
            self._open.setdefault(owner, set()).add(key)

    def open_sessions(self, owner: str) -> int:
        with self._lock:
            return len(self._open.get(owner, ()))

    def went_away(self, owner: str, key: str, reason: str) -> None:
        """Session ``key`` of ``owner`` went away (its tab closed or reloaded): `release` it
        once the grace period has passed."""
        self._later(self._grace, lambda: self.release(owner, key, reason))

    def release(self, owner: str, key: str, reason: str) -> int:
        """Session ``key`` of ``owner`` is gone: if no session of the browser is attached now
        and it has been quiet for the grace period, end its class and stop its runs with
        ``reason``; if it was heard from since, ask again once the grace after that has passed.
        Returns how many runs were stopped (0 until then)."""
        with self._lock:  # held across the stop: a session attaching now waits, then starts anew
            keys = self._open.get(owner, set())
            keys.discard(key)
            if keys:
                return 0
            quiet = self._quiet_for(owner)
            if quiet < self._grace:
                self._later(self._grace - quiet, lambda: self.release(owner, key, reason))
                return 0
            self._open.pop(owner, None)
            self._live_pages.forget(owner)
            return self._stop_owner(owner, reason)
