"""The rank order of rank-based replay, exact under every write: sorted blocks of slots laid out
in a gapped list of positions, with a Fenwick tree over the positions' sizes (an order-statistic
structure in the style of a B-tree of height two, or of a "sorted list of sorted lists").

Every stored slot i has a key (p_i, s_i): its priority p_i and a write stamp s_i that grows with
every write of any slot. The order is p descending, ties by s descending, so among equal
priorities the most recently written slot comes first; stamps are unique, so the order is total.
Rank 0 (rank 1 of the paper) is the first slot in that order.

Layout (blocks of capacity C; P positions, each holding a physical block or a gap, -1)::

    position               0             1      2             3               4 ...
    block (physical)       3             -1     0             5               -1
    items (slots)          [7, 2, 9]            [4, 0]        [1, 8, 6, 3]
    keys  (priorities)     [9., 7., 7.]         [5., 4.]      [3., 2., 2., 1.]
    sizes                  3             0      2             4               0
    last key by position   (7., s_9)     copy   (4., s_0)     (1., s_3)       (not kept)

    Fenwick tree over [3, 0, 2, 4, 0, ...]; slot at rank 5: the last position whose prefix size
    is <= 5 is 3 (prefix 5), offset 5 - 5 = 0 -> slot 1

`blocks[q]` is the physical block at position q (-1: a gap); `position` is its inverse (-1: a
free block, kept on the stack `free`); `home[i]` is the block that holds slot i; `stamp[i]` is
-1 when slot i holds nothing. Position 0 always holds a block (once one is used), `last` is the
last position that does; a gap before `last` carries the last key of the block before it, so
the last keys up to `last` never increase and a binary search over them lands on a block. The
priorities live only in the blocks (`keys`), beside the slots, so a search inside a block reads
contiguous memory; stamps are read only to break ties.

The gaps make a split or a merge local: a full block splits into the nearest gap (the blocks in
between move over by one position, at most `REACH`, each a Fenwick point update), and a merged
block leaves a gap. Where no gap is within reach, or a run of gaps grew past it, the blocks are
spread out again, one every min(4, P / blocks) positions, O(P), rarely.

Invariants (`check_invariants`):
- keys strictly decrease in the order above, within a block and from one block to the next;
- every block in use holds fewer than C slots, and at least C/2 when more than one is in use
  (a full block splits into two halves; a block that falls under C/2 borrows a slot from a
  neighbour that has more than C/2, else merges with it), so at most 2N/C + 1 blocks are used;
- P = 2 (2N/C + 2) positions, so a spread leaves at least one gap after every block.

Costs (P = O(N/C) positions): a write (remove the slot, then insert it with its new key) is a
scan of its block O(C), a binary search over the positions' last keys O(log P) and one inside a
block O(log C), shifts of at most C entries and Fenwick updates O(log P); a split or merge moves
O(C) entries and at most `REACH` positions, O(C + REACH log P), once per C/2 writes into a block
at most. Selecting the slots at B ranks is B Fenwick descents, O(B log P), done level by level so
the B memory loads of a level overlap. Walking the whole order is O(P + N). All in numba.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import binding as llvm_binding
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numpy.typing import NDArray

__all__ = ["RankOrder", "block_capacity", "rank_order_nbytes"]

# Fields of `RankOrder.counters`: blocks in use, slots stored, last stamp given, C, free blocks
# on the stack, the last position that holds a block (-1: none), spreads so far (a statistic).
COUNT_BLOCKS, COUNT_STORED, COUNT_CLOCK, COUNT_C, COUNT_FREE, COUNT_LAST = 0, 1, 2, 3, 4, 5
COUNT_SPREADS = 6
_NB, _N, _CLOCK, _C, _FREE, _LAST = 0, 1, 2, 3, 4, 5

# How far a split looks for a gap, and the longest run of gaps a merge leaves, before the blocks
# are spread out again.
REACH = 32

# Positions per segment of the search for a key's block (8 cache lines of last keys).
SEGMENT = 64

# How many writes ahead `write_kernel` prefetches the slots' homes (and half as many ahead, the
# blocks they leave).
AHEAD = 8


def block_capacity(capacity: int) -> int:
    """C for ``capacity`` slots: the power of two nearest sqrt(capacity), clamped to [8, 64]
    (a write shifts and scans O(C) entries; splits and merges, once per C/2 writes into a
    block, cost O(C + REACH log P), so C is small: 64 measured fastest at N = 2^17 and 2^20)."""
    return int(min(64, max(8, 1 << round(np.log2(max(1.0, np.sqrt(capacity)))))))


def max_blocks(capacity: int) -> int:
    """Physical blocks allocated: at most 2N/C + 1 are ever in use (module docstring)."""
    return 2 * capacity // block_capacity(capacity) + 2


def positions(capacity: int) -> int:
    """P: two positions per physical block, so a spread leaves a gap after every block."""
    return 2 * max_blocks(capacity)


def rank_order_nbytes(capacity: int) -> int:
    """`RankOrder(capacity).nbytes` without allocating: per slot an int64 stamp and an int32 home
    block; per physical block C int32 slots and C float64 keys, an int32 size, position and
    free-stack entry; per position an int32 block, a float64 and an int64 last key and an int64
    Fenwick node (plus one); seven int64 counters."""
    c = block_capacity(capacity)
    return (
        capacity * (8 + 4)
        + max_blocks(capacity) * (12 * c + 3 * 4)
        + positions(capacity) * (4 + 3 * 8)
        + 8
        + 7 * 8
    )


class RankOrder:
    """The exact rank order of up to ``capacity`` slots (see the module docstring).

    A slot is stored once `write` gives it a key; a write of a stored slot moves it. Read the
    order with `select` (slots at ranks) and `slots_in_order`.
    """

    def __init__(self, capacity: int) -> None:
        if not 1 <= capacity < 2**31:
            raise ValueError(f"capacity must be an integer in [1, 2**31), got {capacity}")
        self.capacity = capacity
        self.block_capacity = block_capacity(capacity)
        blocks, slots = max_blocks(capacity), positions(capacity)
        self.stamp = np.full(capacity, -1, np.int64)
        self.home = np.full(capacity, -1, np.int32)
        self.items = np.zeros(blocks * self.block_capacity, np.int32)
        self.keys = np.zeros(blocks * self.block_capacity, np.float64)
        self.sizes = np.zeros(blocks, np.int32)
        self.position = np.full(blocks, -1, np.int32)
        self.free = np.arange(blocks - 1, -1, -1, dtype=np.int32)  # pops 0, 1, 2, ...
        self.blocks = np.full(slots, -1, np.int32)
        self.last_key = np.zeros(slots, np.float64)
        self.last_stamp = np.zeros(slots, np.int64)
        self.fenwick = np.zeros(slots + 1, np.int64)
        self.counters = np.array([0, 0, 0, self.block_capacity, blocks, -1, 0], np.int64)
        self._one_slot = np.zeros(1, np.int64)  # `write_one`'s arguments, kept to not allocate
        self._one_priority = np.zeros(1, np.float64)
        self._state = self._arrays()  # the kernels' arguments (the arrays change only in place)

    def _arrays(self) -> tuple[NDArray, ...]:
        return (
            self.stamp,
            self.home,
            self.items,
            self.keys,
            self.sizes,
            self.position,
            self.free,
            self.blocks,
            self.last_key,
            self.last_stamp,
            self.fenwick,
            self.counters,
        )

    @property
    def size(self) -> int:
        """Slots stored."""
        return int(self.counters[_N])

    @property
    def spreads(self) -> int:
        """How often the blocks were spread out again (a statistic, for tests and profiling)."""
        return int(self.counters[COUNT_SPREADS])

    @property
    def clock(self) -> int:
        """The last stamp given (0 before any write)."""
        return int(self.counters[_CLOCK])

    def write(self, slots: NDArray[np.int64], priorities: NDArray[np.float64]) -> float:
        """Give each slot, in turn, its priority and the next stamp (so duplicates: last wins);
        returns the largest priority given. The caller checks the values: int64 slots in
        [0, capacity), float64 priorities finite and >= 0."""
        return float(write_kernel(*self._state, slots, priorities, False))

    def update(self, slots: NDArray[np.int64], priorities: NDArray[np.float64]) -> float:
        """As `write`, for stored slots only: a slot that holds nothing is left out (its
        priority still counts towards the largest returned)."""
        return float(write_kernel(*self._state, slots, priorities, True))

    def write_one(self, slot: int, priority: float) -> None:
        """`write` of one slot."""
        self._one_slot[0] = slot
        self._one_priority[0] = priority
        write_kernel(*self._state, self._one_slot, self._one_priority, False)

    def select(self, ranks: NDArray[np.int64]) -> NDArray[np.int64]:
        """The slot at each 0-based rank (each < `size`)."""
        out = np.empty(ranks.shape[0], np.int64)
        select_kernel(self.items, self.blocks, self.fenwick, self.counters, ranks, out)
        return out

    def walk(self) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """(every stored slot, rank 0 first; the priority of every slot, 0 where nothing is
        stored), O(P + N)."""
        order = np.empty(self.size, np.int64)
        priorities = np.zeros(self.capacity, np.float64)
        walk_kernel(
            self.items, self.keys, self.sizes, self.blocks, self.counters, order, priorities
        )
        return order, priorities

    def slots_in_order(self) -> NDArray[np.int64]:
        """Every stored slot, rank 0 first (O(P + N))."""
        return self.walk()[0]

    def priorities(self) -> NDArray[np.float64]:
        """The priority of every slot, 0 where nothing is stored (O(P + N))."""
        return self.walk()[1]

    def load(self, priority: NDArray[np.float64], stamp: NDArray[np.int64], clock: int) -> None:
        """Rebuild from per-slot keys (stamp -1: nothing stored), sorted once, in blocks about
        3/4 full. Stored stamps must be unique and <= clock."""
        stored = np.flatnonzero(stamp >= 0)
        order = stored[np.lexsort((-stamp[stored], -priority[stored]))].astype(np.int64)
        self.stamp[...] = stamp
        self.counters[_CLOCK] = clock
        build_kernel(*self._state, order, priority[order])

    def check_invariants(self) -> None:
        """AssertionError where the structure is inconsistent (for tests)."""
        nb, n, c = int(self.counters[_NB]), int(self.counters[_N]), self.block_capacity
        last, free = int(self.counters[_LAST]), int(self.counters[_FREE])
        held = np.flatnonzero(self.blocks >= 0)
        assert held.shape[0] == nb and (nb == 0 or (held[0] == 0 and held[-1] == last))
        used = self.blocks[held]
        sizes = self.sizes[used]
        assert (sizes > 0).all() and (sizes < c).all() and sizes.sum() == n
        assert nb <= 1 or (sizes >= c // 2).all()
        assert np.array_equal(self.position[used], held)
        assert free + nb == self.sizes.shape[0]
        assert np.array_equal(
            np.sort(np.concatenate([used, self.free[:free]])), np.arange(free + nb)
        )
        assert (self.position[self.free[:free]] == -1).all()
        order = self.slots_in_order()
        assert np.array_equal(self.home[order], np.repeat(used, sizes))
        assert (self.home >= 0).sum() == n == (self.stamp >= 0).sum()
        assert (self.stamp[order] >= 0).all() and (self.stamp <= self.clock).all()
        keys = [self.keys[b * c : b * c + self.sizes[b]] for b in used]
        keys = np.concatenate(keys) if nb else np.empty(0)
        p, s = np.asarray(keys), self.stamp[order]
        assert ((p[:-1] > p[1:]) | ((p[:-1] == p[1:]) & (s[:-1] > s[1:]))).all()
        if nb:  # each position up to `last` carries the last key of the block at or before it
            lasts = np.cumsum(sizes) - 1
            covering = np.searchsorted(held, np.arange(last + 1), side="right") - 1
            assert np.array_equal(self.last_key[: last + 1], p[lasts][covering])
            assert np.array_equal(self.last_stamp[: last + 1], s[lasts][covering])
        along = np.zeros(self.blocks.shape[0], np.int64)
        along[held] = sizes
        for i in range(1, along.shape[0] + 1):  # node i sums positions [i - lowbit(i), i)
            assert self.fenwick[i] == along[i - (i & -i) : i].sum()

    @property
    def nbytes(self) -> int:
        return int(sum(a.nbytes for a in self._arrays()))


# ---------------------------------------------------------------- kernels
# The writing kernels are compiled without numba's reference counting (`_nrt=False`; they
# allocate nothing and only borrow the arrays their caller holds): numba increfs every array
# argument on entry to a function whose control flow its pruner cannot follow, and those atomic
# counts cost more than the work itself (measured: 128 writes 38 µs without, 59 µs with, at
# N = 2^17). Offsets into a block are unsigned, so numba leaves out its negative-index
# wrap-around and the compiler vectorizes the shifts and scans.

_no_refcounts = numba.njit(cache=True, nogil=True, _nrt=False)
_inlined = numba.njit(cache=True, nogil=True, _nrt=False, inline="always")
_U = np.uint64


# The intrinsic's name mangles its pointer type: `ptr` (p0) from LLVM 16 on, where pointers are
# opaque; i8* (p0i8) before.
_PREFETCH = "llvm.prefetch.p0" if llvm_binding.llvm_version_info[0] >= 16 else "llvm.prefetch.p0i8"


@intrinsic
def _prefetch(typingctx, array, index):  # noqa: ANN001, ANN202, ARG001 (numba's signature)
    """Hint the CPU to load array[index] into the cache (LLVM's prefetch: read, keep in all
    levels), so the loads of a later write overlap the work of this one."""

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202, ARG001
        array_type = signature.args[0]
        view = context.make_array(array_type)(context, builder, args[0])
        pointer = builder.bitcast(
            cgutils.get_item_pointer(context, builder, array_type, view, [args[1]], False),
            ir.IntType(8).as_pointer(),
        )
        i32 = ir.IntType(32)
        function = cgutils.get_or_insert_function(
            builder.module,
            ir.FunctionType(ir.VoidType(), [pointer.type, i32, i32, i32]),
            _PREFETCH,
        )
        builder.call(function, [pointer, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.void(array, index), codegen


@_inlined
def _prefetch_block(items: NDArray[np.int32], keys: NDArray[np.float64], base: int, c: int) -> None:
    """Prefetch the cache lines of a block's slots and keys (64-byte lines)."""
    for k in range(0, c, 16):
        _prefetch(items, base + k)
    for k in range(0, c, 8):
        _prefetch(keys, base + k)


