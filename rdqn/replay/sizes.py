"""The refusal of replay sizes no machine can hold, before anything is allocated.

Every replay structure that allocates by a capacity or a shape (`RingStorage`, `SumTree`, the
rank order, `ReplayBuffer` as a whole, `WindowBuilder`, `gather_windows`) computes the bytes it
needs first, with the same estimates the server's limits use (`rdqn.replay.replay_nbytes`, built
from `storage_nbytes`, `sum_tree_nbytes` and `rank_sampler_nbytes`), and raises
`ReplaySizeError` when they exceed the machine's physical memory. Without this, NumPy raised
``MemoryError`` for sizes beyond the address space, and for sizes between physical and virtual
memory filled pages until the kernel killed the process.

The bound is absolute, for the library as much as for a server: a server's own, lower limits
are `rdqn.limits`' (``RDQN_LIMIT_MEMORY_BYTES``), checked on run settings before a buffer is
built. Physical memory is what the OS reports (``SC_PHYS_PAGES`` x ``SC_PAGE_SIZE``), not what
is free now nor a container's limit; where it reports nothing, 2**48 bytes, the address space of
today's 64-bit processors. The sizes are computed with Python integers, so a shape whose size
overflows int64 (NumPy's product wraps) is refused like any other.
"""

from __future__ import annotations

import os

__all__ = ["ReplaySizeError", "check_nbytes", "format_bytes", "physical_memory"]

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
