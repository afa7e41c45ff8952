"""Velocity-masked CartPole: same physics as CartPole-v1, observation (x, theta), 500-step limit."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.wrappers import TimeLimit

from rdqn.envs import MaskedCartPoleEnv, make_env

pytestmark = pytest.mark.filterwarnings("error")

ENV_ID = "rdqn/MaskedCartPole-v0"


def balance(env: gym.Env) -> int:
    """A hand-tuned controller that reads the hidden full state (it can, the agent cannot)."""
    x, x_dot, theta, theta_dot = env.unwrapped.full_state  # type: ignore[attr-defined]
    return int(theta + 0.5 * theta_dot + 0.05 * x + 0.1 * x_dot > 0)


def test_check_env_passes() -> None:
    check_env(make_env(ENV_ID).unwrapped)
    check_env(MaskedCartPoleEnv(), skip_render_check=True)


def test_observation_space_keeps_position_and_angle_bounds() -> None:
    full = gym.make("CartPole-v1").observation_space
    space = MaskedCartPoleEnv().observation_space
    assert isinstance(space, gym.spaces.Box)
    assert space.shape == (2,) and space.dtype == np.float32
    np.testing.assert_array_equal(space.low, full.low[[0, 2]])
    np.testing.assert_array_equal(space.high, full.high[[0, 2]])
    assert np.isfinite(space.low).all() and np.isfinite(space.high).all()


def test_matches_cartpole_with_velocities_removed() -> None:
    """Same seed, same actions: the masked trajectory is CartPole-v1's minus columns 1 and 3."""
    masked, full = make_env(ENV_ID), gym.make("CartPole-v1")
    obs_m, _ = masked.reset(seed=5)
    obs_f, _ = full.reset(seed=5)
    np.testing.assert_array_equal(obs_m, obs_f[[0, 2]])
    for action in [0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0] * 3:
        obs_m, r_m, term_m, trunc_m, _ = masked.step(action)
        obs_f, r_f, term_f, trunc_f, _ = full.step(action)
        assert obs_m.dtype == np.float32
        np.testing.assert_array_equal(obs_m, obs_f[[0, 2]])
        assert (r_m, term_m, trunc_m) == (r_f, term_f, trunc_f)
        if term_f:
            break


def test_registered_with_a_500_step_time_limit() -> None:
    env = make_env(ENV_ID)
    assert env.spec is not None and env.spec.max_episode_steps == 500
    wrapper = env
    while not isinstance(wrapper, TimeLimit):
        assert isinstance(wrapper, gym.Wrapper), "no TimeLimit wrapper"
        wrapper = wrapper.env
    assert wrapper._max_episode_steps == 500


def test_balanced_pole_is_truncated_at_step_500() -> None:
    env = make_env(ENV_ID)
    env.reset(seed=0)
    for step in range(1, 501):
        _, reward, terminated, truncated, _ = env.step(balance(env))
        assert reward == 1.0 and not terminated
        assert truncated == (step == 500)


def test_falling_pole_terminates_without_truncation() -> None:
    env = make_env(ENV_ID)
    env.reset(seed=0)
    flags = []
    terminated = False
    while not terminated and len(flags) < 500:
        _, _, terminated, truncated, _ = env.step(1)
        flags.append((terminated, truncated))
    assert flags[-1] == (True, False) and len(flags) < 50
    assert not any(truncated for _, truncated in flags)


def test_same_seed_same_trajectory_and_different_seed_differs() -> None:
    def rollout(seed: int) -> list[tuple[object, ...]]:
        env = make_env(ENV_ID)
        obs, _ = env.reset(seed=seed)
        steps: list[tuple[object, ...]] = [tuple(obs)]
        for action in [1, 0, 0, 1, 1, 0, 1, 0] * 2:
            obs, reward, terminated, truncated, _ = env.step(action)
            steps.append((tuple(obs), reward, terminated, truncated))
        return steps

    assert rollout(42) == rollout(42)
    assert rollout(42) != rollout(43)
