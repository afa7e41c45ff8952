"""Projector mode: the same figures, readable from the back row.

On a projector a 12 px light-grey tick label is unreadable from a few metres away. `for_projector`
restyles a finished figure: tick labels and legends at `PROJECTOR_TICK_SIZE` px in a dark colour,
larger axis titles and chart titles, lines and markers twice as heavy. It is applied on top of
the builders' own layout (every axis a figure has, `xaxis2`, `yaxis2`, ... included), so each
builder stays as it is and the look is switched per viewer (the dashboard keeps the switch).
"""

from __future__ import annotations

import textwrap

import plotly.graph_objects as go

from rdqn.figures._base import BASE_FONT_SIZE

__all__ = ["PROJECTOR_TICK_SIZE", "for_projector"]

PROJECTOR_TICK_SIZE = 18
"""Tick labels, legends and hover text (px): at least 16 px is readable across a classroom."""
INK = "#111111"
"""Dark text on the white page: grey ticks wash out on a projector."""
MIN_LINE_WIDTH = 3.0
LEGEND_LINE_CHARS = 26
"""A legend entry longer than this is broken into lines: at `PROJECTOR_TICK_SIZE` px a line of
it and its symbol take about 240 px, so legends stay whole in the live page's narrow loss chart
(320 px at 1280×720). Plotly never wraps an entry itself: it ran past the chart's edge."""


def for_projector(fig: go.Figure) -> go.Figure:
    """Restyle `fig` in place for a projector and return it.

    Every x/y axis gets `PROJECTOR_TICK_SIZE` px dark tick labels and larger titles; the legend,
    colour bars and annotations grow to match; every line is at least `MIN_LINE_WIDTH` px
    (twice its width when that is more), markers grow by half and text drawn in the plot (node
    labels) grows to nearly the tick size. Legend entries longer than `LEGEND_LINE_CHARS` are
    broken into lines (at " · " between a run's settings where it can).
    """
    axis_style = {
        "tickfont": {"size": PROJECTOR_TICK_SIZE, "color": INK},
        "title": {"font": {"size": PROJECTOR_TICK_SIZE + 2, "color": INK}},
        "linecolor": INK,
    }
    fig.update_xaxes(**axis_style)
    fig.update_yaxes(**axis_style)
    fig.update_layout(
        font={"size": PROJECTOR_TICK_SIZE, "color": INK},
        title_font={"size": PROJECTOR_TICK_SIZE + 6, "color": INK},
        legend_font={"size": PROJECTOR_TICK_SIZE, "color": INK},
        hoverlabel_font_size=PROJECTOR_TICK_SIZE,
    )
    for annotation in fig.layout.annotations:
        size = annotation.font.size or BASE_FONT_SIZE
        annotation.font.size = max(size, PROJECTOR_TICK_SIZE)
    for trace in fig.data:
        if trace.name and len(trace.name) > LEGEND_LINE_CHARS and "<br>" not in trace.name:
            trace.name = _wrapped(trace.name)
        if trace.type == "heatmap":
            trace.colorbar.tickfont = {"size": PROJECTOR_TICK_SIZE, "color": INK}
        if trace.type != "scatter":
            continue
        if trace.line is not None and trace.line.width != 0:  # 0: an invisible band edge
            width = trace.line.width if trace.line.width is not None else 1.5
            trace.line.width = max(MIN_LINE_WIDTH, 2 * width)
        if isinstance(trace.marker.size, int | float):
            trace.marker.size = trace.marker.size * 1.5
        if trace.marker.showscale:
            trace.marker.colorbar.tickfont = {"size": PROJECTOR_TICK_SIZE, "color": INK}
        if trace.text is not None:
            trace.textfont.size = max(trace.textfont.size or 0, PROJECTOR_TICK_SIZE - 2)
    return fig


def _wrapped(name: str) -> str:
    """``name`` in lines of at most `LEGEND_LINE_CHARS` characters where its words allow,
    joined by Plotly's line break: whole " · "-separated parts (a run's settings: "α 0.6")
    where they fit, else words."""
    lines: list[str] = []
    for part in name.split(" · "):
        joined = f"{lines[-1]} · {part}" if lines else part
        if lines and len(joined) <= LEGEND_LINE_CHARS:
            lines[-1] = joined
        else:
            lines.extend(textwrap.wrap(part, LEGEND_LINE_CHARS, break_long_words=False))
    return "<br>".join(lines)
