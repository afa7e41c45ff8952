"""rdqn.envs.poses: each env's pose read from hand-made observations."""

from __future__ import annotations

import numpy as np
import pytest

from rdqn.envs import ENV_IDS, make_env
from rdqn.envs.poses import POSE_KINDS, POSE_NAMES, pose_kind, poses


def test_every_env_has_a_picture() -> None:
    assert set(POSE_KINDS) == set(ENV_IDS)


def test_cartpole_pose_is_cart_position_and_pole_angle() -> None:
    obs = [[0.5, -1.0, 0.1, 2.0], [-2.0, 0.0, -0.2, 0.0]]
    np.testing.assert_array_equal(poses("CartPole-v1", obs), np.float32([[0.5, 0.1], [-2.0, -0.2]]))
    np.testing.assert_array_equal(
        poses("rdqn/MaskedCartPole-v0", [[0.5, 0.1]]), np.float32([[0.5, 0.1]])
    )


def test_row_pose_is_the_state_index_and_minus_one_at_the_end() -> None:
    obs = np.zeros((3, 5), dtype=np.float32)
    obs[0, 0] = obs[1, 3] = 1.0
    assert poses("rdqn/BlindCliffwalk-v0", obs)[:, 0].tolist() == [0.0, 3.0, -1.0]
    assert poses("rdqn/SparseChain-v0", obs[:2])[:, 0].tolist() == [0.0, 3.0]


def test_market_pose_is_the_position() -> None:
    env = make_env("rdqn/SyntheticMarket-v0", seed=0)
    obs, _ = env.reset(seed=0)
    after, *_ = env.step(2)  # short
    assert poses("rdqn/SyntheticMarket-v0", [obs, after])[:, 0].tolist() == [0.0, -1.0]


def test_pose_names_match_the_poses() -> None:
    for env_id, kind in POSE_KINDS.items():
        env = make_env(env_id, seed=0)
        obs, _ = env.reset(seed=0)
        assert poses(env_id, [obs]).shape == (1, len(POSE_NAMES[kind]))


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="no picture for env 'Pong'"):
        pose_kind("Pong")
    with pytest.raises(ValueError, match=r"must be a batch \(n, \*obs shape\)"):
        poses("CartPole-v1", [0.0, 0.1, 0.2, 0.3])
