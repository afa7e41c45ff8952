"""Tests for rdqn.compare: rolling means, step-function curves, aggregation, thresholds, report."""

from __future__ import annotations

import html
import importlib.util
import json
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from rdqn.compare import (
    SCHEME_COLORS,
    Curve,
    aggregate,
    episodes_to_threshold,
    learning_curve,
    report_figure,
    rolling_mean,
    summary_table,
    write_report,
)

NAN = float("nan")


def curve(end_steps: list[int], returns: list[float]) -> Curve:
    return Curve(np.array(end_steps, dtype=np.int64), np.array(returns, dtype=np.float64))


def assert_same(actual: Any, expected: list[float]) -> None:
    """Element-wise equality with NaN == NaN (and the same length)."""
    np.testing.assert_allclose(np.asarray(actual, dtype=np.float64), expected, rtol=1e-12)


# Curves used across tests; rolling means (window 2) worked out by hand in comments.
A = curve([10, 25, 40], [1.0, 3.0, 5.0])  # smooth: [1, 2, 4]
B = curve([5, 30], [10.0, 0.0])  # smooth: [10, 5]
EMPTY = curve([], [])


# --------------------------------------------------------------------------- rolling_mean
def test_rolling_mean_by_hand() -> None:
    assert_same(rolling_mean(np.array([1.0, 2.0, 3.0, 4.0]), 2), [1.0, 1.5, 2.5, 3.5])
    assert_same(rolling_mean(np.array([1.0, 2.0, 3.0, 4.0]), 3), [1.0, 1.5, 2.0, 3.0])


def test_rolling_mean_edge_windows() -> None:
    values = np.array([4.0, -2.0, 7.0])
    assert_same(rolling_mean(values, 1), [4.0, -2.0, 7.0])
    # A window longer than the data averages everything seen so far.
    assert_same(rolling_mean(values, 10), [4.0, 1.0, 3.0])
    assert rolling_mean(np.array([], dtype=np.float64), 5).size == 0


def test_rolling_mean_accepts_lists_and_returns_float() -> None:
    out = rolling_mean([1, 2, 3, 4], 2)  # type: ignore[arg-type]
    assert out.dtype == np.float64
    assert_same(out, [1.0, 1.5, 2.5, 3.5])


# ------------------------------------------------------------------------- learning_curve
def test_learning_curve_is_a_step_function_of_env_steps() -> None:
    grid = np.array([0, 9, 10, 11, 24, 25, 39, 40, 1000], dtype=np.int64)
    # NaN before the first episode ends (step 10); at an episode's end step its value counts;
    # between ends the last finished episode's rolling mean holds; after the last it stays.
    expected = [NAN, NAN, 1.0, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0]
    assert_same(learning_curve(A, grid, window=2), expected)


def test_learning_curve_window_and_empty_curve() -> None:
    grid = np.array([10, 25, 40], dtype=np.int64)
    assert_same(learning_curve(A, grid, window=1), [1.0, 3.0, 5.0])
    assert_same(learning_curve(A, grid, window=3), [1.0, 2.0, 3.0])
    out = learning_curve(EMPTY, grid, window=2)
    assert out.shape == grid.shape
    assert np.isnan(out).all()


# ------------------------------------------------------------------------------ aggregate
def test_aggregate_mean_min_max_by_hand() -> None:
    grid = np.array([0, 5, 10, 30, 40], dtype=np.int64)
    # A on grid: [nan, nan, 1, 2, 4]; B on grid: [nan, 10, 10, 5, 5]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NaN-aware: no "mean of empty slice" warnings
        stats = aggregate([A, B], grid, window=2)
    assert set(stats) == {"mean", "low", "high"}
    assert_same(stats["mean"], [NAN, 10.0, 5.5, 3.5, 4.5])
    assert_same(stats["low"], [NAN, 10.0, 1.0, 2.0, 4.0])
    assert_same(stats["high"], [NAN, 10.0, 10.0, 5.0, 5.0])


def test_aggregate_of_one_curve_is_that_curve() -> None:
    grid = np.array([0, 10, 25, 40], dtype=np.int64)
    stats = aggregate([A], grid, window=2)
    for key in ("mean", "low", "high"):
        assert_same(stats[key], [NAN, 1.0, 2.0, 4.0])


def test_aggregate_of_no_curves_is_all_nan() -> None:
    grid = np.array([0, 10, 20], dtype=np.int64)
    stats = aggregate([], grid, window=2)
    for key in ("mean", "low", "high"):
        assert stats[key].shape == grid.shape
        assert np.isnan(stats[key]).all()


