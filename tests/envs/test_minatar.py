"""rdqn.envs.minatar: the MinAtar games as gymnasium envs, draw for draw the package's own."""

from __future__ import annotations

import importlib.util
import logging

import numpy as np
import pytest

from rdqn.envs import make_env
from rdqn.envs.minatar import (
    MINATAR_ACTIONS,
    MINATAR_CHANNELS,
    MINATAR_ENVS,
    MISSING_EXTRA,
    channel_names,
)
from rdqn.envs.poses import poses

GAMES = {cls.game: env_id for env_id, cls in MINATAR_ENVS.items()}


def _package_environment(game: str, seed: int):  # noqa: ANN202
    """The package's ``minatar.Environment`` for ``game``, drawing from the generator a
    gymnasium env seeded with ``seed`` builds (PCG64 of that seed), as rdqn's env does."""
    logging.disable(logging.WARNING)  # the package warns when its display's libraries are absent
    try:
        from minatar import Environment
    finally:
        logging.disable(logging.NOTSET)
    package = Environment(game)
    generator = np.random.RandomState(np.random.PCG64(np.random.SeedSequence(seed)))
    package.random = package.env.random = generator
    return package


@pytest.mark.parametrize("game", sorted(GAMES))
def test_an_episode_is_the_package_s_draw_for_draw(game: str) -> None:
    """1,500 random steps (episodes restarted as they end) give the package's frames, rewards and
    ends, actions mapped through the minimal action set, sticky actions included."""
    env = make_env(GAMES[game])
    obs, _ = env.reset(seed=7)
    package = _package_environment(game, 7)
    package.reset()
    np.testing.assert_array_equal(obs, package.state())
    actions = np.random.default_rng(0).integers(0, env.action_space.n, size=1500)
    ends = 0
    for action in actions:
        obs, reward, terminated, truncated, _ = env.step(int(action))
        expected_reward, expected_end = package.act(MINATAR_ACTIONS[game][action])
        np.testing.assert_array_equal(obs, package.state())
        assert (reward, terminated, truncated) == (float(expected_reward), expected_end, False)
        if terminated:
            ends += 1
            env.reset()
            package.reset()
    assert ends or game == "freeway"  # Freeway's episodes last 2,500 steps


@pytest.mark.parametrize("game", sorted(GAMES))
def test_actions_and_channels_are_the_package_s(game: str) -> None:
    package = _package_environment(game, 0)
    assert MINATAR_ACTIONS[game] == tuple(package.minimal_action_set())
    assert MINATAR_CHANNELS[game] == package.state_shape()[2] == len(channel_names(game))
    env = make_env(GAMES[game])
    assert env.observation_space.shape == (10, 10, MINATAR_CHANNELS[game])
    assert env.action_space.n == len(MINATAR_ACTIONS[game])


def test_sticky_actions_repeat_the_last_move_at_their_rate() -> None:
    """With probability 1 every move is the first one's (no-op, 0): Breakout's paddle never
    moves; with 0 it follows the actions."""
    stuck = make_env("rdqn/MinAtar-Breakout-v0", seed=0, sticky_action_prob=1.0)
    free = make_env("rdqn/MinAtar-Breakout-v0", seed=0, sticky_action_prob=0.0)
    paddle = [env.reset(seed=0)[0][9, :, 0].copy() for env in (stuck, free)]
    for _ in range(3):
        stuck_obs = stuck.step(1)[0]  # left
        free_obs = free.step(1)[0]
    np.testing.assert_array_equal(stuck_obs[9, :, 0], paddle[0])
    assert not np.array_equal(free_obs[9, :, 0], paddle[1])


@pytest.mark.parametrize("value", [-0.1, 1.5, "0.1", None])
def test_a_bad_sticky_probability_is_refused(value: object) -> None:
    with pytest.raises(ValueError, match="sticky_action_prob must lie in"):
        make_env("rdqn/MinAtar-Breakout-v0", sticky_action_prob=value)


def test_without_the_package_a_minatar_env_names_the_extra(monkeypatch) -> None:  # noqa: ANN001
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "minatar" else real(name, *a)
    )
    with pytest.raises(ValueError) as raised:
        make_env("rdqn/MinAtar-Breakout-v0")
    assert str(raised.value) == MISSING_EXTRA
    assert "requirements-minatar.txt" in MISSING_EXTRA


def test_a_frame_s_pose_is_each_cell_s_highest_channel_plus_one() -> None:
    """Cell (0, 0) empty, (0, 1) channel 0 -> 1, (9, 9) channels 1 and 3 -> 4."""
    frame = np.zeros((10, 10, 4), dtype=bool)
    frame[0, 1, 0] = True
    frame[9, 9, [1, 3]] = True
    pose = poses("rdqn/MinAtar-Breakout-v0", [frame])[0]
    expected = np.zeros(100, np.float32)
    expected[1], expected[99] = 1.0, 4.0
    np.testing.assert_array_equal(pose, expected)
