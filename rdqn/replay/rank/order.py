"""The rank order of rank-based replay, exact under every write (`RankOrder`), and its reading
kernels: the slots at given ranks (`select_kernel`) and the whole order (`walk_kernel`). The
structure, drawn, and its invariants and costs: the package docstring (`rdqn.replay.rank`);
the writing kernels are in `writes.py`."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from rdqn.replay.kernels.compiled import kernel, prefix_position
from rdqn.replay.rank.layout import (
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
from rdqn.replay.rank.shape import block_capacity, max_blocks, positions, rank_order_nbytes
from rdqn.replay.rank.writes import build_kernel, remove_kernel, write_kernel
from rdqn.replay.sizes import check_nbytes
from rdqn.validation import check_integer

__all__ = [
    "CAPACITY_MAX",
    "COUNT_C",
    "COUNT_LAST",
    "COUNT_STORED",
    "RankOrder",
    "select_kernel",
]

_NB, _N, _CLOCK, _C = COUNT_BLOCKS, COUNT_STORED, COUNT_CLOCK, COUNT_C
_FREE, _LAST = COUNT_FREE, COUNT_LAST
_ALL = (1 << 31) - 1  # above any running count: `prefix_position` then gives the sum of all 8
CAPACITY_MAX = (1 << 31) - 1
"""Block indices and sizes are int32."""


class RankOrder:
    """The exact rank order of up to ``capacity`` slots (drawn in `rdqn.replay.rank`).

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

    def remove(self, slots: NDArray[np.int64]) -> None:
        """Take stored slots out of the order (`remove_kernel`); ``ValueError`` with nothing
        changed unless they are distinct int64 slots that each hold an item."""
        slots = np.ascontiguousarray(slots, dtype=np.int64)
        if slots.size and not (slots.min() >= 0 and slots.max() < self.capacity):
            bad = slots[(slots < 0) | (slots >= self.capacity)][0]
            raise ValueError(f"slots must be in [0, {self.capacity}), got {bad}")
        if slots.size and (self.home[slots] < 0).any():
            raise ValueError(f"slot {slots[self.home[slots] < 0][0]} holds no item")
        if np.unique(slots).size != slots.size:
            raise ValueError("slots to remove must be distinct")
        remove_kernel(*self._state, slots)

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


# ------------------------------------------------------- reading kernels (the writing ones: writes)
@kernel
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
    group by group, whose check for the next rank is mispredicted about once per rank. Else by
    binary searches of the prefix ends, without branches, the B searches advancing together one
    step at a time. The B loads of the slots come last, so that they overlap."""
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


@kernel
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