@numba.njit(cache=True, nogil=True, inline="always")
def _before(p: float, s: int, q: float, t: int) -> bool:
    """Key (p, s) ranks before (q, t): larger priority, or equal priority and newer stamp."""
    return (p > q) | ((p == q) & (s > t))


@_inlined
def _shift_up(array: NDArray, start: int, count: int) -> None:
    """array[start + 1 : start + 1 + count] = array[start : start + count]."""
    base = _U(start)
    for k in range(count - 1, -1, -1):
        array[base + _U(k + 1)] = array[base + _U(k)]


@_inlined
def _shift_down(array: NDArray, start: int, count: int) -> None:
    """array[start : start + count] = array[start + 1 : start + 1 + count]."""
    base = _U(start)
    for k in range(count):
        array[base + _U(k)] = array[base + _U(k + 1)]


@_no_refcounts
def _move(
    home: NDArray[np.int32],
    items: NDArray[np.int32],
    keys: NDArray[np.float64],
    src: int,
    dst: int,
    count: int,
    block: int,
) -> None:
    """Move `count` entries from flat offset src to dst, into `block` (another one: the ranges do
    not overlap), and make it the moved slots' home."""
    for k in range(count):
        items[dst + k] = items[src + k]
        keys[dst + k] = keys[src + k]
        home[items[dst + k]] = block


