"""Browser sessions: a browser's runs live while any page of it is open.

A browser (an owner: `dashboard.state.Session.owner`, the same for its tabs and reloads) opens
sessions, one per tab and per reload. Its runs, and its class (`LivePages`), end when its last
session has gone: `release` is called a grace period after a session goes away, so that a reload,
which opens its new session meanwhile, keeps them. Sessions are counted as a set of their keys,
not a counter, so a session released twice or released before it was attached never ends
another session's browser.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from dashboard.classroom.live_pages import LivePages

__all__ = ["BrowserSessions"]


class BrowserSessions:
    """The open sessions of each browser; the last one to go ends its runs and its class.

    Args:
        live_pages: the run each browser shows (forgotten with the browser).
        stop_owner: stops an owner's runs, with a reason (`RunRegistry.stop_owner`); returns how
            many it stopped.
    """

    def __init__(self, live_pages: LivePages, stop_owner: Callable[[str, str], int]) -> None:
        self._lock = threading.Lock()
        self._open: dict[str, set[str]] = {}  # owner -> keys of its sessions open now
        self._live_pages = live_pages
        self._stop_owner = stop_owner

    def attach(self, owner: str, key: str) -> None:
        """Session ``key`` of browser ``owner`` opened (a tab, or the same tab reloaded)."""
        with self._lock:
            self._open.setdefault(owner, set()).add(key)

    def open_sessions(self, owner: str) -> int:
        with self._lock:
            return len(self._open.get(owner, ()))

    def release(self, owner: str, key: str, reason: str) -> int:
        """Session ``key`` of ``owner`` went away: if no session of the browser is open now,
        end its class and stop its runs with ``reason``. Returns how many runs were stopped."""
        with self._lock:  # held across the stop: a session attaching now waits, then starts anew
            keys = self._open.get(owner, set())
            keys.discard(key)
            if keys:
                return 0
            self._open.pop(owner, None)
            self._live_pages.forget(owner)
            return self._stop_owner(owner, reason)
