"""R2D2's update on sequences (`rdqn.learn.sequence_update`, `DQNAgent.learn_sequences`) and
acting with a carried state (`DQNAgent.act_carrying`).

By hand, with heads that output their bias whatever they read (online Q = [0.5, -0.5], target
Q = [1.0, 2.0], gamma = 0.9), m = 3::

    sequence 0 begins its episode (burn-in 0), 3 steps, actions 0 1 0, rewards 1 1 -1, the last
    terminated:  y = 1 + .9 * 2 = 2.8, 2.8, -1;  Q(t, a_t) = .5, -.5, .5;  delta = 2.3, 3.3, -1.5
    sequence 1, burn-in 1, 2 steps (one padded), actions 1 0 -, rewards 0 2 -: step 0 burns in,
    step 1: y = 2 + 1.8 = 3.8, delta = 3.8 - .5 = 3.3
    Huber: |delta| - .5 (all beyond 1): sequence 0 (1.8 + 2.8 + 1.0) / 3, sequence 1 2.8;
    weights (1, .5): loss = (5.6 / 3 + .5 * 2.8) / 2
    Double DQN: the online net picks action 0 everywhere, Q_target(., 0) = 1: y = 1.9, 1.9, -1
    and 2.9; delta = 1.4, 2.4, -1.5 and 2.4
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

from rdqn.learn.agent import DQNAgent
from rdqn.learn.agent_config import AgentConfig
from rdqn.learn.nets import STATE_SIZE, RecurrentQNet
from rdqn.learn.sequence_update import (
    burn_ins,
    sequence_arrays,
    sequence_loss,
    sequence_td,
)

OBS_DIM = 3


def constant_head(net: torch.nn.Module, values: list[float]) -> None:
    with torch.no_grad():
        net.head.out.weight.zero_()
        net.head.out.bias.copy_(torch.tensor(values))


def hand_agent(**overrides: Any) -> DQNAgent:  # noqa: ANN401
    config = AgentConfig(network="recurrent", gamma=0.9, device="cpu", **overrides)
    agent = DQNAgent(OBS_DIM, 2, config, seed=0)
    constant_head(agent.online, [0.5, -0.5])
    constant_head(agent.target, [1.0, 2.0])
    return agent


def hand_batch(seed: int = 0) -> SimpleNamespace:
    rng = np.random.default_rng(seed)
    return SimpleNamespace(
        obs=rng.standard_normal((2, 4, OBS_DIM)).astype(np.float32),
        actions=np.array([[0, 1, 0], [1, 0, 0]]),
        rewards=np.array([[1.0, 1.0, -1.0], [0.0, 2.0, 0.0]], np.float32),
        terminated=np.array([[False, False, True], [False, False, False]]),
        lengths=np.array([3, 2]),
        starts_episode=np.array([True, False]),
        states=rng.standard_normal((2, STATE_SIZE)).astype(np.float32),
        weights=np.array([1.0, 0.5]),
    )


def test_td_errors_mask_and_loss_by_hand() -> None:
    result = hand_agent().learn_sequences(hand_batch(), burn_in=1, stored_state=True)
    np.testing.assert_array_equal(result.mask, [[True, True, True], [False, True, False]])
    np.testing.assert_allclose(result.td_errors, [[2.3, 3.3, -1.5], [0.0, 3.3, 0.0]], atol=1e-6)
    assert result.loss == pytest.approx((5.6 / 3 + 0.5 * 2.8) / 2, rel=1e-6)
    assert result.q_mean == pytest.approx((0.5 - 0.5 + 0.5 + 0.5) / 4, abs=1e-6)


def test_double_dqn_by_hand() -> None:
    agent = hand_agent(double_dqn=True)
    result = agent.learn_sequences(hand_batch(), burn_in=1, stored_state=False)
    np.testing.assert_allclose(result.td_errors, [[1.4, 2.4, -1.5], [0.0, 2.4, 0.0]], atol=1e-6)


def test_mse_loss_and_unit_weights_by_hand() -> None:
    batch = hand_batch()
    batch.weights = None
    result = hand_agent(loss="mse").learn_sequences(batch, burn_in=1, stored_state=True)
    squares = (2.3**2 + 3.3**2 + 1.5**2) / 3, 3.3**2
    assert result.loss == pytest.approx(sum(squares) / 2, rel=1e-6)


def test_a_burn_in_that_leaves_nothing_to_learn_is_refused() -> None:
    with pytest.raises(ValueError, match="burn_in 2 leaves sequence 1 of 2 steps nothing"):
        burn_ins(2, np.array([True, False]), np.array([3, 2]))
    np.testing.assert_array_equal(burn_ins(2, np.array([True, False]), np.array([1, 3])), [0, 2])


def arrays_of(batch: SimpleNamespace, burn_in: int, stored_state: bool = True) -> Any:  # noqa: ANN401
    return sequence_arrays(
        batch,
        obs_dim=OBS_DIM,
        n_actions=2,
        gamma=0.9,
        burn_in=burn_in,
        stored_state=stored_state,
        device=torch.device("cpu"),
    )


def naive_loss(
    online: RecurrentQNet, target: RecurrentQNet, batch: SimpleNamespace, burn_in: int
) -> torch.Tensor:
    """The update's loss sequence by sequence: the burn-in's unroll under no_grad, the rest
    with gradient from the state it reached; targets from the target net over the whole
    sequence; Huber, the mean over its learning steps, weighted, the mean over sequences."""
    losses = []
    for i in range(len(batch.lengths)):
        length = int(batch.lengths[i])
        b = 0 if batch.starts_episode[i] else burn_in
        obs = torch.from_numpy(batch.obs[i : i + 1, : length + 1])
        state = torch.from_numpy(batch.states[i : i + 1])
        with torch.no_grad():
            q_target, _ = target.unroll(obs, state)
            if b:
                _, state = online.unroll(obs[:, :b], state)
        q, _ = online.unroll(obs[:, b:], state)
        steps = []
        for t in range(b, length):
            y = batch.rewards[i, t] + 0.9 * (1 - batch.terminated[i, t]) * q_target[0, t + 1].max()
            steps.append(torch.nn.functional.smooth_l1_loss(q[0, t - b, batch.actions[i, t]], y))
        losses.append(float(batch.weights[i]) * torch.stack(steps).mean())
    return torch.stack(losses).mean()


def test_the_update_is_the_naive_one_and_the_burn_in_gets_no_gradient() -> None:
    """Random nets and sequences (two begin their episode, three burn in 2 steps, some are
    short): the loss and every gradient equal `naive_loss`'s, whose burn-in runs under no_grad;
    padding holds garbage, which changes nothing."""
    torch.manual_seed(0)
    online = RecurrentQNet(OBS_DIM, 2, generator=torch.Generator().manual_seed(1))
    target = RecurrentQNet(OBS_DIM, 2, generator=torch.Generator().manual_seed(2))
    rng = np.random.default_rng(3)
    batch = SimpleNamespace(
        obs=rng.standard_normal((5, 6, OBS_DIM)).astype(np.float32),
        actions=rng.integers(0, 2, (5, 5)),
        rewards=rng.standard_normal((5, 5)).astype(np.float32),
        terminated=np.zeros((5, 5), bool),
        lengths=np.array([5, 3, 5, 4, 1]),
        starts_episode=np.array([False, False, True, False, True]),
        states=rng.standard_normal((5, STATE_SIZE)).astype(np.float32),
        weights=rng.random(5),
    )
    batch.terminated[1, 2] = True
    for i, length in enumerate(batch.lengths):
        batch.obs[i, length + 1 :] = 1e3  # padding
    td = sequence_td(online, target, arrays_of(batch, 2), double_dqn=False)
    loss = sequence_loss(td, arrays_of(batch, 2).weights, "huber")
    loss.backward()
    grads = [p.grad.clone() for p in online.parameters()]
    online.zero_grad()
    expected = naive_loss(online, target, batch, 2)
    expected.backward()
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)
    for got, want in zip(grads, (p.grad for p in online.parameters()), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-6)
    batch.obs[:, :, :] = np.where(
        np.arange(6)[None, :, None] > batch.lengths[:, None, None], 0, batch.obs
    )
    again = sequence_td(online, target, arrays_of(batch, 2), double_dqn=False)
    torch.testing.assert_close(again.td_error, td.td_error)


def test_zero_state_ignores_the_stored_one() -> None:
    """stored_state False unrolls from zeros: the result is that of states all zero, and
    differs from the stored states' (a net whose Q depends on its state)."""
    online = RecurrentQNet(OBS_DIM, 2, generator=torch.Generator().manual_seed(1))
    target = RecurrentQNet(OBS_DIM, 2, generator=torch.Generator().manual_seed(2))
    batch = hand_batch()
    zero = sequence_td(online, target, arrays_of(batch, 1, stored_state=False), double_dqn=False)
    zeroed = dataclasses.replace(arrays_of(batch, 1), states=torch.zeros(2, STATE_SIZE))
    same = sequence_td(online, target, zeroed, double_dqn=False)
    torch.testing.assert_close(zero.td_error, same.td_error)
    stored = sequence_td(online, target, arrays_of(batch, 1), double_dqn=False)
    assert not torch.allclose(stored.td_error, zero.td_error)