@_inlined
def _fenwick_add(fenwick: NDArray[np.int64], q: int, delta: int) -> None:
    """Add delta to the size at position q."""
    i = q + 1
    end = fenwick.shape[0] - 1
    while i <= end:
        fenwick[i] += delta
        i += i & -i


@_no_refcounts
def _fenwick_build(
    fenwick: NDArray[np.int64], sizes: NDArray[np.int32], blocks: NDArray[np.int32]
) -> None:
    """Node i sums the sizes at positions [i - lowbit(i), i) (0 at a gap): each node adds itself
    to its parent once, O(P)."""
    end = blocks.shape[0]
    for i in range(1, end + 1):
        block = blocks[i - 1]
        fenwick[i] = sizes[block] if block >= 0 else 0
    for i in range(1, end + 1):
        parent = i + (i & -i)
        if parent <= end:
            fenwick[parent] += fenwick[i]


@_no_refcounts
def _set_last(
    stamp: NDArray[np.int64],
    items: NDArray[np.int32],
    keys: NDArray[np.float64],
    sizes: NDArray[np.int32],
    blocks: NDArray[np.int32],
    last_key: NDArray[np.float64],
    last_stamp: NDArray[np.int64],
    counters: NDArray[np.int64],
    q: int,
) -> None:
    """Record the last key of the block at position q, and copy it into the gaps after q."""
    c = counters[_C]
    block = blocks[q]
    at = block * c + sizes[block] - 1
    key, key_stamp = keys[at], stamp[items[at]]
    last_key[q] = key
    last_stamp[q] = key_stamp
    k = q + 1
    while k <= counters[_LAST] and blocks[k] < 0:
        last_key[k] = key
        last_stamp[k] = key_stamp
        k += 1


