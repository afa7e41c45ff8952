"""Tests for rdqn.training.telemetry: the per-update IS-weight histogram."""

from __future__ import annotations

import numpy as np

from rdqn.training.telemetry import (
    AGE_BINS,
    WEIGHT_EDGES,
    WEIGHT_RANGE,
    TelemetryRecorder,
    weight_histogram,
)
from rdqn.training.telemetry_kernels import count_batch_kernel


def record(recorder: TelemetryRecorder, weights: np.ndarray, update: int) -> None:
    n = len(weights)
    recorder.on_update(
        update=update,
        indices=np.arange(n),
        generations=np.arange(n),
        probabilities=np.full(n, 1.0 / n),
        weights=weights,
        td_abs=np.ones(n),
        ages=np.zeros(n, dtype=np.int64),
        buffer_size=n,
        loss=0.0,
        q_mean=0.0,
        log=False,
    )


def test_weight_histogram_bins_log10_like_numpy_histogram_of_clipped_weights() -> None:
    """Edges log10 w = -4, -3.8, ..., 1: 1.0 opens bin 20, 10 closes the last bin; weights below
    1e-4 count in the first bin and above 10 in the last (a 0..1 axis piled real weights, about
    0.01, into one bar)."""
    edge_cases = np.array([1e-6, 1e-4, 0.012, 0.05, 1.0, 9.9, 10.0, 50.0])
    spread = 10.0 ** np.random.default_rng(0).uniform(-5.0, 2.0, 1000)
    recorder = TelemetryRecorder(planned_updates=10)
    record(recorder, edge_cases, 1)
    record(recorder, spread, 2)
    recorder.on_histograms(2, np.full(4, 0.25))

    def binned(weights: np.ndarray) -> np.ndarray:
        return np.histogram(np.log10(np.clip(weights, *WEIGHT_RANGE)), bins=WEIGHT_EDGES)[0]

    counts = recorder.weight_history.freeze().counts
    np.testing.assert_array_equal(counts, [binned(np.concatenate([edge_cases, spread]))])
    first = binned(edge_cases)
    assert first[0] == 2 and first[10] == 1 and first[13] == 1 and first[20] == 1
    assert first[-1] == 3
    np.testing.assert_array_equal(weight_histogram(edge_cases).counts, first)


def test_a_restored_recorder_shows_what_the_saved_one_showed() -> None:
    rng = np.random.default_rng(0)
    saved = TelemetryRecorder(planned_updates=10)
    for update in range(1, 11):
        record(saved, rng.random(8), update)
        saved.on_histograms(update, np.full(8, 1 / 8))
        saved.on_episode(float(update), 10 * update, 10)
    state = saved.state_dict()
    restored = TelemetryRecorder(planned_updates=10)
    restored.load_state_dict(state)
    again = restored.state_dict()
    assert state.keys() == again.keys() and state["td_stages"].keys() != set()
    for name in ("episode_returns", "episode_end_steps", "log_updates", "age_counts"):
        np.testing.assert_array_equal(state[name], again[name])
    for name in ("priority_history", "weight_history"):
        for part in ("steps", "counts"):
            np.testing.assert_array_equal(state[name][part], again[name][part])
    for key, stage in state["td_stages"].items():
        np.testing.assert_array_equal(stage["counts"], again["td_stages"][key]["counts"])
    assert restored.episode_returns == saved.episode_returns  # plain floats, as recorded
    assert restored.last_batch is None  # the last batch is not part of the saved state


def test_ages_fall_in_twenty_equal_bins_of_the_buffer() -> None:
    """Bin of age a in a buffer of 100: a * 20 // 100, so 0-4 -> 0, 5 -> 1, 99 -> 19; an age
    past the end (not possible in a buffer, but not an index error either) counts in the last."""
    weight_counts, age_counts = np.zeros(len(WEIGHT_EDGES) - 1), np.zeros(AGE_BINS)

    def count(ages: np.ndarray, size: int) -> None:
        ones = np.ones(ages.shape[0])
        low, high = WEIGHT_RANGE
        count_batch_kernel(ones, ages, size, WEIGHT_EDGES, low, high, weight_counts, age_counts)

    count(np.array([0, 4, 5, 50, 99, 250]), 100)
    expected = np.zeros(AGE_BINS)
    expected[[0, 1, 10, 19]] = [2, 1, 1, 2]
    np.testing.assert_array_equal(age_counts, expected)
    assert weight_counts[20] == 6  # log10(1) = 0 opens bin 20
    many = np.random.default_rng(1).integers(0, 997, 5000)
    age_counts[:] = 0
    count(many, 997)
    np.testing.assert_array_equal(age_counts, np.bincount(many * AGE_BINS // 997, minlength=20))
