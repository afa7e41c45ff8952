"""Ring storage of transitions, one row per environment step.

Step t of an episode stores (o_t, a_t, r_t, o_{t+1}, terminated_t, truncated_t) plus two
bookkeeping integers:

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

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import DTypeLike, NDArray

from rdqn.replay.checks import check_slots
from rdqn.replay.kernels.compiled import kernel
from rdqn.replay.sizes import check_nbytes, storage_nbytes
from rdqn.replay.state_checks import (
    array_field,
    entry,
    integer_field,
    mapping,
    refuse,
    require_finite,
    require_nonnegative,
)
from rdqn.replay.windows import fill_window
from rdqn.validation import check_integer

__all__ = ["ACTION_MAX", "RingStorage", "Stacked"]

ACTION_MAX = int(np.iinfo(np.int32).max)
"""Actions are stored as int32 (discrete action spaces are far smaller)."""
EPISODE_STEP_MAX = int(np.iinfo(np.int32).max)
"""`episode_step` saturates here; windows only ever look T - 1 steps back."""
WRITES_MAX = 1 << 62
"""The most writes a loaded state may count (the int64 generation stamps them): 10^18 steps,
beyond any run."""
_INT64, _BOOL, _FLOAT32 = np.dtype(np.int64), np.dtype(np.bool_), np.dtype(np.float32)
_ACTIONS, _EPISODE_STEP, _COUNTS = 0, 1, 2
"""Rows of `RingStorage`'s stacked int32 columns."""
_ROWS = (
    "obs",
    "next_obs",
    "actions",
    "episode_step",
    "sample_counts",
    "terminated",
    "truncated",
)
"""The columns that are rows (views) of a stack."""

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


@kernel
def gather_transitions_kernel(
    frames: NDArray,
    small: NDArray[np.int32],
    stored_flags: NDArray[np.bool_],
    rewards: NDArray[np.float32],
    generation: NDArray[np.int64],
    oldest: int,
    slots: NDArray[np.int64],
    count: bool,
    out_windows: NDArray,
    out_masks: NDArray[np.bool_],
    out_integers: NDArray[np.int64],
    out_flags: NDArray[np.bool_],
    out_rewards: NDArray[np.float32],
) -> None:
    """Everything a batch holds about each slot b, in one pass: out_windows[0, b] = W_t and
    out_windows[1, b] = W_{t+1} (W_t shifted by one with o_{t+1} at the end) with their masks,
    out_integers[:, b] = (a_t, generation), out_flags[:, b] = (terminated, truncated) and r_t;
    with ``count``, sample_counts[s] += 1 for every sampled slot (duplicates counted each
    time). The storage comes stacked by dtype (`RingStorage`: frames = (obs, next_obs), small =
    (actions, episode_step, sample_counts), stored_flags = (terminated, truncated)) and the
    outputs stacked in pairs, so that a batch costs few allocations and arguments."""
    window = out_windows.shape[2]
    obs, next_obs = frames[0], frames[1]
    actions, episode_step, sample_counts = small[_ACTIONS], small[_EPISODE_STEP], small[_COUNTS]
    this, after = out_windows[0], out_windows[1]
    mask, next_mask = out_masks[0], out_masks[1]
    for b in range(slots.shape[0]):
        s = slots[b]
        lookback = min(episode_step[s], window - 1, generation[s] - oldest)
        fill_window(obs, s, lookback, window, this, mask, b)
        fill_window(obs, s, lookback, window - 1, after, next_mask, b)
        for d in range(next_obs.shape[1]):
            after[b, window - 1, d] = next_obs[s, d]
        next_mask[b, window - 1] = True
        out_integers[0, b] = actions[s]
        out_integers[1, b] = generation[s]
        out_flags[0, b] = stored_flags[0, s]
        out_flags[1, b] = stored_flags[1, s]
        out_rewards[b] = rewards[s]
        if count:
            sample_counts[s] += 1


@kernel
def count_stale(
    generation: NDArray[np.int64],
    slots: NDArray[np.int64],
    sampled: NDArray[np.int64],
    magnitudes: NDArray[np.float64],
    size: int,
) -> int:
    """How many `slots` hold another occupant than the one of generation `sampled`: the
    stale-update guard of a priority update, which checks the update's values in the same pass
    (`rdqn.replay.checks.check_update` for the messages): -1, with nothing read past the
    arrays, when a slot is not in [0, size) or a magnitude is not finite and >= 0."""
    stale = 0
    for k in range(slots.shape[0]):
        if slots[k] < 0 or slots[k] >= size:
            return -1
        if not (magnitudes[k] >= 0.0 and np.isfinite(magnitudes[k])):
            return -1
        stale += generation[slots[k]] != sampled[k]
    return stale


