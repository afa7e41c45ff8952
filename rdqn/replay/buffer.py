"""ReplayBuffer = ring storage of transitions + a pluggable sampler.

Swapping uniform for prioritized replay changes one argument (`sampler=`); the buffer validates
every input at this boundary so that a bad call raises `ValueError` and leaves the buffer unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

from rdqn.replay.checks import all_finite, check_slots, check_update, well_typed
from rdqn.replay.samplers import Sampler, UniformSampler
from rdqn.replay.sampling_kernels import check_normalization, importance_weights_kernel
from rdqn.replay.scheme_registry import scheme_of
from rdqn.replay.sizes import check_nbytes, format_bytes, replay_nbytes, storage_nbytes
from rdqn.replay.state_checks import ReplayStateError, entry, integer_field, mapping, refuse
from rdqn.replay.storage import ACTION_MAX, RingStorage, count_stale
from rdqn.validation import check_integer, check_probability, is_integer, shown

__all__ = [
    "Batch",
    "ReplayBuffer",
    "check_obs",
    "check_obs_dtype",
    "check_obs_shape",
    "check_step",
    "replay_nbytes",
]


_FLOAT32_MAX = float(np.finfo(np.float32).max)
_INT64 = np.dtype(np.int64)


def _check_action(action: Any) -> None:
    if (
        isinstance(action, bool)
        or not isinstance(action, (int, np.integer))
        or not 0 <= action <= ACTION_MAX
    ):
        raise ValueError(f"action must be an integer in [0, {ACTION_MAX}], got {action!r}")


def _check_reward(reward: Any) -> None:
    if isinstance(reward, bool) or not isinstance(reward, (int, float, np.integer, np.floating)):
        raise ValueError(f"reward must be a real number, got {reward!r}")
    with np.errstate(over="ignore"):
        if not np.isfinite(np.float32(reward)):
            raise ValueError(f"reward must be finite as float32, got {reward}")


def check_step(action: Any, reward: Any, terminated: Any, truncated: Any) -> None:  # noqa: ANN401
    """``ValueError`` naming the argument unless a transition's action is an integer in [0,
    `ACTION_MAX`], its reward a real number finite as float32 and its flags bools."""
    # Plain Python values (what an environment step gives) pass with a few comparisons; the
    # checks below decide, and name the problem, for anything else.
    if not (type(action) is int and 0 <= action <= ACTION_MAX):
        _check_action(action)
    if not (type(reward) is float and -_FLOAT32_MAX <= reward <= _FLOAT32_MAX):
        _check_reward(reward)
    if not (type(terminated) is bool and type(truncated) is bool):
        for name, flag in (("terminated", terminated), ("truncated", truncated)):
            if not isinstance(flag, (bool, np.bool_)):
                raise ValueError(f"{name} must be a bool, got {flag!r}")


def check_obs(name: str, obs: ArrayLike, shape: tuple[int, ...], target: np.dtype) -> NDArray:
    """``obs`` as stored: a flat array of dtype ``target``; ``ValueError`` naming ``name``
    unless it has ``shape``, a dtype that casts to ``target`` and (floats) finite values."""
    if (
        type(obs) is np.ndarray
        and obs.dtype is target
        and obs.shape == shape
        and obs.flags.c_contiguous
    ):
        # Fast path (an environment's own array): nothing to convert, one compiled check.
        stored = obs if obs.ndim == 1 else obs.reshape(-1)
        if target.kind != "f" or all_finite(stored):
            return stored
    arr = np.asarray(obs)
    if arr.dtype.kind not in "fiub" or not np.can_cast(arr.dtype, target, "same_kind"):
        raise ValueError(f"{name} has dtype {arr.dtype}, which cannot be stored as {target}")
    if arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {arr.shape}")
    with np.errstate(over="ignore", invalid="ignore"):
        stored = arr.astype(target, copy=False).reshape(-1)
    if target.kind == "f" and not np.isfinite(stored).all():
        raise ValueError(
            f"{name} must be finite when stored as {target}, got {arr.reshape(-1)[:8]}"
        )
    return stored


def check_obs_shape(obs_shape: tuple[int, ...] | int) -> tuple[int, ...]:
    """An observation shape as a non-empty tuple of positive ints."""
    shape = (obs_shape,) if isinstance(obs_shape, (int, np.integer)) else tuple(obs_shape)
    if not shape:
        raise ValueError("obs_shape must be a non-empty tuple of positive ints, got ()")
    return tuple(check_integer("obs_shape entries", s, minimum=1) for s in shape)


def check_obs_dtype(obs_dtype: DTypeLike) -> np.dtype:
    """A storage dtype of observations the compiled kernels read: native-order integers,
    bools, float32 and float64."""
    dtype = np.dtype(obs_dtype)
    if dtype.kind not in "fiub" or (dtype.kind == "f" and dtype.itemsize not in (4, 8)):
        raise ValueError(f"obs_dtype must be float32, float64, an integer or bool, got {dtype}")
    if not dtype.isnative:
        raise ValueError(f"obs_dtype must be in native byte order, got {dtype.str}")
    return dtype


@dataclass(frozen=True)
class Batch:
    """A sampled mini-batch. B = batch size, T = window length.

    Attributes:
        obs: (B, T, *obs_shape) windows W_t, zero-padded on the left.
        actions: (B,) int64 a_t.
        rewards: (B,) float32 r_t.
        next_obs: (B, T, *obs_shape) windows W_{t+1} (the last frame is o_{t+1}).
        terminated: (B,) bool; only termination removes the bootstrap term.
        truncated: (B,) bool; a time limit, which still bootstraps.
        indices: (B,) int64 buffer slots.
        probabilities: (B,) float64 P(i) under the sampler.
        weights: (B,) float64 importance-sampling weights.
        generations: (B,) int64 stamp of each slot's occupant when sampled (stale-update guard).
        obs_mask, next_obs_mask: (B, T) bool, True on real frames, False on padding.
    """

    obs: NDArray
    actions: NDArray[np.int64]
    rewards: NDArray[np.float32]
    next_obs: NDArray
    terminated: NDArray[np.bool_]
    truncated: NDArray[np.bool_]
    indices: NDArray[np.int64]
    probabilities: NDArray[np.float64]
    weights: NDArray[np.float64]
    generations: NDArray[np.int64]
    obs_mask: NDArray[np.bool_]
    next_obs_mask: NDArray[np.bool_]

    def __len__(self) -> int:
        return int(self.indices.shape[0])


_new_batch = object.__new__
"""Builds a `Batch` without the frozen dataclass's per-field ``object.__setattr__`` (a third of
the buffer's own cost per sample); `ReplayBuffer.sample` then fills its ``__dict__``."""


