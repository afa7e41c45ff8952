"""Checks of the index and priority arrays that cross the replay API.

Every public replay call that takes slots or priorities (`ReplayBuffer.update_priorities`,
`ReplayBuffer.ages`, `Sampler.update_priorities`, `SumTree.update`) raises ``ValueError`` naming
the argument for input it cannot use, before anything is written: indices that are not integers
(floats, objects, bools), not one-dimensional, negative or past the end; priorities that are not
real numbers, not finite or negative, or not one per index. NumPy would otherwise raise
``IndexError``/``TypeError``, wrap negative indices silently, or, in a compiled kernel, write out
of bounds.

On the learner's hot path (`check_update`: int64 indices and float64 magnitudes, as a sampler
returns them) the values are checked in one compiled O(B) pass, well under a microsecond; other
input goes through the vectorized NumPy checks, which also build the error messages.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from rdqn.replay.kernels.compiled import kernel

__all__ = [
    "all_finite",
    "check_draw",
    "check_magnitudes",
    "check_slot",
    "check_slots",
    "check_update",
    "slots_in_range",
    "well_typed",
]

_INT64 = np.dtype(np.int64)
_FLOAT64 = np.dtype(np.float64)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"


@kernel
def slots_in_range(indices: NDArray[np.int64], size: int) -> bool:
    """Whether every index is in [0, size)."""
    k, n = 0, indices.shape[0]
    while k < n and 0 <= indices[k] < size:
        k += 1
    return k == n


@kernel
def all_finite(values: NDArray) -> bool:
    """Whether every value of a 1-D float array is finite."""
    k, n = 0, values.shape[0]
    while k < n and np.isfinite(values[k]):
        k += 1
    return k == n


def check_slots(name: str, indices: Any, size: int) -> NDArray[np.int64]:
    """``indices`` as a contiguous 1-D int64 array, if every entry is an integer in [0, size)."""
    if (
        type(indices) is np.ndarray
        and indices.dtype is _INT64
        and indices.ndim == 1
        and indices.flags.c_contiguous
        and slots_in_range(indices, size)
    ):
        return indices  # the learner's case (slots a sampler drew): one compiled pass
    array = indices if isinstance(indices, np.ndarray) else np.asarray(indices)
    if array.dtype.kind not in "iu":
        raise ValueError(
            f"{name} must be an array of integer slots, got dtype {array.dtype}: {_shown(indices)}"
        )
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    if array.size:
        # Checked in the caller's dtype: a uint64 above 2**63 would wrap to a negative int64.
        low, high = array.min(), array.max()
        if low < 0 or high >= size:
            bad = array[(array < 0) | (array >= size)][0]
            raise ValueError(f"{name} must be slots in [0, {size}), got {bad}")
    if array.dtype != np.int64 or not array.flags.c_contiguous:
        array = np.ascontiguousarray(array, dtype=np.int64)
    return array


def check_draw(size: int, batch_size: int, stored: int) -> None:
    """``ValueError`` unless a sampler holding slots [0, ``stored``) may draw ``batch_size`` of
    the first ``size``: 1 <= size <= stored (the buffer passes its size) and batch_size >= 1.
    Before any kernel reads them: a size past the stored slots would draw slots never stored."""
    if 1 <= size <= stored and batch_size >= 1:
        return
    if stored == 0:
        raise ValueError("cannot sample: no transition is stored")
    if not 1 <= size <= stored:
        raise ValueError(
            f"size must be the number of stored transitions, 1 to {stored:,}, got {_shown(size)}"
        )
    raise ValueError(f"batch_size must be >= 1, got {_shown(batch_size)}")


def check_slot(slot: Any, size: int) -> int:
    """``slot`` as an ``int``, if it is an integer in [0, size)."""
    if (
        isinstance(slot, bool | np.bool_)
        or not isinstance(slot, int | np.integer)
        or not 0 <= slot < size
    ):
        raise ValueError(f"slot must be an integer in [0, {size}), got {_shown(slot)}")
    return int(slot)


def check_magnitudes(name: str, values: Any, count: int, hint: str = "") -> NDArray[np.float64]:
    """``values`` as a 1-D float64 array of ``count`` finite numbers >= 0 (``hint`` is appended
    to the error message)."""
    if isinstance(values, np.ndarray) and values.dtype == np.float64:
        array = values
    else:
        try:
            array = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise ValueError(
                f"{name} must be real numbers, got {_shown(values)} ({err}){hint}"
            ) from None
    if array.shape != (count,):
        raise ValueError(f"{name} must have shape ({count},) (one per index), got {array.shape}")
    # Two reductions decide the common case: NaN and inf make the sum non-finite. A finite sum
    # that overflows only sends valid input to the exact check below.
    if array.size and not (array.min() >= 0.0 and np.isfinite(array.sum())):
        bad = ~np.isfinite(array) | (array < 0)
        if bad.any():
            k = int(np.argmax(bad))
            raise ValueError(f"{name} must be finite and >= 0; entry {k} is {array[k]}{hint}")
    return array


@kernel
def first_invalid_kernel(
    indices: NDArray[np.int64], magnitudes: NDArray[np.float64], size: int
) -> int:
    """0 when every index is in [0, size) and every magnitude finite and >= 0; 1 for a bad
    index, 2 for a bad magnitude (the first one found)."""
    for k in range(indices.shape[0]):
        if indices[k] < 0 or indices[k] >= size:
            return 1
        if not (magnitudes[k] >= 0.0 and np.isfinite(magnitudes[k])):
            return 2
    return 0


def well_typed(indices: Any, magnitudes: Any) -> bool:
    """Whether an update's arrays are what the kernels take as they are: a 1-D int64 ndarray of
    slots and a float64 ndarray of its shape (as a sampler draws them and a learner returns
    them). Only their values are then left to check, which a kernel does in one pass."""
    return (
        type(indices) is np.ndarray
        and indices.dtype is _INT64
        and indices.ndim == 1
        and type(magnitudes) is np.ndarray
        and magnitudes.dtype is _FLOAT64
        and magnitudes.shape == indices.shape
    )


def check_update(
    indices: Any,
    magnitudes: Any,
    size: int,
    names: tuple[str, str] = ("indices", "magnitudes"),
    hint: str = "",
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """An update's ``(indices, magnitudes)`` as int64 and float64 vectors, if `check_slots` and
    `check_magnitudes` accept them (``names`` name the two arguments in the error)."""
    if not well_typed(indices, magnitudes):
        indices = check_slots(names[0], indices, size)
        magnitudes = check_magnitudes(names[1], magnitudes, indices.shape[0], hint)
    if first_invalid_kernel(indices, magnitudes, size):
        check_slots(names[0], indices, size)
        check_magnitudes(names[1], magnitudes, indices.shape[0], hint)
    return indices, magnitudes
