"""Checks of replay state read back from a checkpoint, before any of it is loaded.

The replay structures' arrays go straight to compiled kernels that do no bounds checks (the
sum tree's descent, the windows' gather, the rank order's blocks), so a state that is not
exactly what `state_dict` wrote, whether bits flipped on disk, a file from elsewhere or a bug,
could make them read or write out of bounds: a crash, not an error. Each structure therefore
checks a whole state before it changes anything (`RingStorage.check_state`,
`SumTree.check_nodes`, the samplers' `check_state`, `ReplayBuffer.load_state_dict`): types,
shapes, dtypes, ranges, and the invariants its kernels rely on. A state that fails raises
`ReplayStateError` (a ``ValueError``) naming the field and what is wrong with it.

The helpers here take a state (a mapping) and a key, and return the entry if it is what the
caller asks for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

import numpy as np
from numpy.typing import NDArray

from rdqn.validation import is_integer, is_real, shown

__all__ = [
    "ReplayStateError",
    "array_field",
    "described",
    "entry",
    "found",
    "integer_field",
    "mapping",
    "real_field",
    "refuse",
    "require_finite",
    "require_nonnegative",
]


class ReplayStateError(ValueError):
    """A replay state (a `state_dict`, from a checkpoint) that cannot be loaded: its message
    names the field and what is wrong with it. Nothing was changed."""


def refuse(message: str) -> NoReturn:
    raise ReplayStateError(message)


def mapping(state: Any, what: str) -> Mapping[str, Any]:
    """``state`` if it is a mapping (a state dict)."""
    if not isinstance(state, Mapping):
        refuse(f"{what} must be a dict (a state_dict), got {type(state).__name__}")
    return state


def entry(state: Mapping[str, Any], key: str) -> Any:
    """``state[key]``, which must exist."""
    if key not in state:
        refuse(f"{key!r} is missing")
    return state[key]


def array_field(
    state: Mapping[str, Any], key: str, shape: tuple[int, ...], dtype: np.dtype
) -> NDArray:
    """``state[key]`` if it is an ndarray of exactly ``shape`` and ``dtype`` (native byte
    order; no conversion: a list or another dtype is not what `state_dict` wrote)."""
    value = entry(state, key)
    if (
        not isinstance(value, np.ndarray)
        or value.dtype != dtype
        or value.shape != shape
        or not value.dtype.isnative
    ):
        refuse(f"{key} must be {described(dtype, shape)}, got {found(value)}")
    return value


def described(dtype: np.dtype, shape: tuple[int, ...]) -> str:
    """What an array field must be, for an error message."""
    return f"an array of dtype {np.dtype(dtype)} and shape {shape}"


def found(value: Any) -> str:
    """What an array field is, for an error message."""
    if not isinstance(value, np.ndarray):
        return f"a {type(value).__name__}"
    dtype = value.dtype if value.dtype.isnative else value.dtype.str
    return f"dtype {dtype} and shape {value.shape}"


def integer_field(state: Mapping[str, Any], key: str, low: int, high: int) -> int:
    """``state[key]`` as an ``int``, if it is an integer (not a bool) in [low, high]."""
    value = entry(state, key)
    if not is_integer(value) or not low <= value <= high:
        refuse(f"{key} must be an integer from {low:,} to {high:,}, got {shown(value)}")
    return int(value)


def real_field(state: Mapping[str, Any], key: str, low: float | None = None) -> float:
    """``state[key]`` as a ``float``, if it is a finite real number (>= ``low``)."""
    value = entry(state, key)
    if not is_real(value) or (low is not None and value < low):
        bound = "" if low is None else f" >= {low:g}"
        refuse(f"{key} must be a finite number{bound}, got {shown(value)}")
    return float(value)


def _first(name: str, array: NDArray, bad: NDArray[np.bool_], what: str) -> NoReturn:
    where = np.unravel_index(int(np.argmax(bad)), array.shape)
    index = ", ".join(str(int(k)) for k in where)
    refuse(f"{name}[{index}] is {array[where]}; {name} must be {what}")


def require_finite(name: str, array: NDArray) -> None:
    """Every value of a float array is finite."""
    if array.size and not np.isfinite(array).all():
        _first(name, array, ~np.isfinite(array), "finite")


def require_nonnegative(name: str, array: NDArray) -> None:
    """Every value of a numeric array is >= 0 (NaN is not)."""
    if array.size and not (array >= 0).all():
        _first(name, array, ~(array >= 0), ">= 0")
