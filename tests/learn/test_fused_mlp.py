"""Tests for rdqn.learn.fused_mlp: the compiled MLP update equals autograd + torch.optim.

Two agents built from the same seed, one with ``fused_mlp=True`` and one with ``fused_mlp=False``
(autograd, ``torch.optim.Adam(fused=True)`` or SGD), learn the same random batches; after every
update their TD errors, loss, Q mean, gradient norm, gradients and weights must agree to float32
rounding.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

from rdqn.learn.agent import DivergenceError, DQNAgent
from rdqn.learn.agent_config import AgentConfig
from rdqn.learn.fused_mlp import (
    FusedMLP,
    _dqn_update,
    fused_update_supported,
    mlp_q_values,
    warm_up,
)
from rdqn.learn.nets import MLPQNet, RecurrentQNet
from tests.run_helpers import fresh_python

OBS_DIM, N_ACTIONS, BATCH = 4, 3, 16


def random_batch(rng: np.random.Generator, reward_scale: float = 1.0) -> SimpleNamespace:
    return SimpleNamespace(
        obs=rng.standard_normal((BATCH, 1, OBS_DIM), dtype=np.float32),
        actions=rng.integers(N_ACTIONS, size=BATCH),
        rewards=(reward_scale * rng.standard_normal(BATCH)).astype(np.float32),
        next_obs=rng.standard_normal((BATCH, 1, OBS_DIM), dtype=np.float32),
        terminated=rng.random(BATCH) < 0.3,
        truncated=rng.random(BATCH) < 0.1,
        weights=rng.uniform(0.1, 1.0, BATCH).astype(np.float32),
    )


def agent_pair(**overrides: Any) -> tuple[DQNAgent, DQNAgent]:
    fused, plain = (
        DQNAgent(
            OBS_DIM,
            N_ACTIONS,
            AgentConfig(network="mlp", device="cpu", fused_mlp=flag, **overrides),
            seed=3,
        )
        for flag in (True, False)
    )
    assert (fused.learner, plain.learner) == ("fused-mlp", "autograd")
    return fused, plain


def assert_same_state(fused: DQNAgent, plain: DQNAgent) -> None:
    for module in ("online", "target"):
        for p, q in zip(
            getattr(fused, module).parameters(), getattr(plain, module).parameters(), strict=True
        ):
            torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"loss": "mse"},
        {"double_dqn": True},
        {"grad_clip_norm": None},
        {"grad_clip_norm": 0.1},
        {"optimizer": "sgd", "lr": 0.01},
        {"target_update": "hard", "target_sync_every": 3, "double_dqn": True, "loss": "mse"},
    ],
    ids=repr,
)
def test_fused_update_matches_autograd(overrides: dict[str, Any]) -> None:
    fused, plain = agent_pair(**overrides)
    rng = np.random.default_rng(0)
    for step in range(12):
        batch = random_batch(rng, reward_scale=5.0)
        if step % 4 == 3:
            batch.weights = None
        a, b = fused.learn(batch), plain.learn(batch)
        np.testing.assert_allclose(a.td_errors, b.td_errors, rtol=1e-4, atol=1e-5)
        assert a.loss == pytest.approx(b.loss, rel=1e-4)
        assert a.q_mean == pytest.approx(b.q_mean, rel=1e-4, abs=1e-6)
        assert a.grad_norm == pytest.approx(b.grad_norm, rel=1e-4)
        for p, q in zip(fused.online.parameters(), plain.online.parameters(), strict=True):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-6)
        assert_same_state(fused, plain)


def test_clipping_is_exercised_by_the_equivalence_cases() -> None:
    fused, _ = agent_pair(grad_clip_norm=0.1)
    result = fused.learn(random_batch(np.random.default_rng(0), reward_scale=5.0))
    assert result.grad_norm > 0.1
    clipped = torch.cat([p.grad.reshape(-1) for p in fused.online.parameters()]).norm()
    assert float(clipped) == pytest.approx(0.1, rel=1e-4)


def test_acting_uses_the_same_q_values_as_the_module() -> None:
    fused, _ = agent_pair()
    rng = np.random.default_rng(1)
    fused.learn(random_batch(rng))
    window = rng.standard_normal((1, OBS_DIM), dtype=np.float32)
    with torch.no_grad():
        expected = fused.online(torch.from_numpy(window)[None])[0].numpy()
    np.testing.assert_allclose(fused.q_values(window), expected, rtol=1e-5, atol=1e-6)
    assert fused.act(window, 0.0) == int(np.argmax(expected))


def test_adam_state_is_shared_with_the_torch_optimizer() -> None:
    fused, plain = agent_pair()
    rng = np.random.default_rng(2)

    def learn_both_then_compare(updates: int, steps: float) -> None:
        for _ in range(updates):
            batch = random_batch(rng)
            fused.learn(batch)
            plain.learn(batch)
        for p, q in zip(fused.online.parameters(), plain.online.parameters(), strict=True):
            mine, theirs = fused.optimizer.state[p], plain.optimizer.state[q]
            assert float(mine["step"]) == float(theirs["step"]) == steps
            for key in ("exp_avg", "exp_avg_sq"):
                torch.testing.assert_close(mine[key], theirs[key], rtol=1e-4, atol=1e-8)

    learn_both_then_compare(3, 3.0)
    # The optimizer, built above when first asked for, shares the state: it follows updates.
    learn_both_then_compare(2, 5.0)


_TRAIN_WITHOUT_OPTIMIZER = r"""
import sys

