"""How the session's pages are shown: projector mode and the one way a chart reaches the page.

Projector mode (a sidebar toggle, or ``?projector=1`` in any page's address) is kept for the
browser session and written back into the address while it is on, so a reloaded or shared page
keeps it. It enlarges the page's text and, through `show_chart`, restyles every chart
(`rdqn.figures.projector`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from rdqn.dashboard import chart_code
from rdqn.dashboard.fragments import page_run_mark
from rdqn.dashboard.shared_figures import SharedFigures
from rdqn.figures.projector import PROJECTOR_TICK_SIZE, for_projector

__all__ = [
    "PAGE_RUN_KEY",
    "PROJECTOR_FLAG",
    "projector_mode",
    "projector_toggle",
    "shared_steady_chart",
    "show_chart",
    "steady_chart",
]

PROJECTOR_FLAG = "projector"
PROJECTOR_HEIGHT = 1.3
CHART_TOOLBAR: dict[str, Any] = {
    "displaylogo": False,
    # Kept: save as PNG, zoom, pan, reset axes. Plotly's other buttons (zoom in and out,
    # autoscale, box and lasso select) made the toolbar that shows on hover run over the
    # titles of charts in narrow columns; a drag still zooms and a double-click resets.
    "modeBarButtonsToRemove": ["zoomIn2d", "zoomOut2d", "autoScale2d", "select2d", "lasso2d"],
}
PAGE_RUN_KEY = "rdqnPageRun"
"""The chart configuration's key for the mark of the page run that drew it."""
_KEY = "app.projector"
_TRUE = {"1", "true", "on", "yes"}

# Less empty space above every page's title: the first screen is for controls and charts.
# A steady chart's two slots lie in one place (`steady_chart`). Home's invisible chart
# (`rdqn.dashboard.chart_code`) takes no room.
_PAGE_CSS = """
<style>
.stMainBlockContainer { padding-top: 2.5rem; }
[class*="st-key-steady-box_"] { display: grid; grid-template-columns: minmax(0, 1fr); }
[class*="st-key-steady-box_"] > * { grid-area: 1 / 1; }
.st-key-CHART_CODE { position: absolute; width: 1px; height: 1px; overflow: hidden; opacity: 0;
  pointer-events: none; }
</style>
""".replace("CHART_CODE", chart_code.CONTAINER_KEY)
# Larger body text, captions and metric values; dark captions (the theme's grey washes out).
# `.stMain` is the main area's class whatever its tag (a <section> before Streamlit 1.5x, a
# <main> since); a browser test checks that these sizes reach the page.
_PROJECTOR_CSS = f"""
<style>
.stMain {{ font-size: 1.2rem; }}
.stMain [data-testid="stMarkdownContainer"] p {{ font-size: 1.2rem; }}
.stMain [data-testid="stCaptionContainer"] {{ font-size: 1.05rem; color: #222; }}
.stMain [data-testid="stMetricValue"] p {{ font-size: 2.6rem; }}
.stMain [data-testid="stMetricLabel"] p {{ font-size: {PROJECTOR_TICK_SIZE}px; }}
.stMain [data-testid="stWidgetLabel"] p {{ font-size: {PROJECTOR_TICK_SIZE}px; }}
</style>
"""


def projector_mode() -> bool:
    """Whether this session shows its pages in projector mode."""
    return bool(st.session_state.get(_KEY, False))


def projector_toggle() -> None:
    """The sidebar toggle (called by the app frame on every page run).

    The URL flag switches the mode on when a page is opened with it; while the mode is on the
    flag stays in the address."""
    flag = st.query_params.get(PROJECTOR_FLAG)
    if _KEY not in st.session_state and flag is not None:
        st.session_state[_KEY] = flag.lower() in _TRUE
    st.sidebar.toggle(
        "Projector mode",
        key=_KEY,
        help="Large dark text and thick lines on every chart, for the back row. "
        f"Add ?{PROJECTOR_FLAG}=1 to a page's address to open it this way.",
    )
    st.html(_PAGE_CSS)
    if projector_mode():
        st.query_params[PROJECTOR_FLAG] = "1"
        st.html(_PROJECTOR_CSS)
    else:
        st.query_params.pop(PROJECTOR_FLAG, None)