@_inlined
def _place(
    sizes: NDArray[np.int32],
    position: NDArray[np.int32],
    blocks: NDArray[np.int32],
    last_key: NDArray[np.float64],
    last_stamp: NDArray[np.int64],
    fenwick: NDArray[np.int64],
    src: int,
    dst: int,
) -> None:
    """Move the block at position src to the gap at position dst."""
    block = blocks[src]
    blocks[dst] = block
    blocks[src] = -1
    position[block] = dst
    last_key[dst] = last_key[src]
    last_stamp[dst] = last_stamp[src]
    _fenwick_add(fenwick, src, -sizes[block])
    _fenwick_add(fenwick, dst, sizes[block])


@_no_refcounts
def _spread(
    stamp: NDArray[np.int64],
    items: NDArray[np.int32],
    keys: NDArray[np.float64],
    sizes: NDArray[np.int32],
    position: NDArray[np.int32],
    blocks: NDArray[np.int32],
    last_key: NDArray[np.float64],
    last_stamp: NDArray[np.int64],
    fenwick: NDArray[np.int64],
    counters: NDArray[np.int64],
) -> None:
    """Lay the blocks out again, in order, one every min(4, P / blocks) positions, O(P)."""
    nb = counters[_NB]
    counters[COUNT_SPREADS] += 1
    end = blocks.shape[0]
    k = 0
    for q in range(end):  # pack to the front, in order
        if blocks[q] >= 0:
            blocks[k] = blocks[q]
            k += 1
    for q in range(nb, end):
        blocks[q] = -1
    step = min(4, end // nb)
    for k in range(nb - 1, -1, -1):  # then spread, from the back (k * step >= k)
        block = blocks[k]
        blocks[k] = -1
        blocks[k * step] = block
        position[block] = k * step
    counters[_LAST] = (nb - 1) * step
    for k in range(nb):
        _set_last(stamp, items, keys, sizes, blocks, last_key, last_stamp, counters, k * step)
    _fenwick_build(fenwick, sizes, blocks)


@_no_refcounts
def _split(
    stamp: NDArray[np.int64],
    home: NDArray[np.int32],
    items: NDArray[np.int32],
    keys: NDArray[np.float64],
    sizes: NDArray[np.int32],
    position: NDArray[np.int32],
    free: NDArray[np.int32],
    blocks: NDArray[np.int32],
    last_key: NDArray[np.float64],
    last_stamp: NDArray[np.int64],
    fenwick: NDArray[np.int64],
    counters: NDArray[np.int64],
    q: int,
) -> None:
    """Move the upper half of the full block at position q to a new block in the position after
    it: the nearest gap within `REACH` on either side, the blocks in between moved over by one;
    where there is none, after spreading the blocks out."""
    c = counters[_C]
    end = blocks.shape[0]
    full = blocks[q]
    right = q + 1
    while right < end and right - q <= REACH and blocks[right] >= 0:
        right += 1
    left = q - 1
    while left >= 0 and q - left <= REACH and blocks[left] >= 0:
        left -= 1
    right_ok = right < end and right - q <= REACH
    left_ok = left >= 0 and q - left <= REACH
    if right_ok and (not left_ok or right - q <= q - left):
        if right > counters[_LAST]:  # the last block moves over (or the new one is last)
            counters[_LAST] += 1
        for k in range(right, q + 1, -1):
            _place(sizes, position, blocks, last_key, last_stamp, fenwick, k - 1, k)
        at = q + 1
    elif left_ok:
        for k in range(left, q):
            _place(sizes, position, blocks, last_key, last_stamp, fenwick, k + 1, k)
        at = q
    else:
        _spread(
            stamp, items, keys, sizes, position, blocks, last_key, last_stamp, fenwick, counters
        )
        at = position[full] + 1  # a gap: P >= 2 (blocks + 1)
        if at > counters[_LAST]:
            counters[_LAST] = at
    counters[_FREE] -= 1
    fresh = free[counters[_FREE]]
    blocks[at] = fresh
    position[fresh] = at
    half = c >> 1
    _move(home, items, keys, full * c + half, fresh * c, c - half, fresh)
    sizes[full] = half
    sizes[fresh] = c - half
    counters[_NB] += 1
    _set_last(stamp, items, keys, sizes, blocks, last_key, last_stamp, counters, at - 1)
    _set_last(stamp, items, keys, sizes, blocks, last_key, last_stamp, counters, at)
    _fenwick_add(fenwick, at - 1, half - c)
    _fenwick_add(fenwick, at, c - half)


@_no_refcounts
def _refill(
    stamp: NDArray[np.int64],
    home: NDArray[np.int32],
    items: NDArray[np.int32],
    keys: NDArray[np.float64],
    sizes: NDArray[np.int32],
    position: NDArray[np.int32],
    free: NDArray[np.int32],
    blocks: NDArray[np.int32],
    last_key: NDArray[np.float64],
    last_stamp: NDArray[np.int64],
    fenwick: NDArray[np.int64],
    counters: NDArray[np.int64],
    q: int,
) -> None:
    """The block at position q fell to C/2 - 1 slots (and it has a neighbour): borrow the
    nearest slot of a neighbour that holds more than C/2, else merge with a neighbour (the two
    then hold at most C - 1; the later one's position becomes a gap)."""
    c = counters[_C]
    last = counters[_LAST]
    block = blocks[q]
    size = sizes[block]
    before = q - 1
    while before >= 0 and blocks[before] < 0:
        before -= 1
    after = q + 1
    while after <= last and blocks[after] < 0:
        after += 1
    if before >= 0 and sizes[blocks[before]] > (c >> 1):
        left = blocks[before]
        _shift_up(items, block * c, size)
        _shift_up(keys, block * c, size)
        _move(home, items, keys, left * c + sizes[left] - 1, block * c, 1, block)
        sizes[left] -= 1
        sizes[block] = size + 1
        _set_last(stamp, items, keys, sizes, blocks, last_key, last_stamp, counters, before)
        _fenwick_add(fenwick, before, -1)
        _fenwick_add(fenwick, q, 1)
    elif after <= last and sizes[blocks[after]] > (c >> 1):
        right = blocks[after]
        _move(home, items, keys, right * c, block * c + size, 1, block)
        _shift_down(items, right * c, sizes[right] - 1)
        _shift_down(keys, right * c, sizes[right] - 1)
        sizes[right] -= 1
        sizes[block] = size + 1
        _set_last(stamp, items, keys, sizes, blocks, last_key, last_stamp, counters, q)
        _fenwick_add(fenwick, after, -1)
        _fenwick_add(fenwick, q, 1)
    else:
        first, second = (before, q) if before >= 0 else (q, after)
        a, b = blocks[first], blocks[second]
        moved = sizes[b]
        _move(home, items, keys, b * c, a * c + sizes[a], moved, a)
        sizes[a] += moved
        sizes[b] = 0
        blocks[second] = -1
        position[b] = -1
        free[counters[_FREE]] = b
        counters[_FREE] += 1
        counters[_NB] -= 1
        if second == last:
            counters[_LAST] = first
        _set_last(stamp, items, keys, sizes, blocks, last_key, last_stamp, counters, first)
        _fenwick_add(fenwick, second, -moved)
        _fenwick_add(fenwick, first, moved)
        if second - first > REACH or (after <= last and after - first > REACH):
            _spread(
                stamp, items, keys, sizes, position, blocks, last_key, last_stamp, fenwick,
                counters,
            )  # fmt: skip


@_inlined
def _remove(
    stamp: NDArray[np.int64],
    home: NDArray[np.int32],
    items: NDArray[np.int32],
    keys: NDArray[np.float64],
    sizes: NDArray[np.int32],
    position: NDArray[np.int32],
    free: NDArray[np.int32],
    blocks: NDArray[np.int32],
    last_key: NDArray[np.float64],
    last_stamp: NDArray[np.int64],
    fenwick: NDArray[np.int64],
    counters: NDArray[np.int64],
    slot: int,
) -> None:
    """Take a stored slot out of its block (the insert that always follows refills a block it
    empties: the only one, at position 0)."""
    c = counters[_C]
    block = home[slot]
    q = position[block]
    size = sizes[block]
    base = _U(block * c)
    j = 0
    for k in range(size):  # no early exit: the compiler vectorizes the scan
        if items[base + _U(k)] == slot:
            j = k
    _shift_down(items, block * c + j, size - 1 - j)
    _shift_down(keys, block * c + j, size - 1 - j)
    sizes[block] = size - 1
    home[slot] = -1
    counters[_N] -= 1
    _fenwick_add(fenwick, q, -1)
    if size == 1:
        return
    if j == size - 1:
        _set_last(stamp, items, keys, sizes, blocks, last_key, last_stamp, counters, q)
    if counters[_NB] > 1 and size - 1 < (c >> 1):
        _refill(
            stamp, home, items, keys, sizes, position, free, blocks, last_key, last_stamp,
            fenwick, counters, q,
        )  # fmt: skip


@_inlined
def _find_position(
    last_key: NDArray[np.float64], last_stamp: NDArray[np.int64], last: int, p: float, s: int
) -> int:
    """The first position whose last key does not rank before (p, s): it holds a block, the one
    that takes (p, s) (none: the last block, at `last`). A binary search over the last keys of
    every SEGMENT-th position finds the segment; in it, a count of the keys above p (vectorized,
    no branches to mispredict) and a step over the ties with newer stamps find the position."""
    lo, hi = 0, last // SEGMENT
    while lo < hi:
        mid = (lo + hi) >> 1
        end = min(mid * SEGMENT + SEGMENT - 1, last)
        if last_key[end] > p or (last_key[end] == p and last_stamp[end] > s):
            lo = mid + 1
        else:
            hi = mid
    start = lo * SEGMENT
    stop = min(start + SEGMENT, last + 1)
    q = start
    for k in range(start, stop):
        q += last_key[k] > p
    while q < stop and last_key[q] == p and last_stamp[q] > s:
        q += 1
    return min(q, last)


@_inlined
def _insert(
    stamp: NDArray[np.int64],
    home: NDArray[np.int32],
    items: NDArray[np.int32],
    keys: NDArray[np.float64],
    sizes: NDArray[np.int32],
    position: NDArray[np.int32],
    free: NDArray[np.int32],
    blocks: NDArray[np.int32],
    last_key: NDArray[np.float64],
    last_stamp: NDArray[np.int64],
    fenwick: NDArray[np.int64],
    counters: NDArray[np.int64],
    slot: int,
    p: float,
    hint: int,
) -> None:
    """Put the slot, its stamp already set, with priority p into its place: the block at
    position `hint` if that is the one (`_find_position`), else the one found."""
    c = counters[_C]
    s = stamp[slot]
    if counters[_NB] == 0:
        counters[_FREE] -= 1
        fresh = free[counters[_FREE]]
        blocks[0] = fresh
        position[fresh] = 0
        sizes[fresh] = 0
        counters[_NB] = 1
        counters[_LAST] = 0
    last = counters[_LAST]
    q = hint
    if not (
        0 <= q <= last
        and blocks[q] >= 0
        and (q == last or not _before(last_key[q], last_stamp[q], p, s))
        and (q == 0 or _before(last_key[q - 1], last_stamp[q - 1], p, s))
    ):
        q = _find_position(last_key, last_stamp, last, p, s)
    block = blocks[q]
    size = sizes[block]
    base = block * c
    lo, length = 0, size
    while length > 0:
        half = length >> 1
        mid = lo + half
        key = keys[base + mid]  # the stamp is read only on a tie (a cache miss, mostly)
        go = key > p or (key == p and stamp[items[base + mid]] > s)
        lo = mid + 1 if go else lo
        length = length - half - 1 if go else half
    _shift_up(items, base + lo, size - lo)
    _shift_up(keys, base + lo, size - lo)
    items[base + lo] = slot
    keys[base + lo] = p
    sizes[block] = size + 1
    home[slot] = block
    counters[_N] += 1
    _fenwick_add(fenwick, q, 1)
    if lo == size:
        _set_last(stamp, items, keys, sizes, blocks, last_key, last_stamp, counters, q)
    if size + 1 == c:
        _split(
            stamp, home, items, keys, sizes, position, free, blocks, last_key, last_stamp,
            fenwick, counters, q,
        )  # fmt: skip


@_no_refcounts
def write_kernel(
    stamp: NDArray[np.int64],
    home: NDArray[np.int32],
    items: NDArray[np.int32],
    keys: NDArray[np.float64],
    sizes: NDArray[np.int32],
    position: NDArray[np.int32],
    free: NDArray[np.int32],
    blocks: NDArray[np.int32],
    last_key: NDArray[np.float64],
    last_stamp: NDArray[np.int64],
    fenwick: NDArray[np.int64],
    counters: NDArray[np.int64],
    slots: NDArray[np.int64],
    priorities: NDArray[np.float64],
    stored_only: bool,
) -> float:
    """For each k in turn: remove slots[k] if stored, give it priorities[k] and the next stamp,
    insert it (a slot that holds nothing is skipped when `stored_only`). Returns the largest of
    `priorities` (0 for none).

    Done in two passes with the same outcome: first every write's slot leaves its block and
    takes its stamp (a slot written twice: the last stamp), then each slot goes in once, with
    the priority of its last write. The passes let the loads overlap: the first prefetches the
    homes and blocks of the writes ahead; the second finds the block of the next slot and
    prefetches it while this one goes in."""
    largest = 0.0
    c = counters[_C]
    count = slots.shape[0]
    clock = counters[_CLOCK]  # stamps above it were given in this call
    for k in range(count):
        if k + AHEAD < count:  # the homes of later writes, then the blocks they leave
            _prefetch(home, slots[k + AHEAD])
            _prefetch(stamp, slots[k + AHEAD])
        if k + AHEAD // 2 < count and home[slots[k + AHEAD // 2]] >= 0:
            _prefetch_block(items, keys, home[slots[k + AHEAD // 2]] * c, c)
        slot = slots[k]
        largest = max(largest, priorities[k])
        if home[slot] >= 0:
            _remove(
                stamp, home, items, keys, sizes, position, free, blocks, last_key, last_stamp,
                fenwick, counters, slot,
            )  # fmt: skip
        elif stored_only and stamp[slot] <= clock:
            continue
        counters[_CLOCK] += 1
        stamp[slot] = counters[_CLOCK]
    k = _next_last_write(stamp, slots, clock, stored_only, 0, clock)
    hint = -1  # the position found for this slot before the previous one went in
    while k < count:
        after = _next_last_write(stamp, slots, clock, stored_only, k + 1, stamp[slots[k]])
        ahead = -1
        if after < count and counters[_NB] > 0:
            ahead = _find_position(
                last_key, last_stamp, counters[_LAST], priorities[after], stamp[slots[after]]
            )
            _prefetch_block(items, keys, blocks[ahead] * c, c)
        _insert(
            stamp, home, items, keys, sizes, position, free, blocks, last_key, last_stamp,
            fenwick, counters, slots[k], priorities[k], hint,
        )  # fmt: skip
        hint = ahead
        k = after
    return largest


@_inlined
def _next_last_write(
    stamp: NDArray[np.int64],
    slots: NDArray[np.int64],
    clock: int,
    stored_only: bool,
    k: int,
    given: int,
) -> int:
    """The first write at or after k that is its slot's last in the call (count: none), given
    that `given` stamps were handed out before k. A write got stamp `given` + 1 if its slot
    was stored (or `stored_only` is off), so its slot's stamp is above `clock`; it is the last
    write of its slot if the slot kept that stamp."""
    count = slots.shape[0]
    while k < count:
        s = stamp[slots[k]]
        if not stored_only or s > clock:
            given += 1
            if s == given:
                return k
        k += 1
    return count


@numba.njit(cache=True, nogil=True)
def select_kernel(
    items: NDArray[np.int32],
    blocks: NDArray[np.int32],
    fenwick: NDArray[np.int64],
    counters: NDArray[np.int64],
    ranks: NDArray[np.int64],
    out: NDArray[np.int64],
) -> None:
    """out[k] = the slot at 0-based rank ranks[k] (< the number stored): a Fenwick descent to
    the last position whose prefix size is <= the rank (it holds a block: a gap adds nothing),
    then the offset in that block. The B descents advance together one level at a time, without
    branches, so their loads overlap."""
    end = fenwick.shape[0] - 1
    batch = ranks.shape[0]
    q = np.zeros(batch, np.int64)
    rest = ranks.copy()
    step = 1
    while step * 2 <= end:
        step *= 2
    while step > 0:
        for k in range(batch):
            node = q[k] + step
            count = fenwick[min(node, end)]
            take = node <= end and count <= rest[k]
            q[k] = node if take else q[k]
            rest[k] -= count if take else 0
        step >>= 1
    c = counters[_C]
    for k in range(batch):
        out[k] = items[blocks[q[k]] * c + rest[k]]


@_no_refcounts
def walk_kernel(
    items: NDArray[np.int32],
    keys: NDArray[np.float64],
    sizes: NDArray[np.int32],
    blocks: NDArray[np.int32],
    counters: NDArray[np.int64],
    order: NDArray[np.int64],
    priorities: NDArray[np.float64],
) -> None:
    """order = every stored slot, rank order; priorities[slot] = its priority."""
    c = counters[_C]
    k = 0
    for q in range(counters[_LAST] + 1):
        block = blocks[q]
        if block < 0:
            continue
        for j in range(block * c, block * c + sizes[block]):
            order[k] = items[j]
            priorities[items[j]] = keys[j]
            k += 1


@_no_refcounts
def build_kernel(
    stamp: NDArray[np.int64],
    home: NDArray[np.int32],
    items: NDArray[np.int32],
    keys: NDArray[np.float64],
    sizes: NDArray[np.int32],
    position: NDArray[np.int32],
    free: NDArray[np.int32],
    blocks: NDArray[np.int32],
    last_key: NDArray[np.float64],
    last_stamp: NDArray[np.int64],
    fenwick: NDArray[np.int64],
    counters: NDArray[np.int64],
    order: NDArray[np.int64],
    priorities: NDArray[np.float64],
) -> None:
    """Lay out `order` (the stored slots in rank order, with their priorities) in blocks about
    3/4 full: one block below C slots, else ceil(n / (3C/4)) blocks of sizes as equal as
    possible, each within [C/2, 3C/4] (n >= C for two blocks; n / nb > C/2 for three or more),
    at positions 0, 1, 2, ... before they are spread out."""
    c = counters[_C]
    n = order.shape[0]
    nb = 0 if n == 0 else 1 if n < c else -(-n // (3 * c // 4))
    physical = sizes.shape[0]
    sizes[:] = 0
    home[:] = -1
    position[:] = -1
    blocks[:] = -1
    for k in range(physical - nb):  # the free stack pops nb, nb + 1, ...
        free[k] = physical - 1 - k
    counters[_FREE] = physical - nb
    counters[_NB] = nb
    counters[_N] = n
    counters[_LAST] = nb - 1
    k = 0
    for q in range(nb):
        blocks[q] = q
        position[q] = q
        sizes[q] = n // nb + (1 if q < n % nb else 0)
        for j in range(q * c, q * c + sizes[q]):
            items[j] = order[k]
            keys[j] = priorities[k]
            home[order[k]] = q
            k += 1
    if nb:
        _spread(
            stamp, items, keys, sizes, position, blocks, last_key, last_stamp, fenwick, counters
        )
    else:
        fenwick[:] = 0