Stacked = tuple[NDArray, NDArray[np.bool_], NDArray[np.int64], NDArray[np.bool_], NDArray]
"""What `RingStorage.gather` returns for B slots (T = window length), each output stacked with
its pair: windows (2, B, T, *obs_shape) = (W_t, W_{t+1}), masks (2, B, T) = (mask_t,
mask_{t+1}), integers (2, B) = (a_t, generation), flags (2, B) = (terminated, truncated) and
rewards (B,) float32."""


class RingStorage:
    """Fixed-capacity FIFO of transitions; the oldest row is overwritten when full."""

    def __init__(self, capacity: int, obs_shape: tuple[int, ...], obs_dtype: DTypeLike) -> None:
        self.capacity = capacity
        self.obs_shape = obs_shape
        self.obs_dtype = np.dtype(obs_dtype)
        flat = math.prod(obs_shape)  # a Python int: NumPy's int64 product wraps
        check_nbytes(
            f"RingStorage of capacity {capacity:,} × obs_shape {obs_shape} of {self.obs_dtype}",
            storage_nbytes(capacity, flat, self.obs_dtype.itemsize),
            advice="choose a smaller capacity or observation",
        )
        # The columns are stacked by dtype and each named column is a (contiguous) row of its
        # stack: the gather kernel takes five arrays instead of nine, which counts at one batch
        # per training step (a compiled call pays for each array argument).
        self._frames = np.zeros((2, capacity, flat), dtype=self.obs_dtype)
        self._small = np.zeros((3, capacity), dtype=np.int32)
        self._flags = np.zeros((2, capacity), dtype=np.bool_)
        self._name_rows()
        self.rewards = np.zeros(capacity, dtype=np.float32)
        self.generation = np.full(capacity, -1, dtype=np.int64)
        self._width = flat
        self._reshape = len(obs_shape) > 1
        self.writes = 0
        self._next_episode_step = 0

    def _name_rows(self) -> None:
        self.obs, self.next_obs = self._frames
        self.actions = self._small[_ACTIONS]
        self.episode_step = self._small[_EPISODE_STEP]
        self.sample_counts = self._small[_COUNTS]
        self.terminated, self.truncated = self._flags

    def __getstate__(self) -> dict:
        # A pickled view is a copy of its own: the rows are named again from the stacks instead.
        state = self.__dict__.copy()
        for name in _ROWS:
            del state[name]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._name_rows()

    @property
    def size(self) -> int:
        return min(self.writes, self.capacity)

    @property
    def cursor(self) -> int:
        """The slot the next write goes to."""
        return self.writes % self.capacity

    @property
    def oldest_generation(self) -> int:
        overwritten = self.writes - self.capacity  # read at every batch: no call to max()
        return overwritten if overwritten > 0 else 0

    @property
    def nbytes(self) -> int:
        return int(sum(getattr(self, name).nbytes for name in _ARRAYS))

    @property
    def next_episode_step(self) -> int:
        """The episode step the next `write` gets (0: it begins an episode)."""
        return self._next_episode_step

    def stacks(self) -> tuple[NDArray, NDArray[np.int32], NDArray[np.bool_], NDArray[np.float32]]:
        """The columns as the kernels read them: frames (obs, next_obs), the int32 stack
        (actions, episode_step, sample_counts), the flags (terminated, truncated), rewards."""
        return self._frames, self._small, self._flags, self.rewards

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

    def gather(self, slots: NDArray[np.int64], window: int, *, count: bool = True) -> Stacked:
        """The transitions in `slots` (valid int64 slots) with their windows, in one compiled
        pass; with ``count``, each sampled slot's sample count goes up by one. The outputs come
        stacked (`Stacked`): the caller takes the views it needs, with no tuple of views built
        in between."""
        n = slots.shape[0]
        # dtype objects, not types, and positional: NumPy then skips converting them per call.
        integers = np.empty((2, n), _INT64)
        windows = np.empty((2, n, window, self._width), self.obs_dtype)
        masks = np.empty((2, n, window), _BOOL)
        flags = np.empty((2, n), _BOOL)
        rewards = np.empty(n, _FLOAT32)
        gather_transitions_kernel(
            self._frames,
            self._small,
            self._flags,
            self.rewards,
            self.generation,
            self.oldest_generation,
            slots,
            count,
            windows,
            masks,
            integers,
            flags,
            rewards,
        )
        if self._reshape:
            windows = windows.reshape((2, n, window, *self.obs_shape))
        return windows, masks, integers, flags, rewards

    def windows(
        self, slots: NDArray[np.int64], window: int
    ) -> tuple[NDArray, NDArray, NDArray[np.bool_], NDArray[np.bool_]]:
        """(W_t, W_{t+1}, mask_t, mask_{t+1}) for the transitions in `slots` (stored slots; not
        counted as sampled)."""
        window = check_integer("window", window, minimum=1)
        windows, masks, *_ = self.gather(
            check_slots("slots", slots, self.size), window, count=False
        )
        return windows[0], windows[1], masks[0], masks[1]

    def state_dict(self) -> dict:
        state = {name: getattr(self, name).copy() for name in _ARRAYS}
        state["writes"] = self.writes
        state["next_episode_step"] = self._next_episode_step
        return state

    def check_state(self, state: Mapping[str, Any]) -> int:
        """The number of stored rows of a `state_dict` this storage can load; `ReplayStateError`
        naming the field otherwise (nothing is changed). Checked: every array's type, shape and
        dtype; the counters' ranges; each stored row's generation, which the number of writes
        determines (slot s holds the latest write w < writes with w = s mod capacity; -1 where
        none), so no window can read before the ring's oldest row; actions, episode steps and
        sample counts >= 0; rewards and observations finite; flags that are 0 or 1; episode
        steps that count on from row to row as `write` numbers them."""
        state = mapping(state, "storage state")
        for name in _ARRAYS:
            current = getattr(self, name)
            array_field(state, name, current.shape, current.dtype)
        writes = integer_field(state, "writes", 0, WRITES_MAX)
        integer_field(state, "next_episode_step", 0, EPISODE_STEP_MAX)
        size = min(writes, self.capacity)
        expected = np.full(self.capacity, -1, np.int64)
        slots = np.arange(size, dtype=np.int64)
        expected[:size] = writes - 1 - (writes - 1 - slots) % self.capacity
        generation = state["generation"]
        if not np.array_equal(generation, expected):
            s = int(np.argmax(generation != expected))
            refuse(
                f"generation[{s}] is {generation[s]}, but after {writes:,} writes into "
                f"{self.capacity:,} slots slot {s} holds "
                + ("no transition (-1)" if s >= size else f"generation {expected[s]}")
            )
        for name in ("actions", "episode_step", "sample_counts"):
            require_nonnegative(name, state[name])
        for name in ("rewards", "obs", "next_obs"):
            if state[name].dtype.kind == "f":
                require_finite(name, state[name])
        for name in ("terminated", "truncated"):
            raw = state[name].view(np.uint8)
            if raw.size and raw.max() > 1:
                k = int(np.argmax(raw > 1))
                refuse(f"{name}[{k}] is the byte {raw[k]}, not a bool (0 or 1)")
        self._check_episode_steps(state, writes, size)
        return size

    def _check_episode_steps(self, state: Mapping[str, Any], writes: int, size: int) -> None:
        """Each stored row's episode step, in write order, is 0 (an episode began: after a
        terminal row, or a reset `new_episode` marked) or one more than the row before it (its
        predecessor not terminal), as `write` numbers them; ``next_episode_step`` likewise
        follows the newest row. (The oldest row's predecessor is gone: any step.) Windows reach
        back as far as the episode step says, so a wrong one would gather another episode's
        observations into a window."""
        slots = np.arange(writes - size, writes, dtype=np.int64) % self.capacity
        steps = state["episode_step"][slots].astype(np.int64)
        ended = state["terminated"][slots] | state["truncated"][slots]
        following = np.minimum(steps + 1, EPISODE_STEP_MAX)
        bad = (steps[1:] != 0) & (ended[:-1] | (steps[1:] != following[:-1]))
        if bad.any():
            k = int(np.argmax(bad)) + 1
            before = "ends its episode" if ended[k - 1] else f"has episode_step {steps[k - 1]}"
            refuse(
                f"episode_step[{slots[k]}] is {steps[k]}, but the row written before it (slot "
                f"{slots[k - 1]}) {before}: an episode step is 0 or one more than the step "
                "before it"
            )
        following_step = int(entry(state, "next_episode_step"))
        if size == 0:
            if following_step != 0:
                refuse(f"next_episode_step is {following_step:,}, but no row is stored: it is 0")
            return
        allowed = {0} if ended[-1] else {0, int(following[-1])}
        if following_step not in allowed:
            refuse(
                f"next_episode_step is {following_step:,}, but after the newest row (slot "
                f"{slots[-1]}) it is " + " or ".join(f"{step:,}" for step in sorted(allowed))
            )

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Load a `state_dict`, if `check_state` accepts it (else nothing changes)."""
        self.check_state(state)
        self.load_checked(state)

    def load_checked(self, state: Mapping[str, Any]) -> None:
        """Load a `state_dict` that `check_state` accepted."""
        for name in _ARRAYS:
            getattr(self, name)[...] = state[name]
        self.writes = int(entry(state, "writes"))
        self._next_episode_step = int(entry(state, "next_episode_step"))
