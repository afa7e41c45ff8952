"""Figure builders: hand-made inputs, assertions on the figures' traces, layout and titles."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import plotly.graph_objects as go
import pytest
from plotly.basedatatypes import BaseFigure

from rdqn.classroom.tree_demo import descent_path
from rdqn.compare import Curve
from rdqn.figures import (
    BASE_FONT_SIZE,
    EMPTY_MESSAGE,
    PATH_PALETTE,
    SCHEME_COLORS,
    age_figure,
    column_fractions,
    comparison_figure,
    draw_histogram_figure,
    ema,
    empty_figure,
    fit_figure,
    heatmap_over_time,
    histogram_figure,
    loss_curve,
    probability_weight_bars,
    reward_curve,
    runs_overlay_figure,
    segments_figure,
    sum_tree_figure,
    td_stages_figure,
    timing_figure,
    tree_levels_figure,
    weights_scatter,
)
from rdqn.figures._base import CURVE_POINTS, thin
from rdqn.figures.curves import MAX_MARKERS
from rdqn.figures.projector import for_projector
from rdqn.figures.tree import EMPTY, PADDING
from rdqn.training.telemetry import (
    RELATIVE_PROBABILITY_EDGES,
    BatchView,
    GoodnessOfFit,
    Histogram,
    HistogramHistory,
)


def is_empty_state(fig: go.Figure) -> bool:
    """No traces, and one centred line saying why: "no data yet" or when the data comes."""
    notes = [a.text for a in fig.layout.annotations]
    return len(fig.data) == 0 and len(notes) == 1 and bool(notes[0])


def trace(fig: go.Figure, name: str) -> go.Scatter | go.Bar:
    matches = [t for t in fig.data if t.name == name]
    assert len(matches) == 1, f"{name!r} in {[t.name for t in fig.data]}"
    return matches[0]


def small_hist(counts: list[float], low: float = 0.0, high: float = 1.0) -> Histogram:
    return Histogram(np.linspace(low, high, len(counts) + 1), np.asarray(counts, dtype=np.float64))


def small_batch() -> BatchView:
    return BatchView(
        indices=np.array([4, 9, 1], dtype=np.int64),
        generations=np.array([4, 9, 1], dtype=np.int64),
        probabilities=np.array([0.01, 0.2, 0.05]),
        weights=np.array([1.0, 0.3, 0.6]),
        td_abs=np.array([0.1, 2.0, 0.5]),
        ages=np.array([3, 40, 7], dtype=np.int64),
        ess=2.4,
    )


# ------------------------------------------------------------------------------- build cost
# plotly's incremental calls (`add_scatter`, `add_hline`, `update_layout`, ...) each re-validate
# the figure: building the live page's curves that way cost four times the GIL time, taken every
# second from the training thread. Every builder must make its figure in one `go.Figure(...)`.

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


FIT = GoodnessOfFit(
    bin_edges=np.array([0, 10, 20]),
    observed=np.array([12.0, 8.0]),
    expected=np.array([10.0, 10.0]),
    low=np.array([9.0, 9.0]),
    high=np.array([11.0, 11.0]),
    statistic=4.0,
    p_value=0.37,
    stratified=True,
    axis="buffer slot",
    batches=2,
    batch_size=10,
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
    "td_stages_figure": lambda: td_stages_figure(
        {"10%": small_hist([1, 2]), "50%": small_hist([2, 1])}
    ),
    "fit_figure": lambda: fit_figure(FIT),
    "age_figure": lambda: age_figure(small_hist([6, 2, 1, 3])),
    "weights_scatter": lambda: weights_scatter(small_batch()),
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


# ------------------------------------------------------------------------------------- ema


def test_ema_is_tensorboards_debiased_average() -> None:
    """s = 0.5: raw 0.5, 1.25, 2.125; debiased by 1 - 0.5^n: 1, 1.25/0.75, 2.125/0.875."""
    np.testing.assert_allclose(ema([1.0, 2.0, 3.0], 0.5), [1.0, 5.0 / 3.0, 17.0 / 7.0])


def test_ema_without_smoothing_is_the_identity_and_a_constant_stays_constant() -> None:
    np.testing.assert_allclose(ema([3.0, -1.0, 7.0], 0.0), [3.0, -1.0, 7.0])
    np.testing.assert_allclose(ema(np.full(50, 4.0), 0.99), np.full(50, 4.0))


def test_ema_passes_non_finite_values_through_without_poisoning_the_average() -> None:
    out = ema([1.0, np.nan, 3.0], 0.5)
    assert out[0] == 1.0 and np.isnan(out[1])
    assert out[2] == pytest.approx((0.25 + 1.5) / 0.75)


def test_ema_of_nothing_is_empty_and_smoothing_is_checked() -> None:
    assert ema([], 0.9).shape == (0,)
    with pytest.raises(ValueError, match="smoothing must be in"):
        ema([1.0], 1.0)
    with pytest.raises(ValueError, match="smoothing must be in"):
        ema([1.0], -0.1)


def test_ema_matches_the_recurrence_step_by_step_on_a_long_ragged_series() -> None:
    rng = np.random.default_rng(3)
    values = rng.normal(size=2_000)
    values[rng.choice(values.size, 40, replace=False)] = np.nan
    values[7] = np.inf
    expected = np.empty_like(values)
    last, count = 0.0, 0
    for i, value in enumerate(values):  # the definition, one value at a time
        if not np.isfinite(value):
            expected[i] = value
            continue
        last = 0.9 * last + 0.1 * value
        count += 1
        expected[i] = last / (1.0 - 0.9**count)
    np.testing.assert_allclose(ema(values, 0.9), expected, rtol=1e-12)


# ------------------------------------------------------------------------- thinned curves


def test_a_short_curve_is_drawn_whole() -> None:
    x = np.arange(CURVE_POINTS, dtype=np.float64)
    np.testing.assert_array_equal(thin(x, np.sin(x)), np.arange(CURVE_POINTS))


def test_a_long_curve_keeps_its_ends_its_spike_and_at_most_the_budget() -> None:
    x = np.arange(100_000, dtype=np.float64)
    y = np.random.default_rng(0).normal(size=x.size)
    y[61_234] = 50.0  # one spike
    y[80_000] = np.nan  # one gap
    keep = thin(x, y, points=500)
    assert keep.size <= 500 and np.all(np.diff(keep) > 0)
    assert {0, 99_999, 61_234, 80_000} <= set(keep.tolist())


def test_a_curve_whose_x_goes_back_is_drawn_whole() -> None:
    x = np.r_[np.arange(1_000.0), np.arange(1_000.0)]
    assert thin(x, np.ones_like(x), points=100).size == x.size


def test_live_curves_send_at_most_the_budget_per_trace_and_markers_only_when_few() -> None:
    steps = np.arange(1, 50_001, dtype=np.float64)
    returns = np.random.default_rng(1).normal(size=steps.size)
    fig = reward_curve(steps, returns, overlay=(steps, returns))
    assert all(len(trace.x) <= CURVE_POINTS for trace in fig.data)
    raw = next(trace for trace in fig.data if trace.name == "training return (explores)")
    assert raw.mode == "lines"
    assert reward_curve(steps[:MAX_MARKERS], returns[:MAX_MARKERS]).data[0].mode == "lines+markers"
    # The smoothed line is thinned after smoothing: its last point is the EMA of every return.
    smoothed = next(trace for trace in fig.data if trace.name.startswith("smoothed"))
    assert smoothed.y[-1] == pytest.approx(ema(returns, 0.9)[-1])
    losses = loss_curve(steps, returns**2, np.abs(returns))
    assert [len(trace.x) for trace in losses.data] == [CURVE_POINTS, CURVE_POINTS]


# ------------------------------------------------------------------------------- shared look


def test_every_builder_shares_the_classroom_look() -> None:
    figures = [
        reward_curve([10, 20], [1.0, 2.0]),
        loss_curve([1, 2], [0.5, 0.4]),
        histogram_figure(small_hist([1, 2]), title="t", x_title="x"),
        timing_figure({"env": 1.0}),
        sum_tree_figure([1.0, 2.0]),
        empty_figure("nothing"),
    ]
    for fig in figures:
        assert fig.layout.font.size == BASE_FONT_SIZE
        assert fig.layout.font.size == BASE_FONT_SIZE
        assert fig.layout.title.text
        assert fig.layout.margin.t <= 100 and fig.layout.margin.l <= 80


EMPTY_CASES: dict[str, Callable[[], go.Figure]] = {
    "reward": lambda: reward_curve([], []),
    "loss": lambda: loss_curve([], [], []),
    "histogram none": lambda: histogram_figure(None, title="t", x_title="x"),
    "histogram zero": lambda: histogram_figure(small_hist([0, 0]), title="t", x_title="x"),
    "heatmap": lambda: heatmap_over_time(
        HistogramHistory(np.linspace(0, 1, 3), np.zeros(0, np.int64), np.zeros((0, 2))),
        title="t",
        y_title="y",
    ),
    "td stages": lambda: td_stages_figure({}),
    "fit": lambda: fit_figure(None),
    "age": lambda: age_figure(None),
    "weights": lambda: weights_scatter(None),
    "sum tree": lambda: sum_tree_figure([]),
    "tree levels": lambda: tree_levels_figure([]),
    "segments": lambda: segments_figure([], None, 4),
    "segments zero mass": lambda: segments_figure([0.0, 0.0], None, 2),
    "draws": lambda: draw_histogram_figure([], []),
    "comparison": lambda: comparison_figure({"uniform": []}, total_steps=100),
    "overlay": lambda: runs_overlay_figure({"a": ([], [])}),
    "timing": lambda: timing_figure({}),
}


@pytest.mark.parametrize("build", EMPTY_CASES.values(), ids=EMPTY_CASES.keys())
def test_empty_inputs_give_an_empty_state_not_an_error(build: Callable[[], go.Figure]) -> None:
    fig = build()
    assert is_empty_state(fig)
    assert fig.layout.font.size == BASE_FONT_SIZE


def test_empty_states_say_no_data_yet_or_when_it_comes() -> None:
    assert reward_curve([], []).layout.annotations[0].text == EMPTY_MESSAGE
    (note,) = td_stages_figure({}).layout.annotations
    assert note.text == "the first curve comes at 10% of training"


# --------------------------------------------------------------------------- learning curves


def test_reward_curve_draws_raw_and_smoothed_returns_against_env_steps() -> None:
    fig = reward_curve([100, 250, 400], [1.0, 2.0, 3.0], smoothing=0.5, scheme="proportional")
    raw, smooth = trace(fig, "training return (explores)"), trace(fig, "smoothed (EMA 0.5)")
    assert list(raw.x) == [100, 250, 400] and list(raw.y) == [1.0, 2.0, 3.0]
    np.testing.assert_allclose(smooth.y, [1.0, 5.0 / 3.0, 17.0 / 7.0])
    assert smooth.line.color == SCHEME_COLORS["proportional"]
    assert fig.layout.xaxis.title.text == "environment steps"
    assert fig.layout.yaxis.title.text == "episode return"
    assert not fig.layout.shapes


def test_reward_curve_overlays_the_previous_run_and_the_threshold() -> None:
    fig = reward_curve(
        [10, 20],
        [5.0, 7.0],
        smoothing=0.5,
        overlay=([15, 30, 45], [1.0, 2.0, 3.0]),
        overlay_label="alpha 0.6",
        threshold=6.0,
    )
    previous = trace(fig, "alpha 0.6")
    assert previous.line.dash == "dash"
    np.testing.assert_allclose(previous.y, [1.0, 5.0 / 3.0, 17.0 / 7.0])
    (line,) = fig.layout.shapes
    assert line.y0 == line.y1 == 6.0 and line.line.dash == "dot"


def test_reward_curve_still_shows_the_previous_run_before_the_new_one_has_episodes() -> None:
    fig = reward_curve([], [], overlay=([10, 20], [1.0, 2.0]))
    assert [t.name for t in fig.data] == ["previous run"]


def test_reward_curve_rejects_arrays_of_different_lengths() -> None:
    with pytest.raises(ValueError, match="same length"):
        reward_curve([1, 2], [1.0])


def test_loss_curve_puts_mean_td_error_on_a_second_axis() -> None:
    alone = loss_curve([1, 2, 3], [0.9, 0.5, 0.2])
    assert len(alone.data) == 1 and list(alone.data[0].y) == [0.9, 0.5, 0.2]
    assert alone.layout.xaxis.title.text == "learner updates"

    fig = loss_curve([1, 2, 3], [0.9, 0.5, 0.2], [2.0, 1.0, 0.5], log_y=True)
    loss, td = trace(fig, "loss"), trace(fig, "mean |TD error|")
    assert td.yaxis == "y2" and list(td.y) == [2.0, 1.0, 0.5]
    assert loss.yaxis in (None, "y")
    assert fig.layout.yaxis.type == "log" and fig.layout.yaxis2.type == "log"
    assert fig.layout.yaxis2.overlaying == "y"
    assert fig.layout.margin.r > alone.layout.margin.r  # room for the right axis title
    assert fig.layout.yaxis2.tickmode == "auto"  # its own round ticks


def test_loss_curve_smoothed_draws_both_curves_as_their_ema() -> None:
    """The page's EMA: [1, 2, 3] with smoothing 0.5 is [1, 5/3, 17/7] (`ema`'s docstring)."""
    fig = loss_curve([1, 2, 3], [1.0, 2.0, 3.0], [3.0, 2.0, 1.0], smoothing=0.5)
    smooth, td = trace(fig, "loss (EMA 0.5)"), trace(fig, "mean |TD error| (EMA 0.5)")
    assert np.allclose(smooth.y, [1, 5 / 3, 17 / 7])
    assert np.allclose(td.y, [3, 7 / 3, 11 / 7]) and td.yaxis == "y2" and td.line.dash == "dot"
    assert [t.name for t in fig.data] == ["loss (EMA 0.5)", "mean |TD error| (EMA 0.5)"]


def test_loss_curve_overlays_the_previous_runs_mean_td_error_on_the_right_axis() -> None:
    fig = loss_curve(
        [1, 2, 3],
        [1.0, 2.0, 3.0],
        [3.0, 2.0, 1.0],
        smoothing=0.5,
        overlay=([1, 2], [4.0, 2.0]),
        overlay_label="previous: uniform · seed 1",
    )
    old = trace(fig, "previous: uniform · seed 1")
    assert old.yaxis == "y2" and old.line.dash == "dot"
    assert np.allclose(old.y, [4.0, (0.25 * 4 + 0.5 * 2) / 0.75])  # smoothed like the run's own
    alone = loss_curve([1, 2, 3], [1.0, 2.0, 3.0], overlay=([1, 2], [4.0, 2.0]))
    assert [t.name for t in alone.data] == ["loss"]  # no |TD error| axis, nothing to compare
    with pytest.raises(ValueError, match="same length"):
        loss_curve([1, 2], [1.0, 2.0], [1.0, 1.0], overlay=([1, 2], [1.0]))


def test_loss_curve_log_axis_labels_one_tick_per_decade() -> None:
    fig = loss_curve([1, 2, 3], [1.0, 0.1, 0.005], log_y=True)
    assert list(fig.layout.yaxis.ticktext) == ["0.001", "0.01", "0.1", "1"]


# ----------------------------------------------------------------------------- distributions


def test_histogram_figure_draws_bars_at_bin_centres() -> None:
    fig = histogram_figure(small_hist([3, 0, 5, 2]), title="Ages", x_title="age", color="#123456")
    (bars,) = fig.data
    np.testing.assert_allclose(bars.x, [0.125, 0.375, 0.625, 0.875])
    np.testing.assert_allclose(bars.y, [3, 0, 5, 2])
    np.testing.assert_allclose(bars.width, [0.23] * 4)
    assert bars.marker.color == "#123456"
    assert fig.layout.title.text == "Ages" and fig.layout.xaxis.title.text == "age"


def test_histogram_figure_log_labels_read_as_powers_of_ten() -> None:
    hist = Histogram.of(np.array([-1.5, 0.0, 0.1, 1.2]), RELATIVE_PROBABILITY_EDGES)
    fig = histogram_figure(hist, title="N P(i)", x_title="N·P(i)", log_x_labels=True, reference=0.0)
    assert list(fig.layout.xaxis.tickvals) == [-3, -2, -1, 0, 1, 2, 3]
    assert list(fig.layout.xaxis.ticktext) == ["0.001", "0.01", "0.1", "1", "10", "100", "1000"]
    (line,) = fig.layout.shapes
    assert line.x0 == line.x1 == 0.0


def test_column_fractions_normalise_each_recorded_histogram() -> None:
    out = column_fractions([[1, 3], [0, 0], [2, 2]])
    np.testing.assert_allclose(out[0], [0.25, 0.75])
    assert np.isnan(out[1]).all()
    np.testing.assert_allclose(out[2], [0.5, 0.5])


def test_heatmap_over_time_has_one_normalised_column_per_update() -> None:
    history = HistogramHistory(
        edges=np.array([-1.0, 0.0, 1.0, 2.0]),
        steps=np.array([10, 20], dtype=np.int64),
        counts=np.array([[1.0, 1.0, 2.0], [0.0, 5.0, 0.0]]),
    )
    fig = heatmap_over_time(history, title="N P over time", y_title="N·P(i)", log_y_labels=True)
    (heat,) = fig.data
    z = np.asarray(heat.z, dtype=np.float64)
    assert z.shape == (3, 2)
    np.testing.assert_allclose(z.sum(axis=0), [1.0, 1.0])
    np.testing.assert_allclose(z[:, 0], [0.25, 0.25, 0.5])
    assert list(heat.x) == [10, 20]
    np.testing.assert_allclose(heat.y, [-0.5, 0.5, 1.5])
    assert list(fig.layout.yaxis.ticktext) == ["0.1", "1", "10", "100"]
    assert fig.layout.xaxis.title.text == "learner updates"


def test_td_stages_are_fractions_with_sequential_colours() -> None:
    stages = {
        "10%": small_hist([1, 1, 2]),
        "50%": small_hist([3, 1, 0]),
        "100%": small_hist([10, 0, 0]),
    }
    fig = td_stages_figure(stages)
    assert [t.name for t in fig.data] == ["10% of training", "50% of training", "100% of training"]
    for line in fig.data:
        assert sum(line.y) == pytest.approx(1.0)
    np.testing.assert_allclose(fig.data[0].y, [0.25, 0.25, 0.5])
    assert len({t.line.color for t in fig.data}) == 3
    assert fig.layout.yaxis.range == (0.0, pytest.approx(1.1))  # room above the 100% stage


def test_probability_weight_bars_pair_each_rows_p_and_weight() -> None:
    fig = probability_weight_bars([0.2, 0.5, 0.3], [1.0, 0.4, 0.67])
    p, w = trace(fig, "P(i)"), trace(fig, "IS weight wᵢ")
    assert list(p.x) == list(w.x) == [1, 2, 3] and list(fig.layout.xaxis.tickvals) == [1, 2, 3]
    assert list(p.y) == [0.2, 0.5, 0.3] and list(w.y) == [1.0, 0.4, 0.67]
    assert fig.layout.barmode == "group" and fig.layout.yaxis.range == (0.0, pytest.approx(1.1))
    assert p.marker.color == SCHEME_COLORS["proportional"]
    with pytest.raises(ValueError, match="same length"):
        probability_weight_bars([0.5, 0.5], [1.0])


def test_age_figure_marks_what_uniform_replay_would_give() -> None:
    fig = age_figure(small_hist([6, 2, 1, 3]))
    (bars,) = fig.data
    assert list(bars.y) == [6, 2, 1, 3]
    (uniform,) = fig.layout.shapes
    assert uniform.y0 == uniform.y1 == 3.0
    assert "newest" in fig.layout.xaxis.title.text and "oldest" in fig.layout.xaxis.title.text


def test_weights_scatter_plots_probability_against_weight_sized_by_td_error() -> None:
    fig = weights_scatter(small_batch())
    (points,) = fig.data
    assert list(points.x) == [0.01, 0.2, 0.05] and list(points.y) == [1.0, 0.3, 0.6]
    assert list(points.marker.color) == [0.1, 2.0, 0.5]
    sizes = list(points.marker.size)
    assert sizes[1] == max(sizes) and sizes[0] == min(sizes)
    assert fig.layout.xaxis.type == "log"
    assert "ESS 2.4 of 3" in fig.layout.title.text


# ---------------------------------------------------------------------------------- sum tree


def test_sum_tree_figure_labels_every_node_with_its_sum() -> None:
    """Leaves [1, 2, 3, 4]: node 1 = 10, node 2 = 1 + 2 = 3, node 3 = 3 + 4 = 7."""
    fig = sum_tree_figure([1.0, 2.0, 3.0, 4.0])
    internal, leaves = trace(fig, "internal nodes"), trace(fig, "leaves")
    assert list(internal.customdata) == [1, 2, 3]
    assert list(internal.text) == ["10", "3", "7"]
    assert list(leaves.customdata) == [4, 5, 6, 7]
    assert list(leaves.text) == ["1", "2", "3", "4"]
    assert fig.layout.title.text == "Sum tree: total mass 10"
    # Root on top (depth 0, y axis reversed), leaves at x = leaf index.
    assert list(internal.y) == [0, 1, 1] and list(leaves.x) == [0.0, 1.0, 2.0, 3.0]
    assert fig.layout.yaxis.autorange == "reversed"
    assert list(fig.layout.yaxis.ticktext) == ["root", "level 1", "leaves"]


def test_sum_tree_figure_pads_to_a_power_of_two_with_grey_leaves() -> None:
    fig = sum_tree_figure([1.0, 2.0, 3.0])
    assert list(trace(fig, PADDING).customdata) == [7]
    assert list(trace(fig, "internal nodes").text) == ["6", "3", "3"]
    assert list(trace(fig, "leaves").customdata) == [4, 5, 6]

    fig = sum_tree_figure(np.ones(5))
    # 8 leaves: leaves 5..7 and node 7 (covering leaves 6, 7) are padding.
    assert list(trace(fig, PADDING).customdata) == [7, 13, 14, 15]


def test_sum_tree_figure_formats_labels_compactly_and_hides_them_when_crowded() -> None:
    fig = sum_tree_figure([1 / 3, 12345.0])
    assert list(trace(fig, "internal nodes").text) == ["12.3k"]
    assert list(trace(fig, "leaves").text) == ["0.333", "12.3k"]

    crowded = sum_tree_figure(np.arange(1.0, 65.0))
    leaves = trace(crowded, "leaves")
    assert set(leaves.text) == {""}
    assert "mass 64" in leaves.hovertext[-1]
    assert trace(crowded, "internal nodes").text[0] == "2.08k"

    quiet = sum_tree_figure([1.0, 2.0], show_values=False)
    assert set(trace(quiet, "internal nodes").text) == {""}


def test_sum_tree_figure_highlights_paths_and_leaves() -> None:
    leaves = [1.0, 2.0, 3.0, 4.0]
    fig = sum_tree_figure(leaves, paths=[descent_path(2, 4), [1, 2, 5]], highlight_leaves=[3])
    first, second = trace(fig, "path to leaf 2"), trace(fig, "path to leaf 1")
    assert first.line.color == PATH_PALETTE[0] and second.line.color == PATH_PALETTE[1]
    # Edges 1 -> 3 -> 6 in (x, y): node 1 at (1.5, 0), node 3 at (2.5, 1), node 6 at (2, 2).
    assert list(first.x) == [1.5, 2.5, None, 2.5, 2.0, None]
    assert list(first.y) == [0, 1, None, 1, 2, None]
    rings = trace(fig, "path 1 nodes")
    assert list(rings.customdata) == [1, 3, 6] and rings.marker.symbol == "circle-open"
    fills = list(trace(fig, "leaves").marker.color)
    assert fills[3] != fills[0] and fills[0] == fills[1] == fills[2]


def test_sum_tree_figure_uses_one_colour_when_paths_outnumber_the_palette() -> None:
    leaves = np.ones(16)
    paths = [descent_path(leaf, 16) for leaf in range(len(PATH_PALETTE) + 1)]
    fig = sum_tree_figure(leaves, paths=paths)
    merged = trace(fig, f"{len(paths)} paths")
    assert merged.x.count(None) == len(paths) * 4


def test_sum_tree_figure_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="not a child of"):
        sum_tree_figure([1.0, 2.0, 3.0, 4.0], paths=[[1, 5]])
    with pytest.raises(ValueError, match="path nodes must be in"):
        sum_tree_figure([1.0, 2.0], paths=[[1, 4]])
    with pytest.raises(ValueError, match="highlight_leaves"):
        sum_tree_figure([1.0, 2.0, 3.0], highlight_leaves=[3])
    with pytest.raises(ValueError, match="finite and >= 0"):
        sum_tree_figure([1.0, -2.0])
    with pytest.raises(ValueError, match="tree_levels_figure"):
        sum_tree_figure(np.ones(1000))


def test_tree_levels_figure_draws_the_top_of_a_live_tree() -> None:
    fig = tree_levels_figure(
        [np.array([10.0]), np.array([6.0, 4.0]), np.array([3.0, 3.0, 4.0, 0.0])]
    )
    nodes, empty = trace(fig, "nodes"), trace(fig, EMPTY)
    assert list(nodes.customdata) == [1, 2, 3, 4, 5, 6]
    assert list(nodes.text) == ["10", "6", "4", "3", "3", "4"]
    assert list(empty.customdata) == [7]
    assert list(fig.layout.yaxis.ticktext) == ["root", "level 1", "level 2"]
    with pytest.raises(ValueError, match="level 1 must hold 2 nodes"):
        tree_levels_figure([np.array([1.0]), np.array([1.0])])


# ------------------------------------------------------------------------- drawing a batch


def test_segments_figure_splits_the_total_into_leaves_and_strata() -> None:
    """Masses [1, 2, 3, 4], B = 4: strata of 2.5; queries 0.5, 3.0, 5.5, 9.9 hit 0, 2, 2, 3."""
    fig = segments_figure([1.0, 2.0, 3.0, 4.0], np.array([0.5, 3.0, 5.5, 9.9]), 4)
    bars = trace(fig, "leaves")
    assert list(bars.x) == [1.0, 2.0, 3.0, 4.0] and list(bars.base) == [0.0, 1.0, 3.0, 6.0]
    assert list(bars.text) == ["0", "1", "2", "3"]
    assert bars.marker.color[0] != bars.marker.color[1]
    assert [s.x0 for s in fig.layout.shapes] == [k * 10.0 / 4 for k in range(5)]
    assert all(s.line.dash == "dash" and s.x0 == s.x1 for s in fig.layout.shapes)
    assert {s.layer for s in fig.layout.shapes} == {"below"}  # no line through a leaf's label
    # The mass axis is ticked at the strata's edges, not 0, 1, 2, ... like the leaf labels.
    assert list(fig.layout.xaxis.tickvals) == [0.0, 2.5, 5.0, 7.5, 10.0]
    assert list(fig.layout.xaxis.ticktext) == ["0", "2.5", "5", "7.5", "10"]
    queries = trace(fig, "queries")
    assert list(queries.x) == [0.5, 3.0, 5.5, 9.9]
    assert list(queries.customdata) == [0, 2, 2, 3]
    assert list(queries.text) == ["→ 0", "→ 2", "→ 2", "→ 3"]
    assert "batch of 4" in fig.layout.title.text


def test_segments_figure_without_queries_and_with_a_zero_mass_leaf() -> None:
    fig = segments_figure([2.0, 0.0, 2.0], None, 2)
    assert [t.name for t in fig.data] == ["leaves"]
    assert list(fig.data[0].text) == ["0", "", "2"]
    narrow = segments_figure([2.0, 0.01, 2.0], None, 2)
    assert list(narrow.data[0].text) == ["0", "", "2"]
    assert [s.x0 for s in fig.layout.shapes] == [0.0, 2.0, 4.0]
    edge = segments_figure([2.0, 0.0, 2.0], np.array([2.0]), 2)
    assert list(trace(edge, "queries").customdata) == [2]
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        segments_figure([1.0], None, 0)


def test_draw_histogram_compares_frequencies_with_the_target() -> None:
    fig = draw_histogram_figure(np.array([30, 10, 60]), np.array([2.0, 1.0, 7.0]))
    observed, target = trace(fig, "observed frequency"), trace(fig, "target P(i)")
    np.testing.assert_allclose(observed.y, [0.3, 0.1, 0.6])
    np.testing.assert_allclose(target.y, [0.2, 0.1, 0.7])
    assert list(observed.x) == [0, 1, 2]
    assert fig.layout.title.text == "100 leaves drawn: total variation distance to P(i) 0.100"
    batches = draw_histogram_figure(np.array([30, 10, 60]), np.array([2.0, 1.0, 7.0]), batch_size=4)
    assert batches.layout.title.text.startswith("100 leaves drawn (25 batches of 4): ")
    assert fig.layout.yaxis.range == (0.0, pytest.approx(0.77))  # above the tallest, 0.7
    few = draw_histogram_figure(np.array([3, 0, 1]), np.array([2.0, 1.0, 7.0]))
    assert few.layout.yaxis.range[1] >= 0.75 * 1.1 - 1e-12  # a bar of 3 / 4 is not cut off


def test_draw_histogram_before_any_draw_shows_only_the_target() -> None:
    fig = draw_histogram_figure(np.zeros(2), np.array([1.0, 3.0]))
    assert list(trace(fig, "observed frequency").y) == [0.0, 0.0]
    assert fig.layout.title.text == "0 leaves drawn"
    with pytest.raises(ValueError, match="same length"):
        draw_histogram_figure(np.zeros(3), np.ones(2))


# -------------------------------------------------------------------------------------- runs


def curve(n: int, scale: float) -> Curve:
    return Curve(np.arange(1, n + 1, dtype=np.int64) * 10, np.linspace(0, scale, n))


def test_comparison_figure_bands_and_means_by_hand() -> None:
    a = Curve(np.array([10, 25, 40]), np.array([1.0, 3.0, 5.0]))  # rolling mean (2): 1, 2, 4
    b = Curve(np.array([5, 30]), np.array([10.0, 0.0]))  # rolling mean (2): 10, 5
    fig = comparison_figure(
        {"uniform": [a, b], "rank": [a]}, total_steps=40, threshold=3.0, window=2, points=5
    )
    assert len(fig.data) == 6
    high, low, mean = fig.data[:3]
    assert list(high.x) == list(low.x) == list(mean.x) == [0, 10, 20, 30, 40]
    assert {t.legendgroup for t in (high, low, mean)} == {"uniform"}
    assert low.fill == "tonexty" and high.fill is None
    assert low.fillcolor == "rgba(99,110,250,0.18)"
    assert high.showlegend is False and low.showlegend is False
    # On the grid: a = [nan, 1, 1, 2, 4], b = [nan, 10, 10, 5, 5].
    np.testing.assert_array_equal(high.y, [np.nan, 10.0, 10.0, 5.0, 5.0])
    np.testing.assert_array_equal(low.y, [np.nan, 1.0, 1.0, 2.0, 4.0])
    np.testing.assert_array_equal(mean.y, [np.nan, 5.5, 5.5, 3.5, 4.5])
    np.testing.assert_array_equal(fig.data[5].y, [np.nan, 1.0, 1.0, 2.0, 4.0])
    assert fig.data[5].name == "rank (1 seed)"


def test_comparison_figure_scheme_colours_and_threshold() -> None:
    runs = {"uniform": [curve(30, 100.0), curve(30, 80.0)], "rank": [curve(30, 120.0)]}
    fig = comparison_figure(runs, total_steps=300, threshold=90.0, window=5)
    assert len(fig.data) == 6
    assert trace(fig, "uniform (2 seeds)").line.color == SCHEME_COLORS["uniform"]
    assert trace(fig, "rank (1 seed)").line.color == SCHEME_COLORS["rank"]
    assert fig.layout.font.size == BASE_FONT_SIZE
    assert fig.layout.yaxis.title.text == "return (mean of last 5 episodes)"
    (line,) = fig.layout.shapes
    assert line.y0 == 90.0
    assert fig.layout.annotations[0].text == "threshold 90"


def test_comparison_figure_names_schemes_by_their_labels_in_their_colours() -> None:
    runs = {"proportional": [curve(30, 1.0)] * 3, "uniform": [curve(30, 0.5)] * 3}
    labels = {"proportional": "proportional · α 0.6 · β 0"}
    fig = comparison_figure(runs, total_steps=300, window=5, labels=labels)
    labelled = trace(fig, "proportional · α 0.6 · β 0 (3 seeds)")
    assert labelled.line.color == SCHEME_COLORS["proportional"]
    assert trace(fig, "uniform (3 seeds)").line.color == SCHEME_COLORS["uniform"]


def test_comparison_figure_counts_only_the_seeds_drawn_so_far() -> None:
    empty = Curve(np.zeros(0, np.int64), np.zeros(0))  # queued, or not past its first episode
    runs = {"uniform": [curve(30, 1.0), curve(30, 2.0), empty]}
    fig = comparison_figure(runs, total_steps=300, window=5)
    assert trace(fig, "uniform (2 of 3 seeds so far)").line.color == SCHEME_COLORS["uniform"]


def test_comparison_band_edges_stay_invisible_on_a_projector() -> None:
    """Regression: projector mode widened the bands' zero-width edges into lines of Plotly's
    default colours (orange, yellow), so a scheme showed in colours not its own."""
    fig = for_projector(comparison_figure({"rank": [curve(30, 1.0)]}, total_steps=300, window=5))
    high, low, mean = fig.data
    assert high.line.color == low.line.color == "rgba(0,168,132,0.0)"
    assert mean.line.color == SCHEME_COLORS["rank"]


def test_comparison_figure_marks_where_learning_starts() -> None:
    runs = {"uniform": [curve(30, 1.0)]}
    fig = comparison_figure(runs, total_steps=300, threshold=0.8, window=5, warm_up=150)
    threshold, warm_up = fig.layout.shapes
    assert (threshold.y0, warm_up.x0, warm_up.x1, warm_up.yref) == (0.8, 150, 150, "paper")
    assert [a.text for a in fig.layout.annotations] == ["threshold 0.8", "learning starts"]
    plain = comparison_figure(runs, total_steps=300, window=5, warm_up=0)
    assert not plain.layout.shapes


def test_runs_overlay_colours_runs_by_scheme_and_dashes_seeds_apart() -> None:
    """Labels carry α, β₀ and the seed, so the colour comes from the scheme mapping: every
    run of one scheme in its scheme's colour, told apart by the dash."""
    steps, values = np.array([10, 20]), np.array([0.0, 1.0])
    runs = {
        "rank · α 0.7 · β 0 · seed 0 · aaaaaa": (steps, values),
        "rank · α 0.7 · β 0 · seed 1 · bbbbbb": (steps, values),
        "uniform · seed 0 · cccccc": (steps, values),
        "custom run": (steps, values),
    }
    schemes = dict(zip(runs, ["rank", "rank", "uniform", "mystery"], strict=True))
    fig = runs_overlay_figure(runs, schemes=schemes)
    colors = [t.line.color for t in fig.data]
    assert colors[:3] == [SCHEME_COLORS["rank"], SCHEME_COLORS["rank"], SCHEME_COLORS["uniform"]]
    assert colors[3] not in SCHEME_COLORS.values()
    assert [t.line.dash for t in fig.data] == ["solid", "dash", "solid", "solid"]
    assert [t.name for t in fig.data] == list(runs)


