"""How the replay engine's kernels are compiled, and which of the fast paths they take: each is
checked once, at import, and where it fails (or ``RDQN_PLAIN_KERNELS`` says so) its plain twin
takes its place. Only the speed differs: the results are the same bit for bit, but for `power`,
whose two twins (glibc's libmvec and libm) may differ in the last bits.

====================  ===========================================  ===========================
fast path             fast (what it relies on)                     plain twin
====================  ===========================================  ===========================
``nrt``               no reference counts on a kernel's arrays     numba's default
                      (numba's private ``_nrt=False`` option)
``prefetch``          LLVM's prefetch hint (`intrinsics`)          nothing
``move``              LLVM's memmove                               a loop (`plain`)
``open_gap``          LLVM's masked vector stores                  a loop
``prefix_position``   one 8-lane vector, a popcount                two loops of 8
``float_bits``        an LLVM bit cast                             NumPy's scalar view
``power``             glibc's libmvec, 8, 4 or 2 doubles a call    libm's pow, one at a time
                      (`vector_power`)
====================  ===========================================  ===========================

The check (`choose_path`): each fast path is compiled and run on a small known input and its
result compared with its twin's; one that fails to compile, raises or differs is replaced by its
twin, and `PATH.why` says why. ``power`` tries the widths `vector_power.widths_to_try` offers,
widest first, and keeps the first within libmvec's 4-ulp contract of libm's pow. The switch:
``RDQN_PLAIN_KERNELS=1`` (or ``all``) takes every plain twin, a comma list of names
(``RDQN_PLAIN_KERNELS=power,move``) those named: to rule a fast path out when something looks
wrong, or to compare.

Reference counting, and why the fast path skips it: on every call from Python numba wraps each
array argument in a counted memory handle and releases it on return, and inside a kernel it
increfs every array argument on entry to a function whose control flow its pruner cannot follow
(the rank order's writes): a visible share of a sample + update cycle, for nothing, since no
kernel allocates (no ``np.empty`` or copies inside, nor in what it calls): its caller passes
every output and work array, and both paths run the same code.

Numba's disk cache keys a kernel by its source file, name, argument types and CPU target, not by
what the kernel calls: so every kernel compiled here carries the path in its name (`PATH.tag`),
and a process on another path compiles and keeps its own. `compiled_path`, a kernel that returns
the code of the path it was compiled for, is checked at import: a cache that mixed paths stops
the import with an error instead of running another path's code. (Nor does the cache see a
change to the source of what a kernel calls from another module, `intrinsics.py`, `plain.py` or
the formulas of `rdqn.replay.priorities`: after editing one, delete the ``__pycache__`` folders
under rdqn/replay; the tests that hold the kernels to the formulas fail until then.)

The formulas: `priority` (|delta| + eps) and `mass` (priority^alpha) are `rdqn.replay.priorities`'
plain Python functions, compiled here for the kernels, so each is written once.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np
from numpy.typing import NDArray

from rdqn.replay import priorities
from rdqn.replay.kernels import plain

try:  # the fast paths lean on numba's and llvmlite's internals: a change there loses them only
    from rdqn.replay.kernels import intrinsics as fast
    from rdqn.replay.kernels import vector_power

    _POWERS = {width: vector_power.make_power(width) for width in (8, 4, 2)}
except Exception as error:  # noqa: BLE001 - any failure means: the plain twins
    fast = vector_power = None  # type: ignore[assignment]
    _POWERS = {}
    _IMPORT_ERROR = f"{type(error).__name__}: {error}"
else:
    _IMPORT_ERROR = ""

__all__ = [
    "FAST_PATHS",
    "PATH",
    "PLAIN_KERNELS",
    "KernelPath",
    "agrees_with_libm",
    "choose_path",
    "compiled_path",
    "float_bits",
    "inlined",
    "kernel",
    "mass",
    "move",
    "open_gap",
    "plain_asked",
    "power",
    "prefetch",
    "prefix_position",
    "priority",
    "rank_priority",
    "refcounted",
]

FAST_PATHS = ("nrt", "prefetch", "move", "open_gap", "prefix_position", "float_bits", "power")
PLAIN_KERNELS = "RDQN_PLAIN_KERNELS"
"""The environment variable that asks for plain twins: 1 or all, or a comma list of names."""


@dataclass(frozen=True)
class KernelPath:
    """Which fast paths this process takes, and why the others are plain."""

    plain: frozenset[str]
    """The fast paths replaced by their plain twins."""
    vector_width: int
    """Doubles per libmvec call in `power` (1: libm's scalar pow, the plain twin)."""
    why: Mapping[str, str] = field(default_factory=dict)
    """For each plain twin taken: why (asked for, failed to compile, gave other results)."""

    @property
    def tag(self) -> str:
        """The path in a kernel's name: "fast-pow8", "fast-pow8-plain_move", "plain"."""
        if self.plain >= set(FAST_PATHS):
            return "plain"
        parts = ["fast"] + ([f"pow{self.vector_width}"] if self.vector_width > 1 else [])
        return "-".join(parts + [f"plain_{name}" for name in FAST_PATHS if name in self.plain])

    @property
    def code(self) -> int:
        """A number for the tag (what `compiled_path` returns)."""
        return zlib.crc32(self.tag.encode())


def plain_asked(environ: Mapping[str, str]) -> frozenset[str]:
    """The fast paths ``RDQN_PLAIN_KERNELS`` replaces: none when unset, empty or 0; all for 1 or
    all; else the comma-separated names. ``ValueError`` names an unknown one."""
    value = environ.get(PLAIN_KERNELS, "").strip().lower()
    if value in ("", "0"):
        return frozenset()
    if value in ("1", "all"):
        return frozenset(FAST_PATHS)
    names = {name.strip() for name in value.split(",") if name.strip()}
    unknown = sorted(names - set(FAST_PATHS))
    if unknown:
        raise ValueError(
            f"{PLAIN_KERNELS}={environ[PLAIN_KERNELS]!r}: no fast path named {unknown[0]!r}; "
            f"use 1 (all of them) or a comma list of: {', '.join(FAST_PATHS)}"
        )
    return frozenset(names)


# ------------------------------------------------------------------- the checks' known inputs
def _count_up(out: NDArray[np.int64]) -> int:
    for k in range(out.shape[0]):
        out[k] = 3 * k
    return out.shape[0]


@numba.njit(cache=True)
def _probe_prefetch(values: NDArray[np.float64]) -> float:
    total = 0.0
    for k in range(values.shape[0]):
        fast.prefetch(values, min(k + 8, values.shape[0] - 1))
        total += values[k]
    return total


@numba.njit(cache=True)
def _probe_move(array: NDArray[np.uint64], moves: NDArray[np.int64]) -> None:
    for j in range(moves.shape[0]):
        fast.move(array, moves[j, 0], moves[j, 1], moves[j, 2])


@numba.njit(cache=True)
def _probe_open_gap(array: NDArray[np.uint64], gaps: NDArray[np.int64]) -> None:
    for j in range(gaps.shape[0]):
        fast.open_gap(array, gaps[j, 0], gaps[j, 1], gaps[j, 2])


@numba.njit(cache=True)
def _probe_prefix_position(
    counts: NDArray[np.int32], queries: NDArray[np.int64], out: NDArray[np.int64]
) -> None:
    for j in range(queries.shape[0]):
        out[j, 0], out[j, 1] = fast.prefix_position(counts, np.uint64(queries[j, 0]), queries[j, 1])


@numba.njit(cache=True)
def _probe_float_bits(values: NDArray[np.float64], out: NDArray[np.uint64]) -> None:
    for k in range(values.shape[0]):
        out[k] = fast.float_bits(values[k])


_power_8, _power_4, _power_2 = (_POWERS.get(w) for w in (8, 4, 2))


@numba.njit(cache=True)
def _probe_power_8(values: NDArray[np.float64], exponent: float, out: NDArray) -> None:
    _power_8(values, exponent, out)


@numba.njit(cache=True)
def _probe_power_4(values: NDArray[np.float64], exponent: float, out: NDArray) -> None:
    _power_4(values, exponent, out)


@numba.njit(cache=True)
def _probe_power_2(values: NDArray[np.float64], exponent: float, out: NDArray) -> None:
    _power_2(values, exponent, out)


_PROBE_POWER = {8: _probe_power_8, 4: _probe_power_4, 2: _probe_power_2}


def _check_nrt() -> bool:
    out = np.zeros(21, np.int64)
    count = numba.njit(cache=True, nogil=True, _nrt=False)(_count_up)(out)
    return count == 21 and np.array_equal(out, 3 * np.arange(21))


def _check_prefetch() -> bool:
    values = np.linspace(0.5, 40.0, 80)
    return _probe_prefetch(values) == sum(values.tolist())  # the same additions, in order


def _check_move() -> bool:
    moves = np.array([[2, 1, 5], [1, 2, 6], [0, 9, 9], [20, 3, 17], [5, 5, 4], [3, 0, 0]])
    array = np.arange(40, dtype=np.uint64) * 7 + 1
    expected = array.copy()
    for dst, src, count in moves:
        plain.move.py_func(expected, dst, src, count)
    _probe_move(array, moves)
    return np.array_equal(array, expected)


def _check_open_gap() -> bool:
    gaps = [(base, at, width) for width in (8, 16, 64) for base in (0, 64) for at in (0, 3, 7)]
    gaps = np.array(gaps + [(64, 63, 64), (128, 40, 64)], np.int64)
    array = (np.arange(3 * 64 + 1) * 11 + 5).astype(np.uint64)
    expected = array.copy()
    for base, at, width in gaps:
        plain.open_gap.py_func(expected, base, at, width)
    _probe_open_gap(array, gaps)
    return np.array_equal(array, expected)


def _check_prefix_position() -> bool:
    counts = np.array([3, 0, 5, 1, 0, 0, 7, 2, 64, 1, 0, 33, 2, 9, 0, 4], np.int32)
    queries = np.array([(0, v) for v in range(-1, 20)] + [(8, v) for v in (0, 64, 65, 97, 200)])
    out = np.zeros((queries.shape[0], 2), np.int64)
    _probe_prefix_position(counts, queries, out)
    expected = [plain.prefix_position.py_func(counts, s, v) for s, v in queries]
    return np.array_equal(out, np.array(expected, np.int64))


def _check_float_bits() -> bool:
    values = np.array([0.0, -0.0, 1.0, 1.5e-310, 5e-324, 3.0e300, np.inf, -2.5, 0.7])
    out = np.zeros(values.shape[0], np.uint64)
    _probe_float_bits(values, out)
    return np.array_equal(out, [plain.float_bits.py_func(value) for value in values])


POWER_ULPS = 4.0
"""libmvec's accuracy contract: within 4 ulp of the exact result (so of libm's, which is within
one)."""


def agrees_with_libm(
    out: NDArray[np.float64], values: NDArray[np.float64], exponent: float
) -> bool:
    """Whether out[k] is values[k] ** exponent within `POWER_ULPS` (NaN, inf and 0 exactly as
    libm's), libm's pow through the plain twin."""
    expected = np.empty_like(values)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):  # 0 ** -a is inf
        plain.power.py_func(values, exponent, expected)
    finite = np.isfinite(expected) & (expected != 0.0)
    same_specials = np.array_equal(out[~finite], expected[~finite], equal_nan=True)
    with np.errstate(over="ignore", invalid="ignore"):  # garbage may be far off, or not finite
        ulps = np.abs(out[finite] - expected[finite]) / np.spacing(np.abs(expected[finite]))
    return bool(same_specials and (ulps.size == 0 or ulps.max() <= POWER_ULPS))