def show_chart(where: Any, fig: go.Figure, *, height: int | None = None, **kwargs: Any) -> None:
    """`where.plotly_chart(fig, **kwargs)` (`where`: `st`, a column or a container) with the
    `CHART_TOOLBAR`, ``height`` px tall if given, restyled for a projector when the session is
    in projector mode (and `PROJECTOR_HEIGHT` times as tall: its larger titles and legends
    would squeeze the plot)."""
    where.plotly_chart(_styled(fig, height), config=_chart_config(), **kwargs)


def _chart_config() -> dict[str, Any]:
    """The `CHART_TOOLBAR`; when a fragment draws as part of a page run, with that run's mark
    too (`rdqn.dashboard.fragments`: such a chart must go whole, never as a reference to one the
    browser has cached). Plotly ignores a configuration key it does not know."""
    mark = page_run_mark()
    return CHART_TOOLBAR if mark is None else CHART_TOOLBAR | {PAGE_RUN_KEY: mark}


def _styled(fig: go.Figure, height: int | None) -> go.Figure:
    if projector_mode():
        fig = for_projector(fig)
        height = round(height * PROJECTOR_HEIGHT) if height is not None else None
    if height is not None:
        fig.layout.height = height
    return fig


def steady_chart(where: Any, fig: go.Figure, *, name: str, height: int) -> None:
    """`show_chart` for a chart redrawn every second (a fragment's) that never shows a blank
    frame in between: in a container of its own (key ``steady-box_<name>``) in ``where``.

    Streamlit names a Plotly chart by a hash of its figure, and the browser mounts a chart anew
    whenever its name changes: every redraw of a live chart mounted a fresh Plotly element,
    blank until Plotly had drawn it (about one frame a second went blank). So the chart has two
    slots stacked in one place (`_PAGE_CSS`). Each redraw sends the new figure to one slot and
    raises it above the other, and sends the other one the figure of the previous redraw,
    unchanged: that one keeps its name, so the browser keeps it drawn, and it shows through
    until the new one is drawn over it (the figures' background is opaque). The slot, figure and
    configuration of the last redraw are kept in session state under ``app.steady.<name>``.
    In a page run both slots carry its mark (`rdqn.dashboard.fragments`), and are mounted anew.
    """
    _steady_slots(where, _for_steady_chart(fig, height), name)


def shared_steady_chart(
    where: Any,
    build: Callable[[], go.Figure],
    *,
    key: Hashable,
    pins: Sequence[object],
    name: str,
    height: int,
) -> None:
    """`steady_chart` of the figure ``build()`` makes, built once for every session that
    draws the same ``key`` from the same ``pins`` (a run's snapshots) with the same projector
    mode and height, and shared by them (`rdqn.dashboard.shared_figures`): what thirty students
    following one run cost the server is one figure per snapshot, not thirty."""
    figure = _shared_figures().get(
        (key, projector_mode(), height), pins, lambda: _for_steady_chart(build(), height)
    )
    _steady_slots(where, figure, name)


@st.cache_resource(show_spinner=False)
def _shared_figures() -> SharedFigures:
    """The server's one store of shared figures."""
    return SharedFigures()


def _for_steady_chart(fig: go.Figure, height: int) -> go.Figure:
    fig = _styled(fig, height)
    fig.layout.paper_bgcolor = "white"  # opaque: the slot underneath must not show through
    return fig


def _steady_slots(where: Any, fig: go.Figure, name: str) -> None:
    memory = f"app.steady.{name}"
    # (the slot drawn last, the figure and the configuration drawn there)
    last = st.session_state.get(memory)
    fresh = "b" if last is not None and last[0] == "a" else "a"
    config = _chart_config()
    charts = {fresh: (fig, config)}
    if last is not None:  # as drawn before; in a page run, with its mark (`_chart_config`)
        charts[last[0]] = (last[1], config if PAGE_RUN_KEY in config else last[2])
    box = where.container(key=f"steady-box_{name}")
    for slot in ("a", "b"):
        if slot in charts:
            figure, slot_config = charts[slot]
            box.plotly_chart(
                figure, config=slot_config, width="stretch", key=f"steady-{name}_{slot}"
            )
    # After the charts: the new figure is raised once its slot has it. Drawn in the box, not
    # with the page's styles (a style alone goes to the page's event container, and replaced
    # the toasts there at every redraw).
    box.html(f"<span hidden></span><style>.st-key-steady-{name}_{fresh} {{ z-index: 1; }}</style>")
    st.session_state[memory] = (fresh, fig, config)
