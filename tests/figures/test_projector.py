"""Projector mode restyles any finished figure: large dark ticks and legends, heavy lines."""

import numpy as np

import rdqn.figures as figures
from rdqn.figures.projector import (
    INK,
    LEGEND_LINE_CHARS,
    MIN_LINE_WIDTH,
    PROJECTOR_TICK_SIZE,
    for_projector,
)


def test_every_axis_gets_large_dark_ticks_and_titles() -> None:
    fig = figures.loss_curve(np.arange(50), np.linspace(1, 0.1, 50), np.linspace(2, 0.5, 50))
    assert fig.layout.yaxis2.title.text  # the loss chart has a second y axis
    for_projector(fig)
    for axis in (fig.layout.xaxis, fig.layout.yaxis, fig.layout.yaxis2):
        assert axis.tickfont.size >= 16 and axis.tickfont.color == INK
        assert axis.title.font.size > PROJECTOR_TICK_SIZE
    assert fig.layout.legend.font.size >= 16


def test_lines_get_heavier_and_the_data_stays_the_same() -> None:
    steps, returns = np.arange(20), np.linspace(0, 1, 20)
    fig = figures.reward_curve(steps, returns, smoothing=0.9)
    widths = [trace.line.width for trace in fig.data]
    ys = [np.asarray(trace.y).copy() for trace in fig.data]
    for_projector(fig)
    for trace, before, y in zip(fig.data, widths, ys, strict=True):
        assert trace.line.width >= max(MIN_LINE_WIDTH, 2 * (before or 1.5))
        np.testing.assert_array_equal(np.asarray(trace.y), y)


def test_no_colour_bar_appears_where_the_figure_had_none() -> None:
    fig = for_projector(figures.sum_tree_figure(np.array([1.0, 2.0, 3.0, 4.0])))
    assert not any(getattr(t.marker, "showscale", None) for t in fig.data if t.type == "scatter")
    assert all(not t.marker.colorbar.to_plotly_json() for t in fig.data if t.type == "scatter")


def test_invisible_lines_stay_invisible() -> None:
    fig = figures.reward_curve(np.arange(5), np.arange(5.0))
    fig.add_scatter(x=[0, 1], y=[0, 1], line={"width": 0}, fill="tonexty")
    for_projector(fig)
    assert fig.data[-1].line.width == 0


def test_long_legend_entries_are_broken_into_lines() -> None:
    """At 18 px the previous run's label ran past the narrow loss chart's edge: entries longer
    than LEGEND_LINE_CHARS are broken between a run's settings (" · "), else between words;
    short ones stay as they are."""
    fig = figures.loss_curve(
        np.arange(5),
        np.ones(5),
        np.ones(5),
        smoothing=0.9,
        overlay=(np.arange(5), np.ones(5)),
        overlay_label="previous: proportional · α 0 · β₀ 0.4 · seed 1",
    )
    for_projector(fig)
    names = [trace.name for trace in fig.data]
    assert names == [
        "loss (EMA 0.9)",
        "mean |TD error| (EMA 0.9)",
        "previous: proportional<br>α 0 · β₀ 0.4 · seed 1",
    ]
    assert all(len(line) <= LEGEND_LINE_CHARS for name in names for line in name.split("<br>"))
    words = figures.reward_curve(np.arange(3), np.ones(3))
    words.data[0].name = "a legend entry of many words without any separator"
    for_projector(words)
    assert words.data[0].name == "a legend entry of many<br>words without any<br>separator"
