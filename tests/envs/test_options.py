"""env.kwargs names per env (`check_env_kwargs`) and observation sizes known without building."""

from __future__ import annotations

from typing import Any

import pytest

from rdqn.envs import ENV_IDS, check_env_kwargs, env_options, make_env, observation_size


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [
        ("CartPole-v1", {}),
        ("CartPole-v1", {"sutton_barto_reward": True}),
        ("rdqn/MaskedCartPole-v0", {}),
        ("rdqn/BlindCliffwalk-v0", {}),
        ("rdqn/BlindCliffwalk-v0", {"n": 5}),
        ("rdqn/SparseChain-v0", {}),
        ("rdqn/SparseChain-v0", {"n": 13, "max_steps": 40}),
        ("rdqn/SyntheticMarket-v0", {}),
        ("rdqn/SyntheticMarket-v0", {"n_returns": 3, "episode_length": 20}),
    ],
)
def test_observation_size_matches_the_built_env(env_id: str, kwargs: dict[str, Any]) -> None:
    env = make_env(env_id, **kwargs)
    try:
        assert observation_size(env_id, kwargs) == env.observation_space.shape[0]
    finally:
        env.close()


@pytest.mark.parametrize("value", ["8", 8.0, True, None, 0, -3, [8]])
def test_observation_size_names_a_bad_size(value: Any) -> None:
    with pytest.raises(ValueError, match=r"env.kwargs.n must be an integer >= 1"):
        observation_size("rdqn/SparseChain-v0", {"n": value})


def test_every_env_has_options_and_a_time_limit_option() -> None:
    for env_id in ENV_IDS:
        assert "max_episode_steps" in env_options(env_id)
        assert "render_mode" not in env_options(env_id)
    assert "prices_csv" in env_options("rdqn/SyntheticMarket-v0")
    assert "prices_csv" not in env_options("rdqn/SparseChain-v0")
    assert env_options("rdqn/SparseChain-v0")[:3] == ("n", "max_steps", "left_reward")


@pytest.mark.parametrize(
    ("env_id", "kwargs", "match"),
    [
        (
            "CartPole-v1",
            {"render_mode": "human"},
            r"env.kwargs.render_mode='human' is not supported",
        ),
        ("rdqn/SparseChain-v0", {"render_mode": None}, r"render_mode=None is not supported"),
        (
            "CartPole-v1",
            {"disable_env_checker": True},
            r"disable_env_checker=True is not supported",
        ),
        ("CartPole-v1", {"bogus": 1}, r"no option 'bogus' for CartPole-v1; allowed: "),
        ("CartPole-v1", {"n": 5}, r"no option 'n' for CartPole-v1"),
        ("rdqn/MaskedCartPole-v0", {"x": 1}, r"allowed: max_episode_steps$"),
        ("rdqn/SparseChain-v0", {"prices_csv": "p.csv"}, r"no option 'prices_csv'"),
        ("CartPole-v1", {"max_episode_steps": -1}, r"max_episode_steps must be an integer >= 1"),
        ("CartPole-v1", {"max_episode_steps": 0}, r"max_episode_steps .* got 0"),
        ("CartPole-v1", {"max_episode_steps": 2.5}, r"max_episode_steps .* got 2.5"),
        ("CartPole-v1", {"max_episode_steps": "x"}, r"max_episode_steps .* got 'x'"),
        ("rdqn/SyntheticMarket-v0", {"prices_csv": 3}, r"prices_csv must be the path"),
        ("rdqn/SyntheticMarket-v0", {"prices_csv": ""}, r"prices_csv must be the path"),
        (
            "rdqn/SyntheticMarket-v0",
            {"prices_csv": "p.csv", "prices": [1.0]},
            r"prices or prices_csv, not both",
        ),
        ("Pong-v5", {}, r"unknown env id 'Pong-v5'"),
    ],
)
def test_check_env_kwargs_refuses(env_id: str, kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        check_env_kwargs(env_id, kwargs)
    if env_id != "Pong-v5":
        with pytest.raises(ValueError, match=match):
            make_env(env_id, **kwargs)


def test_max_episode_steps_is_a_time_limit() -> None:
    check_env_kwargs("CartPole-v1", {"max_episode_steps": None})
    env = make_env("rdqn/SparseChain-v0", seed=0, max_episode_steps=3)
    env.reset()
    ends = [env.step(0)[3] for _ in range(3)]
    assert ends == [False, False, True]
