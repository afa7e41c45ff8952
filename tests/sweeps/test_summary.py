"""A sweep's summary per cell: the area under the reward curve and the steps to a threshold,
each computed here by hand."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rdqn.compare import Curve
from rdqn.runs.store import RunStore
from rdqn.sweeps import SweepSpec, reward_auc, summary
from rdqn.sweeps.records import save_spec
from rdqn.sweeps.summary import threshold_crossing
from tests.sweeps.sweep_helpers import file_trial


def curve(ends: list[int], returns: list[float]) -> Curve:
    return Curve(np.array(ends, dtype=np.int64), np.array(returns, dtype=np.float64))


def test_the_area_under_a_reward_curve_by_hand() -> None:
    """Ends at 2 and 5, returns 1 and 3, budget 10: R = 0 on [0,2), 1 on [2,5), then the mean
    of the last `window` returns on [5,10]."""
    two = curve([2, 5], [1.0, 3.0])
    assert reward_auc(two, 10, window=1) == pytest.approx((1 * 3 + 3 * 5) / 10)  # 1.8
    assert reward_auc(two, 10, window=2) == pytest.approx((1 * 3 + 2 * 5) / 10)  # 1.3
    assert reward_auc(two, 4, window=1) == pytest.approx(1 * 2 / 4)  # the second ends past it
    assert reward_auc(curve([], []), 10) == 0.0
    assert reward_auc(curve([10], [7.0]), 10) == 0.0  # ended at the budget's last step
    constant = curve([5, 10, 15, 20], [2.0] * 4)
    assert reward_auc(constant, 20) == pytest.approx(2.0 * 15 / 20)
    with pytest.raises(ValueError, match="total_steps must be"):
        reward_auc(two, 0)


def test_a_threshold_crossing_by_hand() -> None:
    """Window 2 over returns 0, 1, 1, 0, 1: means -, .5, 1, .5, .5; threshold 1 first reached
    at the third episode (env step 30, update 20)."""
    episodes = pd.DataFrame(
        {
            "episode": [1, 2, 3, 4, 5],
            "env_steps": [10, 20, 30, 40, 50],
            "updates": [0, 10, 20, 30, 40],
            "return": [0.0, 1.0, 1.0, 0.0, 1.0],
        }
    )
    assert threshold_crossing(episodes, 1.0, window=2) == (30, 20)
    assert threshold_crossing(episodes, 0.5, window=2) == (20, 10)
    assert threshold_crossing(episodes, 1.5, window=2) == (None, None)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    with RunStore(tmp_path / "rdqn.db") as s:
        yield s


def test_the_summary_gives_each_cell_its_statistics_over_finished_seeds(store: RunStore) -> None:
    """Budget 100, window 1, threshold 1 (the chain's 0.8 replaced). Cell alpha 0: seed 0 ends
    episodes at 20 and 60 with returns 0 and 1 (AUC (0*40 + 1*40)/100 = .4, reaches 1 at step 60,
    update 30); seed 1 at 50 with 1 (AUC .5, reaches at 50, update 20); seed 2 failed. Cell alpha
    0.6: seed 0 at 10 with 0 (AUC 0, never); seed 1 stopped; seed 2 not run."""
    spec = SweepSpec.from_grid("chain-lesson", {"replay.alpha": [0, 0.6]}, seeds=3, steps=100)
    save_spec(store, spec)
    t = {(trial.overrides["replay.alpha"], trial.seed): trial for trial in spec.trials()}
    a = file_trial(store, spec, t[0.0, 0], "finished", [(20, 0, 0.0), (60, 30, 1.0)])
    b = file_trial(store, spec, t[0.0, 1], "finished", [(50, 20, 1.0)])
    file_trial(store, spec, t[0.0, 2], "failed", [(10, 0, 5.0)], error="boom")
    c = file_trial(store, spec, t[0.6, 0], "finished", [(10, 0, 0.0)])
    file_trial(store, spec, t[0.6, 1], "stopped", [(10, 0, 9.0)])

    frame = summary(store, spec.id, threshold=1.0, window=1)
    assert list(frame["replay.alpha"]) == [0.0, 0.6]
    assert list(frame["cell"]) == ["replay.alpha=0.0", "replay.alpha=0.6"]
    first, second = frame.to_dict("records")
    assert (first["seeds"], first["finished"], first["failed"], first["reached"]) == (3, 2, 1, 2)
    assert first["threshold"] == 1.0
    assert first["auc_mean"] == pytest.approx(0.45)
    assert first["auc_median"] == pytest.approx(0.45)
    assert first["auc_min"] == pytest.approx(0.4) and first["auc_max"] == pytest.approx(0.5)
    assert first["auc_std"] == pytest.approx(np.std([0.4, 0.5], ddof=1))
    # two seeds: the IQM is their mean; a resample is both, or either twice (1/4 each), so the
    # 95 % interval runs from the lower to the higher
    assert (first["auc_iqm"], first["auc_iqm_low"], first["auc_iqm_high"]) == pytest.approx(
        (0.45, 0.4, 0.5)
    )
    assert first["steps_to_threshold_mean"] == 55.0
    assert first["steps_to_threshold_median"] == 55.0
    assert first["steps_to_threshold_iqm_low"] == 50.0
    assert first["steps_to_threshold_iqm_high"] == 60.0
    assert (first["updates_to_threshold_min"], first["updates_to_threshold_max"]) == (20, 30)
    assert first["final_return_mean"] == pytest.approx(1.0)  # window 1: the last return
    assert first["run_ids"] == [a, b]
    assert (second["finished"], second["failed"], second["reached"]) == (1, 0, 0)
    assert second["auc_mean"] == 0.0 and second["auc_std"] == 0.0
    assert (second["auc_iqm"], second["auc_iqm_low"], second["auc_iqm_high"]) == (0, 0, 0)
    assert np.isnan(second["steps_to_threshold_mean"])
    assert np.isnan(second["steps_to_threshold_iqm"])
    assert second["run_ids"] == [c]


def test_the_default_threshold_is_the_envs(store: RunStore) -> None:
    spec = SweepSpec.from_grid("chain-lesson", {}, seeds=1, steps=100)
    save_spec(store, spec)
    [row] = summary(store, spec.id).to_dict("records")
    assert row["threshold"] == 0.8 and row["cell"] == "" and row["finished"] == 0
    assert np.isnan(row["auc_mean"])
