"""The PER notebook study's trials: probes that change nothing, TD errors over the buffer, the
stage histograms and the summary."""

import numpy as np
import pytest

from rdqn.config import RunConfig
from rdqn.experiments.per_notebook import (
    STAGES,
    TD_EDGES,
    buffer_td_errors,
    per_notebook_summary,
    per_notebook_trials,
    run_per_notebook_trial,
)
from rdqn.training.telemetry import RELATIVE_PROBABILITY_EDGES, WEIGHT_EDGES
from rdqn.training.trainer import Trainer

pytestmark = pytest.mark.slow  # trains CartPole for seconds


@pytest.fixture(scope="module")
def tiny() -> dict:
    """Both schemes, seed 0, 800 env steps (warm-up 80), 4 probes."""
    trials = per_notebook_trials(["uniform", "proportional"], [0], steps=800, probes=4)
    return {t.scheme: (t, run_per_notebook_trial(t)) for t in trials}


@pytest.mark.parametrize("scheme", ["uniform", "proportional"])
def test_probes_change_nothing_the_trainer_does(tiny: dict, scheme: str) -> None:
    trial, result = tiny[scheme]
    trainer = Trainer(RunConfig.from_dict(trial.config))
    trainer.run()
    assert result["returns"] == list(trainer.recorder.episode_returns)
    assert result["end_steps"] == list(trainer.recorder.episode_end_steps)
    assert result["updates"] == trainer.updates == 720


def test_buffer_td_errors_are_the_learners() -> None:
    """The TD errors of a sampled batch under the current nets equal those `DQNAgent.learn`
    reports for it (from before its update)."""
    (trial,) = per_notebook_trials(["proportional"], [1], steps=400)
    trainer = Trainer(RunConfig.from_dict(trial.config))
    trainer.run()
    every = buffer_td_errors(trainer)
    assert every.shape == (400,)
    batch = trainer.buffer.sample(32, beta=0.4)
    learned = trainer.agent.learn(batch)
    np.testing.assert_allclose(every[batch.indices], learned.td_errors, rtol=1e-5, atol=1e-5)


def test_stage_histograms_count_every_sampled_transition(tiny: dict) -> None:
    """720 updates of 32: stages (0-10 %, 10-25 %, 25-50 %, 50-100 %] hold 72, 108, 180 and
    360 updates' batches."""
    for _, result in tiny.values():
        stages = result["stages"]
        for key in ("sampled_td_hist", "sampled_rel_prob_hist", "sampled_weight_hist"):
            totals = np.array(stages[key]).sum(axis=1)
            np.testing.assert_array_equal(totals, 32 * np.array([72, 108, 180, 360]))
        assert stages["labels"] == ["0%-10%", "10%-25%", "25%-50%", "50%-100%"]
    assert len(STAGES) == 5


def test_uniform_samples_at_n_p_one_with_unit_weights(tiny: dict) -> None:
    _, result = tiny["uniform"]
    uniform_bin = np.searchsorted(RELATIVE_PROBABILITY_EDGES, 0.0, side="right") - 1
    rel = np.array(result["stages"]["sampled_rel_prob_hist"])
    assert rel[:, uniform_bin].sum() == rel.sum()
    unit_bin = np.searchsorted(WEIGHT_EDGES, 0.0, side="right") - 1
    weights = np.array(result["stages"]["sampled_weight_hist"])
    assert weights[:, unit_bin].sum() == weights.sum()
    assert result["probes"]["buffer_rel_prob_hist"] == []


def test_probes_at_evenly_spaced_updates(tiny: dict) -> None:
    _, result = tiny["proportional"]
    probes = result["probes"]
    assert probes["updates"] == [180, 360, 540, 720]
    assert probes["buffer_size"] == [260, 440, 620, 800]
    for hist in probes["buffer_td_hist"]:
        assert len(hist) == TD_EDGES.size - 1
    assert [sum(h) for h in probes["buffer_td_hist"]] == probes["buffer_size"]
    assert [sum(h) for h in probes["buffer_rel_prob_hist"]] == probes["buffer_size"]
    pairs = zip(probes["buffer_td_median"], probes["buffer_td_p90"], strict=True)
    assert all(median <= p90 for median, p90 in pairs)


def test_summary_by_hand() -> None:
    """Two seeds: steps to threshold 1,000 and None; best 300 and 500; ratios 2, 4 and 3."""
    runs = [
        {
            "scheme": "proportional",
            "alpha": 0.6,
            "beta0": 0.4,
            "seed": seed,
            "steps_to_threshold": steps,
            "best_mean20": best,
            "final_mean20": best - 100,
            "seconds": 10.0,
            "probes": {"sampled_td_mean": sampled, "buffer_td_mean": [1.0] * len(sampled)},
        }
        for seed, steps, best, sampled in ((0, 1000, 300.0, [2.0, 4.0]), (1, None, 500.0, [3.0]))
    ]
    (row,) = per_notebook_summary(runs)
    assert row["reached"] == 1 and row["steps_to_threshold"] == [1000, None]
    assert (row["steps_median"], row["steps_min"], row["steps_max"]) == (1000, 1000, 1000)
    assert (row["best_mean20_median"], row["best_mean20_min"]) == (400.0, 300.0)
    assert row["sampled_over_buffer_td_median"] == 3.0


def test_trials_are_checked() -> None:
    with pytest.raises(ValueError, match="scheme must be one of"):
        per_notebook_trials(["rank"], [0])
    with pytest.raises(ValueError, match="probes must be an integer"):
        per_notebook_trials(["uniform"], [0], probes=0)
    (trial,) = per_notebook_trials(["uniform"], [3], steps=5000)
    config = RunConfig.from_dict(trial.config)
    assert (config.train.total_steps, config.train.learning_starts, config.seed) == (5000, 500, 3)
