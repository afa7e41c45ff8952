"""How the replay engine's kernels are compiled: numba, cached on disk, without the GIL, and
without numba's reference counting (NRT) wherever a kernel allocates nothing.

Reference counting costs twice, and the kernels that run per sample or per update skip it:
- on every call from Python, numba wraps each array argument in a counted memory handle and
  releases it on return: about 50 ns per array, 0.3-0.6 µs for a kernel of 10-16 arrays, which
  is a tenth of a whole proportional sample + update cycle (measured: a no-op kernel of 16
  arrays, 1.0 µs with NRT and 0.44 µs without);
- inside a kernel, numba increfs every array argument on entry to a function whose control flow
  its pruner cannot follow, and those atomic counts can cost more than the work itself (the rank
  order's 128 writes: 59 µs with, 38 µs without, at N = 2^17).

A kernel compiled so must not allocate (no ``np.empty`` or copies inside, nor in what it calls):
its caller passes every output and work array.
"""

from __future__ import annotations

import numba

__all__ = ["inlined", "no_refcounts"]

no_refcounts = numba.njit(cache=True, nogil=True, _nrt=False)
"""A kernel that allocates nothing, without reference counting."""

inlined = numba.njit(cache=True, nogil=True, _nrt=False, inline="always")
"""The same, inlined into its callers."""
