"""Observation windows for recurrent Q-networks, shared by acting and by replay.

The recurrent state at step t of an episode is the window W_t = [o_{t-T+1}, ..., o_t] of the last T
observations *of the same episode*, left-padded with zeros when t < T - 1. Each window is fed to
the network from a zero hidden state, so no state is carried across samples.

Observations are stored once per step in a ring of frames; a window is gathered by index
arithmetic: position p of the window (0 = oldest) reads the frame `back = T - 1 - p` steps before
the newest one, or zero when `back` exceeds the window's *lookback* (the number of earlier frames
that belong to the same episode and are still stored). `fill_window` is the one routine that does
this: the `WindowBuilder` used while acting and the replay buffer's batch gatherer both call it, so
the window the agent acted on at step t is bit for bit the window replay returns for transition t,
with one exception: a window never reads a slot the ring has overwritten, which it zero-pads
instead. Replay's lookback for the occupant of generation g at episode step t is
k = min(t, T - 1, g - oldest stored generation), so in the first T - 1 rows after an overwritten
predecessor the positions p < T - 1 - k that the agent saw as real frames are zeros (mask False).
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

from rdqn.replay.kernels.compiled import kernel
from rdqn.replay.sizes import check_nbytes
from rdqn.validation import check_integer, is_integer

__all__ = ["WindowBuilder", "gather_windows"]


@numba.njit(cache=True, nogil=True, inline="always")
def fill_window(
    frames: NDArray,
    last: int,
    lookback: int,
    length: int,
    out: NDArray,
    mask: NDArray[np.bool_],
    row: int,
) -> None:
    """Write out[row, :length], the `length` frames ending at ring slot `last`.

    Position p reads the frame `back = length - 1 - p` slots before `last` when back <= lookback
    and is zero padding (mask False) otherwise.
    """
    capacity = frames.shape[0]
    width = frames.shape[1]
    for p in range(length):
        back = length - 1 - p
        if back <= lookback:
            slot = last - back
            if slot < 0:
                slot += capacity
            for d in range(width):
                out[row, p, d] = frames[slot, d]
            mask[row, p] = True
        else:
            for d in range(width):
                out[row, p, d] = 0
            mask[row, p] = False


@kernel
def gather_windows_kernel(
    frames: NDArray,
    last: NDArray[np.int64],
    lookback: NDArray[np.int64],
    out: NDArray,
    mask: NDArray[np.bool_],
) -> None:
    for b in range(last.shape[0]):
        fill_window(frames, last[b], lookback[b], out.shape[1], out, mask, b)


def gather_windows(
    frames: NDArray, last: ArrayLike, lookback: ArrayLike, window: int
) -> tuple[NDArray, NDArray[np.bool_]]:
    """Windows of `window` frames ending at ring slots `last`.

    Args:
        frames: ring of frames, shape (C, *frame_shape).
        last: (B,) ring slot of each window's newest frame.
        lookback: (B,) number of frames before `last` that may be read (older positions are
            zero padding).
        window: T, the window length.

    Returns:
        `(windows, mask)`: windows of shape (B, T, *frame_shape) in the frames' dtype and a
        (B, T) boolean mask that is True on real frames and False on padding.

    ``ValueError`` for a window that needs more memory than the machine has
    (`rdqn.replay.sizes`), a slot outside the ring, a negative lookback, or a window that would
    read past the ring (lookback and T - 1 both at least C: a frame before the oldest).
    """
    window = check_integer("window", window, minimum=1)
    frames = np.asarray(frames)
    if frames.ndim < 1 or frames.shape[0] == 0:
        raise ValueError(f"frames must be a ring of at least one frame, got shape {frames.shape}")
    last_arr = np.ascontiguousarray(last, dtype=np.int64).reshape(-1)
    lookback_arr = np.ascontiguousarray(lookback, dtype=np.int64).reshape(-1)
    if last_arr.shape != lookback_arr.shape:
        raise ValueError(
            f"last and lookback must have one entry per window, got {last_arr.shape[0]} and "
            f"{lookback_arr.shape[0]}"
        )
    capacity = frames.shape[0]
    width = math.prod(frames.shape[1:])
    check_nbytes(
        f"gather_windows of {last_arr.shape[0]:,} windows × window {window:,} × frames of "
        f"{width:,} {frames.dtype} values",
        last_arr.shape[0] * window * (width * frames.itemsize + 1),
        advice="choose a smaller window or batch",
    )
    if last_arr.size:
        if not (last_arr.min() >= 0 and last_arr.max() < capacity):
            bad = last_arr[(last_arr < 0) | (last_arr >= capacity)][0]
            raise ValueError(f"last must be ring slots in [0, {capacity}), got {bad}")
        if lookback_arr.min() < 0:
            raise ValueError(f"lookback must be >= 0, got {lookback_arr.min()}")
        if window > capacity and lookback_arr.max() >= capacity:
            raise ValueError(
                f"lookback must be below the ring's {capacity} frames when the window ({window}) "
                f"is longer, got {lookback_arr.max()}: the window would read before the ring"
            )
    flat = frames.reshape(frames.shape[0], -1)
    out = np.empty((last_arr.shape[0], window, flat.shape[1]), dtype=frames.dtype)
    mask = np.empty((last_arr.shape[0], window), dtype=np.bool_)
    gather_windows_kernel(flat, last_arr, lookback_arr, out, mask)
    return out.reshape((last_arr.shape[0], window, *frames.shape[1:])), mask


class WindowBuilder:
    """The agent's view while acting: the last T observations of the current episode.

    Usage: `reset(o_0)` at the start of each episode, `append(o_{t+1})` after each step, and
    `window()` for W_t. Observations are converted to `dtype` exactly as the replay buffer stores
    them, which is what makes acting and replay windows identical.
    """

    def __init__(self, window: int, obs_shape: tuple[int, ...], dtype: DTypeLike = np.float32):
        self.length = check_integer("window", window, minimum=1)
        self.obs_shape = tuple(check_integer("obs_shape entries", s, minimum=1) for s in obs_shape)
        self.dtype = np.dtype(dtype)
        check_nbytes(
            f"WindowBuilder of window {self.length:,} × obs_shape {self.obs_shape} of {self.dtype}",
            self.length * math.prod(self.obs_shape) * self.dtype.itemsize,
            advice="choose a smaller window or observation",
        )
        self._frames = np.zeros((self.length, *self.obs_shape), dtype=self.dtype)
        self._flat = self._frames.reshape(self.length, -1)  # a view: the kernel's frames
        self._newest = np.zeros(1, np.int64)  # the kernel's arguments, kept to not allocate
        self._lookback = np.zeros(1, np.int64)
        self._last = -1
        self._count = 0

    def reset(self, obs: ArrayLike) -> None:
        """Start a new episode whose first observation is `obs`."""
        self._count = 0
        self._last = -1
        self.append(obs)

    def append(self, obs: ArrayLike) -> None:
        """Add the next observation of the current episode."""
        arr = np.asarray(obs)
        if arr.shape != self.obs_shape:
            raise ValueError(f"obs must have shape {self.obs_shape}, got {arr.shape}")
        self._last = (self._last + 1) % self.length
        self._frames[self._last] = arr.astype(self.dtype, copy=False)
        self._count += 1

    @property
    def steps(self) -> int:
        """Observations seen in the current episode."""
        return self._count

    def state_dict(self) -> dict[str, Any]:
        """The episode's last frames (copied), the newest one's slot and the frames seen."""
        return {"frames": self._frames.copy(), "last": self._last, "count": self._count}

    def load_state_dict(self, state: Any) -> None:  # noqa: ANN401
        """Go on with the episode `state_dict` saved; ``ValueError`` naming the entry unless
        it is one a builder of this window and shape could have saved (nothing changes)."""
        if not isinstance(state, dict) or sorted(state) != ["count", "frames", "last"]:
            raise ValueError("window state must be a dict of frames, last and count")
        frames, last, count = state["frames"], state["last"], state["count"]
        if not (
            isinstance(frames, np.ndarray)
            and frames.shape == self._frames.shape
            and frames.dtype == self.dtype
            and bool(np.isfinite(frames).all())
        ):
            raise ValueError(
                f"window frames must be finite, of shape {self._frames.shape} and dtype "
                f"{self.dtype}"
            )
        if not (is_integer(count) and count >= 1 and is_integer(last)):
            raise ValueError(f"window count must be an integer >= 1, got {count!r}")
        if last != (count - 1) % self.length:
            raise ValueError(
                f"window last is {last!r}; {count:,} frames put it at slot "
                f"{(count - 1) % self.length}"
            )
        self._frames[...] = frames
        self._last, self._count = int(last), int(count)

    def window_and_mask(self) -> tuple[NDArray, NDArray[np.bool_]]:
        if self._count == 0:
            raise RuntimeError("call reset(obs) before asking for a window")
        self._newest[0] = self._last
        self._lookback[0] = min(self._count - 1, self.length - 1)
        window = np.empty((1, self.length, self._flat.shape[1]), dtype=self.dtype)
        mask = np.empty((1, self.length), dtype=np.bool_)
        gather_windows_kernel(self._flat, self._newest, self._lookback, window, mask)
        return window[0].reshape(self._frames.shape), mask[0]

    def window(self) -> NDArray:
        """W_t, shape (T, *obs_shape), zero-padded on the left early in an episode."""
        return self.window_and_mask()[0]