# ------------------------------------------------------------------ episodes_to_threshold
def test_episodes_to_threshold_requires_a_full_window() -> None:
    c = curve([10, 20, 30, 40, 50, 60], [5.0, 1.0, 1.0, 3.0, 3.0, 6.0])
    # window 2 -> smooth [5, 3, 1, 2, 3, 4.5]; episode 1 alone (5) does not count.
    assert episodes_to_threshold(c, 2.0, window=2) == (2, 20)
    assert episodes_to_threshold(c, 4.0, window=2) == (6, 60)
    assert episodes_to_threshold(c, 5.0, window=2) == (None, None)
    # window 3 -> smooth [5, 3, 7/3, 5/3, 7/3, 4]; the first full window is episode 3.
    assert episodes_to_threshold(c, 2.2, window=3) == (3, 30)
    assert episodes_to_threshold(c, 2.4, window=3) == (6, 60)
    # window 1: the first episode is a full window.
    assert episodes_to_threshold(c, 5.0, window=1) == (1, 10)


def test_episodes_to_threshold_returns_python_ints() -> None:
    c = curve([7, 19], [2.0, 2.0])
    episodes, steps = episodes_to_threshold(c, 2.0, window=2)
    assert (episodes, steps) == (2, 19)
    assert type(episodes) is int and type(steps) is int


def test_episodes_to_threshold_too_few_episodes_or_none() -> None:
    c = curve([10, 20], [100.0, 100.0])
    assert episodes_to_threshold(c, 1.0, window=3) == (None, None)
    assert episodes_to_threshold(EMPTY, 0.0, window=1) == (None, None)


# -------------------------------------------------------------------------- summary_table
SUMMARY_COLUMNS = [
    "scheme",
    "seeds",
    "final return (mean)",
    "final return (min)",
    "reached threshold",
    "episodes to threshold",
    "steps to threshold",
]


def summary_runs() -> dict[str, list[Curve]]:
    u1 = curve([10, 20, 30, 40], [0.0, 4.0, 6.0, 2.0])  # smooth [0, 2, 5, 4]; final 4; hit (3, 30)
    u2 = curve([5, 15, 25], [1.0, 1.0, 3.0])  # smooth [1, 1, 2]; final 2; no hit
    r1 = curve([50, 100], [10.0, 8.0])  # smooth [10, 9]; final 9; hit (2, 100)
    return {"uniform": [u1, u2], "rank": [r1, u1], "proportional": [EMPTY]}


def test_summary_table_by_hand() -> None:
    table = summary_table(summary_runs(), threshold=4.5, window=2)
    assert isinstance(table, pd.DataFrame)
    assert list(table.columns) == SUMMARY_COLUMNS
    rows = {row["scheme"]: row for row in table.to_dict("records")}
    assert list(table["scheme"]) == ["uniform", "rank", "proportional"]

    u = rows["uniform"]
    assert u["seeds"] == 2
    assert u["final return (mean)"] == pytest.approx(3.0)
    assert u["final return (min)"] == pytest.approx(2.0)
    assert u["reached threshold"] == "1/2"
    assert u["episodes to threshold"] == pytest.approx(3.0)
    assert u["steps to threshold"] == pytest.approx(30.0)

    r = rows["rank"]
    assert r["seeds"] == 2
    assert r["final return (mean)"] == pytest.approx(6.5)
    assert r["final return (min)"] == pytest.approx(4.0)
    assert r["reached threshold"] == "2/2"
    assert r["episodes to threshold"] == pytest.approx(2.5)
    assert r["steps to threshold"] == pytest.approx(65.0)

    p = rows["proportional"]  # one seed without a single finished episode
    assert p["seeds"] == 1
    assert math.isnan(p["final return (mean)"])
    assert math.isnan(p["final return (min)"])
    assert p["reached threshold"] == "0/1"
    assert math.isnan(p["episodes to threshold"])
    assert math.isnan(p["steps to threshold"])


def test_summary_table_final_return_uses_the_window() -> None:
    runs = {"uniform": [curve([1, 2, 3, 4], [0.0, 0.0, 6.0, 9.0])]}
    assert summary_table(runs, None, window=3)["final return (mean)"][0] == pytest.approx(5.0)
    assert summary_table(runs, None, window=1)["final return (mean)"][0] == pytest.approx(9.0)


def test_summary_table_without_threshold_has_no_threshold_columns() -> None:
    table = summary_table(summary_runs(), threshold=None, window=2)
    assert list(table.columns) == SUMMARY_COLUMNS[:4]
    assert len(table) == 3


# -------------------------------------------------------------------------- report_figure
def test_report_figure_three_traces_per_scheme() -> None:
    runs = {"uniform": [A, B], "rank": [A]}
    fig = report_figure(runs, total_steps=40, threshold=3.0, window=2, points=5)
    assert set(fig) == {"data", "layout"}
    traces = fig["data"]
    assert len(traces) == 3 * len(runs)
    grid = [0, 10, 20, 30, 40]
    for i, scheme in enumerate(runs):
        high, low, mean = traces[3 * i : 3 * i + 3]
        assert all(t["legendgroup"] == scheme for t in (high, low, mean))
        assert all(t["type"] == "scatter" and t["x"] == grid for t in (high, low, mean))
        assert "fill" not in high
        assert low["fill"] == "tonexty"  # the band fills from low up to the high trace before it
        r, g, b = (int(SCHEME_COLORS[scheme][k : k + 2], 16) for k in (1, 3, 5))
        assert low["fillcolor"] == f"rgba({r},{g},{b},0.18)"
        assert high["showlegend"] is False and low["showlegend"] is False
        assert mean["line"]["color"] == SCHEME_COLORS[scheme]
        seeds = len(runs[scheme])
        assert mean["name"] == f"{scheme} ({seeds} seed{'s' if seeds != 1 else ''})"
    # uniform on grid [0, 10, 20, 30, 40]: A [nan, 1, 1, 2, 4], B [nan, 10, 10, 5, 5]
    high, low, mean = traces[:3]
    assert high["y"] == [None, 10.0, 10.0, 5.0, 5.0]
    assert low["y"] == [None, 1.0, 1.0, 2.0, 4.0]
    assert mean["y"] == [None, 5.5, 5.5, 3.5, 4.5]
    assert traces[5]["y"] == [None, 1.0, 1.0, 2.0, 4.0]