class ReplayBuffer:
    """Fixed-capacity replay memory of single-stream transitions with windowed observations.

    Args:
        capacity: number of transitions kept (FIFO: the oldest is overwritten when full).
        obs_shape: shape of one observation.
        window: T, the number of observations per sampled window (1 = plain MLP case).
        sampler: `UniformSampler()` (default), `ProportionalSampler(...)` or
            `RankBasedSampler(...)`.
        seed: seed of the buffer's own `np.random.Generator` (no global RNG is used).
        obs_dtype: storage dtype of observations (float32 by default; uint8 for frames).

    Episodes: a transition that is `terminated` or `truncated` ends its episode; call
    `new_episode()` when an episode ends any other way (e.g. a reset without either flag).
    """

    def __init__(
        self,
        capacity: int,
        obs_shape: tuple[int, ...] | int,
        *,
        window: int = 1,
        sampler: Sampler | None = None,
        seed: int | None = None,
        obs_dtype: DTypeLike = np.float32,
    ) -> None:
        capacity = check_integer("capacity", capacity, minimum=1)
        self.window = check_integer("window", window, minimum=1)
        self.obs_shape = check_obs_shape(obs_shape)
        dtype = check_obs_dtype(obs_dtype)
        self.sampler: Sampler = UniformSampler() if sampler is None else sampler
        if not isinstance(self.sampler, Sampler):
            raise ValueError(f"sampler must implement the Sampler protocol, got {sampler!r}")
        self._check_size(capacity, dtype)
        self._checked_batch = 0  # the largest batch whose windows are known to fit in memory
        self.storage = RingStorage(capacity, self.obs_shape, dtype)
        self.sampler.attach(capacity)
        self.rng = np.random.default_rng(seed)
        self.stale_updates = 0

    def _check_size(self, capacity: int, dtype: np.dtype) -> None:
        """`ReplaySizeError` when the whole buffer (`replay_nbytes`) would not fit in this
        machine's memory, before any part of it is allocated."""
        storage = storage_nbytes(capacity, math.prod(self.obs_shape), dtype.itemsize)
        parts = f"storage {format_bytes(storage)}"
        # A sampler of no registered scheme counts nothing here, and checks its own size when
        # attached.
        scheme, sampled = scheme_of(self.sampler), 0
        if scheme is not None and scheme.keeps:
            sampled = scheme.nbytes(capacity)
            parts += f", the {scheme.name} sampler's {scheme.keeps} {format_bytes(sampled)}"
        check_nbytes(
            f"ReplayBuffer of capacity {capacity:,} × obs_shape {self.obs_shape} of {dtype}",
            storage + sampled,
            parts,
            "choose a smaller capacity or observation",
        )

    def _check_batch(self, batch_size: int) -> None:
        """`ReplaySizeError` when a batch's windows (o_t and o_{t+1}: 2 B T observations, and
        their masks) would not fit in this machine's memory, before they are allocated."""
        frames = 2 * batch_size * self.window
        nbytes = frames * (math.prod(self.obs_shape) * self.storage.obs_dtype.itemsize + 1)
        check_nbytes(
            f"a batch of {batch_size:,} windows of {self.window:,} observations",
            nbytes,
            advice="choose a smaller batch or window",
        )
        self._checked_batch = batch_size

    # ------------------------------------------------------------------ properties
    @property
    def capacity(self) -> int:
        return self.storage.capacity

    def __len__(self) -> int:
        return self.storage.size

    @property
    def cursor(self) -> int:
        """Slot that the next `add` writes."""
        return self.storage.cursor

    @property
    def nbytes(self) -> int:
        """Bytes held by the storage arrays and the sampler's per-slot state."""
        return self.storage.nbytes + self.sampler.nbytes

    @property
    def sample_counts(self) -> NDArray[np.int64]:
        """How often each stored slot's current occupant has been sampled (copy)."""
        return self.storage.sample_counts[: len(self)].copy()

    def ages(self, indices: ArrayLike) -> NDArray[np.int64]:
        """Age of the occupants of `indices` (stored slots) in writes: 0 = newest transition."""
        slots = check_slots("indices", indices, len(self))
        return self.storage.writes - 1 - self.storage.generation[slots]

    def probabilities(self) -> NDArray[np.float64]:
        """P(i) of every stored slot under the sampler's current priorities."""
        return self.sampler.probabilities(len(self))

    def importance_weights(self, indices: ArrayLike, beta: float) -> NDArray[np.float64]:
        """The IS weights of stored slots under the current priorities, as a batch of them drawn
        now would get (the sampler's normalisation and clip; "batch" normalises over
        ``indices``); all 1 for a sampler without weights (uniform replay)."""
        slots = check_slots("indices", indices, len(self))
        beta = float(check_probability("beta", beta))
        sampler = self.sampler
        if not hasattr(sampler, "is_normalization"):
            return np.ones(slots.shape[0])
        probabilities = self.probabilities()
        mode, clip = check_normalization(sampler.is_normalization, sampler.max_weight)
        out = np.empty(slots.shape[0])
        importance_weights_kernel(
            probabilities[slots], probabilities.min(), len(self), beta, mode, clip, out
        )
        return out

    # ------------------------------------------------------------------ writing
    def add(
        self,
        obs: ArrayLike,
        action: int,
        reward: float,
        next_obs: ArrayLike,
        terminated: bool,
        truncated: bool,
    ) -> int:
        """Store transition (o_t, a_t, r_t, o_{t+1}, terminated_t, truncated_t); returns its slot.

        The new transition gets the sampler's maximum priority so it is replayed at least once soon.
        """
        shape, dtype = self.obs_shape, self.storage.obs_dtype
        o = check_obs("obs", obs, shape, dtype)
        o_next = check_obs("next_obs", next_obs, shape, dtype)
        check_step(action, reward, terminated, truncated)
        slot = self.storage.write(o, int(action), float(reward), o_next, terminated, truncated)
        self.sampler.on_add(slot)
        return slot

    def new_episode(self) -> None:
        """Mark that the next `add` starts a new episode."""
        self.storage.new_episode()

    # ------------------------------------------------------------------ sampling
    def sample(self, batch_size: int, *, beta: float = 1.0) -> Batch:
        """Draw a batch of `batch_size` transitions with their windows and IS weights."""
        size = self.storage.size
        if size == 0:
            raise ValueError("cannot sample from an empty buffer: add transitions first")
        if not (type(batch_size) is int and 1 <= batch_size <= size):
            batch_size = check_integer("batch_size", batch_size, minimum=1, maximum=size)
        if not (type(beta) is float and 0.0 <= beta <= 1.0):
            beta = float(check_probability("beta", beta))
        if batch_size > self._checked_batch:
            self._check_batch(batch_size)
        indices, probabilities, weights = self.sampler.sample(size, batch_size, beta, self.rng)
        windows, masks, integers, flags, rewards = self.storage.gather(indices, self.window)
        batch = _new_batch(Batch)
        # A dict literal, not keyword arguments: the batch is built at every training step.
        batch.__dict__.update(
            {
                "obs": windows[0],
                "actions": integers[0],
                "rewards": rewards,
                "next_obs": windows[1],
                "terminated": flags[0],
                "truncated": flags[1],
                "indices": indices,
                "probabilities": probabilities,
                "weights": weights,
                "generations": integers[1],
                "obs_mask": masks[0],
                "next_obs_mask": masks[1],
            }
        )
        return batch

    def update_priorities(self, batch: Batch, td_errors: ArrayLike) -> int:
        """Record |delta_i| for the batch's transitions; returns how many were stale (skipped).

        `td_errors` are magnitudes |delta_i| (finite, >= 0), one per batch row. An entry whose slot
        has been overwritten since the batch was sampled is skipped and counted in
        `stale_updates`, never applied to the new occupant. Duplicated slots: the last entry wins.
        ``ValueError``, the buffer unchanged, for a batch whose indices are not stored slots, for
        td_errors that are not finite magnitudes, or for an update the sampler refuses (e.g. one
        that would leave a zero total priority).
        """
        if not isinstance(batch, Batch):
            raise ValueError(f"batch must be a Batch from sample(), got {type(batch).__name__}")
        indices, magnitudes, generations = batch.indices, td_errors, batch.generations
        size = self.storage.size
        stale = -1
        if (
            well_typed(indices, magnitudes)
            and type(generations) is np.ndarray
            and generations.dtype is _INT64
            and generations.shape == indices.shape
        ):  # the learner's arrays: their values are checked while the stale rows are counted
            stale = count_stale(self.storage.generation, indices, generations, magnitudes, size)
        if stale < 0:  # other arrays, or a bad value: checked again, to convert or to name it
            indices, magnitudes = check_update(
                indices,
                magnitudes,
                size,
                ("batch.indices", "td_errors"),
                " (one |delta| per batch row: pass np.abs(delta); a non-finite value means "
                "training diverged)",
            )
            if not (
                type(generations) is np.ndarray
                and generations.dtype.kind in "iu"
                and generations.shape == indices.shape
            ):
                raise ValueError(
                    f"batch.generations must be integers, one per index {indices.shape}, got "
                    f"{getattr(generations, 'dtype', type(generations).__name__)} "
                    f"{getattr(generations, 'shape', '')}".rstrip()
                )
            generations = generations.astype(np.int64, copy=False)
            stale = count_stale(self.storage.generation, indices, generations, magnitudes, size)
        if stale:
            live = self.storage.generation[indices] == generations
            self.sampler.update_priorities(indices[live], magnitudes[live])
            self.stale_updates += stale
        else:
            self.sampler.update_priorities(indices, magnitudes)
        return stale

    # ------------------------------------------------------------------ persistence
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue identically: data, priorities, cursor and RNG state."""
        return {
            "capacity": self.capacity,
            "obs_shape": self.obs_shape,
            "window": self.window,
            "storage": self.storage.state_dict(),
            "sampler": self.sampler.state_dict(),
            "rng": self.rng.bit_generator.state,
            "stale_updates": self.stale_updates,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from a `state_dict` (of a buffer of the same capacity, observation shape and
        window), checked whole before anything changes: `ReplayStateError` (a ``ValueError``)
        naming the field for a state that is not one `state_dict` could have written
        (`RingStorage.check_state`, the sampler's `load_state_dict`), and for a sampler whose
        stored slots are not the storage's. A sampler state without its stored slots (saved
        before they were kept) gets the storage's size."""
        state = mapping(state, "replay state")
        for key, mine in (("capacity", self.capacity), ("window", self.window)):
            theirs = entry(state, key)
            if not (is_integer(theirs) and theirs == mine):
                refuse(f"state_dict has {key}={shown(theirs)}, this buffer has {key}={mine}")
        theirs = entry(state, "obs_shape")
        if not (
            isinstance(theirs, tuple | list)
            and all(is_integer(n) for n in theirs)
            and tuple(theirs) == self.obs_shape
        ):
            refuse(f"state_dict has obs_shape={shown(theirs)}, this buffer has {self.obs_shape}")
        try:
            size = self.storage.check_state(entry(state, "storage"))
        except ReplayStateError as err:
            raise ReplayStateError(f"replay state, storage: {err}") from None
        sampler_state = dict(mapping(entry(state, "sampler"), "sampler state"))
        stored = sampler_state.setdefault("stored", size)
        if not (is_integer(stored) and stored == size):
            refuse(
                f"replay state, sampler: stored is {shown(stored)}, but the storage holds "
                f"{size:,} transitions"
            )
        rng = type(self.rng.bit_generator)()
        try:
            rng.state = entry(state, "rng")
        except (KeyError, TypeError, ValueError, OverflowError) as err:
            refuse(f"replay state: rng is not a {type(rng).__name__} state ({err})")
        stale_updates = integer_field(state, "stale_updates", 0, 1 << 62)
        try:
            self.sampler.load_state_dict(sampler_state)
        except ReplayStateError as err:
            raise ReplayStateError(f"replay state, sampler: {err}") from None
        self.storage.load_checked(state["storage"])
        self.rng.bit_generator.state = rng.state
        self.stale_updates = stale_updates
