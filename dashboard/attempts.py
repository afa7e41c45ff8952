"""A server-wide brake on guessing a secret: at most `limit` wrong tries in any `window` seconds.

The admin box (`dashboard.ownership`) checks every entered token against the server's
``RDQN_ADMIN_TOKEN``. Sessions are cheap to open, so a brake per session would not slow a
script that opens many; this one counts the wrong tries of every session together. Once
`limit` of them fall within the last `window` seconds, no entry is checked (right or wrong)
until the oldest of them is `window` seconds old: a guesser gets at most `limit` tries a
`window`, whatever the number of sessions. The cost is that the admin, too, waits out a burst
of wrong tries; the command line (``python -m rdqn runs delete``) is never braked.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

__all__ = ["WrongTries"]


class WrongTries:
    """The wrong tries of the last `window` seconds, shared by every session (thread-safe).

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
