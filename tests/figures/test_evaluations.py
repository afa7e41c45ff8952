"""Tests for rdqn.figures.evaluations: the seeds' mean evaluation curve and band, by hand."""

from __future__ import annotations

import numpy as np

from rdqn.figures import evaluation_figure
from rdqn.figures.evaluations import seed_band
from rdqn.training.evaluation import Evaluations


def evaluations(steps: list[int], returns: list[list[float]]) -> Evaluations:
    values = np.array(returns, np.float64)
    return Evaluations(np.array(steps, np.int64), values, np.ones(values.shape, np.int64))


def test_the_band_over_seeds_by_hand() -> None:
    """Seed A: R̄ 2 at step 100, 4 at 200; seed B: R̄ 6 at step 100 only (still training)."""
    a = evaluations([100, 200], [[1.0, 3.0], [4.0, 4.0]])
    b = evaluations([100], [[5.0, 7.0]])
    steps, mean, low, high, seeds = seed_band([a, b])
    assert steps.tolist() == [100, 200]
    assert mean.tolist() == [4.0, 4.0] and low.tolist() == [2.0, 4.0]
    assert high.tolist() == [6.0, 4.0] and seeds.tolist() == [2, 1]


def test_each_scheme_is_a_line_with_its_band_and_no_data_is_the_empty_figure() -> None:
    a = evaluations([100], [[1.0, 3.0]])
    figure = evaluation_figure({"rank": [a, a]}, labels={"rank": "rank · α 0.7"})
    (line,) = [t for t in figure.data if t.showlegend is not False]
    assert line.name == "rank · α 0.7 (2 seeds)" and list(line.y) == [2.0]
    assert len(figure.data) == 3  # the band's two edges, the line
    empty = evaluation_figure({"rank": [Evaluations.none(2)]})
    assert not empty.data
