"""The rdqn/ namespace: registration, make_env, and the contract every env keeps."""

import gymnasium as gym
import numpy as np
import pytest

import rdqn.envs
from rdqn.envs import ENV_IDS, make_env, register_envs

pytestmark = pytest.mark.filterwarnings("error")

RDQN_IDS = [
    "rdqn/MaskedCartPole-v0",
    "rdqn/BlindCliffwalk-v0",
    "rdqn/SparseChain-v0",
    "rdqn/SyntheticMarket-v0",
    "rdqn/MinAtar-Asterix-v0",
    "rdqn/MinAtar-Breakout-v0",
    "rdqn/MinAtar-Freeway-v0",
    "rdqn/MinAtar-Seaquest-v0",
    "rdqn/MinAtar-SpaceInvaders-v0",
]


def test_env_ids() -> None:
    assert ("CartPole-v1", *RDQN_IDS) == ENV_IDS


def test_importing_registers_every_env() -> None:
    for env_id in RDQN_IDS:
        assert env_id in gym.registry
        assert gym.spec(env_id).namespace == "rdqn"


def test_register_envs_is_idempotent() -> None:
    """Calling it again neither raises nor warns (warnings are errors here) nor changes specs."""
    before = {env_id: gym.spec(env_id) for env_id in RDQN_IDS}
    register_envs()
    register_envs()
    assert {env_id: gym.spec(env_id) for env_id in RDQN_IDS} == before


def test_make_env_rejects_unknown_ids_and_lists_the_allowed_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown env id 'Pong-v5'; allowed: CartPole-v1, rdqn/"):
        make_env("Pong-v5")
    with pytest.raises(ValueError, match="rdqn/SyntheticMarket-v0"):
        make_env("rdqn/Nope-v0")


def test_make_env_passes_kwargs() -> None:
    env = make_env("rdqn/BlindCliffwalk-v0", n=5)
    assert env.observation_space.shape == (5,)


def test_make_env_with_seed_is_reproducible() -> None:
    """The seed reaches the env's RNG and its action space, so a seeded run repeats exactly."""

    def rollout(seed: int) -> list[tuple[object, ...]]:
        env = make_env("rdqn/MaskedCartPole-v0", seed=seed)
        obs, _ = env.reset()
        steps: list[tuple[object, ...]] = [tuple(np.ravel(obs))]
        for _ in range(10):
            action = env.action_space.sample()
            obs, reward, *_ = env.step(action)
            steps.append((int(action), tuple(obs), reward))
        return steps

    assert rollout(4) == rollout(4)
    assert rollout(4) != rollout(5)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_contract(env_id: str) -> None:
    """Observations of the declared dtype (float32; a MinAtar frame's flags) inside the declared
    space, Discrete actions, bool flags, same seed ->
    same trajectory for the same actions (episodes restarted with reset() as they end)."""
    actions = np.random.default_rng(0).integers(0, 2, size=60)

    def rollout() -> list[tuple[object, ...]]:
        env = make_env(env_id)
        assert isinstance(env.action_space, gym.spaces.Discrete)
        obs, _ = env.reset(seed=21)
        steps: list[tuple[object, ...]] = [tuple(np.ravel(obs))]
        for action in actions:
            obs, reward, terminated, truncated, _ = env.step(int(action))
            expected = np.bool_ if env_id.startswith("rdqn/MinAtar") else np.float32
            assert obs.dtype == expected and obs in env.observation_space
            assert isinstance(terminated, bool) and isinstance(truncated, bool)
            steps.append((tuple(np.ravel(obs)), float(reward), terminated, truncated))
            if terminated or truncated:
                obs, _ = env.reset()
        return steps

    assert rollout() == rollout()


def test_no_streamlit_or_print_in_envs() -> None:
    from pathlib import Path

    for path in Path(rdqn.envs.__file__).parent.glob("*.py"):
        source = path.read_text()
        assert "streamlit" not in source, path
        assert "print(" not in source, path
