"""Which run each browser's live page shows, the run it showed before, and the class codes
that follow them.

A teacher's browser gets a four-character class code on first use (`class_code`); students who
open ``?follow=<code>`` see whatever run that browser's live page shows now (`followed_run`),
switching when the teacher restarts, with the run shown before as the same dashed overlay
(`previous_run`). `classes` lists the codes students followed lately (what a queued student may
watch instead), and `fork_once` makes a browser's "try this setup myself" of one run start one
run, however often it arrives. Thread-safe and process-wide (`rdqn.dashboard.state.live_pages`); a
browser is forgotten here when its last session goes away (`forget`). Owners are the browsers'
opaque tokens (`rdqn.dashboard.state.Session.owner`).
"""

from __future__ import annotations

import math
import secrets
import threading
import time
from collections.abc import Callable

__all__ = ["LivePages"]

_CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, no 1/I
FORK_WINDOW = 5.0
"""Seconds during which a browser's second fork of the same run gets the first one's run."""


class LivePages:
    """The run on each owner's live page, and the class codes that follow an owner's page."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: dict[str, str] = {}  # owner -> the run on its live page
        self._previous: dict[str, str] = {}  # owner -> the run its live page showed before
        self._classes: dict[str, str] = {}  # class code -> owner
        self._followed_at: dict[str, float] = {}  # class code -> when a student last looked
        self._viewers: dict[str, dict[str, float]] = {}  # class code -> viewer -> when
        self._forking = threading.Lock()  # held while a fork starts its run
        self._forks: dict[tuple[str, str], tuple[float, str]] = {}  # (owner, source) -> run

    def show(self, owner: str, run_id: str, *, previous: str | None = None) -> None:
        """The run a browser now shows on its live page (what its class follows); ``previous``:
        the run it replaced on screen (its overlay; None keeps the one known, if any)."""
        with self._lock:
            if self._live.get(owner) != run_id and previous is None:
                self._previous.pop(owner, None)
            self._live[owner] = run_id
            if previous is not None and previous != run_id:
                self._previous[owner] = previous

    def previous_run(self, owner: str, run_id: str | None = None) -> str | None:
        """The run ``owner``'s live page showed before its current one (the dashed overlay);
        with ``run_id``, only while that run is the one on screen."""
        with self._lock:
            if run_id is not None and self._live.get(owner) != run_id:
                return None
            return self._previous.get(owner)

    def live_run(self, owner: str) -> str | None:
        """The run ``owner`` last showed on its live page (`show`), while it is known."""
        with self._lock:
            return self._live.get(owner)

    def class_code(self, owner: str) -> str:
        """The browser's class code (made on first use): students who open ``?follow=<code>``
        see whatever run the browser shows, switching when it restarts."""
        with self._lock:
            for code, who in self._classes.items():
                if who == owner:
                    return code
            while True:
                code = "".join(secrets.choice(_CODE_ALPHABET) for _ in range(4))
                if code not in self._classes:
                    self._classes[code] = owner
                    return code

    def classes(self, *, besides: str | None = None, within: float = 120.0) -> list[str]:
        """The classes being followed: codes whose browser shows a run and that a student has
        followed in the last ``within`` seconds (what a waiting student can watch instead),
        other than the class of the owner ``besides``."""
        recent = time.monotonic() - within
        with self._lock:
            return [
                code
                for code, owner in self._classes.items()
                if owner in self._live
                and owner != besides
                and self._followed_at.get(code, -math.inf) >= recent
            ]

    def has_class(self, code: str) -> bool:
        with self._lock:
            return code in self._classes

    def followed_run(self, code: str) -> str | None:
        """The run the browser behind a class code shows now (None: no class, or no run yet)."""
        return self.followed(code)[0]

    def followed(self, code: str, viewer: str | None = None) -> tuple[str | None, str | None]:
        """(the run the browser behind a class code shows now, the run it showed before): what
        its students see, overlay included; ``viewer``: the browser that looks (`followers`)."""
        with self._lock:
            now = self._followed_at[code] = time.monotonic()
            if viewer is not None:
                self._viewers.setdefault(code, {})[viewer] = now
            owner = self._classes.get(code)
            if owner is None:
                return None, None
            return self._live.get(owner), self._previous.get(owner)

    def fork_once(self, owner: str, source: str, fork: Callable[[], str | None]) -> str | None:
        """The run of ``owner``'s fork of run ``source``: ``fork()`` starts it (returning its id,
        or None when it could not start), unless this browser forked ``source`` in the last
        `FORK_WINDOW` seconds, whose run is returned instead. One click can reach the server
        twice (seen under load: two runs 8 ms apart for one browser), and a second run would
        wait in the queue with nobody to show it. Forks start one at a time."""
        with self._forking:
            now = time.monotonic()
            self._forks = {
                key: made for key, made in self._forks.items() if now - made[0] < FORK_WINDOW
            }
            made = self._forks.get((owner, source))
            if made is not None:
                return made[1]
            run_id = fork()
            if run_id is not None:
                self._forks[owner, source] = (time.monotonic(), run_id)
            return run_id

    def followers(self, *, within: float = 10.0) -> dict[str, int]:
        """Each class's code and how many browsers looked at it in the last ``within`` seconds
        (a follower's page redraws every second)."""
        recent = time.monotonic() - within
        with self._lock:
            for code, seen in list(self._viewers.items()):
                self._viewers[code] = {v: t for v, t in seen.items() if t >= recent}
            return {code: len(self._viewers.get(code, {})) for code in self._classes}

    def owner_of(self, code: str) -> str | None:
        with self._lock:
            return self._classes.get(code)

    def forget(self, owner: str) -> None:
        """The browser went away: its live run and its class end."""
        with self._lock:
            self._live.pop(owner, None)
            self._previous.pop(owner, None)
            self._classes = {code: who for code, who in self._classes.items() if who != owner}
            self._viewers = {code: v for code, v in self._viewers.items() if code in self._classes}
