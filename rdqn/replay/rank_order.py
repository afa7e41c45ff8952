"""The rank order of rank-based replay, exact under every write: sorted blocks of slots laid out
in a gapped list of positions, with the slot counts of groups of positions (an order-statistic
structure in the style of a B-tree of height two, or of a "sorted list of sorted lists").

Every stored slot i has a key (p_i, s_i): its priority p_i and a write stamp s_i that grows with
every write of any slot. The order is p descending, ties by s descending, so among equal
priorities the most recently written slot comes first; stamps are unique, so the order is total.
Rank 0 (rank 1 of the paper) is the first slot in that order.

Layout (blocks of capacity C; P positions, each holding a physical block or a gap, -1)::

    position               0             1      2             3               4 ...
    block (physical)       3             -1     0             5               -1
    entries: slots         [7, 2, 9]            [4, 0]        [1, 8, 6, 3]
      and their priorities [9., 7., 7.]         [5., 4.]      [3., 2., 2., 1.]
    sizes (by position)    3             0      2             4               0
    last key by position   7.            copy   4.            1.              (not kept)

    groups of GROUP positions (here 2): counts [3, 6, ...], prefix ends [3, 9, ...]; slot at
    rank 5: the first group whose end is above 5 is group 1 (ranks 3..8); in it, position 2
    holds ranks 3..4 and position 3 ranks 5..8: offset 5 - 5 = 0 -> slot 1

`blocks[q]` is the physical block at position q (-1: a gap) and `sizes[q]` the slots it holds (0
at a gap: a step through a group's positions reads one cache line of sizes); `position` is the
inverse of `blocks` (-1: a free block, kept on the stack `free`); `home[i]` is the block that
holds slot i; `stamp[i]` is -1 when slot i holds nothing. Position 0 always holds a block (once
one is used), `last` is the last position that does; a gap before `last` carries the last key of
the block before it, so the last keys up to `last` never increase and a search over them lands
on a block. The last key of every SEGMENT-th position is kept in a small array of its own
(`segment_key`), so the search first finds the segment in a few cache lines, then counts inside
it. Stamps never enter a search: a write carries the newest stamp, so it goes before all stored
keys of its priority, at the first position whose last key is not above it.

A block entry is one uint64: the slot in its low bits (as few as the capacity needs, 17 at
2^17 slots), and above them the rest of the slot's priority's float64 bits, its key
(`rank_order_layout.entry`); for numbers >= +0.0 the bits order as the numbers do, so the
entries of a block descend too, and a search inside a block compares whole entries, contiguous
memory, one vector compare per 8. Entries whose key equals that of the priority searched
(priorities within about 2^-35 relative at 2^17 slots, or equal ones) are told apart by the
exact priorities, kept by slot (`priority`). One array of 8 bytes per entry, rather than the
slots and their float64 priorities side by side, makes a block 8 cache lines instead of 12 and
an insert's shift one move instead of two.

The gaps make a split or a merge local: a full block splits into the nearest gap (the blocks in
between move over by one position, at most `REACH`, each two group count updates), and a merged
block leaves a gap. Where no gap is within reach, or a run of gaps grew past it, the blocks are
spread out again, one every min(4, P / blocks) positions, O(P), rarely.

Invariants (`check_invariants`):
- keys strictly decrease in the order above, within a block and from one block to the next;
- every block in use holds fewer than C slots, and at least C/2 when more than one is in use
  (a full block splits into two halves; a block that falls under C/2 borrows a slot from a
  neighbour that has more than C/2, else merges with it), so at most 2N/C + 1 blocks are used;
- P >= 2 (2N/C + 2) positions, a multiple of 8 GROUP, so a spread leaves at least one gap after
  every block;
- `group_count[g]` is the sum of `sizes` over the positions of group g.

Costs (P = O(N/C) positions): a write (remove the slot, then insert it with its new key) is a
scan of its block O(C), a binary search over the segments' last keys O(log P), counts inside a
segment O(SEGMENT) and inside a block O(C), shifts of at most C entries and two group counts
changed, O(1); a split or merge moves O(C) entries and at most `REACH` positions, O(C + REACH),
once per C/2 writes into a block at most. A batch of writes searches all its blocks at once,
the binary searches advancing level by level so that their loads overlap. Selecting the slots
at B ranks is one pass over the group counts, O(P / GROUP) (about N / 128 counts, C = 64: 1,032
at N = 2^17, 8 at a time), which also finds the groups of ascending ranks (a stratified
sample's); ranks in any order take the prefix ends of all groups, then B binary searches of
them, O(B log(P / GROUP)), level by level; then a step through GROUP positions each. A Fenwick tree
over the groups (O(log P) per write and per rank) was measured slower: its two point updates
per write cost more than the pass over the counts at each sample, up to N = 2^20 at least.
Walking the whole order is O(P + N). All in numba.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from rdqn.replay.compiled import no_refcounts
from rdqn.replay.intrinsics import prefix_position
from rdqn.replay.rank_order_layout import (
    COUNT_BLOCKS,
    COUNT_C,
    COUNT_CLOCK,
    COUNT_FREE,
    COUNT_LAST,
    COUNT_SLOT_MASK,
    COUNT_SPREADS,
    COUNT_STORED,
    GROUP,
    SEGMENT,
    slot_mask,
    slot_of,
    unsigned,
)
from rdqn.replay.rank_order_writes import build_kernel, write_kernel
from rdqn.replay.sizes import check_nbytes
from rdqn.validation import check_integer

__all__ = [
    "CAPACITY_MAX",
    "COUNT_C",
    "COUNT_LAST",
    "COUNT_STORED",
    "RankOrder",
    "block_capacity",
    "rank_order_nbytes",
    "select_kernel",
]

_NB, _N, _CLOCK, _C = COUNT_BLOCKS, COUNT_STORED, COUNT_CLOCK, COUNT_C
_FREE, _LAST = COUNT_FREE, COUNT_LAST
_ALL = (1 << 31) - 1  # above any running count: `prefix_position` then gives the sum of all 8
CAPACITY_MAX = (1 << 31) - 1
"""Block indices and sizes are int32."""


def block_capacity(capacity: int) -> int:
    """C for ``capacity`` slots: the power of two nearest sqrt(capacity), clamped to [8, 64]
    (a write shifts and scans O(C) entries; splits and merges, once per C/2 writes into a
    block, cost O(C + REACH log P), so C is small: 64 measured fastest at N = 2^17 and 2^20)."""
    return int(min(64, max(8, 1 << round(np.log2(max(1.0, np.sqrt(capacity)))))))


def max_blocks(capacity: int) -> int:
    """Physical blocks allocated: at most 2N/C + 1 are ever in use (module docstring)."""
    return 2 * capacity // block_capacity(capacity) + 2


def positions(capacity: int) -> int:
    """P: two positions per physical block, so a spread leaves a gap after every block, rounded
    up to whole chunks of 8 groups (`select_kernel` steps through the group counts 8 at a
    time)."""
    chunk = 8 * GROUP
    return -(-2 * max_blocks(capacity) // chunk) * chunk


def rank_order_nbytes(capacity: int) -> int:
    """`RankOrder(capacity).nbytes` without allocating: per slot an int64 stamp, an int32 home
    block and a float64 priority; per physical block C uint64 entries (and one spare after the
    last block), an int32 position and free-stack entry; per position an int32 block and size
    and a float64 last key; per segment of positions (plus one) a float64 last key; per group of
    positions an int32 count; eight int64 counters."""
    c = block_capacity(capacity)
    p = positions(capacity)
    return (
        capacity * (8 + 4 + 8)
        + max_blocks(capacity) * (8 * c + 2 * 4)
        + 8
        + p * (4 + 4 + 8)
        + (p // SEGMENT + 1) * 8
        + p // GROUP * 4
        + 8 * 8
    )


class RankOrder:
    """The exact rank order of up to ``capacity`` slots (see the module docstring).

    A slot is stored once `write` gives it a key; a write of a stored slot moves it. Read the
    order with `select` (slots at ranks) and `slots_in_order`.
    """

    def __init__(self, capacity: int) -> None:
        capacity = check_integer("capacity", capacity, minimum=1, maximum=CAPACITY_MAX)
        check_nbytes(
            f"rank order of capacity {capacity:,}",
            rank_order_nbytes(capacity),
            advice="choose a smaller capacity",
        )
        self.capacity = capacity
        self.block_capacity = block_capacity(capacity)
        blocks, slots = max_blocks(capacity), positions(capacity)
        self.stamp = np.full(capacity, -1, np.int64)
        self.home = np.full(capacity, -1, np.int32)
        # One spare entry after the last block: `close_gap` reads one past a block.
        self.entries = np.zeros(blocks * self.block_capacity + 1, np.uint64)
        self.priority = np.zeros(capacity, np.float64)
        self.position = np.full(blocks, -1, np.int32)
        self.free = np.arange(blocks - 1, -1, -1, dtype=np.int32)  # pops 0, 1, 2, ...
        self.blocks = np.full(slots, -1, np.int32)
        self.sizes = np.zeros(slots, np.int32)
        self.last_key = np.zeros(slots, np.float64)
        self.group_count = np.zeros(slots // GROUP, np.int32)
        self.counters = np.array(
            [0, 0, 0, self.block_capacity, blocks, -1, 0, slot_mask(capacity)], np.int64
        )
        self.segment_key = np.zeros(slots // SEGMENT + 1, np.float64)
        self._grow_scratch(128)  # `write_kernel`'s scratch, grown when needed
        self._state = self._arrays()  # the kernels' arguments (the arrays change only in place)
        # `write_one`'s arguments, kept to not allocate: one slot, one priority, the scratch.
        self._one_slot = np.zeros(1, np.int64)
        self._one_priority = np.zeros(1, np.float64)
        self._one_write = (*self._state, self._one_slot, self._one_priority, False)
        self._one_write += self._scratch

    def _arrays(self) -> tuple[NDArray, ...]:
        return (
            self.stamp,
            self.home,
            self.entries,
            self.priority,
            self.sizes,
            self.position,
            self.free,
            self.blocks,
            self.last_key,
            self.group_count,
            self.counters,
            self.segment_key,
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
        returns the largest priority given, or -1 with nothing written when a slot is not in
        [0, capacity) or a priority is not finite and >= 0 (int64 slots, float64 priorities)."""
        if slots.shape[0] > self._room:
            self._grow_scratch(slots.shape[0])
        return write_kernel(*self._state, slots, priorities, False, *self._scratch)

    def update(self, slots: NDArray[np.int64], priorities: NDArray[np.float64]) -> float:
        """As `write`, for stored slots only: -1 with nothing written also when a slot holds
        nothing."""
        if slots.shape[0] > self._room:
            self._grow_scratch(slots.shape[0])
        return write_kernel(*self._state, slots, priorities, True, *self._scratch)

    def write_one(self, slot: int, priority: float) -> None:
        """`write` of one slot."""
        self._one_slot[0] = slot
        self._one_priority[0] = priority
        write_kernel(*self._one_write)

    def _grow_scratch(self, writes: int) -> None:
        """`write_kernel`'s scratch arrays, for up to ``writes`` writes."""
        self._room = writes
        self._scratch = (np.zeros(2 * writes, np.int64), np.zeros(writes, np.float64))

    def select(self, ranks: NDArray[np.int64]) -> NDArray[np.int64]:
        """The slot at each 0-based rank (each < `size`; ranks in ascending order are found in
        the pass over the group counts, others by binary searches: `select_kernel`)."""
        out = np.empty(ranks.shape[0], np.int64)
        ends = np.empty(self.group_count.shape[0], np.int64)
        select_kernel(
            self.entries,
            self.sizes,
            self.blocks,
            self.group_count,
            self.counters,
            ranks,
            out,
            ends,
            bool(np.all(ranks[1:] >= ranks[:-1])),
        )
        return out

    def walk(self) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """(every stored slot, rank 0 first; the priority of every slot, 0 where nothing is
        stored), O(P + N)."""
        order = np.empty(self.size, np.int64)
        priorities = np.zeros(self.capacity, np.float64)
        walk_kernel(
            self.entries, self.priority, self.sizes, self.blocks, self.counters, order, priorities
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
        sizes = self.sizes[held]
        assert (sizes > 0).all() and (sizes < c).all() and sizes.sum() == n
        assert nb <= 1 or (sizes >= c // 2).all()
        assert (self.sizes[self.blocks < 0] == 0).all()
        assert np.array_equal(self.position[used], held)
        assert free + nb == self.position.shape[0]
        assert np.array_equal(
            np.sort(np.concatenate([used, self.free[:free]])), np.arange(free + nb)
        )
        assert (self.position[self.free[:free]] == -1).all()
        order = self.slots_in_order()
        assert np.array_equal(self.home[order], np.repeat(used, sizes))
        assert (self.home >= 0).sum() == n == (self.stamp >= 0).sum()
        assert (self.stamp[order] >= 0).all() and (self.stamp <= self.clock).all()
        entries = [self.entries[b * c : b * c + size] for b, size in zip(used, sizes, strict=True)]
        entries = np.concatenate(entries) if nb else np.empty(0, np.uint64)
        p, s = self.priority[order], self.stamp[order]
        mask = np.uint64(self.counters[COUNT_SLOT_MASK])
        assert np.array_equal(entries & mask, order)
        assert np.array_equal(entries & ~mask, (p + 0.0).view(np.uint64) & ~mask)
        assert ((p[:-1] > p[1:]) | ((p[:-1] == p[1:]) & (s[:-1] > s[1:]))).all()
        if nb:  # each position up to `last` carries the last key of the block at or before it
            lasts = np.cumsum(sizes) - 1
            covering = np.searchsorted(held, np.arange(last + 1), side="right") - 1
            assert np.array_equal(self.last_key[: last + 1], p[lasts][covering])
            ends = np.arange(SEGMENT - 1, last + 1, SEGMENT)  # segments wholly up to `last`
            assert np.array_equal(self.segment_key[: ends.shape[0]], self.last_key[ends])
        along = np.zeros(self.group_count.shape[0] * GROUP, np.int64)
        along[held] = sizes
        assert np.array_equal(self.group_count, along.reshape(-1, GROUP).sum(axis=1))

    @property
    def nbytes(self) -> int:
        return int(sum(a.nbytes for a in self._arrays()))


# ------------------------------------------- reading kernels (the writing ones: rank_order_writes)
@no_refcounts
def select_kernel(
    entries: NDArray[np.uint64],
    sizes: NDArray[np.int32],
    blocks: NDArray[np.int32],
    group_count: NDArray[np.int32],
    counters: NDArray[np.int64],
    ranks: NDArray[np.int64],
    out: NDArray[np.int64],
    ends: NDArray[np.int64],
    ascending: bool,
) -> None:
    """out[k] = the slot at 0-based rank ranks[k] (< the number stored): the groups' prefix
    counts (one pass, O(P / GROUP)), the group that holds each rank, a count of the group's
    positions whose sizes end at or before it (`prefix_position`), then the offset in the block
    there. `out` holds the groups on the way, `ends` (one entry per group) the groups' prefix
    ends (for ascending ranks, those the ranks need).

    The groups: for `ascending` ranks (a stratified sample's), found during the pass, which
    takes the counts 8 groups at a time (`prefix_position`: their total, then for each rank
    among them its group and the end of the group before): an eighth of the steps of a pass
    group by group, whose check for the next rank was mispredicted about once per rank (with
    that pass the rank cycle took 1.04x the time at 2^17). Else by binary searches of the
    prefix ends, without branches, the B searches advancing together one step at a time. The B
    loads of the slots come last, so that they overlap."""
    groups = group_count.shape[0]
    batch = ranks.shape[0]
    group = out
    total = 0
    if ascending:
        k = 0
        for chunk in range(0, groups, 8):  # groups: a multiple of 8 (`positions`)
            end = total + prefix_position(group_count, unsigned(chunk), _ALL)[1]
            while k < batch and ranks[k] < end:  # the ranks in these 8 groups
                g, before = prefix_position(group_count, unsigned(chunk), ranks[k] - total)
                group[k] = chunk + g
                if chunk + g > 0:  # the end of the group before it
                    ends[chunk + g - 1] = total + before
                k += 1
            total = end
    else:
        for g in range(groups):
            total += group_count[g]
            ends[g] = total
        for k in range(batch):
            group[k] = 0
        length = groups  # the group is in [group, group + length): the first whose end > rank
        while length > 1:
            half = length >> 1
            for k in range(batch):
                group[k] += half if ends[group[k] + half - 1] <= ranks[k] else 0
            length -= half
    c = counters[_C]
    mask = unsigned(counters[COUNT_SLOT_MASK])
    for k in range(batch):
        g = group[k]
        rest = ranks[k] - (ends[g - 1] if g > 0 else 0)
        q = unsigned(g * GROUP)
        passed, before = prefix_position(sizes, q, rest)  # the positions before it, their slots
        out[k] = blocks[q + unsigned(passed)] * c + rest - before
    for k in range(batch):
        out[k] = slot_of(entries[out[k]], mask)


@no_refcounts
def walk_kernel(
    entries: NDArray[np.uint64],
    priority: NDArray[np.float64],
    sizes: NDArray[np.int32],
    blocks: NDArray[np.int32],
    counters: NDArray[np.int64],
    order: NDArray[np.int64],
    priorities: NDArray[np.float64],
) -> None:
    """order = every stored slot, rank order; priorities[slot] = its priority."""
    c = counters[_C]
    mask = unsigned(counters[COUNT_SLOT_MASK])
    k = 0
    for q in range(counters[_LAST] + 1):
        block = blocks[q]
        for j in range(block * c, block * c + sizes[q]):  # none at a gap
            slot = slot_of(entries[j], mask)
            order[k] = slot
            priorities[slot] = priority[slot]
            k += 1
