"""Which run each browser's live page shows, and the class codes that follow them.

A teacher's browser gets a four-character class code on first use (`class_code`); students who
open ``?follow=<code>`` see whatever run that browser's live page shows now (`followed_run`),
switching when the teacher restarts. `classes` lists the codes students followed lately (what a
queued student may watch instead). Thread-safe; owned by the run registry
(`RunRegistry.live_pages`), which forgets a browser here when it goes away (`forget`).
"""

from __future__ import annotations

import math
import secrets
import threading
import time

__all__ = ["LivePages"]

_CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, no 1/I


class LivePages:
    """The run on each owner's live page, and the class codes that follow an owner's page."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: dict[str, str] = {}  # owner -> the run on its live page
        self._classes: dict[str, str] = {}  # class code -> owner
        self._followed_at: dict[str, float] = {}  # class code -> when a student last looked

    def set_live_run(self, owner: str, run_id: str) -> None:
        """The run a browser now shows on its live page (what its class follows)."""
        with self._lock:
            self._live[owner] = run_id

    def live_run(self, owner: str) -> str | None:
        """The run ``owner`` last showed on its live page (`set_live_run`), while it is known."""
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
        with self._lock:
            self._followed_at[code] = time.monotonic()
            owner = self._classes.get(code)
            return None if owner is None else self._live.get(owner)

    def forget(self, owner: str) -> None:
        """The browser went away: its live run and its class end."""
        with self._lock:
            self._live.pop(owner, None)
            self._classes = {code: who for code, who in self._classes.items() if who != owner}
