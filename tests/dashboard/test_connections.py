"""Tests for rdqn.dashboard.connections: errors after a browser has gone are not tracebacks."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import pytest

from rdqn.dashboard.connections import EndedConnectionMiddleware

WEBSOCKET = {"type": "websocket", "path": "/_stcore/stream", "headers": []}


class ClientDisconnected(OSError):
    """What the ASGI server raises on a write to a closed connection."""


async def _closed_send(message: Any) -> None:
    raise ClientDisconnected


async def _open_send(message: Any) -> None:
    return None


async def _disconnect() -> dict[str, Any]:
    return {"type": "websocket.disconnect", "code": 1001}


async def _a_frame() -> dict[str, Any]:
    return {"type": "websocket.receive", "bytes": b"\x00"}


async def streamlit_after_a_failed_write(scope: Any, receive: Any, send: Any) -> None:
    """Streamlit's handler as it fails: its write fails, then it takes the next read's error
    for a text frame and raises."""
    with contextlib.suppress(OSError):  # Streamlit's writer task swallows it
        await send({"type": "websocket.send", "bytes": b"update"})
    raise TypeError("WebSocket text frames are not supported; connection closed.")


def test_an_error_after_a_failed_write_is_one_log_line(caplog: pytest.LogCaptureFixture) -> None:
    middleware = EndedConnectionMiddleware(streamlit_after_a_failed_write)
    with caplog.at_level(logging.INFO, logger="rdqn.dashboard.connections"):
        asyncio.run(middleware(dict(WEBSOCKET), _a_frame, _closed_send))
    assert [r.getMessage() for r in caplog.records] == [
        "A browser's connection ended while the server wrote to it (TypeError('WebSocket "
        "text frames are not supported; connection closed.'))"
    ]
    assert caplog.records[0].exc_info is None


def test_an_error_after_the_browser_said_goodbye_is_one_log_line() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        raise RuntimeError('WebSocket is not connected. Need to call "accept" first.')

    asyncio.run(EndedConnectionMiddleware(app)(dict(WEBSOCKET), _disconnect, _open_send))


def test_an_error_on_a_live_connection_still_raises() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "websocket.send", "bytes": b"update"})
        raise ValueError("a real bug")

    with pytest.raises(ValueError, match="a real bug"):
        asyncio.run(EndedConnectionMiddleware(app)(dict(WEBSOCKET), _a_frame, _open_send))


def test_http_requests_pass_through_untouched() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise ValueError("an HTTP error is not ours to hide")

    with pytest.raises(ValueError):
        asyncio.run(EndedConnectionMiddleware(app)({"type": "http"}, _a_frame, _closed_send))
