"""`st.fragment` for the dashboard's redrawn parts: each run ends once the server has had time
to send what it drew.

Why: when a fragment's run starts, Streamlit (1.67) takes back that fragment's messages that it
has not sent yet (meant for a run that was cut short), except references to elements the
browser has cached: a large element sent before, such as a chart redrawn unchanged. When the
run before was complete (a full page run, or the same fragment's last run) and only part of its
tail is taken back, the browser gets a cached chart whose container, or whose sibling before
it, never came: its front end throws ("Bad delta path index 1 (should be between [0, 0])",
"Cannot set a node at a delta path") and the tab stays white until it is reloaded. A fragment
redrawn every second is queued right behind the page's run whenever its timer fires while the
page runs (a teacher moving α); on a busy server the page's last messages are then still
waiting. So each run of a fragment waits `SEND_PAUSE_S` after drawing: the server's event
loop, which sends every few milliseconds, sends them meanwhile, before the next run can start.
This makes the white page rare, not impossible: on a server loaded past its cores the event
loop can send too slowly (see docs/reliability.md). Charts drawn into placeholders that the page
makes outside the fragment would end it (a reference then always lands on a place that
exists). Turning the browser's cache off instead would have multiplied what a watching tab
receives by five (26 to 126 kB/s for the live page).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, TypeVar

import streamlit as st

__all__ = ["SEND_PAUSE_S", "fragment"]

SEND_PAUSE_S = 0.1
"""How long a fragment's run waits after drawing: twenty of the server's 5 ms send cycles. Not
as long as the drawing took: under load that doubled the time between a page's polls of its run
(a 5 s idle rule then stopped a watched run)."""

Draw = TypeVar("Draw", bound=Callable[..., None])


def fragment(run_every: float | None = None) -> Callable[[Draw], Draw]:
    """``st.fragment(run_every=run_every)`` of a drawing function that returns once what it
    drew has had `SEND_PAUSE_S` to reach the browser (see the module's note)."""

    def wrap(draw: Draw) -> Draw:
        @functools.wraps(draw)
        def drawn_and_sent(*args: Any, **kwargs: Any) -> None:
            try:
                draw(*args, **kwargs)
            finally:
                time.sleep(SEND_PAUSE_S)

        return st.fragment(run_every=run_every)(drawn_and_sent)  # type: ignore[return-value]

    return wrap
