"""The Sweeps page's data: trial counts, the heatmap's slice of a summary (every number worked
out by hand in tests/dashboard/sweep_cases.py), the cell a click picks, the cell's trials."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rdqn.dashboard.sweeps_view import (
    cell_label,
    cell_seeds,
    heatmap_slice,
    is_live,
    selected_cell,
    trial_counts,
    value_label,
)
from rdqn.runs.store import RunStore
from rdqn.sweeps import SweepSpec, summary, sweep_trials
from rdqn.sweeps.records import save_spec
from tests.dashboard.sweep_cases import (
    AUC_IQM,
    AUC_MEAN,
    AUC_SD,
    REACHED,
    SEEDS_FINISHED,
    STEPS_MEAN,
    hand_sweep,
)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    with RunStore(tmp_path / "rdqn.db") as s:
        yield s


def test_value_labels_read_as_the_grid_was_written() -> None:
    assert value_label(0.6) == "0.6"
    assert value_label(1.0) == "1"
    assert value_label("rank") == "rank"
    assert value_label(True) == "true"
    assert value_label(None) == "none"
    assert value_label(128) == "128"
    assert value_label({"n": 8, "max_steps": 32}) == '{"max_steps": 32, "n": 8}'


def test_trial_counts_by_the_run_that_stands_for_each_trial() -> None:
    trials = pd.DataFrame(
        {"status": ["finished", "running", "paused", "created", "failed", "stopped", None]}
    )
    assert trial_counts(trials) == {
        "finished": 1,
        "training": 2,
        "waiting": 1,
        "failed": 1,
        "stopped": 1,
        "not run": 1,
    }
    assert is_live(trials)
    assert not is_live(pd.DataFrame({"status": ["finished", "failed", "stopped", None]}))


def test_the_heatmap_holds_each_cells_mean_and_spread_worked_out_by_hand(
    store: RunStore,
) -> None:
    spec = hand_sweep(store)
    table = summary(store, spec.id)
    heat = heatmap_slice(table, spec, "replay.alpha", "replay.scheme", {}, "auc")
    assert heat.x_labels == ["0", "1"]
    assert heat.y_labels == ["proportional", "rank"]
    for i, scheme in enumerate(heat.y_labels):
        for j, alpha in enumerate((0.0, 1.0)):
            cell = (alpha, scheme)
            np.testing.assert_allclose(heat.mean[i, j], AUC_MEAN[cell], equal_nan=True)
            np.testing.assert_allclose(heat.sd[i, j], AUC_SD[cell], equal_nan=True)
            np.testing.assert_allclose(heat.iqm[i, j], AUC_IQM[cell], equal_nan=True)
            assert heat.notes[i][j] == SEEDS_FINISHED[cell]
            assert heat.keys[i][j] == f'replay.alpha={alpha} replay.scheme="{scheme}"'

    steps = heatmap_slice(table, spec, "replay.alpha", "replay.scheme", {}, "steps")
    for i, scheme in enumerate(steps.y_labels):
        for j, alpha in enumerate((0.0, 1.0)):
            np.testing.assert_allclose(steps.mean[i, j], STEPS_MEAN[alpha, scheme], equal_nan=True)
            assert steps.notes[i][j] == REACHED[alpha, scheme]
    updates = heatmap_slice(table, spec, "replay.alpha", "replay.scheme", {}, "updates")
    assert updates.mean[0, 0] == 30.0 and updates.mean[0, 1] == 20.0  # by hand: 3*20//2, 20


def test_swapped_axes_transpose_the_heatmap(store: RunStore) -> None:
    spec = hand_sweep(store)
    table = summary(store, spec.id)
    one = heatmap_slice(table, spec, "replay.alpha", "replay.scheme", {}, "auc")
    other = heatmap_slice(table, spec, "replay.scheme", "replay.alpha", {}, "auc")
    np.testing.assert_array_equal(other.mean, one.mean.T)
    assert other.keys == [list(row) for row in zip(*one.keys, strict=True)]


def test_one_axis_with_the_other_held_at_a_value(store: RunStore) -> None:
    spec = hand_sweep(store)
    table = summary(store, spec.id)
    held = heatmap_slice(table, spec, "replay.alpha", None, {"replay.scheme": "rank"}, "auc")
    assert held.y_labels == [""] and held.x_labels == ["0", "1"]
    np.testing.assert_allclose(held.mean, [[0.1, math.nan]], equal_nan=True)
    with pytest.raises(ValueError, match="no value chosen for the grid field"):
        heatmap_slice(table, spec, "replay.alpha", None, {}, "auc")


def test_a_sweep_of_seeds_only_is_one_cell(store: RunStore) -> None:
    spec = SweepSpec.from_grid("chain-lesson", {}, seeds=2, steps=100)
    table = summary(store, _saved(store, spec))
    heat = heatmap_slice(table, spec, None, None, {}, "auc")
    assert heat.keys == [[""]] and heat.notes == [["0/2 seeds"]]


def _saved(store: RunStore, spec: SweepSpec) -> str:
    save_spec(store, spec)
    return spec.id


def test_a_click_picks_the_cell_its_marker_carries() -> None:
    keys = [["a", "b"], ["c", "d"]]
    assert selected_cell([{"curve_number": 1, "customdata": "c"}], keys) == "c"
    assert selected_cell([], keys) is None
    assert selected_cell([{"curve_number": 0, "x": "0.6"}], keys) is None  # not a marker
    assert selected_cell([{"customdata": "from another sweep"}], keys) is None


def test_a_cells_trials_with_their_episodes(store: RunStore) -> None:
    spec = hand_sweep(store)
    trials = sweep_trials(store, spec)
    key = 'replay.alpha=1.0 replay.scheme="proportional"'
    seeds = cell_seeds(store, spec, trials, key)
    assert [(s.label, s.finished, s.curve.returns.size) for s in seeds] == [
        ("seed 0", True, 20),
        ("seed 1 (failed)", False, 0),  # with no episode
    ]
    rank = cell_seeds(store, spec, trials, 'replay.alpha=1.0 replay.scheme="rank"')
    assert [(s.label, s.finished) for s in rank] == [("seed 0 (stopped)", False)]  # 1: no run
    assert cell_label(spec, key) == "replay.alpha = 1, replay.scheme = proportional"
