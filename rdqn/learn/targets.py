"""The DQN bootstrap target, written once (Mnih et al. 2015; Double DQN: van Hasselt et al. 2016;
docs/design.md, "Semantics" 1 and 8)::

    y_i = r_i + gamma * (1 - terminated_i) * Q_target(s'_i, a*_i)
    a*_i = argmax_a' Q_target(s'_i, a')        (DQN: y_i uses max_a' Q_target(s'_i, a'))
    a*_i = argmax_a' Q_online(s'_i, a')        (Double DQN: the online net picks, the target scores)

Only termination removes the next state's term: a step cut by a time limit (truncated, not
terminated) still bootstraps, so truncation is no input here. Ties pick the first maximum.

`td_targets` takes NumPy arrays (the tabular learner, the classroom's worked example) or torch
tensors (the autograd learner, the PER notebook's probes), the same arithmetic in each: the torch
path is differentiable but is called without gradient. The fused MLP update
(`rdqn.learn.fused_mlp`) writes the same lines in its compiled loop;
`tests/learn/test_targets.py` checks it against this function.
"""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np

__all__ = ["discounts", "next_values", "td_targets"]

Array = TypeVar("Array")
"""A NumPy array or a torch tensor (this module imports no torch)."""


def discounts(gamma: float, terminated: Array) -> Array:
    """gamma * (1 - terminated_i): the factor of the next state's value (0 after termination)."""
    return gamma * (1.0 - terminated)  # type: ignore[operator, return-value]


def td_targets(
    rewards: Array,
    discount: Array,
    next_q_target: Array,
    next_q_online: Array | None = None,
) -> Array:
    """y_i = r_i + discount_i * Q_target(s'_i, a*_i) (module docstring) for a batch.

    Args:
        rewards: (B,) r_i.
        discount: (B,) gamma * (1 - terminated_i) (`discounts`).
        next_q_target: (B, A) Q_target(s'_i, a) for every action a.
        next_q_online: (B, A) Q_online(s'_i, a) for Double DQN, which picks a*_i by it; None
            for DQN (a*_i by the target net itself: its max).
    """
    return rewards + discount * next_values(next_q_target, next_q_online)  # type: ignore[operator]


def next_values(next_q_target: Any, next_q_online: Any = None) -> Any:  # noqa: ANN401
    """Q_target(s'_i, a*_i), (B,), in the library of the arrays given (a*_i as in `td_targets`)."""
    if isinstance(next_q_target, np.ndarray):
        if next_q_online is None:
            return next_q_target.max(axis=1)
        best = np.asarray(next_q_online).argmax(axis=1)
        return np.take_along_axis(next_q_target, best[:, None], axis=1)[:, 0]
    if next_q_online is None:  # a torch tensor
        return next_q_target.max(dim=1).values
    best = next_q_online.argmax(dim=1, keepdim=True)
    return next_q_target.gather(1, best).squeeze(1)
