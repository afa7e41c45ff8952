"""What the memory explorer shows of a replay memory: stored transitions (or, for sequence replay,
stored sequences) as rows of plain arrays, built in a run's worker (`rdqn.training.memories`) and
kept by a web server (this module loads no kernel and no torch)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["Memories", "MemoryRows", "SequenceMemories", "SequenceRows"]


@dataclass(frozen=True)
class MemoryRows:
    """Stored transitions, one entry per row, float64 unless said (all arrays of one length)."""

    slots: NDArray[np.int64]
    poses: NDArray[np.float32]  # (n, k)
    actions: NDArray[np.int64]
    rewards: NDArray[np.float64]
    terminated: NDArray[np.bool_]
    priorities: NDArray[np.float64]  # NaN: uniform replay keeps none
    probabilities: NDArray[np.float64]
    weights: NDArray[np.float64]
    ages: NDArray[np.int64]
    replayed: NDArray[np.int64]

    def __len__(self) -> int:
        return int(self.slots.shape[0])


@dataclass(frozen=True)
class Memories:
    """What the memory explorer shows of a run's replay memory at one step."""

    env_id: str
    scheme: str
    env_steps: int
    updates: int
    size: int
    capacity: int
    batch_size: int
    beta: float
    gamma: float
    alpha: float | None
    """The sampler's α (None under uniform replay)."""
    eps: float
    double_dqn: bool
    is_normalization: str
    """How the IS weights are normalised: global, batch or none (`rdqn.replay.weights`)."""
    pose_names: tuple[str, ...]
    row_size: int | None
    """The number of states of a row env (its observation's size), else None."""
    drawn: MemoryRows
    """The thinned set the charts draw."""
    lists: dict[str, MemoryRows]
    """"last batch", "top priority" (not under uniform replay), "uniform sample"."""
    terms: dict[str, dict[str, NDArray[np.float64]]]
    """For each list: q_taken, next_value, target, td_error per row (`DQNAgent.td_terms`)."""
    expected_ages: NDArray[np.int64]
    expected_replays: NDArray[np.float64]
    """Uniform replay's expected times replayed at those ages."""


@dataclass(frozen=True)
class SequenceRows:
    """Stored sequences (R2D2's, `rdqn.replay.SequenceReplay`), one entry per row."""

    slots: NDArray[np.int64]
    lengths: NDArray[np.int64]
    starts_episode: NDArray[np.bool_]
    burn_ins: NDArray[np.int64]
    """b_i: the burn-in, 0 where the sequence begins its episode."""
    priorities: NDArray[np.float64]  # NaN: uniform replay keeps none
    probabilities: NDArray[np.float64]
    weights: NDArray[np.float64]
    ages: NDArray[np.int64]
    td_abs: NDArray[np.float64]
    """(n, m) |δ_t| of each step by the current networks; NaN where no loss is learned (the
    burn-in, the padding after a short sequence)."""
    mixed: NDArray[np.float64]
    """η max_t |δ_t| + (1 - η) mean_t |δ_t| over the learned steps: the sequence's |δ| if it
    were replayed now (its priority would be that plus eps)."""

    def __len__(self) -> int:
        return int(self.slots.shape[0])


@dataclass(frozen=True)
class SequenceMemories:
    """What the memory explorer shows of a sequence replay at one step."""

    env_id: str
    scheme: str
    env_steps: int
    updates: int
    size: int
    """Live sequences."""
    steps: int
    """Steps stored."""
    capacity: int
    sequence_length: int
    overlap: int
    burn_in: int
    stored_state: bool
    eta: float
    eps: float
    beta: float
    lists: dict[str, SequenceRows]
    """"last batch", "top priority" (not under uniform replay), "uniform sample"."""
