"""rdqn.training.watcher: greedy episodes at their cadence, and a run trains the same watched."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rdqn.training.trainer import Trainer
from rdqn.training.watcher import EpisodeWatcher
from tests.run_helpers import tiny


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_cadence_first_then_every_few_episodes_and_seconds() -> None:
    trainer = Trainer(tiny(2_000))
    clock = Clock()
    watcher = EpisodeWatcher(trainer, every_episodes=3, min_seconds=5.0, clock=clock)
    assert watcher.maybe_play() is not None  # at once: the untrained policy
    assert watcher.latest is not None and watcher.latest.env_steps == 0
    while trainer.episodes < 3:
        trainer.step()
        assert watcher.maybe_play() is None  # fewer than three episodes since
    assert watcher.maybe_play() is None  # three episodes, but within five seconds
    clock.now = 5.0
    played = watcher.maybe_play()
    assert played is not None and played.env_steps == trainer.env_steps
    assert watcher.maybe_play() is None
    watcher.play_now()  # asked for: whatever the cadence
    curve = watcher.curve.snapshot()
    steps, returns, lengths = curve.env_steps, curve.returns, curve.lengths
    assert watcher.played == 3 and steps.tolist() == [0, trainer.env_steps, trainer.env_steps]
    assert returns.tolist() == pytest.approx(lengths.astype(float).tolist())  # CartPole: +1 a step
    seeds = {watcher.latest.seed, played.seed}
    assert len(seeds) == 2  # each watched episode its own env seed


def test_a_run_trains_step_for_step_the_same_watched_or_not() -> None:
    """Watching (an episode before every step here, far more than the cadence) changes none of
    the training: not its actions, episodes, replay memory, weights or generators."""
    config = tiny(600)
    plain, watched = Trainer(config), Trainer(config)
    watcher = EpisodeWatcher(watched, every_episodes=0, min_seconds=0.0)
    while not plain.done:
        plain.step()
        watcher.play_now() if plain.env_steps % 50 == 0 else watcher.maybe_play()
        watched.step()
        assert watched.env_steps == plain.env_steps and watched.episodes == plain.episodes
    assert watcher.played > 10
    np.testing.assert_array_equal(plain.buffer.storage.actions, watched.buffer.storage.actions)
    np.testing.assert_array_equal(plain.buffer.storage.obs, watched.buffer.storage.obs)
    np.testing.assert_array_equal(plain.buffer.probabilities(), watched.buffer.probabilities())
    for a, b in zip(
        plain.agent.online.parameters(), watched.agent.online.parameters(), strict=True
    ):
        assert torch.equal(a, b)
    assert plain.recorder.episode_returns == watched.recorder.episode_returns
    assert plain.buffer.rng.bit_generator.state == watched.buffer.rng.bit_generator.state
    assert plain.env.np_random.bit_generator.state == watched.env.np_random.bit_generator.state
