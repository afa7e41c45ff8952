"""Removed items: the slots below a sampler's ``stored`` that hold nothing.

A replay memory of transitions fills its slots in ring order and overwrites the oldest, so every
slot below ``stored`` (one past the highest slot added) holds an item. A replay memory of
*sequences* (`rdqn.replay.sequence_replay`) also takes items away: a sequence is invalid once
the ring of steps overwrites one of its steps, and from then on it must never be drawn, until
its slot takes a new sequence. `Sampler.on_remove` does that for each scheme:

    uniform        P(i) = 1 / n over the n slots that hold items
    proportional   the slot's mass is set to 0 (a zero leaf is never drawn, `SumTree`), and
                   N = n in the IS weights
    rank           the slot leaves the rank order: P(rank r) = r^-alpha / sum_{k <= n} k^-alpha
                   over the n items left

`Holes` is the bookkeeping the three share: which slots below ``stored`` were removed (and not
written since), checked on removal, in updates and in a loaded state. Nothing is allocated until
the first removal, so a memory of transitions (which never removes) keeps no array, and its
samplers' state dicts are what they always were (no "removed" entry).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rdqn.replay.checks import check_slot
from rdqn.replay.state_checks import entry, found, refuse

__all__ = ["Holes"]

REMOVED = "removed"
"""The state-dict entry of the removed slots (absent where none is removed)."""


class Holes:
    """The removed slots of a sampler of ``capacity`` slots (module docstring)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.count = 0
        """Slots removed and not written since."""
        self._empty: NDArray[np.bool_] | None = None  # allocated at the first removal

    def remove(self, slot: Any, stored: int) -> int:  # noqa: ANN401 (checked here)
        """Mark ``slot`` removed and return it as an ``int``; ``ValueError`` (nothing changed)
        unless it is a slot below ``stored`` that holds an item."""
        slot = check_slot(slot, stored)
        if self.is_empty(slot):
            raise ValueError(f"slot {slot} holds no item: it was removed and not written since")
        if self._empty is None:
            self._empty = np.zeros(self.capacity, np.bool_)
        self._empty[slot] = True
        self.count += 1
        return slot

    def fill(self, slot: int) -> None:
        """``slot`` (a valid slot) was written: it holds an item again."""
        if self.count and self._empty is not None and self._empty[slot]:
            self._empty[slot] = False
            self.count -= 1

    def is_empty(self, slot: int) -> bool:
        return bool(self.count and self._empty is not None and self._empty[slot])

    def first_empty(self, indices: NDArray[np.int64]) -> int | None:
        """The first of ``indices`` (valid slots) that holds nothing, or None."""
        if not self.count or self._empty is None:
            return None
        empty = self._empty[indices]
        return int(indices[int(np.argmax(empty))]) if empty.any() else None

    def check_update(self, indices: NDArray[np.int64]) -> None:
        """``ValueError`` if a priority update names a removed slot (valid slots)."""
        slot = self.first_empty(indices)
        if slot is not None:
            raise ValueError(f"indices must hold items; slot {slot} was removed")

    def live(self, size: int) -> NDArray[np.int64]:
        """The slots below ``size`` that hold items, ascending."""
        if not self.count or self._empty is None:
            return np.arange(size, dtype=np.int64)
        return np.flatnonzero(~self._empty[:size]).astype(np.int64)

    def whole(self, size: int, stored: int) -> int:
        """n, the items a draw of the first ``size`` slots chooses among: ``size`` without
        removed slots; with them ``ValueError`` unless ``size`` is ``stored`` (the draw covers
        every stored slot, so that n counts the items left)."""
        if not self.count:
            return size
        if size != stored:
            raise ValueError(
                f"size must be the {stored:,} stored slots when {self.count:,} of them were "
                f"removed, got {size:,}"
            )
        return stored - self.count

    def state(self) -> dict[str, Any]:
        """The state-dict entries: ``{"removed": the removed slots, ascending}``, or none."""
        if not self.count or self._empty is None:
            return {}
        return {REMOVED: np.flatnonzero(self._empty).astype(np.int64)}

    def check_state(self, state: Mapping[str, Any], stored: int) -> NDArray[np.int64]:
        """The removed slots of a state dict (none without the entry); `ReplayStateError`
        unless they are a 1-D int64 array of distinct slots below ``stored``, ascending."""
        if REMOVED not in state:
            return np.empty(0, np.int64)
        removed = entry(state, REMOVED)
        if not (
            isinstance(removed, np.ndarray)
            and removed.dtype == np.int64
            and removed.dtype.isnative
            and removed.ndim == 1
        ):
            refuse(f"removed must be a 1-D array of int64 slots, got {found(removed)}")
        if removed.size and not (removed[0] >= 0 and removed[-1] < stored):
            bad = removed[(removed < 0) | (removed >= stored)][0]
            refuse(f"removed holds slot {bad}, but only slots below stored={stored} hold items")
        if removed.size > 1 and not (removed[1:] > removed[:-1]).all():
            k = int(np.argmax(removed[1:] <= removed[:-1])) + 1
            refuse(f"removed[{k}] is {removed[k]}: removed slots are distinct and ascending")
        return removed

    def load(self, removed: NDArray[np.int64]) -> None:
        """Take the removed slots of a checked state."""
        self.count = int(removed.size)
        self._empty = None
        if removed.size:
            self._empty = np.zeros(self.capacity, np.bool_)
            self._empty[removed] = True

    @property
    def nbytes(self) -> int:
        return 0 if self._empty is None else int(self._empty.nbytes)
