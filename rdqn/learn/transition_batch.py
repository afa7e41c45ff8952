"""A replay batch of transitions as the learner reads it: checked, as float32/int64 host arrays.

For B transitions (W_i, a_i, r_i, W'_i, terminated_i) with windows of T observations of d values
each, `batch_arrays` gives the windows as (B, T, d), the actions as int64 in [0, A), the rewards,
the discount gamma * (1 - terminated_i) (`rdqn.learn.targets.discounts`) and the IS weights w_i
(None: all ones), and for a recurrent network the masks of real frames; anything else raises
``ValueError`` naming the field. `as_tensor` moves them to the learner's device.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch
from numpy.typing import NDArray

from rdqn.learn.targets import discounts

__all__ = ["BatchArrays", "BatchLike", "as_tensor", "batch_arrays"]


class BatchLike(Protocol):
    """The replay batch fields :meth:`rdqn.learn.agent.DQNAgent.learn` reads (duck-typed).

    Shapes: ``obs``/``next_obs`` (B, T, *obs_shape); the rest (B,). ``weights`` are the IS weights
    w_i (``None`` means all ones, as for uniform replay). ``truncated`` is carried but never removes
    the bootstrap term.
    """

    obs: NDArray[np.floating]
    actions: NDArray[np.integer]
    rewards: NDArray[np.floating]
    next_obs: NDArray[np.floating]
    terminated: NDArray[np.bool_]
    truncated: NDArray[np.bool_]
    weights: NDArray[np.floating] | None


@dataclass(frozen=True)
class BatchArrays:
    """A checked batch as host arrays; ``discount`` is gamma * (1 - terminated)."""

    obs: NDArray[np.float32]
    next_obs: NDArray[np.float32]
    actions: NDArray[np.int64]
    rewards: NDArray[np.float32]
    discount: NDArray[np.float32]
    weights: NDArray[np.float32] | None
    obs_mask: NDArray[np.bool_] | None = None
    next_obs_mask: NDArray[np.bool_] | None = None


def as_tensor(array: Any, dtype: np.dtype[Any] | type, device: torch.device) -> torch.Tensor:
    """Zero-copy ``torch.from_numpy`` where the array already has the dtype and layout."""
    array = np.ascontiguousarray(array, dtype=dtype)
    if not array.flags.writeable:
        array = array.copy()
    tensor = torch.from_numpy(array)
    return tensor if device.type == "cpu" else tensor.to(device, non_blocking=True)


def batch_arrays(
    batch: BatchLike, *, obs_dim: int, n_actions: int, gamma: float, recurrent: bool
) -> BatchArrays:
    """``batch`` checked, as float32/int64 host arrays, observations as (B, T, d); the masks
    only for a ``recurrent`` network (the others read a window's last frame)."""
    obs = np.asarray(batch.obs, dtype=np.float32)
    next_obs = np.asarray(batch.next_obs, dtype=np.float32)
    if obs.ndim < 3 or math.prod(obs.shape[2:]) != obs_dim or obs.shape != next_obs.shape:
        raise ValueError(
            f"obs and next_obs must share a shape (B, T, *obs_shape) with prod(obs_shape) == "
            f"{obs_dim}, got {obs.shape} and {next_obs.shape}"
        )
    batch_size, steps = obs.shape[:2]
    actions = np.asarray(batch.actions)
    if actions.shape != (batch_size,):
        raise ValueError(f"actions must have shape ({batch_size},), got {actions.shape}")
    if batch_size and (actions.min() < 0 or actions.max() >= n_actions):
        raise ValueError(
            f"actions must be in [0, {n_actions}), got range [{actions.min()}, {actions.max()}]"
        )
    terminated = np.asarray(batch.terminated, dtype=np.float32)
    shape = (batch_size, steps)
    return BatchArrays(
        obs=obs.reshape(batch_size, steps, obs_dim),
        next_obs=next_obs.reshape(batch_size, steps, obs_dim),
        actions=actions.astype(np.int64, copy=False),
        rewards=np.asarray(batch.rewards, dtype=np.float32),
        # gamma * (1 - terminated_i), computed on the host: one array instead of three ops.
        discount=discounts(gamma, terminated).astype(np.float32),
        weights=None if batch.weights is None else np.asarray(batch.weights, np.float32),
        obs_mask=_mask_of(batch, "obs_mask", shape) if recurrent else None,
        next_obs_mask=_mask_of(batch, "next_obs_mask", shape) if recurrent else None,
    )


def _mask_of(batch: BatchLike, name: str, shape: tuple[int, int]) -> NDArray[np.bool_] | None:
    """The batch's padding mask ``name`` (None for a batch without one)."""
    mask = getattr(batch, name, None)
    if mask is None:
        return None
    mask = np.asarray(mask, dtype=np.bool_)
    if mask.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {mask.shape}")
    return mask
