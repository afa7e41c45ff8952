"""The rank order of rank-based replay, exact under every write: sorted blocks of slots with a
Fenwick tree over the block sizes (an order-statistic structure in the style of a B-tree of
height two, or of a "sorted list of sorted lists").

Every stored slot i has a key (p_i, s_i): its priority p_i and a write stamp s_i that grows with
every write of any slot. The order is p descending, ties by s descending, so among equal
priorities the most recently written slot comes first; stamps are unique, so the order is total.
Rank 0 (rank 1 of the paper) is the first slot in that order.

Layout (blocks of capacity C, the blocks in use listed by logical position)::

    position               0                1             2
    block (physical)       3                0             5
    items (slots)          [7, 2, 9]        [4, 0]        [1, 8, 6, 3]
    keys  (priorities)     [9., 7., 7.]     [5., 4.]      [3., 2., 2., 1.]
    sizes                  3                2             4      -> Fenwick tree over [3, 2, 4]
    last key by position   (7., s_9)        (4., s_0)     (1., s_3)

    slot at rank 5: prefix sizes [3, 5, 9] -> position 2, offset 5 - 5 = 0 -> slot 1

`blocks` lists the physical blocks in use in logical order, then the free ones; `position` is
its inverse; `home[i]` is the block that holds slot i; `stamp[i]` is -1 when slot i holds nothing.
The priorities live only in the blocks (`keys`), beside the slots, so a search inside a block
reads contiguous memory; stamps are read only to break ties.

Invariants (`check_invariants`):
- keys strictly decrease in the order above, within a block and from one block to the next;
- every block in use holds fewer than C slots, and at least C/2 when more than one is in use
  (a full block splits into two halves; a block that falls under C/2 borrows a slot from a
  neighbour that has more than C/2, else merges with it), so at most 2N/C + 1 blocks are used.

Costs (b <= 2N/C + 1 blocks in use): a write (remove the slot, then insert it with its new key)
is a scan of its block O(C), a binary search over the blocks' last keys O(log b) and one inside a
block O(log C), shifts of at most C entries and Fenwick updates O(log b); a split or merge also
renumbers positions and rebuilds the Fenwick tree, O(C + b), at most once per C/2 writes into a
block, so O(1 + N/C^2) amortized. Selecting the slots at B ranks is B Fenwick descents,
O(B log b), done level by level so the B memory loads of a level overlap. Walking the whole order
is O(N). All in numba.
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import NDArray

__all__ = ["RankOrder", "block_capacity", "rank_order_nbytes"]

# Fields of `RankOrder.counters`: blocks in use, slots stored, last stamp given, C.
COUNT_BLOCKS, COUNT_STORED, COUNT_CLOCK, COUNT_C = 0, 1, 2, 3
_NB, _N, _CLOCK, _C = COUNT_BLOCKS, COUNT_STORED, COUNT_CLOCK, COUNT_C


def block_capacity(capacity: int) -> int:
    """C for ``capacity`` slots: the power of two nearest sqrt(capacity), clamped to [8, 128]
    (balances the O(C) shifts and scans against the O(N/C^2) amortized splits and merges; past
    128 the rows a write touches cost more than the rarer splits save, measured at N = 2^17)."""
    return int(min(128, max(8, 1 << round(np.log2(max(1.0, np.sqrt(capacity)))))))


def max_blocks(capacity: int) -> int:
    """Blocks allocated: at most 2N/C + 1 are ever in use (module docstring)."""
    return 2 * capacity // block_capacity(capacity) + 2


def rank_order_nbytes(capacity: int) -> int:
    """`RankOrder(capacity).nbytes` without allocating: per slot an int64 stamp and an int32 home
    block; per block C int32 slots and C float64 keys, an int32 size, list entry and position, a
    float64 and an int64 last key, and an int64 Fenwick node (plus one); four int64 counters."""
    c = block_capacity(capacity)
    return capacity * (8 + 4) + max_blocks(capacity) * (12 * c + 3 * 4 + 3 * 8) + 8 + 4 * 8


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
        blocks = max_blocks(capacity)
        self.stamp = np.full(capacity, -1, np.int64)
        self.home = np.full(capacity, -1, np.int32)
        self.items = np.zeros(blocks * self.block_capacity, np.int32)
        self.keys = np.zeros(blocks * self.block_capacity, np.float64)
        self.sizes = np.zeros(blocks, np.int32)
        self.blocks = np.arange(blocks, dtype=np.int32)
        self.position = np.full(blocks, -1, np.int32)
        self.last_key = np.zeros(blocks, np.float64)
        self.last_stamp = np.zeros(blocks, np.int64)
        self.fenwick = np.zeros(blocks + 1, np.int64)
        self.counters = np.array([0, 0, 0, self.block_capacity], np.int64)
        self._one_slot = np.zeros(1, np.int64)  # `write_one`'s arguments, kept to not allocate
        self._one_priority = np.zeros(1, np.float64)

    def _arrays(self) -> tuple[NDArray, ...]:
        return (
            self.stamp,
            self.home,
            self.items,
            self.keys,
            self.sizes,
            self.blocks,
            self.position,
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
    def clock(self) -> int:
        """The last stamp given (0 before any write)."""
        return int(self.counters[_CLOCK])

    def write(self, slots: NDArray[np.int64], priorities: NDArray[np.float64]) -> float:
        """Give each slot, in turn, its priority and the next stamp (so duplicates: last wins);
        returns the largest priority given. The caller checks the values: int64 slots in
        [0, capacity), float64 priorities finite and >= 0."""
        return float(write_kernel(*self._arrays(), slots, priorities, False))

    def update(self, slots: NDArray[np.int64], priorities: NDArray[np.float64]) -> float:
        """As `write`, for stored slots only: a slot that holds nothing is left out (its
        priority still counts towards the largest returned)."""
        return float(write_kernel(*self._arrays(), slots, priorities, True))

    def write_one(self, slot: int, priority: float) -> None:
        """`write` of one slot."""
        self._one_slot[0] = slot
        self._one_priority[0] = priority
        write_kernel(*self._arrays(), self._one_slot, self._one_priority, False)

    def select(self, ranks: NDArray[np.int64]) -> NDArray[np.int64]:
        """The slot at each 0-based rank (each < `size`)."""
        out = np.empty(ranks.shape[0], np.int64)
        select_kernel(self.items, self.blocks, self.fenwick, self.counters, ranks, out)
        return out

    def walk(self) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """(every stored slot, rank 0 first; the priority of every slot, 0 where nothing is
        stored), O(N)."""
        order = np.empty(self.size, np.int64)
        priorities = np.zeros(self.capacity, np.float64)
        walk_kernel(
            self.items, self.keys, self.sizes, self.blocks, self.counters, order, priorities
        )
        return order, priorities

    def slots_in_order(self) -> NDArray[np.int64]:
        """Every stored slot, rank 0 first (O(N))."""
        return self.walk()[0]

    def priorities(self) -> NDArray[np.float64]:
        """The priority of every slot, 0 where nothing is stored (O(N))."""
        return self.walk()[1]

    def load(self, priority: NDArray[np.float64], stamp: NDArray[np.int64], clock: int) -> None:
        """Rebuild from per-slot keys (stamp -1: nothing stored), sorted once, in blocks about
        3/4 full. Stored stamps must be unique and <= clock."""
        stored = np.flatnonzero(stamp >= 0)
        order = stored[np.lexsort((-stamp[stored], -priority[stored]))].astype(np.int64)
        self.stamp[...] = stamp
        self.counters[_CLOCK] = clock
        build_kernel(*self._arrays(), order, priority[order])

    def check_invariants(self) -> None:
        """AssertionError where the structure is inconsistent (for tests)."""
        nb, n, c = int(self.counters[_NB]), int(self.counters[_N]), self.block_capacity
        used = self.blocks[:nb]
        sizes = self.sizes[used]
        assert (sizes > 0).all() and (sizes < c).all() and sizes.sum() == n
        assert nb <= 1 or (sizes >= c // 2).all()
        assert np.array_equal(self.position[used], np.arange(nb))
        assert np.array_equal(np.sort(self.blocks), np.arange(self.blocks.shape[0]))
        order = self.slots_in_order()
        assert np.array_equal(self.home[order], np.repeat(used, sizes))
        assert (self.home >= 0).sum() == n == (self.stamp >= 0).sum()
        assert (self.stamp[order] >= 0).all() and (self.stamp <= self.clock).all()
        c = self.block_capacity
        keys = [self.keys[b * c : b * c + self.sizes[b]] for b in used]
        keys = np.concatenate(keys) if nb else np.empty(0)
        p, s = np.asarray(keys), self.stamp[order]
        assert ((p[:-1] > p[1:]) | ((p[:-1] == p[1:]) & (s[:-1] > s[1:]))).all()
        lasts = np.cumsum(sizes) - 1
        assert np.array_equal(self.last_key[:nb], p[lasts])
        assert np.array_equal(self.last_stamp[:nb], s[lasts])
        for i in range(1, nb + 1):  # Fenwick node i sums the sizes at positions [i - lowbit(i), i)
            assert self.fenwick[i] == sizes[i - (i & -i) : i].sum()

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


@numba.njit(cache=True, nogil=True, inline="always")
def _before(p: float, s: int, q: float, t: int) -> bool:
    """Key (p, s) ranks before (q, t): larger priority, or equal priority and newer stamp."""
    return p > q or (p == q and s > t)


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
def _fenwick_add(fenwick: NDArray[np.int64], nb: int, q: int, delta: int) -> None:
    i = q + 1
    while i <= nb:
        fenwick[i] += delta
        i += i & -i


@_no_refcounts
def _fenwick_build(
    fenwick: NDArray[np.int64], sizes: NDArray[np.int32], blocks: NDArray[np.int32], nb: int
) -> None:
    """Node i sums the sizes at positions [i - lowbit(i), i): each node adds itself to its parent
    once, O(nb)."""
    for i in range(1, nb + 1):
        fenwick[i] = sizes[blocks[i - 1]]
    for i in range(1, nb + 1):
        parent = i + (i & -i)
        if parent <= nb:
            fenwick[parent] += fenwick[i]


@_inlined
def _set_last(
    stamp: NDArray[np.int64],
    items: NDArray[np.int32],
    keys: NDArray[np.float64],
    sizes: NDArray[np.int32],
    blocks: NDArray[np.int32],
    last_key: NDArray[np.float64],
    last_stamp: NDArray[np.int64],
    c: int,
    q: int,
) -> None:
    """Record the last key of the block at position q (blocks of capacity c)."""
    block = blocks[q]
    at = block * c + sizes[block] - 1
    last_key[q] = keys[at]
    last_stamp[q] = stamp[items[at]]


@_no_refcounts
def _open_position(
    blocks: NDArray[np.int32],
    position: NDArray[np.int32],
    last_key: NDArray[np.float64],
    last_stamp: NDArray[np.int64],
    nb: int,
    q: int,
) -> int:
    """Move positions q.. of nb up by one and put the first free block at q; returns it."""
    fresh = blocks[nb]
    for k in range(nb, q, -1):
        blocks[k] = blocks[k - 1]
        last_key[k] = last_key[k - 1]
        last_stamp[k] = last_stamp[k - 1]
        position[blocks[k]] = k
    blocks[q] = fresh
    position[fresh] = q
    return fresh


@_no_refcounts
def _close_position(
    sizes: NDArray[np.int32],
    blocks: NDArray[np.int32],
    position: NDArray[np.int32],
    last_key: NDArray[np.float64],
    last_stamp: NDArray[np.int64],
    nb: int,
    q: int,
) -> None:
    """Remove the empty block at position q of nb from the list; it becomes the first free one."""
    gone = blocks[q]
    for k in range(q, nb - 1):
        blocks[k] = blocks[k + 1]
        last_key[k] = last_key[k + 1]
        last_stamp[k] = last_stamp[k + 1]
        position[blocks[k]] = k
    blocks[nb - 1] = gone
    position[gone] = -1
    sizes[gone] = 0


@_no_refcounts
def _split(
    stamp: NDArray[np.int64],
    home: NDArray[np.int32],
    items: NDArray[np.int32],
    keys: NDArray[np.float64],
    sizes: NDArray[np.int32],
    blocks: NDArray[np.int32],
    position: NDArray[np.int32],
    last_key: NDArray[np.float64],
    last_stamp: NDArray[np.int64],
    fenwick: NDArray[np.int64],
    counters: NDArray[np.int64],
    q: int,
) -> None:
    """Move the upper half of the full block at position q to a new block at position q + 1."""
    c = counters[_C]
    nb = counters[_NB]
    full = blocks[q]
    fresh = _open_position(blocks, position, last_key, last_stamp, nb, q + 1)
    half = c >> 1
    _move(home, items, keys, full * c + half, fresh * c, c - half, fresh)
    sizes[full] = half
    sizes[fresh] = c - half
    counters[_NB] = nb + 1
    _set_last(stamp, items, keys, sizes, blocks, last_key, last_stamp, c, q)
    _set_last(stamp, items, keys, sizes, blocks, last_key, last_stamp, c, q + 1)
    _fenwick_build(fenwick, sizes, blocks, nb + 1)


@_no_refcounts
def _refill(
    stamp: NDArray[np.int64],
    home: NDArray[np.int32],
    items: NDArray[np.int32],
    keys: NDArray[np.float64],
    sizes: NDArray[np.int32],
    blocks: NDArray[np.int32],
    position: NDArray[np.int32],
    last_key: NDArray[np.float64],
    last_stamp: NDArray[np.int64],
    fenwick: NDArray[np.int64],
    counters: NDArray[np.int64],
    q: int,
) -> None:
    """The block at position q fell to C/2 - 1 slots (and it has a neighbour): borrow the
    nearest slot of a neighbour that holds more than C/2, else merge with a neighbour (the two
    then hold at most C - 1)."""
    c = counters[_C]
    nb = counters[_NB]
    block = blocks[q]
    size = sizes[block]
    if q > 0 and sizes[blocks[q - 1]] > (c >> 1):
        left = blocks[q - 1]
        _shift_up(items, block * c, size)
        _shift_up(keys, block * c, size)
        _move(home, items, keys, left * c + sizes[left] - 1, block * c, 1, block)
        sizes[left] -= 1
        sizes[block] = size + 1
        _set_last(stamp, items, keys, sizes, blocks, last_key, last_stamp, c, q - 1)
        _fenwick_add(fenwick, nb, q - 1, -1)
        _fenwick_add(fenwick, nb, q, 1)
    elif q + 1 < nb and sizes[blocks[q + 1]] > (c >> 1):
        right = blocks[q + 1]
        _move(home, items, keys, right * c, block * c + size, 1, block)
        _shift_down(items, right * c, sizes[right] - 1)
        _shift_down(keys, right * c, sizes[right] - 1)
        sizes[right] -= 1
        sizes[block] = size + 1
        _set_last(stamp, items, keys, sizes, blocks, last_key, last_stamp, c, q)
        _fenwick_add(fenwick, nb, q + 1, -1)
        _fenwick_add(fenwick, nb, q, 1)
    else:
        first = q - 1 if q > 0 else q  # merge positions first and first + 1 into the first
        a, b = blocks[first], blocks[first + 1]
        _move(home, items, keys, b * c, a * c + sizes[a], sizes[b], a)
        sizes[a] += sizes[b]
        _close_position(sizes, blocks, position, last_key, last_stamp, nb, first + 1)
        counters[_NB] = nb - 1
        _set_last(stamp, items, keys, sizes, blocks, last_key, last_stamp, c, first)
        _fenwick_build(fenwick, sizes, blocks, nb - 1)


@_inlined
def _remove(
    stamp: NDArray[np.int64],
    home: NDArray[np.int32],
    items: NDArray[np.int32],
    keys: NDArray[np.float64],
    sizes: NDArray[np.int32],
    blocks: NDArray[np.int32],
    position: NDArray[np.int32],
    last_key: NDArray[np.float64],
    last_stamp: NDArray[np.int64],
    fenwick: NDArray[np.int64],
    counters: NDArray[np.int64],
    slot: int,
) -> None:
    """Take a stored slot out of its block."""
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
    nb = counters[_NB]
    if size == 1:  # the only block (others hold >= C/2), now empty
        _close_position(sizes, blocks, position, last_key, last_stamp, nb, q)
        counters[_NB] = 0
        return
    if j == size - 1:
        _set_last(stamp, items, keys, sizes, blocks, last_key, last_stamp, c, q)
    _fenwick_add(fenwick, nb, q, -1)
    if nb > 1 and size - 1 < (c >> 1):
        _refill(
            stamp, home, items, keys, sizes, blocks, position, last_key, last_stamp, fenwick,
            counters, q,
        )  # fmt: skip


@_inlined
def _insert(
    stamp: NDArray[np.int64],
    home: NDArray[np.int32],
    items: NDArray[np.int32],
    keys: NDArray[np.float64],
    sizes: NDArray[np.int32],
    blocks: NDArray[np.int32],
    position: NDArray[np.int32],
    last_key: NDArray[np.float64],
    last_stamp: NDArray[np.int64],
    fenwick: NDArray[np.int64],
    counters: NDArray[np.int64],
    slot: int,
    p: float,
) -> None:
    """Put the slot, its stamp already set, with priority p into its place."""
    c = counters[_C]
    s = stamp[slot]
    nb = counters[_NB]
    if nb == 0:
        _open_position(blocks, position, last_key, last_stamp, 0, 0)
        counters[_NB] = nb = 1
        fenwick[1] = 0
    # The first block whose last key does not rank before (p, s) takes it; else the last block.
    lo, hi = 0, nb - 1
    while lo < hi:
        mid = (lo + hi) >> 1
        if _before(last_key[mid], last_stamp[mid], p, s):
            lo = mid + 1
        else:
            hi = mid
    q = lo
    block = blocks[q]
    size = sizes[block]
    base = block * c
    lo, hi = 0, size
    while lo < hi:
        mid = (lo + hi) >> 1
        key = keys[base + mid]  # the stamp is read only on a tie (a cache miss, mostly)
        if key > p or (key == p and stamp[items[base + mid]] > s):
            lo = mid + 1
        else:
            hi = mid
    _shift_up(items, base + lo, size - lo)
    _shift_up(keys, base + lo, size - lo)
    items[base + lo] = slot
    keys[base + lo] = p
    sizes[block] = size + 1
    home[slot] = block
    counters[_N] += 1
    if lo == size:
        last_key[q] = p
        last_stamp[q] = s
    _fenwick_add(fenwick, nb, q, 1)
    if size + 1 == c:
        _split(
            stamp, home, items, keys, sizes, blocks, position, last_key, last_stamp, fenwick,
            counters, q,
        )  # fmt: skip


@_no_refcounts
def write_kernel(
    stamp: NDArray[np.int64],
    home: NDArray[np.int32],
    items: NDArray[np.int32],
    keys: NDArray[np.float64],
    sizes: NDArray[np.int32],
    blocks: NDArray[np.int32],
    position: NDArray[np.int32],
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
    `priorities` (0 for none)."""
    largest = 0.0
    for k in range(slots.shape[0]):
        slot = slots[k]
        largest = max(largest, priorities[k])
        if home[slot] >= 0:
            _remove(
                stamp, home, items, keys, sizes, blocks, position, last_key, last_stamp, fenwick,
                counters, slot,
            )  # fmt: skip
        elif stored_only:
            continue
        counters[_CLOCK] += 1
        stamp[slot] = counters[_CLOCK]
        _insert(
            stamp, home, items, keys, sizes, blocks, position, last_key, last_stamp, fenwick,
            counters, slot, priorities[k],
        )  # fmt: skip
    return largest


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
    the last position whose prefix size is <= the rank, then the offset in that block. The B
    descents advance together one level at a time, without branches, so their loads overlap."""
    nb = counters[_NB]
    batch = ranks.shape[0]
    q = np.zeros(batch, np.int64)
    rest = ranks.copy()
    step = 1
    while step * 2 <= nb:
        step *= 2
    while step > 0:
        for k in range(batch):
            node = q[k] + step
            count = fenwick[min(node, nb)]
            take = node <= nb and count <= rest[k]
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
    for q in range(counters[_NB]):
        block = blocks[q]
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
    blocks: NDArray[np.int32],
    position: NDArray[np.int32],
    last_key: NDArray[np.float64],
    last_stamp: NDArray[np.int64],
    fenwick: NDArray[np.int64],
    counters: NDArray[np.int64],
    order: NDArray[np.int64],
    priorities: NDArray[np.float64],
) -> None:
    """Lay out `order` (the stored slots in rank order, with their priorities) in blocks about
    3/4 full: one block below C slots, else ceil(n / (3C/4)) blocks of sizes as equal as
    possible, each within [C/2, 3C/4] (n >= C for two blocks; n / nb > C/2 for three or more)."""
    c = counters[_C]
    n = order.shape[0]
    nb = 0 if n == 0 else 1 if n < c else -(-n // (3 * c // 4))
    sizes[:] = 0
    home[:] = -1
    position[:] = -1
    for q in range(blocks.shape[0]):
        blocks[q] = q
    k = 0
    for q in range(nb):
        position[q] = q
        sizes[q] = n // nb + (1 if q < n % nb else 0)
        for j in range(q * c, q * c + sizes[q]):
            items[j] = order[k]
            keys[j] = priorities[k]
            home[order[k]] = q
            k += 1
        _set_last(stamp, items, keys, sizes, blocks, last_key, last_stamp, c, q)
    _fenwick_build(fenwick, sizes, blocks, nb)
    counters[_NB] = nb
    counters[_N] = n
