"""Tests for rdqn.training.evaluation: greedy evaluations every K env steps on held-out seeds,
their means by hand, and a run that trains the same, step for step, evaluated or not."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from rdqn.config import RunConfig
from rdqn.figures import reward_curve
from rdqn.training.episodes import PlayedEpisode
from rdqn.training.evaluation import EVAL_SEED, Evaluations, evaluation_seeds
from rdqn.training.trainer import Trainer
from tests.run_helpers import tiny


class Rows:
    """A sink that keeps what the trainer streams."""

    def __init__(self) -> None:
        self.evaluations: list[dict[str, Any]] = []

    def add_episode(self, **row: Any) -> None:
        pass

    def add_step(self, **row: Any) -> None:
        pass

    def add_evaluation(self, **row: Any) -> None:
        self.evaluations.append(row)


def played(episode_return: float, length: int) -> PlayedEpisode:
    rewards = np.full(length, episode_return / length, np.float32)
    return PlayedEpisode(
        env_id="CartPole-v1",
        env_steps=0,
        seed=0,
        poses=np.zeros((length + 1, 2), np.float32),
        actions=np.zeros(length, np.int8),
        rewards=rewards,
        terminated=True,
    )


def test_means_and_rows_by_hand() -> None:
    """Two evaluations of three episodes: returns 10, 20, 60 (mean 30) and 9, 9, 12 (mean 10)."""
    evaluations = Evaluations.none(3)
    assert len(evaluations) == 0 and evaluations.means.size == 0
    evaluations = evaluations.add(100, [played(10, 10), played(20, 20), played(60, 60)])
    evaluations = evaluations.add(200, [played(9, 9), played(9, 9), played(12, 12)])
    assert evaluations.env_steps.tolist() == [100, 200]
    assert evaluations.means.tolist() == pytest.approx([30.0, 10.0])
    assert evaluations.lengths.tolist() == [[10, 20, 60], [9, 9, 12]]
    assert evaluations.until(150).env_steps.tolist() == [100]
    assert (
        list(evaluation_seeds(3))
        == [EVAL_SEED, EVAL_SEED + 1, EVAL_SEED + 2]
        == [
            10_000,
            10_001,
            10_002,
        ]
    )


def test_stored_rows_give_only_whole_evaluations() -> None:
    """Rows of step 100 (both episodes) and of step 200 (one: cut off by a crash)."""
    back = Evaluations.from_rows(
        np.array([100, 100, 200]),
        np.array([0, 1, 0]),
        np.array([5.0, 7.0, 9.0]),
        np.array([5, 7, 9]),
        episodes=2,
    )
    assert back.env_steps.tolist() == [100] and back.means.tolist() == [6.0]
    assert len(Evaluations.from_rows(*(np.zeros(0),) * 4, episodes=2)) == 0


def config(eval_every: int) -> RunConfig:
    return tiny(300, **{"train.eval_every": eval_every, "train.eval_episodes": 3})


def test_every_k_env_steps_the_held_out_seeds_are_played_and_streamed() -> None:
    rows = Rows()
    trainer = Trainer(config(100), sink=rows).run()
    evaluations = trainer.evaluations
    assert evaluations.env_steps.tolist() == [100, 200, 300]
    assert evaluations.returns.shape == (3, 3) and np.all(evaluations.returns >= 1)
    assert [(r["env_steps"], r["episode"], r["seed"]) for r in rows.evaluations] == [
        (step, k, 10_000 + k) for step in (100, 200, 300) for k in range(3)
    ]
    assert [r["return"] for r in rows.evaluations] == evaluations.returns.ravel().tolist()
    # The last evaluation is the trained policy's own greedy episodes on those seeds.
    again = [trainer.greedy_episode(seed).episode_return for seed in evaluation_seeds(3)]
    assert evaluations.returns[-1].tolist() == again
    assert trainer.snapshot().evaluations is evaluations


def test_a_run_trains_step_for_step_the_same_evaluated_or_not() -> None:
    evaluated, plain = Trainer(config(50)).run(), Trainer(config(0)).run()
    assert len(plain.evaluations) == 0 and len(evaluated.evaluations) == 6
    assert evaluated.recorder.episode_returns == plain.recorder.episode_returns
    for name, tensor in plain.agent.online.state_dict().items():
        assert torch.equal(tensor, evaluated.agent.online.state_dict()[name]), name


@pytest.mark.parametrize(("field", "value"), [("eval_every", -1), ("eval_episodes", 0)])
def test_bad_evaluation_settings_are_refused(field: str, value: int) -> None:
    with pytest.raises(ValueError, match=f"train.{field}"):
        tiny(300, **{f"train.{field}": value})


def test_the_reward_chart_draws_the_evaluations() -> None:
    figure = reward_curve([10, 20], [5.0, 7.0], evaluation=([100, 200], [30.0, 10.0]))
    (trace,) = [t for t in figure.data if t.name == "greedy evaluation (held-out seeds)"]
    assert list(trace.x) == [100, 200] and list(trace.y) == [30.0, 10.0]
