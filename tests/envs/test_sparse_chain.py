"""Sparse chain: goal termination, the left-end distractor and time-limit truncation."""

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from rdqn.envs import SparseChainEnv, make_env

pytestmark = pytest.mark.filterwarnings("error")

LEFT, RIGHT = 0, 1


def position(obs: np.ndarray) -> int:
    assert obs.dtype == np.float32 and obs.sum() == 1.0
    return int(np.argmax(obs))


def test_check_env_passes() -> None:
    check_env(make_env("rdqn/SparseChain-v0").unwrapped)
    check_env(SparseChainEnv(n=4, max_steps=3), skip_render_check=True)


def test_defaults() -> None:
    env = SparseChainEnv()
    assert env.n == 10 and env.max_steps == 19 and env.left_reward == 0.001
    assert env.observation_space.shape == (10,)
    assert env.action_space.n == 2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n": 2}, r"n must be an integer >= 3, got 2"),
        ({"n": 4.0}, r"n must be an integer >= 3, got 4.0"),
        ({"max_steps": 0}, r"max_steps must be an integer >= 1, got 0"),
        ({"left_reward": float("nan")}, r"left_reward must be a finite number, got nan"),
    ],
)
def test_bad_arguments_are_rejected(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SparseChainEnv(**kwargs)  # type: ignore[arg-type]


def test_always_right_reaches_the_goal() -> None:
    """n=5: start 1 -> 2 -> 3 -> 4 (goal) in three steps, rewards 0, 0, 1."""
    env = SparseChainEnv(n=5)
    obs, _ = env.reset(seed=0)
    assert position(obs) == 1
    results = [env.step(RIGHT) for _ in range(3)]
    assert [position(r[0]) for r in results] == [2, 3, 4]
    assert [(r[1], r[2], r[3]) for r in results] == [
        (0.0, False, False),
        (0.0, False, False),
        (1.0, True, False),
    ]


def test_left_end_pays_left_reward_and_stays() -> None:
    env = SparseChainEnv(n=5, left_reward=0.001)
    env.reset(seed=0)
    for _ in range(3):
        obs, reward, terminated, truncated, _ = env.step(LEFT)
        assert (position(obs), reward, terminated, truncated) == (0, 0.001, False, False)
    obs, reward, _, _, _ = env.step(RIGHT)
    assert (position(obs), reward) == (1, 0.0)


def test_left_reward_can_be_disabled() -> None:
    env = SparseChainEnv(n=5, left_reward=0.0)
    env.reset(seed=0)
    assert env.step(LEFT)[1] == 0.0


def test_truncates_at_max_steps() -> None:
    """Default n=10 truncates after n + 9 = 19 steps; dithering never terminates."""
    env = SparseChainEnv(n=10)
    env.reset(seed=0)
    flags = [env.step(step % 2)[2:4] for step in range(19)]
    assert flags[:-1] == [(False, False)] * 18
    assert flags[-1] == (False, True)


def test_goal_on_the_last_step_is_termination_not_truncation() -> None:
    env = SparseChainEnv(n=5, max_steps=3)
    env.reset(seed=0)
    env.step(RIGHT)
    env.step(RIGHT)
    _, reward, terminated, truncated, _ = env.step(RIGHT)
    assert (reward, terminated, truncated) == (1.0, True, False)


def test_reset_restarts_the_clock() -> None:
    env = SparseChainEnv(n=5, max_steps=2)
    env.reset(seed=0)
    env.step(LEFT)
    assert env.step(LEFT)[3] is True
    env.reset()
    assert env.step(LEFT)[3] is False


def test_same_seed_same_trajectory() -> None:
    actions = np.random.default_rng(0).integers(0, 2, size=30)

    def rollout() -> list[tuple[object, ...]]:
        env = make_env("rdqn/SparseChain-v0", n=6)
        obs, _ = env.reset(seed=11)
        steps: list[tuple[object, ...]] = [tuple(obs)]
        for action in actions:
            obs, reward, terminated, truncated, _ = env.step(int(action))
            steps.append((tuple(obs), reward, terminated, truncated))
            if terminated or truncated:
                obs, _ = env.reset()
        return steps

    assert rollout() == rollout()
