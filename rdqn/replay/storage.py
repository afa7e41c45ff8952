"""Ring storage of transitions, one row per environment step.

Step t of an episode stores (o_t, a_t, r_t, o_{t+1}, terminated_t, truncated_t) (DESIGN item 1) plus
two bookkeeping integers:

- `episode_step`: t, the position of the step inside its episode (0 for the first step);
  stored as int32 like the actions and sample counts, which keeps the per-item overhead small;
- `generation`: the global write count when the row was written. It stamps each occupant of a slot,
  so a priority computed for a sampled transition is never applied to a newer occupant of the same
  slot, and it tells which earlier rows are still stored: slot `s - j` holds the predecessor of
  slot `s` only while generation[s] - j >= the generation of the oldest stored row.

Observations are stored per step (o_t and o_{t+1}), never as windows, so memory does not grow with
the window length T; windows are gathered at sample time (see `windows.py`).
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import DTypeLike, NDArray

from rdqn.replay.windows import fill_window

__all__ = ["ACTION_MAX", "RingStorage"]

ACTION_MAX = int(np.iinfo(np.int32).max)
"""Actions are stored as int32 (discrete action spaces are far smaller)."""
EPISODE_STEP_MAX = int(np.iinfo(np.int32).max)
"""`episode_step` saturates here; windows only ever look T - 1 steps back."""

_ARRAYS = (
    "obs",
    "next_obs",
    "actions",
    "rewards",
    "terminated",
    "truncated",
    "episode_step",
    "generation",
    "sample_counts",
)


@numba.njit(cache=True, nogil=True)
def gather_transition_windows(
    obs: NDArray,
    next_obs: NDArray,
    episode_step: NDArray[np.int32],
    generation: NDArray[np.int64],
    oldest: int,
    slots: NDArray[np.int64],
    out_obs: NDArray,
    out_next: NDArray,
    mask: NDArray[np.bool_],
    next_mask: NDArray[np.bool_],
) -> None:
    """W_t and W_{t+1} for each slot: W_{t+1} is W_t shifted by one with o_{t+1} at the end."""
    window = out_obs.shape[1]
    for b in range(slots.shape[0]):
        s = slots[b]
        lookback = min(episode_step[s], window - 1, generation[s] - oldest)
        fill_window(obs, s, lookback, window, out_obs, mask, b)
        fill_window(obs, s, lookback, window - 1, out_next, next_mask, b)
        for d in range(next_obs.shape[1]):
            out_next[b, window - 1, d] = next_obs[s, d]
        next_mask[b, window - 1] = True


@numba.njit(cache=True, nogil=True)
def count_samples(counts: NDArray[np.int32], slots: NDArray[np.int64]) -> None:
    """counts[s] += 1 for every sampled slot (duplicates counted each time)."""
    for b in range(slots.shape[0]):
        counts[slots[b]] += 1


class RingStorage:
    """Fixed-capacity FIFO of transitions; the oldest row is overwritten when full."""

    def __init__(self, capacity: int, obs_shape: tuple[int, ...], obs_dtype: DTypeLike) -> None:
        self.capacity = capacity
        self.obs_shape = obs_shape
        self.obs_dtype = np.dtype(obs_dtype)
        flat = int(np.prod(obs_shape, dtype=np.int64))
        self.obs = np.zeros((capacity, flat), dtype=self.obs_dtype)
        self.next_obs = np.zeros((capacity, flat), dtype=self.obs_dtype)
        self.actions = np.zeros(capacity, dtype=np.int32)
        self.rewards = np.zeros(capacity, dtype=np.float32)
        self.terminated = np.zeros(capacity, dtype=np.bool_)
        self.truncated = np.zeros(capacity, dtype=np.bool_)
        self.episode_step = np.zeros(capacity, dtype=np.int32)
        self.generation = np.full(capacity, -1, dtype=np.int64)
        self.sample_counts = np.zeros(capacity, dtype=np.int32)
        self.writes = 0
        self._next_episode_step = 0

    @property
    def size(self) -> int:
        return min(self.writes, self.capacity)

    @property
    def cursor(self) -> int:
        """The slot the next write goes to."""
        return self.writes % self.capacity

    @property
    def oldest_generation(self) -> int:
        return max(0, self.writes - self.capacity)

    @property
    def nbytes(self) -> int:
        return int(sum(getattr(self, name).nbytes for name in _ARRAYS))

    def new_episode(self) -> None:
        """Mark an episode boundary that `terminated`/`truncated` did not signal (e.g. a reset)."""
        self._next_episode_step = 0

    def write(
        self,
        obs: NDArray,
        action: int,
        reward: float,
        next_obs: NDArray,
        terminated: bool,
        truncated: bool,
    ) -> int:
        """Write one validated transition; returns its slot."""
        slot = self.cursor
        self.obs[slot] = obs
        self.next_obs[slot] = next_obs
        self.actions[slot] = action
        self.rewards[slot] = reward
        self.terminated[slot] = terminated
        self.truncated[slot] = truncated
        self.episode_step[slot] = self._next_episode_step
        self.generation[slot] = self.writes
        self.sample_counts[slot] = 0
        self.writes += 1
        self._next_episode_step = (
            0 if (terminated or truncated) else min(self._next_episode_step + 1, EPISODE_STEP_MAX)
        )
        return slot

    def windows(
        self, slots: NDArray[np.int64], window: int
    ) -> tuple[NDArray, NDArray, NDArray[np.bool_], NDArray[np.bool_]]:
        """(W_t, W_{t+1}, mask_t, mask_{t+1}) for the transitions in `slots`."""
        n = slots.shape[0]
        flat = self.obs.shape[1]
        out_obs = np.empty((n, window, flat), dtype=self.obs_dtype)
        out_next = np.empty((n, window, flat), dtype=self.obs_dtype)
        mask = np.empty((n, window), dtype=np.bool_)
        next_mask = np.empty((n, window), dtype=np.bool_)
        gather_transition_windows(
            self.obs,
            self.next_obs,
            self.episode_step,
            self.generation,
            self.oldest_generation,
            slots,
            out_obs,
            out_next,
            mask,
            next_mask,
        )
        shape = (n, window, *self.obs_shape)
        return out_obs.reshape(shape), out_next.reshape(shape), mask, next_mask

    def state_dict(self) -> dict:
        state = {name: getattr(self, name).copy() for name in _ARRAYS}
        state["writes"] = self.writes
        state["next_episode_step"] = self._next_episode_step
        return state

    def load_state_dict(self, state: dict) -> None:
        for name in _ARRAYS:
            current = getattr(self, name)
            incoming = np.asarray(state[name])
            if incoming.shape != current.shape or incoming.dtype != current.dtype:
                raise ValueError(
                    f"state_dict field {name!r} has shape {incoming.shape} and dtype "
                    f"{incoming.dtype}, this buffer needs {current.shape} {current.dtype}"
                )
        for name in _ARRAYS:
            getattr(self, name)[...] = state[name]
        self.writes = int(state["writes"])
        self._next_episode_step = int(state["next_episode_step"])
