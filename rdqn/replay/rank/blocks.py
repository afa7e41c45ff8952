"""Keeping the blocks of `order.RankOrder` in shape: shifts inside a block, the groups' slot
counts, the positions' last keys, and the splits, borrows, merges and spreads that keep every
block between C/2 and C slots with gaps near it. The kernels that write slots (`writes`) call
these."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from rdqn.replay.kernels.compiled import inlined, kernel, move
from rdqn.replay.rank.layout import (
    BLOCKS,
    COUNT_BLOCKS,
    COUNT_C,
    COUNT_FREE,
    COUNT_LAST,
    COUNT_SLOT_MASK,
    COUNT_SPREADS,
    COUNTERS,
    ENTRIES,
    FREE,
    GROUP,
    GROUP_COUNT,
    HOME,
    LAST_KEY,
    POSITION,
    PRIORITY,
    REACH,
    SEGMENT,
    SEGMENT_KEY,
    SIZES,
    State,
    slot_of,
    unsigned,
)

__all__ = [
    "add_size",
    "close_gap",
    "refill",
    "set_last",
    "split",
    "spread",
]


@inlined
def close_gap(array: NDArray, base: int, at: int, c: int) -> None:
    """Entries at + 1 .. c of the block at flat offset `base` move down one: array[base + k] =
    array[base + k + 1] for at <= k < c. The loop runs over the whole block's width c, whatever
    its size: a trip count that never changes compiles to a few vector moves with no mispredicted
    exit, where a memmove of the block's used part branches on its length. (The inserts open
    their gap with `open_gap`.) It reads one entry past the block, so the entries carry one
    spare after the last block."""
    start = unsigned(base)
    for k in range(c):
        if k >= at:
            array[start + unsigned(k)] = array[start + unsigned(k + 1)]


@kernel
def _move(
    home: NDArray[np.int32],
    entries: NDArray[np.uint64],
    src: int,
    dst: int,
    count: int,
    block: int,
    mask: np.uint64,
) -> None:
    """Move `count` entries from flat offset src to dst, into `block` (another one: the ranges do
    not overlap), and make it the moved slots' home."""
    for k in range(count):
        entries[dst + k] = entries[src + k]
        home[slot_of(entries[dst + k], mask)] = block


