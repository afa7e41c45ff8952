"""The `paper` preset's tabular learner as a NumPy table: the same update as `DQNAgent.learn`
for a bias-free linear net on one-hot states with plain SGD, at a fraction of its cost.

With one-hot inputs the linear net's weight W[a, s] *is* Q(s, a), so for a batch of B
transitions with IS weights w_i (Schaul et al. 2015, Algorithm 1; `rdqn.learn.agent`)::

    y_i     = r_i + gamma * (1 - terminated_i) * max_a' Q_target(s'_i, a')     (Double DQN:
              Q_target(s'_i, argmax_a' Q(s'_i, a')); `rdqn.learn.targets.td_targets`)
    delta_i = y_i - Q(s_i, a_i)
    loss    = (1/B) sum_i w_i L(-delta_i),   L(x) = x^2 (mse) or Huber(x)
    g(s, a) = dloss/dQ(s, a) = -(1/B) sum_{i: (s_i, a_i) = (s, a)} w_i psi(delta_i),
              psi(d) = 2 d (mse) or clip(d, -1, 1) (Huber)
    g      <- g * min(1, c / (||g|| + 1e-6))        when grad_clip_norm = c is set
    Q      <- Q - lr * g

then the target table moves as the agent's target net does: a hard copy every K updates, or
softly, Q_target <- tau Q + (1 - tau) Q_target. The `paper` preset copies after every update, so
targets are the table's own values. One transition with the preset's lr .25 and mse moves
Q(s, a) by lr * 2 * delta = delta / 2 (a Q-learning step size eta = 0.5). Float64 throughout;
`tests/experiments/test_tabular.py` checks it against `DQNAgent` (float32) update by update.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from rdqn.learn.agent_config import AgentConfig
from rdqn.learn.losses import td_loss
from rdqn.learn.targets import discounts, td_targets

__all__ = ["TabularLearner"]


class TabularLearner:
    """A Q-table of shape (states, actions) trained as the module docstring says.

    Refuses (``ValueError``) an agent config that is not the tabular learner: a network other
    than ``"linear"`` or an optimizer other than ``"sgd"``.
    """

    def __init__(
        self, n_states: int, n_actions: int, config: AgentConfig, q: NDArray | None = None
    ) -> None:
        for name, value, needed in (
            ("agent.network", config.network, "linear"),
            ("agent.optimizer", config.optimizer, "sgd"),
        ):
            if value != needed:
                raise ValueError(f"the tabular learner needs {name} {needed!r}, got {value!r}")
        self.config = config
        self.q = np.zeros((n_states, n_actions)) if q is None else np.array(q, dtype=np.float64)
        if self.q.shape != (n_states, n_actions):
            raise ValueError(f"q must have shape {(n_states, n_actions)}, got {self.q.shape}")
        self.target = self.q.copy()
        self.updates = 0

    def copy(self) -> TabularLearner:
        """An independent learner in the same state (the oracle tries updates on copies)."""
        other = TabularLearner.__new__(TabularLearner)
        other.config = self.config
        other.q = self.q.copy()
        other.target = self.target.copy()
        other.updates = self.updates
        return other

    def td_errors(
        self,
        states: NDArray[np.int64],
        actions: NDArray[np.int64],
        rewards: NDArray[np.float64],
        next_states: NDArray[np.int64],
        terminated: NDArray[np.bool_],
    ) -> NDArray[np.float64]:
        """delta_i = y_i - Q(s_i, a_i) under the current tables (nothing changes)."""
        next_online = self.q[next_states] if self.config.double_dqn else None
        discount = discounts(self.config.gamma, terminated)
        y = td_targets(rewards, discount, self.target[next_states], next_online)
        return y - self.q[states, actions]

    def learn(
        self,
        states: NDArray[np.int64],
        actions: NDArray[np.int64],
        rewards: NDArray[np.float64],
        next_states: NDArray[np.int64],
        terminated: NDArray[np.bool_],
        weights: NDArray[np.float64] | None = None,
    ) -> NDArray[np.float64]:
        """One SGD update on the batch; returns its TD errors from before the update."""
        config = self.config
        delta = self.td_errors(states, actions, rewards, next_states, terminated)
        # The loss's slope at x = -delta, negated (`rdqn.learn.losses`): Huber's clip(delta), or
        # the squared error's 2 delta.
        huber = config.loss != "mse"
        psi = np.array([-td_loss.py_func(-d, huber)[1] for d in delta.tolist()])
        if weights is not None:
            psi = psi * weights
        grad = np.zeros_like(self.q)
        np.add.at(grad, (states, actions), -psi / delta.shape[0])
        if config.grad_clip_norm is not None:
            norm = float(np.sqrt((grad * grad).sum()))
            grad *= min(1.0, config.grad_clip_norm / (norm + 1e-6))
        self.q -= config.lr * grad
        self.updates += 1
        if config.target_update == "soft":
            self.target += config.tau * (self.q - self.target)
        elif self.updates % config.target_sync_every == 0:
            self.target[...] = self.q
        return delta