def _check_power(width: int) -> bool:
    values = np.exp(np.linspace(-30.0, 30.0, 61))
    values = np.concatenate([values, [0.0, -0.0, np.inf, np.nan, 1.0, 5e-324, 1e300, 4.0]])
    for exponent in (0.6, -0.4, 0.28, 1.0, 0.0):
        out = np.full(values.shape[0], -7.0)
        _PROBE_POWER[width](values, exponent, out)
        if not agrees_with_libm(out, values, exponent):
            return False
    return True


CHECKS: dict[str, Callable[[], bool]] = {
    "nrt": _check_nrt,
    "prefetch": _check_prefetch,
    "move": _check_move,
    "open_gap": _check_open_gap,
    "prefix_position": _check_prefix_position,
    "float_bits": _check_float_bits,
}
"""Each fast path's check but `power`'s (`_check_power`, per width): compile and run it on a
known input, True where its result is its plain twin's."""


def _outcome(check: Callable[[], bool]) -> str:
    """Why the check failed ("" where it passed)."""
    try:
        return "" if check() else "gave other results than its plain twin"
    except Exception as error:  # noqa: BLE001 - a fast path that cannot compile or run: plain
        return f"did not compile or run ({type(error).__name__}: {str(error)[:200]})"


def choose_path(environ: Mapping[str, str] | None = None) -> KernelPath:
    """The fast paths this process takes: each one not asked to be plain (`plain_asked`) and
    whose check passes; ``power`` at the widest width that passes (`_check_power`)."""
    environ = os.environ if environ is None else environ
    asked = plain_asked(environ)
    why: dict[str, str] = {name: f"{PLAIN_KERNELS} asks for it" for name in asked}
    if fast is None:
        for name in set(FAST_PATHS) - asked:
            why[name] = f"the fast paths did not import ({_IMPORT_ERROR})"
    else:
        for name, check in CHECKS.items():
            if name not in asked and (reason := _outcome(check)):
                why[name] = reason
    width = 1
    if "power" not in why:
        try:
            tried = vector_power.widths_to_try(environ)
        except Exception as error:  # noqa: BLE001 - llvmlite changed: libm's pow
            tried = []
            why["power"] = f"no width to try ({type(error).__name__}: {error})"
        for candidate in tried:
            if not _outcome(lambda c=candidate: _check_power(c)):
                width = candidate
                break
        if width == 1 and "power" not in why:
            why["power"] = (
                f"libmvec at widths {tried} gave other results than libm"
                if tried
                else "no libmvec width for this CPU and numba's target"
            )
    return KernelPath(plain=frozenset(why), vector_width=width, why=why)


