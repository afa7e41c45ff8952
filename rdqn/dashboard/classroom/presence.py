"""Whether a browser is still there: a request it sent lately, or a connection it holds open.

A page's script attaches its session (`sessions.BrowserSessions`) only once it runs, and a
browser reloading faster than its page can connect (a reload storm: F5 held down) runs no
script at all for as long as the storm lasts, though it is plainly still there. The server
does see each of its page requests and websockets, with the browser's owner cookie:
`PresenceMiddleware`, an ASGI middleware in front of Streamlit (`app.py` serves the dashboard
as an `st.App` with it), records them in `PRESENCE`, and a browser's runs stop only once it
has had neither an attached session nor any sign of life for a whole grace period.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.requests import cookie_parser

from rdqn.dashboard.classroom.owners import OWNER_COOKIE, checked_token, owner_for

__all__ = ["PRESENCE", "Presence", "PresenceMiddleware"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class Presence:
    """When each browser (owner) was last heard from, and how many connections it holds open.

    Args:
        clock: monotonic seconds (a test's fake clock).
        forget_after: seconds after which a browser with no open connection is forgotten
            (checked once more than `max_browsers` are known).
        max_browsers: how many browsers are kept at most (besides those with a connection
            open), so made-up cookies cannot grow the record without bound.
    """

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        forget_after: float = 600.0,
        max_browsers: int = 4096,
    ) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._forget_after = forget_after
        self._max_browsers = max_browsers
        self._heard: dict[str, float] = {}  # owner -> when it was last heard from
        self._open: dict[str, int] = {}  # owner -> connections open now

    def heard(self, owner: str) -> None:
        """A request of ``owner`` arrived (or one of its connections ended) now."""
        with self._lock:
            self._heard[owner] = self._clock()
            if len(self._heard) > self._max_browsers:
                self._forget_old()

    def opened(self, owner: str) -> None:
        """``owner`` opened a connection (a page's websocket)."""
        self.heard(owner)
        with self._lock:
            self._open[owner] = self._open.get(owner, 0) + 1

    def closed(self, owner: str) -> None:
        """One of ``owner``'s connections ended: not a sign of life (a closed tab ends its
        connection; a reload's next page request is the sign)."""
        with self._lock:
            left = self._open.get(owner, 0) - 1
            if left > 0:
                self._open[owner] = left
            else:
                self._open.pop(owner, None)

    def quiet_for(self, owner: str) -> float:
        """Seconds since ``owner`` was last heard from: 0 while it holds a connection open,
        infinity if it never was."""
        with self._lock:
            if self._open.get(owner, 0) > 0:
                return 0.0
            heard = self._heard.get(owner)
            return math.inf if heard is None else max(0.0, self._clock() - heard)

    def _forget_old(self) -> None:
        """Forget browsers quiet for `forget_after`, then, if still too many, the quietest, down
        to three quarters of `max_browsers` (so a flood of made-up cookies costs one sort per
        quarter); a browser with a connection open is never forgotten."""
        horizon = self._clock() - self._forget_after
        quiet = sorted((t, o) for o, t in self._heard.items() if o not in self._open)
        keep = self._max_browsers * 3 // 4
        excess = len(self._heard) - keep
        for n, (heard, owner) in enumerate(quiet):
            if heard >= horizon and n >= excess:
                break
            del self._heard[owner]


PRESENCE = Presence()
"""The server's one record of browsers' presence (the middleware writes it, sessions read it)."""


class PresenceMiddleware:
    """ASGI middleware: every HTTP request and websocket that carries a well-formed owner cookie
    counts as a sign of that browser's presence (`Presence`); a websocket counts as open until
    it ends. Requests without the cookie (a browser's very first page) pass untouched."""

    def __init__(
        self, app: Callable[[Scope, Receive, Send], Awaitable[None]], presence: Presence = PRESENCE
    ) -> None:
        self.app = app
        self.presence = presence

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        owner = _owner(scope) if scope["type"] in ("http", "websocket") else None
        if owner is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "http":
            self.presence.heard(owner)
            await self.app(scope, receive, send)
        else:
            self.presence.opened(owner)
            try:
                await self.app(scope, receive, send)
            finally:
                self.presence.closed(owner)


def _owner(scope: Scope) -> str | None:
    """The owner whose cookie the request carries, or None."""
    for name, value in scope.get("headers") or ():
        if name == b"cookie":
            token = checked_token(cookie_parser(value.decode("latin-1")).get(OWNER_COOKIE))
            if token is not None:
                return owner_for(token)
    return None
