"""A batch of sequences (`SequenceBatch`) and its gathering from the ring of steps.

For a sequence of length l <= m starting at step t0, a batch holds the observations
o_{t0} .. o_{t0 + l - 1} and then o_{t0 + l} (the last step's next observation, for its TD target)
at positions 0 .. l, zeros after them (``obs_mask`` False); its actions, rewards and flags at
positions 0 .. l - 1 (``step_mask``); and the state recorded at its first step. The gathering is
one kernel (`rdqn.replay.kernels.compiled.kernel`: compiled, with its plain Python twin).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from rdqn.replay.kernels.compiled import kernel
from rdqn.replay.sequences import SequenceIndex
from rdqn.replay.storage import RingStorage

__all__ = ["SequenceBatch", "gather_sequences", "gather_sequences_kernel"]


@dataclass(frozen=True)
class SequenceBatch:
    """B sequences of up to m steps (module docstring).

    Attributes:
        obs: (B, m + 1, *obs_shape) o_{t0 + p} at positions p < l, o_{t0 + l} at p = l, zeros
            after.
        obs_mask: (B, m + 1) bool, True at positions p <= l.
        actions: (B, m) int64; rewards: (B, m) float32; terminated, truncated: (B, m) bool;
            zero and False at positions p >= l.
        step_mask: (B, m) bool, True at the steps p < l (a view of ``obs_mask[:, 1:]``).
        lengths: (B,) int64 l, 1 <= l <= m.
        starts_episode: (B,) bool, whether the sequence begins its episode (t0 = 0).
        states: (B, state_size) float32, the state recorded at step t0.
        indices: (B,) int64 sequence slots; generations: (B,) int64 their sequence numbers.
        probabilities, weights: (B,) float64 P(i) and the IS weights.
    """

    obs: NDArray
    obs_mask: NDArray[np.bool_]
    actions: NDArray[np.int64]
    rewards: NDArray[np.float32]
    terminated: NDArray[np.bool_]
    truncated: NDArray[np.bool_]
    step_mask: NDArray[np.bool_]
    lengths: NDArray[np.int64]
    starts_episode: NDArray[np.bool_]
    states: NDArray[np.float32]
    indices: NDArray[np.int64]
    generations: NDArray[np.int64]
    probabilities: NDArray[np.float64]
    weights: NDArray[np.float64]

    def __len__(self) -> int:
        return int(self.indices.shape[0])


@kernel
def gather_sequences_kernel(
    frames: NDArray,
    small: NDArray[np.int32],
    stored_flags: NDArray[np.bool_],
    rewards: NDArray[np.float32],
    starts: NDArray[np.int64],
    lengths: NDArray[np.int32],
    states: NDArray[np.float32],
    sequences: NDArray[np.int64],
    count: bool,
    out_obs: NDArray,
    out_mask: NDArray[np.bool_],
    out_actions: NDArray[np.int64],
    out_rewards: NDArray[np.float32],
    out_flags: NDArray[np.bool_],
    out_lengths: NDArray[np.int64],
    out_first: NDArray[np.bool_],
    out_states: NDArray[np.float32],
) -> None:
    """Row b: sequence slot q = sequences[b] of l = lengths[q] steps from ring slot
    starts[q] mod C; out_obs[b, p] = obs of its step p for p < l, next_obs of its last step at
    p = l, zeros after (out_mask True at p <= l); actions, rewards and (terminated, truncated)
    at p < l, zeros after; l, whether its first step has episode step 0, and its state. With
    ``count``, each of its steps' sample count goes up by one. The storage comes stacked as
    `RingStorage` keeps it (frames = (obs, next_obs), small = (actions, episode_step,
    sample_counts), stored_flags = (terminated, truncated))."""
    capacity = frames.shape[1]
    width = frames.shape[2]
    steps = out_actions.shape[1]
    obs, next_obs = frames[0], frames[1]
    actions, episode_step, sample_counts = small[0], small[1], small[2]
    for b in range(sequences.shape[0]):
        q = sequences[b]
        length = lengths[q]
        first = starts[q] % capacity
        for p in range(steps + 1):
            slot = (first + p) % capacity
            if p < length:
                for d in range(width):
                    out_obs[b, p, d] = obs[slot, d]
                out_actions[b, p] = actions[slot]
                out_rewards[b, p] = rewards[slot]
                out_flags[0, b, p] = stored_flags[0, slot]
                out_flags[1, b, p] = stored_flags[1, slot]
                if count:
                    sample_counts[slot] += 1
            elif p == length:
                last = (first + length - 1) % capacity
                for d in range(width):
                    out_obs[b, p, d] = next_obs[last, d]
            else:
                for d in range(width):
                    out_obs[b, p, d] = 0
            out_mask[b, p] = p <= length
            if length <= p < steps:
                out_actions[b, p] = 0
                out_rewards[b, p] = 0.0
                out_flags[0, b, p] = False
                out_flags[1, b, p] = False
        out_lengths[b] = length
        out_first[b] = episode_step[first] == 0
        for d in range(states.shape[1]):
            out_states[b, d] = states[q, d]


def gather_sequences(
    storage: RingStorage,
    index: SequenceIndex,
    indices: NDArray[np.int64],
    probabilities: NDArray[np.float64],
    weights: NDArray[np.float64],
    *,
    count: bool,
) -> SequenceBatch:
    """The batch of the sequences in slots ``indices`` of ``index`` over ``storage``, with
    their P(i) and IS weights; with ``count``, each of their steps' sample count goes up by
    one (a draw replays them; a look does not)."""
    batch_size = indices.shape[0]
    m, width = index.length, math.prod(storage.obs_shape)
    obs = np.empty((batch_size, m + 1, width), storage.obs_dtype)
    obs_mask = np.empty((batch_size, m + 1), np.bool_)
    actions = np.empty((batch_size, m), np.int64)
    rewards = np.empty((batch_size, m), np.float32)
    flags = np.empty((2, batch_size, m), np.bool_)
    lengths = np.empty(batch_size, np.int64)
    first = np.empty(batch_size, np.bool_)
    states = np.empty((batch_size, index.state_size), np.float32)
    gather_sequences_kernel(
        *storage.stacks(),
        index.start,
        index.lengths,
        index.states,
        indices,
        count,
        obs,
        obs_mask,
        actions,
        rewards,
        flags,
        lengths,
        first,
        states,
    )
    return SequenceBatch(
        obs=obs.reshape((batch_size, m + 1, *storage.obs_shape)),
        obs_mask=obs_mask,
        actions=actions,
        rewards=rewards,
        terminated=flags[0],
        truncated=flags[1],
        step_mask=obs_mask[:, 1:],
        lengths=lengths,
        starts_episode=first,
        states=states,
        indices=indices,
        generations=index.number[indices],
        probabilities=probabilities,
        weights=weights,
    )