import numpy as np

from rdqn.learn.agent import DQNAgent
from rdqn.learn.agent_config import AgentConfig
from tests.learn.test_fused_mlp import random_batch

agent = DQNAgent(4, 3, AgentConfig(network="mlp", device="cpu"), seed=3)
rng = np.random.default_rng(0)
for _ in range(3):
    agent.learn(random_batch(rng))
print(agent.learner, "torch._dynamo" in sys.modules)
agent.state_dict()
print(agent.learner, "torch._dynamo" in sys.modules)
"""


@pytest.mark.slow  # trains CartPole for seconds
def test_the_fused_update_trains_without_a_torch_optimizer() -> None:
    """A torch optimizer imports torch._dynamo when built (a second of CPU, which the first run
    on a fresh server would wait for); the fused update builds one only for a checkpoint."""
    output = fresh_python(_TRAIN_WITHOUT_OPTIMIZER)
    assert output.split() == ["fused-mlp", "False", "fused-mlp", "True"]


@pytest.mark.parametrize("direction", ["fused->autograd", "autograd->fused"])
def test_checkpoints_move_between_the_two_updates(direction: str, tmp_path: Any) -> None:
    fused, plain = agent_pair(double_dqn=True)
    source, restored = (fused, plain) if direction == "fused->autograd" else (plain, fused)
    rng = np.random.default_rng(4)
    for _ in range(3):
        source.learn(random_batch(rng))
    path = tmp_path / "agent.pt"
    torch.save(source.state_dict(), path)
    restored.load_state_dict(torch.load(path, weights_only=True))
    batch = random_batch(rng)
    a, b = source.learn(batch), restored.learn(batch)
    np.testing.assert_allclose(a.td_errors, b.td_errors, rtol=1e-5, atol=1e-6)
    assert_same_state(source, restored)


def test_divergence_changes_nothing() -> None:
    fused, _ = agent_pair()
    before = [p.detach().clone() for p in fused.online.parameters()]
    moments = [fused.optimizer.state[p]["exp_avg"].clone() for p in fused.online.parameters()]
    batch = random_batch(np.random.default_rng(5))
    batch.rewards[2] = np.nan
    with pytest.raises(DivergenceError, match="non-finite update 1"):
        fused.learn(batch)
    assert fused.updates == 0
    for p, q, m in zip(fused.online.parameters(), before, moments, strict=True):
        assert torch.equal(p, q)
        assert torch.equal(fused.optimizer.state[p]["exp_avg"], m)


def test_supported_networks() -> None:
    cpu = torch.device("cpu")
    assert fused_update_supported(MLPQNet(4, 2), cpu)
    assert not fused_update_supported(MLPQNet(4, 2, dueling=True), cpu)
    assert not fused_update_supported(MLPQNet(4, 2, hidden=(8, 8, 8)), cpu)
    assert not fused_update_supported(RecurrentQNet(4, 2), cpu)
    assert not fused_update_supported(MLPQNet(4, 2), torch.device("meta"))


def test_parameters_are_views_of_the_flat_buffers() -> None:
    online, target = MLPQNet(4, 2), MLPQNet(4, 2)
    fused = FusedMLP(
        online,
        target,
        optimizer="adam",
        lr=1e-3,
        loss="huber",
        double_dqn=False,
        grad_clip_norm=1.0,
    )
    assert fused.online.size == sum(p.numel() for p in online.parameters())
    fused.online[0] = 123.0
    assert online.body[0].weight[0, 0].item() == 123.0
    with torch.no_grad():
        target.head.out.bias[-1] = -7.0
    assert fused.target[-1] == -7.0


def test_warm_up_compiles_the_specialisations_training_uses() -> None:
    warm_up()
    compiled = (len(_dqn_update.signatures), len(mlp_q_values.signatures))
    for overrides in ({}, {"double_dqn": True, "loss": "mse", "grad_clip_norm": None}):
        fused, _ = agent_pair(**overrides)
        rng = np.random.default_rng(6)
        fused.learn(random_batch(rng))
        fused.act(rng.standard_normal((1, OBS_DIM), dtype=np.float32), 0.0)
    assert (len(_dqn_update.signatures), len(mlp_q_values.signatures)) == compiled