def test_acting_carries_the_state_as_an_unroll_does() -> None:
    """Acting step by step from zeros, each Q-value is the unroll's over the episode so far;
    exploring or not, the state goes on (one uniform draw per step)."""
    agent = DQNAgent(OBS_DIM, 2, AgentConfig(network="recurrent", device="cpu"), seed=4)
    episode = np.random.default_rng(5).standard_normal((6, OBS_DIM)).astype(np.float32)
    with torch.no_grad():
        q_all, _ = agent.online.unroll(torch.from_numpy(episode[None]))
    state = np.zeros(STATE_SIZE, np.float32)
    for t, obs in enumerate(episode):
        q, after = agent.q_values_carrying(obs, state)
        np.testing.assert_allclose(q, q_all[0, t].numpy(), rtol=1e-5, atol=1e-6)
        action, moved = agent.act_carrying(obs, state, epsilon=1.0 if t % 2 else 0.0)
        np.testing.assert_array_equal(moved, after)
        assert action in (0, 1)
        state = after
    with pytest.raises(ValueError, match="epsilon must be in"):
        agent.act_carrying(episode[0], state, 1.5)


def test_only_the_recurrent_network_learns_from_sequences() -> None:
    agent = DQNAgent(OBS_DIM, 2, AgentConfig(network="mlp", device="cpu"), seed=0)
    with pytest.raises(ValueError, match="only the recurrent network learns from sequences"):
        agent.learn_sequences(hand_batch(), burn_in=1, stored_state=True)


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("obs", np.zeros((2, 4, 5), np.float32), r"prod\(obs_shape\) == 3"),
        ("actions", np.zeros((2, 2), np.int64), r"actions must have shape \(2, 3\)"),
        ("actions", np.full((2, 3), 2), r"actions must be in \[0, 2\)"),
        ("states", np.zeros((2, 4), np.float32), "states must have shape"),
    ],
)
def test_a_malformed_batch_is_refused(field: str, value: np.ndarray, match: str) -> None:
    batch = hand_batch()
    setattr(batch, field, value)
    agent = hand_agent()
    before = [p.detach().clone() for p in agent.online.parameters()]
    with pytest.raises(ValueError, match=match):
        agent.learn_sequences(batch, burn_in=1, stored_state=True)
    assert all(torch.equal(p, q) for p, q in zip(agent.online.parameters(), before, strict=True))
    assert agent.updates == 0
