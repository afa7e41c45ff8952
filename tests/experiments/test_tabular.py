"""The NumPy twin of the `paper` preset's learner: by hand, and update by update against
`DQNAgent` (the linear net on one-hot states, SGD)."""

import dataclasses

import numpy as np
import pytest
import torch

from rdqn.experiments.tabular import TabularLearner
from rdqn.learn.agent import DQNAgent
from rdqn.presets import preset

PAPER = preset("paper").agent


def one_update(learner: TabularLearner, s, a, r, s2, done, w=None) -> np.ndarray:
    return learner.learn(
        np.array(s), np.array(a), np.array(r, dtype=float), np.array(s2), np.array(done), w
    )


def test_goal_transition_by_hand() -> None:
    """Q = 0, the goal transition (s=1, a=1, r=1, terminal): delta = 1; mse, lr .25, B = 1:
    Q(1, 1) += .25 * 2 * 1 = 0.5. Then (0, 1, r=0, s'=1): delta = .99 * 0.5 = .495,
    Q(0, 1) = .2475."""
    learner = TabularLearner(2, 2, PAPER)
    delta = one_update(learner, [1], [1], [1.0], [0], [True])
    assert delta.tolist() == [1.0]
    np.testing.assert_allclose(learner.q, [[0, 0], [0, 0.5]])
    delta = one_update(learner, [0], [1], [0.0], [1], [False])
    np.testing.assert_allclose(delta, [0.495])
    np.testing.assert_allclose(learner.q, [[0, 0.2475], [0, 0.5]])
    np.testing.assert_array_equal(learner.target, learner.q)  # copied after every update


def test_batch_with_a_duplicate_sums_its_gradients() -> None:
    """B = 2, the goal transition twice, weights (1, 0.5): Q(1, 1) += .25 * (2/2) * (1 + .5)."""
    learner = TabularLearner(2, 2, PAPER)
    one_update(learner, [1, 1], [1, 1], [1.0, 1.0], [0, 0], [True, True], np.array([1.0, 0.5]))
    np.testing.assert_allclose(learner.q[1, 1], 0.375)


def test_huber_and_clip_by_hand() -> None:
    """Huber: psi = clip(delta, -1, 1): delta = 3 moves Q by lr * 1; a clip at c = 0.1 of the
    gradient norm 1 (lr 1) moves it by 0.1 (torch's c / (norm + 1e-6))."""
    config = dataclasses.replace(PAPER, loss="huber", lr=1.0)
    learner = TabularLearner(1, 2, config)
    one_update(learner, [0], [0], [3.0], [0], [True])
    assert learner.q[0, 0] == pytest.approx(1.0)
    clipped = TabularLearner(1, 2, dataclasses.replace(config, grad_clip_norm=0.1))
    one_update(clipped, [0], [0], [3.0], [0], [True])
    assert clipped.q[0, 0] == pytest.approx(0.1 / (1 + 1e-6))


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"loss": "huber"},
        {"grad_clip_norm": 0.05},
        {"target_sync_every": 3},
        {"target_update": "soft", "tau": 0.1},
        {"double_dqn": True, "target_sync_every": 2},
    ],
    ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "paper",
)
def test_matches_dqn_agent_update_by_update(changes: dict) -> None:
    """Random batches (B = 8, duplicates included) of a 5-state one-hot table for 30 updates:
    the TD errors and every Q-value agree with the torch agent to float32 precision."""
    config = dataclasses.replace(PAPER, **changes)
    agent = DQNAgent(5, 2, config, seed=0)
    learner = TabularLearner(5, 2, config)
    rng = np.random.default_rng(1)
    eye = np.eye(5, dtype=np.float32)
    for _ in range(30):
        s = rng.integers(0, 5, 8)
        a = rng.integers(0, 2, 8)
        r = rng.choice([0.0, 1.0], 8, p=[0.7, 0.3])
        s2 = rng.integers(0, 5, 8)
        done = rng.random(8) < 0.3
        w = rng.uniform(0.2, 1.0, 8)
        batch = type("Batch", (), {})()
        batch.obs, batch.next_obs = eye[s][:, None, :], eye[s2][:, None, :]
        batch.actions, batch.rewards = a, r.astype(np.float32)
        batch.terminated, batch.truncated = done, np.zeros(8, bool)
        batch.weights = w.astype(np.float32)
        result = agent.learn(batch)
        delta = learner.learn(s, a, r, s2, done, w.astype(np.float32).astype(np.float64))
        np.testing.assert_allclose(delta, result.td_errors, atol=1e-5)
        with torch.no_grad():
            q = agent.online(torch.from_numpy(eye)).numpy()
        np.testing.assert_allclose(learner.q, q, atol=1e-5)


@pytest.mark.parametrize(("field", "value"), [("network", "mlp"), ("optimizer", "adam")])
def test_refuses_another_learner(field: str, value: str) -> None:
    with pytest.raises(ValueError, match=f"needs agent.{field}"):
        TabularLearner(2, 2, dataclasses.replace(PAPER, **{field: value}))


def test_copy_is_independent() -> None:
    learner = TabularLearner(2, 2, PAPER)
    twin = learner.copy()
    one_update(twin, [1], [1], [1.0], [0], [True])
    assert learner.q.sum() == 0 and twin.q.sum() == 0.5 and learner.updates == 0
