"""The browser's chart code, loaded while Home is read.

A browser draws its first Plotly chart only once it has loaded Plotly's code, 4.7 MB of
JavaScript that Streamlit's front end fetches and compiles when a page first holds a chart: one
to two seconds on a 2-core machine, during which the page that opened it (Live training, after
Home's *Start demo*) shows none of its update. Home holds no chart. So `load_chart_code`, called at
the end of Home, draws one tiny, invisible chart a moment after Home has shown (a fragment whose
page-run call draws nothing and whose own first run, `DRAW_AFTER_S` later, draws the chart): the
code loads while the teacher reads, and the demo's page draws at once. Drawn as part of Home's
run, the chart would delay Home itself.

Once per session (each tab, and again after a reload): the fragment's next run marks it done
and reruns the page, which no longer calls the fragment, so its timer ends (`DONE`).
"""

from __future__ import annotations

from contextvars import ContextVar

import plotly.graph_objects as go
import streamlit as st

from rdqn.dashboard.fragments import fragment

__all__ = ["CONTAINER_KEY", "DONE", "DRAWN", "DRAW_AFTER_S", "STATE_KEY", "load_chart_code"]

DRAW_AFTER_S = 1.0
"""Seconds from Home's run to the invisible chart (and again to the end of the timer)."""
STATE_KEY = "home.chart_code"
"""Session state: `DRAWN` once the invisible chart went out, `DONE` once the timer ended."""
DRAWN = "drawn"
DONE = "done"
CONTAINER_KEY = "chart-code"
"""The invisible chart's container; `rdqn.dashboard.display`'s page style takes it out of sight and
out of the layout."""

_IN_PAGE_RUN: ContextVar[bool] = ContextVar("rdqn_chart_code_page_run", default=False)
"""True while Home's script calls the fragment (`rdqn.dashboard.fragments.page_run_mark` says the
same only under `app.py`'s frame, and Home must not draw the chart in its own run without it
either)."""


def load_chart_code() -> None:
    """Have the browser load Plotly's code soon after this page shows, once per session."""
    if st.session_state.get(STATE_KEY) == DONE:
        return
    token = _IN_PAGE_RUN.set(True)
    try:
        _invisible_chart()
    finally:
        _IN_PAGE_RUN.reset(token)


@fragment(run_every=DRAW_AFTER_S)
def _invisible_chart() -> None:
    if _IN_PAGE_RUN.get():
        return  # the page shows first
    if st.session_state.get(STATE_KEY) != DRAWN:
        figure = go.Figure(layout={"width": 10, "height": 10, "margin": dict(l=0, r=0, t=0, b=0)})
        with st.container(key=CONTAINER_KEY):
            st.plotly_chart(figure, config={"staticPlot": True}, width="content")
        st.session_state[STATE_KEY] = DRAWN
        return
    st.session_state[STATE_KEY] = DONE
    st.rerun(scope="app")
