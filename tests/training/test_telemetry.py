"""Tests for rdqn.training.telemetry: the per-update IS-weight histogram."""

from __future__ import annotations

import numpy as np

from rdqn.training.telemetry import WEIGHT_EDGES, TelemetryRecorder


def record(recorder: TelemetryRecorder, weights: np.ndarray, update: int) -> None:
    n = len(weights)
    recorder.on_update(
        update=update,
        indices=np.arange(n),
        probabilities=np.full(n, 1.0 / n),
        weights=weights,
        td_abs=np.ones(n),
        ages=np.zeros(n, dtype=np.int64),
        buffer_size=n,
        loss=0.0,
        q_mean=0.0,
        log=False,
    )


def test_weight_histogram_bins_like_numpy_histogram_of_clipped_weights() -> None:
    """Edges 0, .05, ..., 1: .05 opens bin 1, 1.0 closes the last bin, values above 1 clip to 1."""
    edge_cases = np.array([0.0, 0.049, 0.05, 0.5, 0.97, 0.999, 1.0, 1.5])
    spread = np.random.default_rng(0).uniform(0.0, 1.0, 1000)
    recorder = TelemetryRecorder(planned_updates=10)
    record(recorder, edge_cases, 1)
    record(recorder, spread, 2)
    recorder.on_histograms(2, np.full(4, 0.25))
    expected = np.histogram(
        np.clip(np.concatenate([edge_cases, spread]), 0.0, 1.0), bins=WEIGHT_EDGES
    )[0]
    counts = recorder.weight_history.freeze().counts
    np.testing.assert_array_equal(counts, [expected])
    first = np.histogram(np.clip(edge_cases, 0.0, 1.0), bins=WEIGHT_EDGES)[0]
    assert first[0] == 2 and first[1] == 1 and first[-1] == 4