@inlined
def add_size(group_count: NDArray[np.int32], q: int, delta: int) -> None:
    """The block at position q gained delta slots: so did its group."""
    group_count[q // GROUP] += delta


@kernel
def _count_groups(group_count: NDArray[np.int32], sizes: NDArray[np.int32]) -> None:
    """group_count[g] = the slots of the blocks at positions [g GROUP, (g + 1) GROUP), O(P)."""
    group_count[:] = 0
    for q in range(sizes.shape[0]):
        group_count[q // GROUP] += sizes[q]


@inlined
def _write_last(state: State, q: int, key: float) -> None:
    """The last key of position q is `key`; a segment's last position's, its too."""
    state[LAST_KEY][q] = key
    if q % SEGMENT == SEGMENT - 1:
        state[SEGMENT_KEY][q // SEGMENT] = key


@kernel
def set_last(state: State, q: int) -> None:
    """Record the last key of the block at position q, and copy it into the gaps after q."""
    entries, sizes, blocks, counters = state[ENTRIES], state[SIZES], state[BLOCKS], state[COUNTERS]
    last = entries[blocks[q] * counters[COUNT_C] + sizes[q] - 1]
    key = state[PRIORITY][slot_of(last, unsigned(counters[COUNT_SLOT_MASK]))]
    _write_last(state, q, key)
    k = q + 1
    while k <= counters[COUNT_LAST] and blocks[k] < 0:
        _write_last(state, k, key)
        k += 1


@inlined
def _place(state: State, src: int, dst: int) -> None:
    """Move the block at position src to the gap at position dst."""
    sizes, position, blocks = state[SIZES], state[POSITION], state[BLOCKS]
    last_key, group_count = state[LAST_KEY], state[GROUP_COUNT]
    block, size = blocks[src], sizes[src]
    blocks[dst], sizes[dst] = block, size
    blocks[src], sizes[src] = -1, 0
    position[block] = dst
    _write_last(state, dst, last_key[src])
    add_size(group_count, src, -size)
    add_size(group_count, dst, size)


@kernel
def spread(state: State) -> None:
    """Lay the blocks out again, in order, one every min(4, P / blocks) positions, O(P)."""
    sizes, position, blocks = state[SIZES], state[POSITION], state[BLOCKS]
    group_count, counters = state[GROUP_COUNT], state[COUNTERS]
    nb = counters[COUNT_BLOCKS]
    counters[COUNT_SPREADS] += 1
    end = blocks.shape[0]
    k = 0
    for q in range(end):  # pack to the front, in order
        if blocks[q] >= 0:
            blocks[k], sizes[k] = blocks[q], sizes[q]
            k += 1
    for q in range(nb, end):
        blocks[q], sizes[q] = -1, 0
    step = min(4, end // nb)
    for k in range(nb - 1, -1, -1):  # then spread, from the back (k * step >= k)
        block, size = blocks[k], sizes[k]
        blocks[k], sizes[k] = -1, 0
        blocks[k * step], sizes[k * step] = block, size
        position[block] = k * step
    counters[COUNT_LAST] = (nb - 1) * step
    for k in range(nb):
        set_last(state, k * step)
    _count_groups(group_count, sizes)


@kernel
def split(state: State, q: int) -> None:
    """Move the upper half of the full block at position q to a new block in the position after
    it: the nearest gap within `REACH` on either side, the blocks in between moved over by one;
    where there is none, after spreading the blocks out."""
    home, entries = state[HOME], state[ENTRIES]
    sizes, position, free = state[SIZES], state[POSITION], state[FREE]
    blocks, group_count, counters = state[BLOCKS], state[GROUP_COUNT], state[COUNTERS]
    c = counters[COUNT_C]
    mask = unsigned(counters[COUNT_SLOT_MASK])
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
        if right > counters[COUNT_LAST]:  # the last block moves over (or the new one is last)
            counters[COUNT_LAST] += 1
        for k in range(right, q + 1, -1):
            _place(state, k - 1, k)
        at = q + 1
    elif left_ok:
        for k in range(left, q):
            _place(state, k + 1, k)
        at = q
    else:
        spread(state)
        at = position[full] + 1  # a gap: P >= 2 (blocks + 1)
        if at > counters[COUNT_LAST]:
            counters[COUNT_LAST] = at
    counters[COUNT_FREE] -= 1
    fresh = free[counters[COUNT_FREE]]
    blocks[at] = fresh
    position[fresh] = at
    half = c >> 1
    _move(home, entries, full * c + half, fresh * c, c - half, fresh, mask)
    sizes[at - 1] = half  # the full block's position, after the moves
    sizes[at] = c - half
    counters[COUNT_BLOCKS] += 1
    set_last(state, at - 1)
    set_last(state, at)
    add_size(group_count, at - 1, half - c)
    add_size(group_count, at, c - half)


@kernel
def refill(state: State, q: int) -> None:
    """The block at position q fell to C/2 - 1 slots (and it has a neighbour): from a
    neighbour that holds more than C/2, borrow the nearest half of the difference between
    them (both then hold at least C/2; a block that writes keep draining, the top of the order,
    borrows once per several removals, not at each), else merge with a neighbour (the two then
    hold at most C - 1; the later one's position becomes a gap)."""
    home, entries = state[HOME], state[ENTRIES]
    sizes, position, free = state[SIZES], state[POSITION], state[FREE]
    blocks, group_count, counters = state[BLOCKS], state[GROUP_COUNT], state[COUNTERS]
    c = counters[COUNT_C]
    mask = unsigned(counters[COUNT_SLOT_MASK])
    last = counters[COUNT_LAST]
    block = blocks[q]
    size = sizes[q]
    before = q - 1
    while before >= 0 and blocks[before] < 0:
        before -= 1
    after = q + 1
    while after <= last and blocks[after] < 0:
        after += 1
    if before >= 0 and sizes[before] > (c >> 1):
        left = blocks[before]
        k = (sizes[before] - size) >> 1
        move(entries, block * c + k, block * c, size)
        _move(home, entries, left * c + sizes[before] - k, block * c, k, block, mask)
        sizes[before] -= k
        sizes[q] = size + k
        set_last(state, before)
        add_size(group_count, before, -k)
        add_size(group_count, q, k)
    elif after <= last and sizes[after] > (c >> 1):
        right = blocks[after]
        k = (sizes[after] - size) >> 1
        _move(home, entries, right * c, block * c + size, k, block, mask)
        move(entries, right * c, right * c + k, sizes[after] - k)
        sizes[after] -= k
        sizes[q] = size + k
        set_last(state, q)
        add_size(group_count, after, -k)
        add_size(group_count, q, k)
    else:
        first, second = (before, q) if before >= 0 else (q, after)
        a, b = blocks[first], blocks[second]
        moved = sizes[second]
        _move(home, entries, b * c, a * c + sizes[first], moved, a, mask)
        sizes[first] += moved
        sizes[second] = 0
        blocks[second] = -1
        position[b] = -1
        free[counters[COUNT_FREE]] = b
        counters[COUNT_FREE] += 1
        counters[COUNT_BLOCKS] -= 1
        if second == last:
            counters[COUNT_LAST] = first
        set_last(state, first)
        add_size(group_count, second, -moved)
        add_size(group_count, first, moved)
        if second - first > REACH or (after <= last and after - first > REACH):
            spread(state)
