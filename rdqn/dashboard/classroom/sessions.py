"""Browser sessions: a browser's runs train while any page of it is open.

A browser (an owner: `rdqn.dashboard.state.Session.owner`, the same for its tabs and reloads) opens
sessions, one per tab and per reload. A grace period after its last session goes away
(`went_away`), unless another session of it is attached by then or the browser has shown a sign
of life within the grace (`presence.Presence`: a page request, an open connection; a reload
storm runs no page script for as long as it lasts, and it is asked again once the grace after
that sign has passed), the browser is *away*: its training runs pause (each keeps its place and
saves its checkpoint). A session of the same browser attaching within the away window (a tab
closed by mistake, a laptop that slept, a network that dropped) sets them training again by
themselves. Past the window, its runs stop (resumable) and its class ends.
Sessions are a set of their keys, not a counter, so a session released twice or released
before it was attached never ends another session's browser.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import threading
import time
from collections.abc import Callable

from rdqn.dashboard.classroom.live_pages import LivePages

__all__ = ["LATER", "BrowserSessions", "Later"]

_log = logging.getLogger(__name__)


class Later:
    """Runs each function given to it ``seconds`` later, in the order they fall due, on one
    daemon thread (started at the first call). A class's reloads set a grace timer each and
    every away browser an away one: one thread for all of them, where a thread each once left
    hundreds waiting after a reload storm. A function that raises is logged; the rest run."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._due: list[tuple[float, int, Callable[[], object]]] = []  # (when, order, what)
        self._order = itertools.count()
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def __call__(self, seconds: float, then: Callable[[], object]) -> None:
        with self._changed:
            heapq.heappush(self._due, (self._clock() + seconds, next(self._order), then))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="rdqn-later", daemon=True)
                self._thread.start()
            self._changed.notify()

    def pending(self) -> int:
        with self._changed:
            return len(self._due)

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._due or self._due[0][0] > self._clock():
                    self._changed.wait(self._due[0][0] - self._clock() if self._due else None)
                _, _, then = heapq.heappop(self._due)
            try:
                then()
            except Exception:
                _log.exception("a browser session's timer failed")


LATER = Later()
"""The server's one timer thread for every browser's grace and away window."""


def _later(seconds: float, then: Callable[[], object]) -> None:
    LATER(seconds, then)  # looked up at each call: a test puts its own clock in its place


class BrowserSessions:
    """The open sessions of each browser; the last one to go pauses its runs, which stop (and
    its class ends) unless the browser comes back within the away window.

    Args:
        live_pages: the run each browser shows (forgotten with the browser).
        stop_owner: stops an owner's runs, with a reason (`RunRegistry.stop_owner`); returns how
            many it stopped.
        grace: seconds a browser with no session has to come back before it is away.
        quiet_for: seconds since a browser's last sign of life, 0 while it holds a connection
            open (`Presence.quiet_for`); never heard from (infinity), by default.
        later: runs a function after some seconds (`Later`; a test's fake clock).
        pause_owner: pauses an owner's training runs (`RunRegistry.pause_owner`); returns
            their ids.
        resume_runs: sets an owner's runs that were paused while it was away training again
            (those still paused: `RunRegistry.unpause_runs`).
        away: seconds an away browser has to come back before its runs stop; 0 stops them
            when it goes away.
    """

    def __init__(
        self,
        live_pages: LivePages,
        stop_owner: Callable[[str, str], int],
        *,
        grace: float = 10.0,
        quiet_for: Callable[[str], float] = lambda owner: math.inf,
        later: Callable[[float, Callable[[], object]], None] = _later,
        pause_owner: Callable[[str], list[str]] = lambda owner: [],
        resume_runs: Callable[[str, list[str]], object] = lambda owner, ids: None,
        away: float = 0.0,
    ) -> None:
        self._lock = threading.Lock()
        self._open: dict[str, set[str]] = {}  # owner -> keys of its sessions open now
        self._away: dict[str, tuple[object, list[str]]] = {}  # owner -> (its absence, paused)
        self._live_pages = live_pages
        self._stop_owner = stop_owner
        self._pause_owner = pause_owner
        self._resume_runs = resume_runs
        self._grace = grace
        self._away_s = away
        self._quiet_for = quiet_for
        self._later = later

    def attach(self, owner: str, key: str) -> None:
        """Session ``key`` of browser ``owner`` opened (a tab, or the same tab reloaded); a
        browser back from away sets the runs its absence paused training again."""
        with self._lock:
            self._open.setdefault(owner, set()).add(key)
            _, paused = self._away.pop(owner, (None, []))
        if paused:
            self._resume_runs(owner, paused)

    def away(self, owner: str) -> list[str]:
        """The runs of ``owner`` paused because it is away (empty: it is not away)."""
        with self._lock:
            return list(self._away.get(owner, (None, []))[1])

    def browsers(self) -> tuple[int, int]:
        """(browsers with a page open, browsers away): the server's audience."""
        with self._lock:
            return sum(1 for keys in self._open.values() if keys), len(self._away)

    def open_sessions(self, owner: str) -> int:
        with self._lock:
            return len(self._open.get(owner, ()))

    def went_away(self, owner: str, key: str, reason: str) -> None:
        """Session ``key`` of ``owner`` went away (its tab closed or reloaded): `release` it
        once the grace period has passed."""
        self._later(self._grace, lambda: self.release(owner, key, reason))

    def release(self, owner: str, key: str, reason: str) -> int:
        """Session ``key`` of ``owner`` is gone: if no session of the browser is attached now
        and it has been quiet for the grace period, it is away: pause its training runs and
        stop them with ``reason`` once the away window has passed with no session of it back
        (`_give_up`; at once without a window). If it was heard from since, ask again once the
        grace after that has passed. Returns how many runs were paused or stopped (0 until
        then)."""
        with self._lock:  # held across the stop: a session attaching now waits, then starts anew
            keys = self._open.get(owner, set())
            keys.discard(key)
            if keys or owner in self._away:
                return 0
            quiet = self._quiet_for(owner)
            if quiet < self._grace:
                self._later(self._grace - quiet, lambda: self.release(owner, key, reason))
                return 0
            self._open.pop(owner, None)
            if self._away_s <= 0:
                self._live_pages.forget(owner)
                return self._stop_owner(owner, reason)
            absence = object()
            paused = self._pause_owner(owner)
            self._away[owner] = (absence, paused)
        self._later(self._away_s, lambda: self._give_up(owner, absence, reason))
        return len(paused)

    def _give_up(self, owner: str, absence: object, reason: str) -> int:
        """The away window of ``absence`` has passed: unless the browser came back (or is
        heard from: ask again a grace later), end its class and stop its runs."""
        with self._lock:
            if self._away.get(owner, (None,))[0] is not absence:
                return 0
            quiet = self._quiet_for(owner)
            if quiet < self._grace:
                self._later(self._grace - quiet, lambda: self._give_up(owner, absence, reason))
                return 0
            del self._away[owner]
            self._live_pages.forget(owner)
            return self._stop_owner(owner, reason)