def test_runs_overlay_draws_one_smoothed_line_per_run() -> None:
    runs = {
        "uniform": (np.array([10, 20, 30]), np.array([1.0, 2.0, 3.0])),
        "alpha 0.9": (np.array([5, 15]), np.array([4.0, 4.0])),
        "not started": (np.array([]), np.array([])),
    }
    fig = runs_overlay_figure(runs, smoothing=0.5, colors={"alpha 0.9": "#000000"})
    assert [t.name for t in fig.data] == ["uniform", "alpha 0.9"]
    np.testing.assert_allclose(fig.data[0].y, [1.0, 5.0 / 3.0, 17.0 / 7.0])
    assert fig.data[0].line.color == SCHEME_COLORS["uniform"]
    assert fig.data[1].line.color == "#000000"
    assert fig.layout.showlegend


def test_timing_figure_sorts_phases_and_shows_shares() -> None:
    fig = timing_figure({"init": 1.0, "update": 6.0, "env": 3.0})
    (bars,) = fig.data
    assert list(bars.y) == ["init", "env", "update"]  # plotly draws the last bar on top
    assert list(bars.x) == [1.0, 3.0, 6.0]
    assert list(bars.text) == ["1 s (10%)", "3 s (30%)", "6 s (60%)"]
    assert fig.layout.title.text == "Where the time goes: 10 s in total"
    with pytest.raises(ValueError, match="finite and >= 0"):
        timing_figure({"env": -1.0})


def test_reward_curve_draws_the_greedy_returns_beside_the_training_returns() -> None:
    fig = reward_curve([10, 20, 30], [5.0, 6.0, 7.0], greedy=([0, 25], [9.0, 30.0]))
    names = [trace.name for trace in fig.data]
    assert names == ["training return (explores)", "smoothed (EMA 0.9)", "greedy return (watched)"]
    greedy = fig.data[-1]
    assert list(greedy.x) == [0, 25] and list(greedy.y) == [9.0, 30.0]
    with pytest.raises(ValueError, match="greedy"):
        reward_curve([10], [5.0], greedy=([0, 25], [9.0]))
