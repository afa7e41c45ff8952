"""Brakes on guessing the admin token that never lock out the one who knows it.

The admin box (`rdqn.dashboard.ownership`) checks every entered token against the server's
``RDQN_ADMIN_TOKEN``. `AdminBrake` counts wrong tries per browser and server-wide:

- a browser with `per_browser` wrong tries in the last `window` seconds has its entries refused
  unchecked until the oldest of them is a window old: one student guessing is slowed to that;
- once `server_wide` wrong tries from all browsers fall in a window (a script that opens many
  browsers), every browser that guessed wrong in that window is refused unchecked too, until
  its own last wrong try is a window old; a browser that has not guessed wrong is still checked.

So the right token always works from a browser that has not been guessing (the teacher's),
however much others guess, while a guesser gets at most `per_browser` tries a window per
browser and, once the server-wide brake is on, one per new browser (a page load each). The
token has at least 16 characters (`rdqn.dashboard.admin.MIN_TOKEN_CHARS`; docs/classroom.md's recipe
makes 96 random bits), so one guess per page load is no threat: the brakes are a second line.
The command line (``python -m rdqn runs delete``) is never braked.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

__all__ = ["AdminBrake", "WrongTries"]


class WrongTries:
    """The wrong tries of the last `window` seconds (thread-safe).

    Args:
        limit: wrong tries allowed within any `window` seconds (>= 1).
        window: the length of that window in seconds (> 0).
        clock: seconds on a monotonic clock (tests pass their own).
    """

    def __init__(
        self, limit: int = 10, window: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if limit < 1 or not window > 0:
            raise ValueError(f"limit must be >= 1 and window > 0, got {limit} and {window}")
        self.limit = limit
        self.window = window
        self._clock = clock
        self._times: deque[float] = deque()
        self._lock = threading.Lock()

    def _forget_old(self, now: float) -> None:
        while self._times and now - self._times[0] >= self.window:
            self._times.popleft()

    def wait(self) -> float:
        """Seconds until an entry may be checked again: 0 while fewer than `limit` wrong tries
        fall in the last `window` seconds."""
        with self._lock:
            now = self._clock()
            self._forget_old(now)
            if len(self._times) < self.limit:
                return 0.0
            return self._times[0] + self.window - now

    def record(self) -> None:
        """Count one wrong try, now."""
        with self._lock:
            now = self._clock()
            self._forget_old(now)
            self._times.append(now)

    def last(self) -> float | None:
        """When the newest wrong try of the window was made (None: none in it)."""
        with self._lock:
            self._forget_old(self._clock())
            return self._times[-1] if self._times else None


class AdminBrake:
    """Wrong admin tokens counted per browser and server-wide (see the module's rules).

    Args:
        per_browser: wrong tries one browser may make within any `window` seconds.
        server_wide: wrong tries from all browsers within a window that turn on the server-wide
            brake for every browser that guessed wrong.
        window: seconds.
        clock: seconds on a monotonic clock (tests pass their own).
    """

    def __init__(
        self,
        per_browser: int = 10,
        server_wide: int = 30,
        window: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_browser = per_browser
        self.window = window
        self._clock = clock
        self._all = WrongTries(server_wide, window, clock)
        self._browsers: dict[str, WrongTries] = {}
        self._lock = threading.Lock()

    def _of(self, browser: str) -> WrongTries:
        with self._lock:
            if len(self._browsers) > 10_000:  # forget browsers with no try left in the window
                self._browsers = {
                    b: tries for b, tries in self._browsers.items() if tries.last() is not None
                }
            if browser not in self._browsers:
                self._browsers[browser] = WrongTries(self.per_browser, self.window, self._clock)
            return self._browsers[browser]

    def wait(self, browser: str) -> float:
        """Seconds until an entry from ``browser`` may be checked (0: check it now)."""
        own = self._of(browser)
        wait = own.wait()
        last = own.last()
        if wait <= 0 and last is not None and self._all.wait() > 0:
            wait = last + self.window - self._clock()
        return max(0.0, wait)

    def record(self, browser: str) -> None:
        """Count one wrong try from ``browser``, now."""
        self._of(browser).record()
        self._all.record()
