"""A browser's connection that ends while the server writes to it is not a server error.

When a browser goes away (a closed tab, a reload, a reload storm) while the server is sending
it a page update, the failed write marks the WebSocket disconnected, and Streamlit's next read
on it fails in a way it takes for a protocol error: the exception reaches the ASGI server, which
logs it as a traceback ("Exception in ASGI application"). `EndedConnectionMiddleware`, in front
of Streamlit (`app.py`), watches each WebSocket: once the browser has gone (it said so, or a
write to it failed), an error that follows is logged in one line; any other error still
propagates with its traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["EndedConnectionMiddleware"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

_log = logging.getLogger(__name__)


class EndedConnectionMiddleware:
    """ASGI middleware: errors after a WebSocket's browser has gone are logged, not raised."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        gone = False

        async def watched_receive() -> Message:
            nonlocal gone
            message = await receive()
            gone = gone or message.get("type") == "websocket.disconnect"
            return message

        async def watched_send(message: Message) -> None:
            nonlocal gone
            try:
                await send(message)
            except Exception:
                gone = True  # the connection cannot be written to: the browser is gone
                raise

        try:
            await self.app(scope, watched_receive, watched_send)
        except Exception as err:
            if not gone:
                raise
            _log.info("A browser's connection ended while the server wrote to it (%r)", err)
