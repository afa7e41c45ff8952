"""Tests for rdqn.dashboard.classroom.presence: a browser's requests and connections, by its
cookie."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

from rdqn.dashboard.classroom.owners import OWNER_COOKIE, owner_for
from rdqn.dashboard.classroom.presence import Presence, PresenceMiddleware

TOKEN = "A" * 12 + "b-_" + "9" * 9  # 24 URL-safe characters


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_quiet_for_counts_from_the_last_request_and_is_zero_while_a_connection_is_open() -> None:
    clock = Clock()
    presence = Presence(clock)
    assert presence.quiet_for("browser") == math.inf  # never heard from
    presence.heard("browser")
    clock.now += 2.5
    assert presence.quiet_for("browser") == 2.5
    presence.opened("browser")
    presence.opened("browser")  # two tabs
    clock.now += 60
    assert presence.quiet_for("browser") == 0.0
    presence.closed("browser")
    assert presence.quiet_for("browser") == 0.0  # one tab still connected
    presence.closed("browser")  # the last tab closed: a close is not a sign of life
    assert presence.quiet_for("browser") == 60.0
    presence.closed("browser")  # a stray close never makes the count negative
    presence.opened("browser")
    assert presence.quiet_for("browser") == 0.0


def test_made_up_cookies_cannot_grow_the_record_without_bound() -> None:
    clock = Clock()
    presence = Presence(clock, forget_after=60, max_browsers=100)
    presence.opened("connected")
    presence.heard("recent")
    clock.now += 120
    for n in range(1000):
        presence.heard(f"made-up {n}")
    assert len(presence._heard) <= 101  # noqa: SLF001 (the bound is the point)
    assert presence.quiet_for("connected") == 0.0  # an open connection is never forgotten
    assert presence.quiet_for("recent") == math.inf  # heard 120 s ago: forgotten


def _scope(kind: str, cookie: str | None) -> dict[str, Any]:
    headers = [(b"host", b"127.0.0.1")]
    if cookie is not None:
        headers.append((b"cookie", cookie.encode("latin-1")))
    return {"type": kind, "path": "/live", "headers": headers}


def test_the_middleware_hears_the_owner_cookie_of_pages_and_websockets() -> None:
    clock = Clock()
    presence = Presence(clock)
    owner = owner_for(TOKEN)
    open_during: list[float] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        open_during.append(presence.quiet_for(owner))

    middleware = PresenceMiddleware(app, presence)
    cookie = f"_streamlit_xsrf=2|x|y; {OWNER_COOKIE}={TOKEN}"
    asyncio.run(middleware(_scope("http", cookie), None, None))
    clock.now += 5
    assert presence.quiet_for(owner) == 5.0
    asyncio.run(middleware(_scope("websocket", cookie), None, None))
    assert open_during == [0.0, 0.0]  # counted open while Streamlit serves the websocket
    clock.now += 3
    assert presence.quiet_for(owner) == 3.0  # since the websocket opened: it has ended


def test_requests_without_a_well_formed_cookie_pass_untouched() -> None:
    presence = Presence(Clock())
    calls: list[str] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        calls.append(scope["type"])

    middleware = PresenceMiddleware(app, presence)
    for cookie in (None, "", f"{OWNER_COOKIE}=short", f"{OWNER_COOKIE}={TOKEN}x", "junk;;=="):
        asyncio.run(middleware(_scope("http", cookie), None, None))
    asyncio.run(middleware({"type": "lifespan"}, None, None))
    assert calls == ["http"] * 5 + ["lifespan"]
    assert presence._heard == {}  # noqa: SLF001


def test_a_failing_websocket_still_counts_as_closed() -> None:
    presence = Presence(Clock())

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        raise ConnectionResetError

    middleware = PresenceMiddleware(app, presence)
    with pytest.raises(ConnectionResetError):
        asyncio.run(middleware(_scope("websocket", f"{OWNER_COOKIE}={TOKEN}"), None, None))
    assert presence._open == {}  # noqa: SLF001
