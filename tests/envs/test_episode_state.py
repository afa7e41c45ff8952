"""rdqn.envs.episode_state: every env says what its episodes change, and an env set to a saved
episode goes on as the env it was saved from."""

from __future__ import annotations

import numpy as np
import pytest

from rdqn.envs import ENV_IDS, make_env
from rdqn.envs.episode_state import check_episode_state, episode_state, load_episode_state
from rdqn.training.state import env_rng


def test_every_env_id_says_what_its_episodes_change() -> None:
    for env_id in ENV_IDS:
        env = make_env(env_id, seed=0)
        check_episode_state(env, episode_state(env))


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_an_env_set_to_a_saved_episode_goes_on_as_the_one_saved(env_id: str) -> None:
    """Ten steps into an episode, saved; a fresh env (reset once, as a resumed trainer's is)
    set to it with the generator's state gives the same observations, rewards and ends to the
    end of the episode, its time limit included."""
    rng = np.random.default_rng(1)
    saved_from = make_env(env_id, seed=3)
    saved_from.reset()
    steps = 0
    for _ in range(10):
        *_, terminated, truncated, _ = saved_from.step(int(rng.integers(2)))
        steps += 1
        if terminated or truncated:
            saved_from.reset()
            steps = 0
    state, generator = episode_state(saved_from), env_rng(saved_from).bit_generator.state
    fresh = make_env(env_id, seed=99)
    fresh.reset()
    load_episode_state(fresh, state, steps)
    env_rng(fresh).bit_generator.state = generator
    for _ in range(600):  # past CartPole's 500-step limit
        action = int(rng.integers(2))
        expected, got = saved_from.step(action), fresh.step(action)
        np.testing.assert_array_equal(expected[0], got[0])
        assert expected[1:4] == got[1:4]
        if expected[2] or expected[3]:
            break


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda s: s.clear(), r"it must have \['state'\]"),
        (lambda s: s.update(state=np.zeros(3)), r"shape \(3,\)"),
        (lambda s: s.update(state=np.full(4, np.nan)), r"state is an array"),
        (lambda s: s.update(state=[0.0] * 4), r"state is list"),
    ],
)
def test_a_saved_episode_unlike_the_env_is_refused(edit: object, said: str) -> None:
    env = make_env("CartPole-v1", seed=0)
    state = episode_state(env)
    edit(state)  # type: ignore[operator]
    with pytest.raises(ValueError, match=said):
        check_episode_state(env, state)


def test_the_time_limit_counts_the_steps_before_the_save() -> None:
    """Saved 10 steps into an episode of a 12-step limit, the env truncates 2 steps later."""
    saved_from = make_env("CartPole-v1", seed=0, max_episode_steps=12)
    for _ in range(10):
        saved_from.step(_ % 2)  # alternating pushes: CartPole stands for 12 steps
    fresh = make_env("CartPole-v1", seed=1, max_episode_steps=12)
    load_episode_state(fresh, episode_state(saved_from), 10)
    assert fresh.step(0)[3] is False
    assert fresh.step(1)[3] is True
