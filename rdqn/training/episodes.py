"""A greedy episode as its picture needs it, and the greedy returns of a run: plain arrays that
a worker sends and a web server keeps (this module loads no kernel and no torch)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from rdqn.envs.poses import pose_kind

__all__ = ["GreedyReturns", "PlayedEpisode"]


@dataclass(frozen=True)
class PlayedEpisode:
    """One greedy episode, as drawn.

    Attributes:
        env_id: the env, which says how it is drawn (`rdqn.envs.poses.POSE_KINDS`).
        env_steps: the training's env steps when the policy played (the policy's age).
        seed: the env seed the episode was reset with.
        poses: (T + 1, k) float32, the pose of o_0 … o_T.
        actions: (T,) int8, a_0 … a_{T-1}.
        rewards: (T,) float32.
        terminated: whether it ended by termination (else truncated at the time limit).
        prices: (T + 1,) float32 for the market, else None.
        row_size: the number of states of a row env (Blind Cliffwalk, the chain), else None.
    """

    env_id: str
    env_steps: int
    seed: int
    poses: NDArray[np.float32]
    actions: NDArray[np.int8]
    rewards: NDArray[np.float32]
    terminated: bool
    prices: NDArray[np.float32] | None = None
    row_size: int | None = None

    @property
    def length(self) -> int:
        return int(self.actions.size)

    @property
    def episode_return(self) -> float:
        return float(self.rewards.sum(dtype=np.float64))

    @property
    def kind(self) -> str:
        return pose_kind(self.env_id)


@dataclass(frozen=True)
class GreedyReturns:
    """The greedy episodes a run has played: the training's env steps when each was played, its
    return and its length (equal lengths, private copies)."""

    env_steps: NDArray[np.int64]
    returns: NDArray[np.float64]
    lengths: NDArray[np.int64]

    def __len__(self) -> int:
        return int(self.env_steps.shape[0])
