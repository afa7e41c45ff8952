"""`st.fragment` for the dashboard's redrawn parts, and what keeps their charts safe to send.

Why: when a fragment's run starts, Streamlit (1.67) takes back that fragment's messages that it
has not sent yet (meant for a run that was cut short), except references to elements the
browser has cached: a large element sent before, such as a chart redrawn unchanged. When only
part of a complete run's tail is taken back, the browser gets a cached chart whose container,
or whose sibling before it, never came: its front end throws ("Bad delta path index 1 (should
be between [0, 0])", "Cannot set a node at a delta path") and the tab stays white until it is
reloaded. A fragment redrawn every second is queued right behind the page's run whenever its
timer fires while the page runs (a teacher moving α); on a busy server the page's last messages
are then still waiting.

Two rules end it:

- **No reference in a page run.** A fragment drawn as part of its page's run (`page_run`, which
  `app.py` wraps around every page) sends every chart whole: `page_run_mark` gives the run a
  mark that `rdqn.dashboard.display` writes into each chart's configuration (Plotly ignores a key it
  does not know), so no chart of that run is one the browser has cached. Whatever a queued
  fragment run takes back, nothing of that run is left to land in a place that never came. (The
  charts are sent and mounted anew once per page run, a click or a slider move, not once a
  second.)
- **A pause after each run.** Between two runs of the same fragment, references to its
  unchanged charts stay (they save a watching tab four fifths of its traffic) and land where the
  run before drew the same layout. Each run waits `SEND_PAUSE_S` after drawing, so that the
  server's event loop, which sends every few milliseconds, has sent the run before the next one
  can start.
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import streamlit as st

__all__ = ["SEND_PAUSE_S", "fragment", "page_run", "page_run_mark"]

SEND_PAUSE_S = 0.1
"""How long a fragment's run waits after drawing: twenty of the server's 5 ms send cycles. Not
as long as the drawing took: under load that doubled the time between a page's polls of its run
(a 5 s idle rule then stopped a watched run)."""

_PAGE_RUN: ContextVar[str | None] = ContextVar("rdqn_page_run", default=None)
_IN_FRAGMENT: ContextVar[bool] = ContextVar("rdqn_in_fragment", default=False)

Draw = TypeVar("Draw", bound=Callable[..., None])


@contextmanager
def page_run() -> Iterator[str]:
    """The extent of one run of a whole page (not a fragment's own run), with a mark no other
    page run has."""
    token = _PAGE_RUN.set(uuid.uuid4().hex)
    try:
        yield _PAGE_RUN.get()  # type: ignore[misc]
    finally:
        _PAGE_RUN.reset(token)


def page_run_mark() -> str | None:
    """The page run's mark while a fragment draws as part of it; None in a fragment's own run
    and outside fragments (what the page itself draws is never taken back)."""
    return _PAGE_RUN.get() if _IN_FRAGMENT.get() else None


def has_a_browser() -> bool:
    """Whether a browser receives what this session draws; an AppTest's session has none (no
    address), and nothing to wait for after drawing."""
    return st.context.url is not None


def fragment(run_every: float | None = None) -> Callable[[Draw], Draw]:
    """``st.fragment(run_every=run_every)`` of a drawing function that knows whether it draws
    in a page run (`page_run_mark`) and returns once what it drew has had `SEND_PAUSE_S` to
    reach the browser (see the module's note)."""

    def wrap(draw: Draw) -> Draw:
        @functools.wraps(draw)
        def drawn_and_sent(*args: Any, **kwargs: Any) -> None:
            token = _IN_FRAGMENT.set(True)
            try:
                draw(*args, **kwargs)
            finally:
                _IN_FRAGMENT.reset(token)
                if has_a_browser():
                    time.sleep(SEND_PAUSE_S)

        return st.fragment(run_every=run_every)(drawn_and_sent)  # type: ignore[return-value]

    return wrap
