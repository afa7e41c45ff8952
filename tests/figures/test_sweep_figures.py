"""The sweep figures: the heatmap's cells and clickable markers, and a cell's reward curves,
whose mean has the heatmap's value as its area (worked out by hand)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rdqn.compare import Curve
from rdqn.figures import SCHEME_COLORS
from rdqn.figures.sweeps import (
    SeedCurve,
    cell_curves_figure,
    colour_range,
    decimals_for,
    reward_steps,
    short_number,
    sweep_heatmap,
)
from rdqn.sweeps import reward_auc


def curve(ends: list[int], returns: list[float]) -> Curve:
    return Curve(np.array(ends, dtype=np.int64), np.array(returns, dtype=np.float64))


def test_numbers_to_three_significant_digits_mean_and_spread_alike() -> None:
    assert [decimals_for(v) for v in (0.921, 0.00908, 103.4, 5.0, 0.0)] == [3, 5, 0, 2, 0]
    assert short_number(0.921) == "0.921"
    assert short_number(12_345.6) == "12,346"
    assert short_number(0.0514, 3) == "0.051"
    assert short_number(math.nan) == "—"


def test_the_reward_step_function_by_hand() -> None:
    """Ends at 2 and 5, returns 1 and 3, window 2: R = 0 before 2, 1 on [2, 5), 2 from 5."""
    two = curve([2, 5], [1.0, 3.0])
    assert reward_steps(two, [0, 1, 2, 4, 5, 9], window=2).tolist() == [0, 0, 1, 1, 2, 2]
    assert reward_steps(curve([], []), [0, 5]).tolist() == [0, 0]


def _area(x: np.ndarray, y: np.ndarray, total: int) -> float:
    """(1/T) * the area under a step line drawn 'hv' through (x, y) up to x[-1] = T."""
    return float(np.sum(y[:-1] * np.diff(x)) / total)


def test_the_mean_curves_area_is_the_mean_auc_of_the_finished_seeds() -> None:
    """Budget 100, window 20. Seed 0: returns 1 at 3, 6 .. 60 (AUC .97); seed 1: 1 at 25
    (AUC .75); mean .86. Seed 2 still trains: drawn dashed, left out of the mean."""
    seeds = [
        SeedCurve("seed 0", curve([3 * k for k in range(1, 21)], [1.0] * 20), True),
        SeedCurve("seed 1", curve([25], [1.0]), True),
        SeedCurve("seed 2 (training)", curve([10, 30], [0.0, 1.0]), False),
    ]
    fig = cell_curves_figure(seeds, total_steps=100, threshold=0.8, scheme="rank")
    by_name = {trace.name: trace for trace in fig.data}
    assert list(by_name) == ["seed 0", "seed 1", "seed 2 (training)", "mean of 2 seeds"]
    mean = by_name["mean of 2 seeds"]
    x, y = np.asarray(mean.x), np.asarray(mean.y)
    assert x[0] == 0 and x[-1] == 100
    assert _area(x, y, 100) == pytest.approx(0.86)
    assert _area(x, y, 100) == pytest.approx(np.mean([reward_auc(s.curve, 100) for s in seeds[:2]]))
    seed1 = by_name["seed 1"]
    assert list(seed1.x) == [0, 25, 100] and list(seed1.y) == [0, 1, 1]
    training = by_name["seed 2 (training)"]
    assert list(training.x) == [0, 10, 30]  # up to its last episode, not the budget
    assert training.line.dash == "dash"
    assert (by_name["seed 0"].line.dash, seed1.line.dash) == ("solid", "dot")  # told apart
    assert mean.line.color == SCHEME_COLORS["rank"] and mean.line.shape == "hv"
    assert fig.layout.shapes[0].y0 == 0.8  # the threshold line


def test_a_cell_with_no_episode_yet_says_so() -> None:
    fig = cell_curves_figure([SeedCurve("seed 0", curve([], []), False)], total_steps=100)
    assert fig.layout.annotations[0].text == "no episode has ended yet"


def test_the_heatmap_writes_mean_and_spread_and_carries_each_cells_key() -> None:
    keys = [["a0", "a1"], ["b0", "b1"]]
    fig = sweep_heatmap(
        [[0.86, 0.98], [0.1, math.nan]],
        [[0.22 / math.sqrt(2), 0.0], [0.2 / math.sqrt(2), math.nan]],
        [["2/2 seeds", "1/2 seeds"], ["2/2 seeds", "0/2 seeds"]],
        keys,
        x_labels=["0", "1"],
        y_labels=["proportional", "rank"],
        x_title="replay.alpha",
        y_title="replay.scheme",
        measure="area under the reward curve",
        selected="b0",
    )
    heat, marks = fig.data
    assert heat.type == "heatmap" and not heat.reversescale
    assert heat.text[0][0] == "0.860 ± 0.156<br>(2/2 seeds)"
    assert heat.text[0][1] == "0.980 ± 0.000<br>(1/2 seeds)"
    assert heat.text[1][1] == "—<br>(0/2 seeds)"
    assert list(marks.customdata) == ["a0", "a1", "b0", "b1"]
    assert list(marks.x) == ["0", "1", "0", "1"]
    assert list(marks.y) == ["proportional", "proportional", "rank", "rank"]
    assert fig.layout.hoverdistance == -1  # a click anywhere picks the nearest cell
    (frame,) = fig.layout.shapes  # the selected cell b0: column 0, row 1
    assert (frame.x0, frame.x1, frame.y0, frame.y1) == (-0.5, 0.5, 0.5, 1.5)


def test_the_heatmaps_hover_gives_the_iqm_and_its_interval() -> None:
    fig = sweep_heatmap(
        [[0.86, math.nan]], [[0.156, math.nan]], [["2/2 seeds", "0/2 seeds"]], [["a", "b"]],
        x_labels=["0", "1"], y_labels=[""], x_title="replay.alpha", y_title="",
        measure="area under the reward curve",
        intervals=[[[0.86, 0.75, 0.97], [math.nan, math.nan, math.nan]]],
    )  # fmt: skip
    first, second = fig.data[1].hovertext
    assert "area under the reward curve: 0.860 ± 0.156 (2/2 seeds)" in first
    assert "<br>IQM [95% CI] 0.860 [0.750–0.970]<br>" in first
    assert "IQM" not in second  # no seed finished: no IQM
    plain = sweep_heatmap(
        [[0.86]], [[0.156]], [["2/2 seeds"]], [["a"]],
        x_labels=["0"], y_labels=[""], x_title="", y_title="", measure="m",
    )  # fmt: skip
    assert "IQM" not in plain.data[1].hovertext[0]


def test_fewer_steps_are_better_so_their_scale_is_reversed() -> None:
    fig = sweep_heatmap(
        [[60.0]], [[0.0]], [["1/2 reached"]], [["k"]],
        x_labels=["0"], y_labels=[""], x_title="", y_title="",
        measure="env steps to the threshold", lower_is_better=True,
    )  # fmt: skip
    assert fig.data[0].reversescale and not fig.layout.shapes


def test_a_heatmap_without_results_is_grey_with_its_notes() -> None:
    fig = sweep_heatmap(
        [[math.nan]], [[math.nan]], [["0/2 seeds"]], [["k"]],
        x_labels=["0"], y_labels=[""], x_title="", y_title="", measure="m",
    )  # fmt: skip
    heat = fig.data[0]
    assert heat.showscale is False and heat.text[0][0] == "—<br>(0/2 seeds)"


def test_the_colour_range_is_no_narrower_than_the_seeds_spread_by_hand() -> None:
    nan = math.nan
    # Means 0.86 and 0.98 (0.12 apart), spreads up to 0.156: 0.92 -+ 0.078.
    lo, hi = colour_range(np.array([0.86, 0.98, nan]), np.array([0.156, 0.0, nan]))
    assert (lo, hi) == pytest.approx((0.842, 0.998))
    # Far apart, within the noise: the means' own range.
    assert colour_range(np.array([0.0, 100.0]), np.array([1.0, 2.0])) == (0.0, 100.0)
    # One seed each (no spread), 1,000 and 1,001: at least 1 % of 1,001 wide, about 1,000.5.
    lo, hi = colour_range(np.array([1000.0, 1001.0]), np.array([0.0, 0.0]))
    assert (lo, hi) == pytest.approx((1000.5 - 5.005, 1000.5 + 5.005))
    # All equal, all zero: a range all the same (Plotly needs zmin < zmax).
    lo, hi = colour_range(np.array([0.0, 0.0]), np.array([nan, nan]))
    assert lo < hi


def test_the_heatmap_uses_that_colour_range() -> None:
    fig = sweep_heatmap(
        [[1000.0, 1001.0]], [[0.0, 0.0]], [["1/1", "1/1"]], [["a", "b"]],
        x_labels=["0", "1"], y_labels=[""], x_title="", y_title="", measure="m",
    )  # fmt: skip
    heat = fig.data[0]
    assert (heat.zmin, heat.zmax) == pytest.approx((995.495, 1005.505))
