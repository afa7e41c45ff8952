"""Replay sizes: the bytes each replay structure needs, computed without allocating anything
or loading a kernel, and the refusal of sizes no machine can hold.

Every replay structure that allocates by a capacity or a shape (`RingStorage`, `SumTree`, the
rank order, `ReplayBuffer` as a whole, `WindowBuilder`, `gather_windows`) computes the bytes it
needs first, with the same estimates the server's limits use (`replay_nbytes`, built from
`storage_nbytes` and each scheme's sampler bytes, `rdqn.replay.scheme_registry`), and
raises `ReplaySizeError` when they exceed the machine's physical memory. Without this, NumPy
raised ``MemoryError`` for sizes beyond the address space, and for sizes between physical and
virtual memory filled pages until the kernel killed the process.

The bound is absolute, for the library as much as for a server: a server's own, lower limits
are `rdqn.limits`' (``RDQN_LIMIT_MEMORY_BYTES``), checked on run settings before a buffer is
built. Physical memory is what the OS reports (``SC_PHYS_PAGES`` x ``SC_PAGE_SIZE``), not what
is free now nor a container's limit; where it reports nothing, 2**48 bytes, the address space of
today's 64-bit processors. The sizes are computed with Python integers, so a shape whose size
overflows int64 (NumPy's product wraps) is refused like any other. The sum tree's bytes
(`leaf_offset`, `sum_tree_nbytes`) are `rdqn.replay.tree_shape`'s, the rank order's
`rdqn.replay.rank.shape`'s; they are named here too, beside the storage's.
"""

from __future__ import annotations

import os

from rdqn.replay import scheme_registry
from rdqn.replay.tree_shape import leaf_offset, sum_tree_nbytes

__all__ = [
    "SLOT_BYTES",
    "ReplaySizeError",
    "check_nbytes",
    "format_bytes",
    "leaf_offset",
    "physical_memory",
    "SEQUENCE_SLOT_BYTES",
    "replay_nbytes",
    "sequence_replay_nbytes",
    "sequence_slots",
    "storage_nbytes",
    "sum_tree_nbytes",
]

ADDRESS_SPACE = 1 << 48
"""The bound where the OS does not report its physical memory."""

_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


class ReplaySizeError(ValueError):
    """A replay structure larger than this machine's memory (raised before allocating)."""


def physical_memory() -> int:
    """Bytes of physical memory of this machine (`ADDRESS_SPACE` where the OS does not say)."""
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # not a POSIX system, or the names unknown
        return ADDRESS_SPACE
    return pages * page_size if pages > 0 and page_size > 0 else ADDRESS_SPACE


def format_bytes(nbytes: int) -> str:
    """``nbytes`` in binary units, one decimal: ``80.0 TiB``; below a KiB, ``512 bytes``."""
    if nbytes < 1024:
        return f"{nbytes} bytes"
    value = float(nbytes)
    for unit in _UNITS:
        value /= 1024
        if value < 1024 or unit == _UNITS[-1]:
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


def check_nbytes(what: str, nbytes: int, parts: str = "", advice: str = "") -> None:
    """`ReplaySizeError` when ``nbytes`` exceed `physical_memory`: "``what`` needs 80.0 TiB
    (87,960,930,222,370 bytes: ``parts``), more than this machine's physical memory (...);
    ``advice``"."""
    memory = physical_memory()
    if nbytes > memory:
        detail = f"{nbytes:,} bytes: {parts}" if parts else f"{nbytes:,} bytes"
        raise ReplaySizeError(
            f"{what} needs {format_bytes(nbytes)} ({detail}), more than this machine's physical "
            f"memory ({format_bytes(memory)})" + (f"; {advice}" if advice else "")
        )


# ------------------------------------------------- the bytes of each structure, computed
SLOT_BYTES = 4 + 4 + 1 + 1 + 4 + 8 + 4
"""Per slot, besides observations: action int32, reward float32, terminated and truncated bools,
episode_step int32, generation int64, sample count int32."""


def storage_nbytes(capacity: int, obs_size: int, obs_itemsize: int) -> int:
    """`RingStorage.nbytes` for ``capacity`` slots of observations of ``obs_size`` values of
    ``obs_itemsize`` bytes, without allocating: o_t and o_{t+1} and `SLOT_BYTES` per slot."""
    return capacity * (2 * obs_size * obs_itemsize + SLOT_BYTES)


def replay_nbytes(capacity: int, obs_size: int, scheme: str, obs_itemsize: int = 4) -> int:
    """The `nbytes` of a full `ReplayBuffer` of ``capacity`` transitions whose observations hold
    ``obs_size`` values of ``obs_itemsize`` bytes, under sampling ``scheme`` ("uniform",
    "proportional" or "rank"), computed without allocating anything: what a server checks
    against its memory limit before it builds a run (`rdqn.limits`).

    Storage: o_t and o_{t+1} per slot plus the slot's bookkeeping. Proportional: a sum tree and
    a min tree of 2P float64 nodes each, P = the smallest power of two >= capacity. Rank-based:
    the exact rank order (`rdqn.replay.rank.shape.rank_sampler_nbytes`): per slot an int64
    write stamp, an int32 block index, a float64 priority and the float64 prefix sum of the
    rank masses, plus at most 2N/C + 2 blocks of C uint64 entries (C = `block_capacity(N)`) with
    a few per-block fields; about 45 bytes per slot.
    """
    sampler = scheme_registry.scheme(scheme).nbytes(capacity)
    return storage_nbytes(capacity, obs_size, obs_itemsize) + sampler


SEQUENCE_SLOT_BYTES = 8 + 4 + 8
"""Per sequence slot, besides its recorded state: first write int64, length int32, number
int64 (`rdqn.replay.sequences.SequenceIndex`)."""


def sequence_slots(capacity: int, length: int, overlap: int) -> int:
    """S, the sequence slots `SequenceReplay` keeps by default over ``capacity`` steps:
    min(capacity, 2 ceil(capacity / s)), s = length - overlap. An episode of L steps holds at
    most ceil(L / s) sequences, so episodes of s steps or more give at most 2 capacity / s live
    sequences and none leaves before its steps are overwritten; shorter episodes, one sequence
    each, may outnumber S, and then the oldest leave first. ``capacity`` slots hold every live
    sequence whatever the episodes (each starts at a distinct stored step)."""
    stride = length - overlap
    return min(capacity, 2 * -(-capacity // stride))


def sequence_replay_nbytes(
    capacity: int,
    obs_size: int,
    scheme: str,
    sequences: int,
    state_size: int,
    obs_itemsize: int = 4,
) -> int:
    """The `nbytes` of a full `SequenceReplay`: the steps' storage (as `storage_nbytes`), the
    index of ``sequences`` slots with ``state_size`` float32 state values each, and the
    ``scheme``'s sampler over the sequence slots (its removed-slot flags, one byte a slot,
    included)."""
    index = sequences * (SEQUENCE_SLOT_BYTES + 4 * state_size)
    sampler = scheme_registry.scheme(scheme).nbytes(sequences) + sequences
    return storage_nbytes(capacity, obs_size, obs_itemsize) + index + sampler