def test_report_figure_threshold_shape_and_json() -> None:
    fig = report_figure({"proportional": [A]}, total_steps=40, threshold=3.5, window=7, points=3)
    shapes = fig["layout"]["shapes"]
    assert len(shapes) == 1
    line = shapes[0]
    assert line["type"] == "line"
    assert line["xref"] == "paper"
    assert (line["x0"], line["x1"]) == (0, 1)
    assert line["y0"] == line["y1"] == 3.5
    assert "7" in fig["layout"]["yaxis"]["title"]["text"]
    # Strict JSON: NaN became null, no numpy scalars.
    json.dumps(fig, allow_nan=False)


def test_report_figure_without_threshold_has_no_shapes_and_unknown_scheme_color() -> None:
    fig = report_figure({"mine": [A]}, total_steps=40, points=2)
    assert "shapes" not in fig["layout"]
    assert len(fig["data"]) == 3
    assert fig["data"][2]["line"]["color"] == "#888888"
    assert fig["data"][1]["fillcolor"] == "rgba(136,136,136,0.18)"


# --------------------------------------------------------------------------- write_report
def _figure_json(page: str) -> Any:
    start = page.index("const fig = ") + len("const fig = ")
    end = page.index(";\nPlotly.newPlot", start)
    return json.loads(page[start:end])


def test_write_report_is_self_contained_utf8_html(tmp_path: Path) -> None:
    runs = {"uniform": [A, B], "rank": [A]}
    table = summary_table(runs, 3.0, window=2)
    figure = report_figure(runs, total_steps=40, threshold=3.0, window=2, points=5)
    heading = "CartPole — uniform vs rank <Δ & ü>"
    target = tmp_path / "nested" / "dir" / "report.html"
    path = write_report(target, figure, table, heading=heading)
    assert path == target
    assert isinstance(path, Path)

    page = path.read_bytes().decode("utf-8")  # valid UTF-8
    assert page.startswith("<!doctype html>")
    assert '<meta charset="utf-8">' in page
    assert f"<title>{html.escape(heading)}</title>" in page
    assert f"<h1>{html.escape(heading)}</h1>" in page
    assert "<Δ & ü>" not in page  # escaped, not raw markup
    assert "Plotly.newPlot" in page
    assert 'id="curves"' in page
    # The table: its header and the scheme rows.
    assert "<table" in page
    assert "reached threshold" in page
    assert "<td>uniform</td>" in page and "<td>rank</td>" in page
    # The figure as JSON, identical to what was given.
    assert _figure_json(page) == json.loads(json.dumps(figure))

    spec = importlib.util.find_spec("plotly")
    bundle = None
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            candidate = Path(location) / "package_data" / "plotly.min.js"
            if candidate.exists():
                bundle = candidate.read_text(encoding="utf-8")
    if bundle is not None:  # offline: the bundle is inlined
        assert bundle[:500] in page
        assert bundle[-500:] in page
        assert "cdn.plot.ly" not in page.split("<body>")[0].replace(bundle, "")
    else:
        assert '<script src="https://cdn.plot.ly/' in page


def test_write_report_falls_back_to_a_script_tag_without_plotly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_find_spec = importlib.util.find_spec

    def no_plotly(name: str, *args: Any, **kwargs: Any) -> Any:
        return None if name == "plotly" else real_find_spec(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", no_plotly)
    runs = {"uniform": [A]}
    path = write_report(
        tmp_path / "r.html",
        report_figure(runs, total_steps=40, points=3),
        summary_table(runs, None),
        heading="h",
    )
    page = path.read_text(encoding="utf-8")
    assert '<script src="https://cdn.plot.ly/plotly-' in page
    assert "Plotly.newPlot" in page


def test_write_report_table_shows_missing_values_as_dash(tmp_path: Path) -> None:
    runs = {"uniform": [EMPTY]}
    table = summary_table(runs, 1.0)
    path = write_report(
        tmp_path / "r.html", report_figure(runs, total_steps=10, points=2), table, heading="h"
    )
    page = path.read_text(encoding="utf-8")
    table_html = page[page.index("<table") : page.index("</table>")]
    assert "<td>-</td>" in table_html
    assert "nan" not in table_html.lower()
    assert "0/1" in table_html
