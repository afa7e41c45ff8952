"""Tests for rdqn.learn.targets: the bootstrap target by hand, in NumPy and torch, and the fused
MLP update's compiled copy of it.

Hand-computed case, gamma = 0.9 (a*: the target net's argmax for DQN, the online net's for
Double DQN; ties pick the first)::

    row  r  term.  trunc.  Q_target(s')  Q_online(s')  DQN y             Double a*, y
    1    1  no     no      [2, 5]        [3, 1]        1 + .9 * 5 = 5.5  0, 1 + .9 * 2 = 2.8
    2    1  yes    no      [3, 4]        [0, 9]        1                 1, 1
    3    1  no     yes     [1, 0]        [0, 1]        1 + .9 * 1 = 1.9  1, 1 + .9 * 0 = 1
    4    0  no     no      [6, 2]        [7, 7]        .9 * 6 = 5.4      0, .9 * 6 = 5.4

Row 3 is cut by a time limit: it still bootstraps. Row 2 terminated: y = r whatever Q says.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from rdqn.learn.agent import DQNAgent
from rdqn.learn.agent_config import AgentConfig
from rdqn.learn.fused_mlp import mlp_q_values
from rdqn.learn.targets import discounts, td_targets

GAMMA = 0.9
REWARDS = np.array([1.0, 1.0, 1.0, 0.0])
TERMINATED = np.array([False, True, False, False])
TRUNCATED = np.array([False, False, True, False])
NEXT_TARGET = np.array([[2.0, 5.0], [3.0, 4.0], [1.0, 0.0], [6.0, 2.0]])
NEXT_ONLINE = np.array([[3.0, 1.0], [0.0, 9.0], [0.0, 1.0], [7.0, 7.0]])
DQN_Y = [5.5, 1.0, 1.9, 5.4]
DOUBLE_Y = [2.8, 1.0, 1.0, 5.4]


def test_discounts_remove_the_next_state_only_after_termination() -> None:
    """Truncation is no input: row 3, cut by a time limit, keeps the full discount."""
    assert TRUNCATED[2] and not TERMINATED[2]
    np.testing.assert_array_equal(discounts(GAMMA, TERMINATED), [0.9, 0.0, 0.9, 0.9])


@pytest.mark.parametrize(("online", "expected"), [(None, DQN_Y), (NEXT_ONLINE, DOUBLE_Y)])
def test_targets_by_hand_in_numpy(online: np.ndarray | None, expected: list[float]) -> None:
    y = td_targets(REWARDS, discounts(GAMMA, TERMINATED), NEXT_TARGET, online)
    np.testing.assert_allclose(y, expected, rtol=1e-15)


@pytest.mark.parametrize(("online", "expected"), [(None, DQN_Y), (NEXT_ONLINE, DOUBLE_Y)])
def test_targets_by_hand_in_torch(online: np.ndarray | None, expected: list[float]) -> None:
    def tensor(array: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(array.astype(np.float32))

    discount = tensor(discounts(GAMMA, TERMINATED))
    y = td_targets(
        tensor(REWARDS), discount, tensor(NEXT_TARGET), None if online is None else tensor(online)
    )
    assert isinstance(y, torch.Tensor) and y.dtype == torch.float32
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-6)


def test_a_terminated_row_is_its_reward_whatever_the_next_values() -> None:
    wild = NEXT_TARGET.copy()
    wild[1] = [1e30, -1e30]
    y = td_targets(REWARDS, discounts(GAMMA, TERMINATED), wild, NEXT_ONLINE)
    assert y[1] == 1.0


@pytest.mark.parametrize("double_dqn", [False, True])
def test_the_fused_update_computes_these_targets(double_dqn: bool) -> None:
    """The compiled loop's y_i (`rdqn.learn.fused_mlp`) is `td_targets` of its own Q-values:
    its TD errors are y_i - Q(s_i, a_i) under the nets before the update. The target net is
    shaken first, so that the online net's argmax differs from the target net's."""
    obs_dim, actions, batch = 4, 3, 32
    config = AgentConfig(network="mlp", device="cpu", fused_mlp=True, double_dqn=double_dqn)
    agent = DQNAgent(obs_dim, actions, config, seed=1)
    fused = agent._fused
    assert fused is not None
    rng = np.random.default_rng(2)
    fused.target += rng.normal(scale=0.5, size=fused.target.shape).astype(np.float32)
    for _ in range(3):
        obs, next_obs = rng.standard_normal((2, batch, obs_dim), dtype=np.float32)
        taken = rng.integers(actions, size=batch)
        rewards = rng.standard_normal(batch).astype(np.float32)
        terminated = rng.random(batch) < 0.3
        q = mlp_q_values(obs, fused.online, fused.dims)
        next_target = mlp_q_values(next_obs, fused.target, fused.dims)
        next_online = mlp_q_values(next_obs, fused.online, fused.dims) if double_dqn else None
        discount = discounts(config.gamma, terminated.astype(np.float32)).astype(np.float32)
        y = td_targets(rewards, discount, next_target, next_online)
        if double_dqn:  # the two nets disagree on some a*_i: the case tells Double DQN apart
            assert (y != td_targets(rewards, discount, next_target)).any()
        result = agent.learn(
            SimpleNamespace(
                obs=obs[:, None, :],
                actions=taken,
                rewards=rewards,
                next_obs=next_obs[:, None, :],
                terminated=terminated,
                truncated=np.zeros(batch, dtype=bool),
                weights=None,
            )
        )
        np.testing.assert_allclose(
            result.td_errors, y - q[range(batch), taken], rtol=1e-6, atol=1e-6
        )
