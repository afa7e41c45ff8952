"""A browser without a browser: one Streamlit session over the server's WebSocket, speaking its
protocol (protobuf `BackMsg` up, `ForwardMsg` down) the way Streamlit's frontend does, and
drawing nothing. For load measurements of the server alone (`benchmarks.bench_server_load`)
and for tests that send the server exactly the messages a browser sends.

What it does as the frontend does (Streamlit 1.4x-1.6x):
  connect    GET ``/_stcore/health`` (the server sets its XSRF cookie there), then open
             ``/_stcore/stream`` with the cookies (the XSRF one and the browser's own, here
             ``rdqn_owner``), an ``Origin`` header and the subprotocols ``streamlit, <XSRF token>``
  first run  a ``rerun_script`` BackMsg with the page's query string and its name (``live``),
             no page script hash; later ones carry the page's hash that the server sent
             (``navigation``, else ``new_session``) and the query string as the page last set
             it (``page_info_changed``)
  run_every  an ``auto_rerun`` ForwardMsg starts a timer per fragment: every ``interval``
             seconds a ``rerun_script`` for that fragment with ``is_auto_rerun`` (the frontend's
             ``setInterval``, which does not wait for the previous run); ``stop_auto_rerun``
             ends it
  widgets    a click is a rerun with the button's ``trigger_value``; a value, the widget's
             value; widget ids come from the elements the server sent (``$$ID-<hash>-<key>``)

It keeps what a page would show as text, by element position (`text`), the widgets by id, every
BackMsg it sent (`sent`, serialised: what a replay sends again) and, per script run, when it was
asked for, when it finished and how many bytes it brought (`runs`). Like the frontend it keeps
the messages the server marks cacheable (the large ones) and lists their hashes in each rerun,
so the server sends a reference (``ref_hash``) instead of a message the page already has.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import time
import urllib.request
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState, WidgetStates
from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Origin, Subprotocol

__all__ = ["Run", "StreamlitClient", "owner_token"]

OWNER_COOKIE = "rdqn_owner"  # rdqn.dashboard.state.OWNER_COOKIE
XSRF_COOKIE = "_streamlit_xsrf"
FRAGMENT_DONE = ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY
_TEXT_FIELDS = ("body", "text", "code_text", "label", "message")


def owner_token() -> str:
    """A fresh browser's owner token: 24 URL-safe characters
    (`rdqn.dashboard.state.checked_token`)."""
    return secrets.token_urlsafe(18)


@dataclass
class Run:
    """One script run the client asked for (or the server started), as the client saw it."""

    id: str  # the server's script_run_id
    fragment: bool
    fragments: tuple[str, ...]  # the fragments it ran (a fragment run: its one fragment)
    asked: float | None  # time.monotonic() of the oldest request it answers (None: unasked)
    auto: bool = False  # a run_every timer asked for it
    first_message: float | None = None
    finished: float | None = None
    status: int | None = None  # ForwardMsg.ScriptFinishedStatus
    messages: int = 0
    bytes: int = 0
    deltas: int = 0  # of its messages, the deltas (elements drawn): none if all were taken back


@dataclass
class StreamlitClient:
    """One browser tab on ``url`` + ``path`` (``/live``) with ``query`` (``follow=K7Q2``).

    ``owner``: the browser's owner token (a distinct browser each; None sends no cookie, as a
    browser's first visit). ``auto_rerun``: follow the server's run_every timers as a browser
    does (False: only the runs asked for with `rerun`, `click` or `set_value`)."""

    url: str
    path: str = "/live"
    query: str = ""
    owner: str | None = field(default_factory=owner_token)
    auto_rerun: bool = True
    text: dict[tuple[int, ...], str] = field(default_factory=dict)
    widgets: dict[str, tuple[str, Any]] = field(default_factory=dict)  # id -> (kind, element)
    exceptions: list[str] = field(default_factory=list)  # st.exception elements received
    sent: list[bytes] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)
    received_bytes: int = 0
    received_messages: int = 0
    session_id: str | None = None
    intervals: dict[str, float] = field(default_factory=dict)  # fragment id -> its run_every
    page_script_hash: str = ""
    closed: str | None = None  # why the connection ended, once it has
    _ws: ClientConnection | None = None
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _timers: dict[str, tuple[float, asyncio.Task[None]]] = field(default_factory=dict)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _written: set[tuple[int, ...]] = field(default_factory=set)
    _pending: list[tuple[float, str, bool]] = field(default_factory=list)  # asked, fragment, auto
    _by_id: dict[str, Run] = field(default_factory=dict)
    _active: Run | None = None  # the run under way: a session runs one at a time
    _cache: dict[str, tuple[ForwardMsg, int]] = field(default_factory=dict)  # hash -> (it, used)
    _finished_runs: int = 0  # the frontend's scriptRunCount: a cached message's age counts it
    _max_age: int = 2  # global.maxCachedMessageAge, from new_session

    # ------------------------------------------------------------------------ connection
    async def open(self, timeout: float = 30.0) -> None:
        """Connect and ask for the page's first run (it returns at once; `wait_run` waits)."""
        xsrf = await asyncio.to_thread(self._xsrf_cookie, timeout)
        cookies = {XSRF_COOKIE: xsrf} if xsrf else {}
        if self.owner is not None:
            cookies[OWNER_COOKIE] = self.owner
        protocols = [Subprotocol("streamlit")] + ([Subprotocol(xsrf)] if xsrf else [])
        self._ws = await connect(
            self.url.replace("http", "ws", 1) + "/_stcore/stream",
            origin=Origin(self.url),
            subprotocols=protocols,
            additional_headers={"Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())},
            compression=None,  # server.enableWebsocketCompression is off by default
            max_size=None,
            open_timeout=timeout,
            ping_interval=None,  # the server pings; the library answers
            user_agent_header="rdqn-bench-client",
        )
        self._tasks.append(asyncio.create_task(self._receive()))
        await self.rerun()

    def _xsrf_cookie(self, timeout: float) -> str | None:
        request = urllib.request.Request(f"{self.url}/_stcore/health")
        with urllib.request.urlopen(request, timeout=timeout) as response:
            for header in response.headers.get_all("Set-Cookie") or []:
                jar: SimpleCookie = SimpleCookie()
                jar.load(header)
                if XSRF_COOKIE in jar:
                    return jar[XSRF_COOKIE].value
        return None

    async def close(self, quiet_s: float = 5.0) -> None:
        """Stop the page's timers, wait (up to ``quiet_s``) for the runs under way to finish,
        then close the connection. A close while the server writes to it can leave a traceback
        in the server's log (Streamlit 1.67 on Starlette 1.10: the failed write marks the socket
        disconnected, and the next read raises a RuntimeError the handler takes for a text
        frame), so the client closes between the page's updates, as a tab mostly does."""
        for _, timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        if self._ws is not None and not self.closed:
            with contextlib.suppress(TimeoutError, ConnectionError):
                await self.wait_for(self.idle, quiet_s, "the runs under way")
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._ws.close(), 5)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(BaseException):
                await task
        self._tasks.clear()

    def idle(self) -> bool:
        """No run asked for and not begun, none under way."""
        return not self._pending and self._active is None

    # --------------------------------------------------------------------------- sending
    async def send(self, message: BackMsg | bytes) -> None:
        """Send a BackMsg (or its bytes, as captured in another client's `sent`); a rerun
        request is then awaited like one of this page's own (`wait_run`)."""
        assert self._ws is not None, "open() first"
        if isinstance(message, bytes):
            data, message = message, BackMsg.FromString(message)
        else:
            data = message.SerializeToString()
        if message.WhichOneof("type") == "rerun_script":
            request = message.rerun_script
            self._pending.append((time.monotonic(), request.fragment_id, request.is_auto_rerun))
        self.sent.append(data)
        await self._ws.send(data)

    def rerun_message(
        self, states: list[WidgetState] | None = None, fragment_id: str = "", auto: bool = False
    ) -> BackMsg:
        """The ``rerun_script`` BackMsg the frontend sends (its context info left out)."""
        message = BackMsg()
        client = message.rerun_script
        client.query_string = self.query
        client.page_script_hash = self.page_script_hash
        if not self.page_script_hash:
            client.page_name = self.path.strip("/")
        client.widget_states.CopyFrom(WidgetStates(widgets=states or []))
        client.fragment_id = fragment_id
        client.is_auto_rerun = auto
        client.cached_message_hashes.extend(self._cache)
        return message

    async def rerun(
        self, states: list[WidgetState] | None = None, fragment_id: str = "", auto: bool = False
    ) -> None:
        await self.send(self.rerun_message(states, fragment_id, auto))

    def widget_id(self, key: str) -> str:
        """The id of the widget with user key ``key`` on the page (`KeyError` if none)."""
        for widget_id in self.widgets:
            if widget_id.endswith("-" + key) or widget_id == key:
                return widget_id
        raise KeyError(f"no widget with key {key!r} on the page; have {sorted(self.widgets)}")

    def widget(self, key: str) -> Any:
        """The element proto of the widget with user key ``key`` (its label, disabled, ...)."""
        return self.widgets[self.widget_id(key)][1]

    async def click(self, key: str) -> None:
        await self.rerun([WidgetState(id=self.widget_id(key), trigger_value=True)])

    async def set_value(self, key: str, **value: Any) -> None:
        """Set a widget's value, as ``double_value=0.4`` or ``double_array_value=[0.4]``."""
        state = WidgetState(id=self.widget_id(key))
        for name, content in value.items():
            if name.endswith("_array_value"):
                getattr(state, name).data.extend(content)
            else:
                setattr(state, name, content)
        await self.rerun([state])

    # ------------------------------------------------------------------------- receiving
    async def _receive(self) -> None:
        assert self._ws is not None
        try:
            async for data in self._ws:
                assert isinstance(data, bytes)
                now = time.monotonic()
                message = ForwardMsg()
                message.ParseFromString(data)
                self.received_bytes += len(data)
                self.received_messages += 1
                self._handle(message, len(data), now)
                self._changed.set()
            self.closed = "closed by the server"
        except Exception as err:  # noqa: BLE001 (kept as the reason the session ended)
            self.closed = f"{type(err).__name__}: {err}"
        finally:
            self._changed.set()

    def _run(self, message: ForwardMsg, now: float) -> Run | None:
        """The script run ``message`` belongs to (made at its first message, answering the
        requests of its kind sent before it: the server runs coalesced requests once)."""
        run_id = message.metadata.run.script_run_id
        if not run_id:  # only a run's first and last messages name it
            return self._active
        run = self._by_id.get(run_id)
        if run is None:
            fragments = set(message.metadata.run.fragment_ids)
            answered = [p for p in self._pending if bool(p[1]) == bool(fragments)]
            if fragments:
                answered = [p for p in answered if p[1] in fragments]
            # A full run also ends the fragment runs asked for before it (Streamlit drops them).
            self._pending = [p for p in self._pending if p not in answered and fragments]
            run = Run(
                id=run_id,
                fragment=bool(fragments),
                fragments=tuple(message.metadata.run.fragment_ids),
                asked=min((p[0] for p in answered), default=None),
                auto=any(p[2] for p in answered),
                first_message=now,
            )
            self._by_id[run_id] = run
            self.runs.append(run)
            self._active = run
        return run

    def _handle(self, message: ForwardMsg, size: int, now: float) -> None:
        if message.metadata.cacheable and message.hash:
            self._cache[message.hash] = (message, self._finished_runs)
        if message.WhichOneof("type") == "ref_hash" and message.ref_hash in self._cache:
            cached = ForwardMsg()
            cached.CopyFrom(self._cache[message.ref_hash][0])
            self._cache[message.ref_hash] = (cached, self._finished_runs)
            cached.metadata.CopyFrom(message.metadata)  # where it goes this time
            message = cached
        kind = message.WhichOneof("type")
        run = self._run(message, now)
        if run is not None:
            run.messages += 1
            run.bytes += size
        if kind == "new_session":
            self.page_script_hash = message.new_session.page_script_hash
            self.session_id = message.new_session.initialize.session_id or self.session_id
            self._max_age = message.new_session.config.max_cached_message_age or self._max_age
            if run is not None and not run.fragment:
                self._written = set()
        elif kind == "navigation" and message.navigation.page_script_hash:
            self.page_script_hash = message.navigation.page_script_hash  # st.navigation's page
        elif kind == "page_info_changed":
            self.query = message.page_info_changed.query_string  # the page changed its URL
        elif kind == "delta":
            self._delta(message)
            if run is not None:
                run.deltas += 1
        elif kind == "script_finished" and run is not None:
            run.finished, run.status = now, message.script_finished
            self._active = None
            self._expire(run)
            if message.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY:
                for path in [p for p in self.text if p not in self._written]:
                    del self.text[path]
        elif kind == "auto_rerun":
            self.intervals[message.auto_rerun.fragment_id] = message.auto_rerun.interval
            if self.auto_rerun:
                self._start_timer(message.auto_rerun.fragment_id, message.auto_rerun.interval)
        elif kind == "stop_auto_rerun":
            for fragment_id in message.stop_auto_rerun.fragment_ids:
                if fragment_id in self._timers:
                    self._timers.pop(fragment_id)[1].cancel()

    def _expire(self, run: Run) -> None:
        """The frontend's cache ages its messages by finished runs; a fragment run ages only
        the messages of its fragments."""
        self._finished_runs += 1
        for key, (cached, used) in list(self._cache.items()):
            if run.fragments and cached.delta.fragment_id not in run.fragments:
                continue
            if self._finished_runs - used > self._max_age:
                del self._cache[key]

    def _delta(self, message: ForwardMsg) -> None:
        path = tuple(message.metadata.delta_path)
        self._written.add(path)
        if message.delta.WhichOneof("type") != "new_element":
            return
        element = message.delta.new_element
        kind = element.WhichOneof("type")
        if kind is None:
            return
        body = getattr(element, kind)
        texts = [
            getattr(body, name)
            for name in _TEXT_FIELDS
            if name in body.DESCRIPTOR.fields_by_name and isinstance(getattr(body, name), str)
        ]
        self.text[path] = "\n".join(t for t in texts if t)
        if kind == "exception":
            self.exceptions.append(f"{body.type}: {body.message}")
        if "id" in body.DESCRIPTOR.fields_by_name and body.id:
            self.widgets[body.id] = (kind, body)

    def _start_timer(self, fragment_id: str, interval: float) -> None:
        if not fragment_id or interval <= 0:
            return
        if fragment_id in self._timers:
            if self._timers[fragment_id][0] == interval:
                return
            self._timers.pop(fragment_id)[1].cancel()

        async def tick() -> None:
            start = time.monotonic()
            beats = 0
            while True:  # setInterval: on the beat, whether or not the last run finished
                beats += 1
                await asyncio.sleep(max(0.0, start + beats * interval - time.monotonic()))
                if self._ws is None or self.closed:
                    return
                with contextlib.suppress(Exception):
                    await self.rerun(fragment_id=fragment_id, auto=True)

        self._timers[fragment_id] = (interval, asyncio.create_task(tick()))

    # --------------------------------------------------------------------------- waiting
    def page_text(self) -> str:
        """What the page shows as text, top to bottom."""
        return "\n".join(self.text[path] for path in sorted(self.text))

    async def wait_for(self, condition: Any, timeout: float, what: str = "") -> Any:
        """Wait until ``condition()`` is truthy (checked at each message); return its value.
        `TimeoutError` naming ``what`` and the page's text after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            value = condition()
            if value:
                return value
            if self.closed:
                raise ConnectionError(f"the session ended ({self.closed}) waiting for {what}")
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(
                    f"{what or condition} not seen within {timeout:.0f} s; the page shows:\n"
                    + self.page_text()[-1500:]
                )
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), min(left, 1.0))

    async def wait_run(self, timeout: float = 60.0) -> Run:
        """Wait until the page's latest full (not fragment) run has finished, not cut short by
        a rerun; return it."""

        def done() -> Run | None:
            if any(not fragment for _, fragment, _ in self._pending):
                return None  # asked for, not started yet
            full = [r for r in self.runs if not r.fragment]
            last = full[-1] if full else None
            ended = last is not None and last.finished is not None
            return last if ended and last.status != ForwardMsg.FINISHED_EARLY_FOR_RERUN else None

        return await self.wait_for(done, timeout, "the page's run to finish")

    def find(self, pattern: str) -> re.Match[str] | None:
        return re.search(pattern, self.page_text())
