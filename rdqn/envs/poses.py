"""What a picture of an env needs from one observation: its *pose*, a few named numbers.

Both "Watch it play" (a greedy episode) and the memory explorer (stored transitions) draw an env
from observations, so a pose is read from the observation alone:

    CartPole-v1, rdqn/MaskedCartPole-v0   (cart position x, pole angle θ in radians)
    rdqn/BlindCliffwalk-v0, SparseChain   (state index; -1 for the all-zero terminal observation)
    rdqn/SyntheticMarket-v0               (position: 0 flat, 1 long, -1 short)
    rdqn/MinAtar-*                        (the frame: 100 cells, row by row, each 0 when empty,
                                           else 1 + the highest channel set there)

The market's picture also needs its prices, which the observation (log returns) does not hold:
the episode player records them from the env's ``info["price"]``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rdqn.envs.minatar import MINATAR_ENVS

__all__ = ["POSE_NAMES", "POSE_KINDS", "pose_kind", "poses"]

POSE_KINDS: dict[str, str] = {
    "CartPole-v1": "cartpole",
    "rdqn/MaskedCartPole-v0": "cartpole",
    "rdqn/BlindCliffwalk-v0": "row",
    "rdqn/SparseChain-v0": "row",
    "rdqn/SyntheticMarket-v0": "market",
    **dict.fromkeys(MINATAR_ENVS, "frame"),
}
"""How each env is drawn: a cart and pole, a row of states, or a price path with the position."""

POSE_NAMES: dict[str, tuple[str, ...]] = {
    "cartpole": ("cart position", "pole angle"),
    "row": ("state",),
    "market": ("position",),
    "frame": tuple(f"cell {row},{column}" for row in range(10) for column in range(10)),
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
    """The poses of a batch of observations ``(n, *obs_shape)``, shape
    (n, len(POSE_NAMES[kind]))."""
    obs = np.asarray(observations, dtype=np.float32)
    if obs.ndim < 2:
        raise ValueError(f"observations must be a batch (n, *obs shape), got shape {obs.shape}")
    obs = obs.reshape(obs.shape[0], -1)
    kind = pose_kind(env_id)
    if kind == "cartpole":
        return obs[:, list(_CARTPOLE_COLUMNS[env_id])].copy()
    if kind == "row":
        index = np.argmax(obs, axis=1).astype(np.float32)
        index[~obs.any(axis=1)] = -1.0
        return index[:, None]
    if kind == "frame":
        frames = obs.reshape(obs.shape[0], 100, -1)
        codes = np.arange(1, frames.shape[2] + 1, dtype=np.float32)
        return (frames * codes).max(axis=2)
    return obs[:, -1:].copy()  # the market's last feature is the position held
