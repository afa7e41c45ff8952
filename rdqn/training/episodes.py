"""A greedy episode as its picture needs it, and the greedy returns of a run: plain arrays that
a worker sends and a web server keeps (this module loads no kernel and no torch)."""

from __future__ import annotations

import io
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

    def to_bytes(self) -> bytes:
        """The episode as an ``.npz`` archive (no pickles): what the run store keeps of the
        latest episode a run played, so that it can still be watched after a restart."""
        fields = {
            "env_id": np.str_(self.env_id),
            "env_steps": np.int64(self.env_steps),
            "seed": np.int64(self.seed),
            "poses": self.poses,
            "actions": self.actions,
            "rewards": self.rewards,
            "terminated": np.bool_(self.terminated),
        }
        if self.prices is not None:
            fields["prices"] = self.prices
        if self.row_size is not None:
            fields["row_size"] = np.int64(self.row_size)
        buffer = io.BytesIO()
        np.savez(buffer, **fields)
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> PlayedEpisode:
        """The episode `to_bytes` wrote; ``ValueError`` for bytes that are not one."""
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as archive:
                stored = {name: archive[name] for name in archive.files}
            return cls(
                env_id=str(stored["env_id"]),
                env_steps=int(stored["env_steps"]),
                seed=int(stored["seed"]),
                poses=stored["poses"].astype(np.float32, copy=False),
                actions=stored["actions"].astype(np.int8, copy=False),
                rewards=stored["rewards"].astype(np.float32, copy=False),
                terminated=bool(stored["terminated"]),
                prices=stored["prices"].astype(np.float32) if "prices" in stored else None,
                row_size=int(stored["row_size"]) if "row_size" in stored else None,
            )
        except (OSError, KeyError, ValueError, TypeError) as err:
            raise ValueError(f"not a stored episode: {err}") from err


@dataclass(frozen=True)
class GreedyReturns:
    """The greedy episodes a run has played: the training's env steps when each was played, its
    return and its length (equal lengths, private copies)."""

    env_steps: NDArray[np.int64]
    returns: NDArray[np.float64]
    lengths: NDArray[np.int64]

    def __len__(self) -> int:
        return int(self.env_steps.shape[0])

    def until(self, env_steps: int) -> GreedyReturns:
        """Those played by the policy of env step ``env_steps`` or earlier."""
        kept = self.env_steps <= env_steps
        return GreedyReturns(self.env_steps[kept], self.returns[kept], self.lengths[kept])

    @classmethod
    def none(cls) -> GreedyReturns:
        """No greedy episode played yet."""
        return cls(np.zeros(0, np.int64), np.zeros(0, np.float64), np.zeros(0, np.int64))
