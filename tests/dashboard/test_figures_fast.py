"""Figure builders build each figure in one `go.Figure(data=..., layout=...)` call.

plotly's incremental calls (`add_scatter`, `add_hline`, `update_layout`, `update_xaxes`, ...) each
re-validate the figure: building the live page's two curves that way cost about four times as
much GIL time, taken every second from the training thread. These tests make those calls raise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import plotly.graph_objects as go
import pytest
from plotly.basedatatypes import BaseFigure

from dashboard.figures import (
    age_figure,
    comparison_figure,
    draw_histogram_figure,
    empty_figure,
    fit_figure,
    heatmap_over_time,
    histogram_figure,
    loss_curve,
    reward_curve,
    runs_overlay_figure,
    segments_figure,
    sum_tree_figure,
    td_stages_figure,
    timing_figure,
    tree_levels_figure,
    weights_scatter,
)
from rdqn.compare import Curve
from rdqn.telemetry import (
    RELATIVE_PROBABILITY_EDGES,
    BatchView,
    GoodnessOfFit,
    Histogram,
    HistogramHistory,
)
from rdqn.tree_demo import descent_path

INCREMENTAL = [
    name
    for name in dir(BaseFigure)
    if name.startswith(("add_", "update_")) and callable(getattr(BaseFigure, name))
]


@pytest.fixture
def no_incremental_updates(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbid(name: str) -> Callable[..., Any]:
        def raise_(*_args: Any, **_kwargs: Any) -> None:
            raise AssertionError(f"figure built with Figure.{name}: use one go.Figure(...) call")

        return raise_

    for name in [*INCREMENTAL, "add_scatter", "add_bar", "add_heatmap"]:
        monkeypatch.setattr(go.Figure, name, forbid(name))


def hist(counts: list[float]) -> Histogram:
    return Histogram(np.linspace(0.0, 1.0, len(counts) + 1), np.asarray(counts, dtype=np.float64))


BATCH = BatchView(
    indices=np.array([4, 9, 1], dtype=np.int64),
    probabilities=np.array([0.01, 0.2, 0.05]),
    weights=np.array([1.0, 0.3, 0.6]),
    td_abs=np.array([0.1, 2.0, 0.5]),
    ages=np.array([3, 40, 7], dtype=np.int64),
    ess=2.4,
)
FIT = GoodnessOfFit(
    np.array([0, 10, 20]), np.array([12.0, 8.0]), np.array([10.0, 10.0]), 0.8, 1, 0.37
)
HISTORY = HistogramHistory(
    edges=np.array([-1.0, 0.0, 1.0]),
    steps=np.array([10, 20], dtype=np.int64),
    counts=np.array([[1.0, 3.0], [0.0, 5.0]]),
)
CURVES = {"uniform": [Curve(np.arange(1, 31) * 10, np.linspace(0.0, 100.0, 30))]}

BUILDS: dict[str, Callable[[], go.Figure]] = {
    "empty_figure": lambda: empty_figure("nothing"),
    "reward_curve": lambda: reward_curve(
        [1, 2, 3], [1.0, 2.0, 3.0], overlay=([1, 2], [2.0, 2.0]), threshold=2.5, scheme="rank"
    ),
    "loss_curve": lambda: loss_curve([1, 2, 3], [0.9, 0.5, 0.02], [2.0, 1.0, 0.5], log_y=True),
    "comparison_figure": lambda: comparison_figure(CURVES, total_steps=300, threshold=50.0),
    "runs_overlay_figure": lambda: runs_overlay_figure(
        {"uniform": ([1, 2], [1.0, 2.0])}, threshold=1.5
    ),
    "timing_figure": lambda: timing_figure({"env": 3.0, "update": 6.0}),
    "histogram_figure": lambda: histogram_figure(
        Histogram.of(np.array([-1.5, 0.0, 0.1]), RELATIVE_PROBABILITY_EDGES),
        title="N P(i)",
        x_title="N·P(i)",
        log_x_labels=True,
        reference=0.0,
        reference_label="uniform",
    ),
    "heatmap_over_time": lambda: heatmap_over_time(
        HISTORY, title="t", y_title="y", log_y_labels=True
    ),
    "td_stages_figure": lambda: td_stages_figure({"10%": hist([1, 2]), "50%": hist([2, 1])}),
    "fit_figure": lambda: fit_figure(FIT),
    "age_figure": lambda: age_figure(hist([6, 2, 1, 3])),
    "weights_scatter": lambda: weights_scatter(BATCH),
    "sum_tree_figure": lambda: sum_tree_figure(
        [1.0, 2.0, 3.0], paths=[descent_path(2, 4)], highlight_leaves=[0]
    ),
    "tree_levels_figure": lambda: tree_levels_figure([np.array([3.0]), np.array([3.0, 0.0])]),
    "segments_figure": lambda: segments_figure([1.0, 2.0, 3.0], np.array([0.5, 4.0]), 2),
    "draw_histogram_figure": lambda: draw_histogram_figure(
        np.array([3, 1, 6]), np.array([2.0, 1.0, 7.0])
    ),
}


@pytest.mark.parametrize("name", sorted(BUILDS))
def test_builder_makes_its_figure_in_one_constructor_call(
    name: str, no_incremental_updates: None
) -> None:
    fig = BUILDS[name]()
    assert isinstance(fig, go.Figure)
    assert fig.layout.title.text
