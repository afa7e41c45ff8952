"""What a picture of an env needs from one observation: its *pose*, a few named numbers.

Both "Watch it play" (a greedy episode) and the memory explorer (stored transitions) draw an env
from observations, so a pose is read from the observation alone:

    CartPole-v1, rdqn/MaskedCartPole-v0   (cart position x, pole angle θ in radians)
    rdqn/BlindCliffwalk-v0, SparseChain   (state index; -1 for the all-zero terminal observation)
    rdqn/SyntheticMarket-v0               (position: 0 flat, 1 long, -1 short)

The market's picture also needs its prices, which the observation (log returns) does not hold:
the episode player records them from the env's ``info["price"]``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["POSE_NAMES", "POSE_KINDS", "pose_kind", "poses"]

POSE_KINDS: dict[str, str] = {
    "CartPole-v1": "cartpole",
    "rdqn/MaskedCartPole-v0": "cartpole",
    "rdqn/BlindCliffwalk-v0": "row",
    "rdqn/SparseChain-v0": "row",
    "rdqn/SyntheticMarket-v0": "market",
}
"""How each env is drawn: a cart and pole, a row of states, or a price path with the position."""

POSE_NAMES: dict[str, tuple[str, ...]] = {
    "cartpole": ("cart position", "pole angle"),
    "row": ("state",),
    "market": ("position",),
}
"""The names of a pose's numbers, by kind."""

_CARTPOLE_COLUMNS = {"CartPole-v1": (0, 2), "rdqn/MaskedCartPole-v0": (0, 1)}
"""Where x and θ sit in each CartPole observation: (x, ẋ, θ, θ̇) and the masked (x, θ)."""


def pose_kind(env_id: str) -> str:
    """How ``env_id`` is drawn (`POSE_KINDS`); ``ValueError`` for an env without a picture."""
    try:
        return POSE_KINDS[env_id]
    except KeyError:
        raise ValueError(f"no picture for env {env_id!r}; drawn: {', '.join(POSE_KINDS)}") from None


def poses(env_id: str, observations: ArrayLike) -> NDArray[np.float32]:
    """The poses of a batch of observations, shape (n, len(POSE_NAMES[kind]))."""
    obs = np.asarray(observations, dtype=np.float32)
    if obs.ndim != 2:
        raise ValueError(f"observations must be 2-D (n, obs size), got shape {obs.shape}")
    kind = pose_kind(env_id)
    if kind == "cartpole":
        return obs[:, list(_CARTPOLE_COLUMNS[env_id])].copy()
    if kind == "row":
        index = np.argmax(obs, axis=1).astype(np.float32)
        index[~obs.any(axis=1)] = -1.0
        return index[:, None]
    return obs[:, -1:].copy()  # the market's last feature is the position held