PATH = choose_path()
"""The path this process's kernels take."""


def _pick(name: str) -> Any:  # noqa: ANN401 (an intrinsic or a dispatcher)
    return getattr(plain if name in PATH.plain else fast, name)


prefetch = _pick("prefetch")
move = _pick("move")
open_gap = _pick("open_gap")
prefix_position = _pick("prefix_position")
float_bits = _pick("float_bits")
power = plain.power if "power" in PATH.plain else _POWERS[PATH.vector_width]

# `rdqn.replay.priorities`' formulas for the kernels, compiled from their one source (not by
# `inlined`, which renames a function): p = |delta| + eps, p = 1 / rank, m = p^alpha (`power`:
# m for a whole array).
_formula = numba.njit(nogil=True, inline="always")
priority = _formula(priorities.priority)
rank_priority = _formula(priorities.rank_priority)
mass = _formula(priorities.mass)


def _compile(**options: Any) -> Callable[[Callable], Any]:  # noqa: ANN401
    def compile_(py_func: Callable) -> Any:  # noqa: ANN401 (numba's dispatcher)
        py_func.__qualname__ = f"{py_func.__qualname__}__{PATH.tag}"
        return numba.njit(cache=True, nogil=True, **options)(py_func)

    return compile_


_NO_REFCOUNTS = {} if "nrt" in PATH.plain else {"_nrt": False}
kernel = _compile(**_NO_REFCOUNTS)
"""A kernel that allocates nothing: without reference counts on the fast path."""
inlined = _compile(**_NO_REFCOUNTS, inline="always")
"""The same, inlined into its callers."""
refcounted = _compile()
"""A kernel that may allocate (reference counted on either path)."""


@kernel
def compiled_path() -> int:
    """The code of the path this kernel was compiled for (`KernelPath.code`)."""
    return _PATH_CODE


_PATH_CODE = PATH.code
if compiled_path() != PATH.code:
    raise RuntimeError(
        f"numba's cache returned a kernel compiled for another path than this process's "
        f"({PATH.tag}); delete the __pycache__ folders under {os.path.dirname(__file__)} "
        "(or NUMBA_CACHE_DIR) and import again"
    )
