"""Figures of the Replay internals page: the sampler check, log axes for IS weights and |TD|."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from rdqn.figures import fit_figure, histogram_figure, td_stages_figure, weights_scatter
from rdqn.figures._base import _log_ticks
from rdqn.figures.distributions import p_value_text
from rdqn.training.sampler_check import GoodnessOfFit
from rdqn.training.telemetry import WEIGHT_EDGES, BatchView, Histogram, weight_histogram


def fit(**changes: object) -> GoodnessOfFit:
    fields: dict[str, object] = {
        "bin_edges": np.array([0, 10, 20, 30], dtype=np.int64),
        "observed": np.array([12.0, 8.0, 10.0]),
        "expected": np.array([10.5, 9.5, 10.0]),
        "low": np.array([9.0, 8.0, 9.0]),
        "high": np.array([12.0, 11.0, 11.0]),
        "statistic": 3.1,
        "p_value": 0.67032,
        "stratified": True,
        "axis": "buffer slot",
        "batches": 3,
        "batch_size": 10,
    }
    fields.update(changes)
    return GoodnessOfFit(**fields)  # type: ignore[arg-type]


def named(fig: go.Figure, name: str) -> go.Scatter | go.Bar:
    (match,) = [t for t in fig.data if t.name == name]
    return match


def test_fit_figure_shows_deviations_inside_the_null_range_and_p_in_the_title() -> None:
    fig = fit_figure(fit())
    dots, band = named(fig, "observed − expected"), named(fig, "correct sampler (95 %)")
    np.testing.assert_allclose(dots.x, [5.0, 15.0, 25.0])
    np.testing.assert_allclose(dots.y, [1.5, -1.5, 0.0])
    # The grey bars span low - expected .. high - expected.
    base, height = np.asarray(band.base, dtype=float), np.asarray(band.y, dtype=float)
    np.testing.assert_allclose(base, [-1.5, -1.5, -1.0])
    np.testing.assert_allclose(base + height, [1.5, 1.5, 1.0])
    assert [row[0] for row in dots.customdata] == ["0–9", "10–19", "20–29"]
    assert fig.layout.title.text == "Sampler check: p = 0.67"
    assert fig.layout.xaxis.title.text == "buffer slot"


def test_fit_figure_for_rank_based_replay_counts_ranks_from_one() -> None:
    fig = fit_figure(fit(axis="rank"))
    assert [row[0] for row in named(fig, "observed − expected").customdata] == [
        "1–10",
        "11–20",
        "21–30",
    ]
    assert fig.layout.xaxis.title.text.startswith("rank")


@pytest.mark.parametrize(
    ("p", "text"),
    [(1.0, "p = 1.00"), (0.4186, "p = 0.42"), (0.004, "p = 0.004"), (1 / 1001, "p < 0.001")],
)
def test_p_values_are_written_to_the_check_s_resolution(p: float, text: str) -> None:
    assert p_value_text(p) == text
    assert fit_figure(fit(p_value=p)).layout.title.text.endswith(text)


def test_ordinary_weights_spread_over_several_bars_of_the_log_axis() -> None:
    """Weights of 0.01..0.06 (a real batch) filled one bar of the old 0..1 axis."""
    weights = np.geomspace(0.01, 0.06, 32)
    hist = weight_histogram(weights)
    assert np.count_nonzero(hist.counts) >= 4
    assert hist.counts.sum() == 32
    fig = histogram_figure(hist, title="w", x_title="w", log_x_labels=True)
    assert "0.01" in fig.layout.xaxis.ticktext and "0.1" in fig.layout.xaxis.ticktext
    assert WEIGHT_EDGES[0] == -4.0 and WEIGHT_EDGES[-1] == 1.0


def test_td_stages_use_a_log_axis() -> None:
    stages = {
        "10%": Histogram(np.linspace(0.0, 0.1, 4), np.array([5.0, 3.0, 1.0])),
        "100%": Histogram(np.linspace(0.0, 10.0, 4), np.array([8.0, 1.0, 1.0])),
    }
    fig = td_stages_figure(stages)
    assert fig.layout.xaxis.type == "log"
    assert "log" in fig.layout.xaxis.title.text


def test_log_ticks_label_decades() -> None:
    assert _log_ticks(-2.5, 0.5) == ([-2, -1, 0], ["0.01", "0.1", "1"])


def test_weights_scatter_can_leave_the_ess_out_of_a_short_title() -> None:
    batch = BatchView(
        indices=np.array([1, 2]),
        generations=np.array([1, 2]),
        probabilities=np.array([0.1, 0.4]),
        weights=np.array([1.0, 0.5]),
        td_abs=np.array([0.2, 1.0]),
        ages=np.array([0, 3]),
        ess=1.8,
    )
    assert weights_scatter(batch, title="w", with_ess=False).layout.title.text == "w"
    assert "ESS 1.8 of 2" in weights_scatter(batch).layout.title.text
