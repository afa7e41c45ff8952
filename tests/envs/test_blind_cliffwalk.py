"""Blind Cliffwalk (Schaul et al. 2015, figure 1): hand-computed episodes and Q* tables."""

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

from rdqn.envs import BlindCliffwalkEnv, make_env

pytestmark = pytest.mark.filterwarnings("error")

RIGHT_4 = (0, 1, 1, 0)
"""The n=4 layout used below: state 0 wants action 0, states 1-2 action 1, state 3 action 0."""


def one_hot(i: int, n: int) -> np.ndarray:
    obs = np.zeros(n, dtype=np.float32)
    obs[i] = 1.0
    return obs


def test_check_env_passes() -> None:
    check_env(make_env("rdqn/BlindCliffwalk-v0", n=5).unwrapped)
    check_env(BlindCliffwalkEnv(n=3), skip_render_check=True)


def test_spaces() -> None:
    env = BlindCliffwalkEnv(n=6)
    assert env.observation_space.shape == (6,)
    assert env.observation_space.dtype == np.float32
    assert env.action_space.n == 2


@pytest.mark.parametrize("n", [1, 0, -3, 2.5, True])
def test_n_below_two_is_rejected(n: object) -> None:
    with pytest.raises(ValueError, match=r"n must be an integer >= 2, got"):
        BlindCliffwalkEnv(n=n)  # type: ignore[arg-type]


@pytest.mark.parametrize("pattern", [(0, 1, 1), (0, 1, 2, 0), (0, 1, 1, 0, 1)])
def test_bad_right_actions_are_rejected(pattern: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match=r"right_actions must hold 4 values in \{0, 1\}"):
        BlindCliffwalkEnv(n=4, right_actions=pattern)


def test_all_right_actions_earn_one_on_step_n() -> None:
    """n=4, right = (0, 1, 1, 0): s0 -a0-> s1 -a1-> s2 -a1-> s3 -a0-> goal (r = 1)."""
    env = BlindCliffwalkEnv(n=4, right_actions=RIGHT_4)
    obs, info = env.reset(seed=0)
    np.testing.assert_array_equal(obs, one_hot(0, 4))
    assert info["state"] == 0
    for step, action in enumerate(RIGHT_4[:3], start=1):
        obs, reward, terminated, truncated, _ = env.step(action)
        np.testing.assert_array_equal(obs, one_hot(step, 4))
        assert (reward, terminated, truncated) == (0.0, False, False)
    obs, reward, terminated, truncated, _ = env.step(RIGHT_4[3])
    assert (reward, terminated, truncated) == (1.0, True, False)
    np.testing.assert_array_equal(obs, np.zeros(4, dtype=np.float32))


@pytest.mark.parametrize("state", range(4))
def test_wrong_action_terminates_with_zero_reward(state: int) -> None:
    env = BlindCliffwalkEnv(n=4, right_actions=RIGHT_4)
    env.reset(seed=0)
    for action in RIGHT_4[:state]:
        env.step(action)
    obs, reward, terminated, truncated, _ = env.step(1 - RIGHT_4[state])
    assert (reward, terminated, truncated) == (0.0, True, False)
    np.testing.assert_array_equal(obs, np.zeros(4, dtype=np.float32))
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


def test_invalid_action_is_rejected() -> None:
    env = BlindCliffwalkEnv(n=4)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action must be 0 or 1, got 2"):
        env.step(2)


def test_layout_is_fixed_by_layout_seed_not_by_reset_seed() -> None:
    env = BlindCliffwalkEnv(n=32, layout_seed=7)
    np.testing.assert_array_equal(
        env.right_actions, BlindCliffwalkEnv(n=32, layout_seed=7).right_actions
    )
    assert not np.array_equal(
        env.right_actions, BlindCliffwalkEnv(n=32, layout_seed=8).right_actions
    )
    before = env.right_actions.copy()
    env.reset(seed=123)
    np.testing.assert_array_equal(env.right_actions, before)
    assert set(np.unique(env.right_actions)) == {0, 1}


def test_same_seed_same_trajectory() -> None:
    def rollout(seed: int) -> list[tuple[object, ...]]:
        env = make_env("rdqn/BlindCliffwalk-v0", n=6)
        obs, _ = env.reset(seed=seed)
        steps: list[tuple[object, ...]] = [tuple(obs)]
        for action in (1, 0, 1, 1, 0, 1):
            obs, reward, terminated, truncated, _ = env.step(action)
            steps.append((tuple(obs), reward, terminated, truncated))
            if terminated:
                break
        return steps

    assert rollout(3) == rollout(3)


def test_optimal_q_by_hand_n3_gamma_09() -> None:
    """right = (1, 0, 1): Q*(2, 1) = 1, Q*(1, 0) = 0.9, Q*(0, 1) = 0.81; wrong actions are 0."""
    env = BlindCliffwalkEnv(n=3, right_actions=(1, 0, 1))
    expected = np.array([[0.0, 0.81], [0.9, 0.0], [0.0, 1.0]])
    np.testing.assert_allclose(env.optimal_q_values(0.9), expected, rtol=0, atol=1e-12)


def test_optimal_q_rejects_bad_gamma() -> None:
    with pytest.raises(ValueError, match=r"gamma must be in \[0, 1\], got 1.5"):
        BlindCliffwalkEnv(n=3).optimal_q_values(1.5)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(min_value=2, max_value=12),
    layout_seed=st.integers(min_value=0, max_value=2**31),
    gamma=st.floats(min_value=0.0, max_value=1.0),
)
def test_optimal_q_satisfies_bellman_optimality(n: int, layout_seed: int, gamma: float) -> None:
    """Q*(s, a) = r + gamma * (1 - terminated) * max_a' Q*(s', a'), checked by stepping the env."""
    env = BlindCliffwalkEnv(n=n, layout_seed=layout_seed)
    q = env.optimal_q_values(gamma)
    for state in range(n):
        for action in (0, 1):
            env.reset(seed=0)
            for right in env.right_actions[:state]:
                env.step(int(right))
            obs, reward, terminated, _, _ = env.step(action)
            bootstrap = 0.0 if terminated else gamma * q[int(np.argmax(obs))].max()
            assert q[state, action] == pytest.approx(float(reward) + bootstrap, abs=1e-12)
