"""The writing kernels of `order.RankOrder`: take a slot out of its sorted block and put it back
in its place, write a batch of slots, lay out a whole order. The layout they keep and its
invariants are drawn in `rdqn.replay.rank`; the names they share are in `layout`, the search for
a key's block in `search`, and the upkeep of the blocks (splits, borrows, merges, spreads) in
`blocks`."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from rdqn.replay.kernels.compiled import inlined, kernel, open_gap, prefetch
from rdqn.replay.rank.blocks import (
    add_size,
    close_gap,
    refill,
    set_last,
    split,
    spread,
)
from rdqn.replay.rank.layout import (
    AHEAD,
    BLOCKS,
    COUNT_BLOCKS,
    COUNT_C,
    COUNT_CLOCK,
    COUNT_FREE,
    COUNT_LAST,
    COUNT_SLOT_MASK,
    COUNT_STORED,
    COUNTERS,
    ENTRIES,
    FREE,
    GROUP_COUNT,
    HOME,
    LAST_KEY,
    POSITION,
    PRIORITY,
    SIZES,
    State,
    above,
    entry,
    slot_of,
    tied,
    unsigned,
)
from rdqn.replay.rank.search import find_position, find_positions

__all__ = ["build_kernel", "remove_kernel", "write_kernel"]


@inlined
def _prefetch_block(entries: NDArray[np.uint64], base: int, c: int) -> None:
    """Prefetch the cache lines of a block's entries (64-byte lines)."""
    for k in range(0, c, 8):
        prefetch(entries, base + k)


@inlined
def _remove(state: State, slot: int) -> None:
    """Take a stored slot out of its block (the insert that follows in `write_kernel` refills a
    block it empties: the only one, at position 0; `remove_kernel` frees that block)."""
    home, entries = state[HOME], state[ENTRIES]
    sizes, position, group_count = state[SIZES], state[POSITION], state[GROUP_COUNT]
    counters = state[COUNTERS]
    c = counters[COUNT_C]
    mask = unsigned(counters[COUNT_SLOT_MASK])
    block = home[slot]
    q = position[block]
    size = sizes[q]
    base = unsigned(block * c)
    j = 0
    for k in range(c):  # the block's whole width, no early exit: a few vector compares
        j += ((slot_of(entries[base + unsigned(k)], mask) == slot) & (k < size)) * k
    close_gap(entries, block * c, j, c)
    sizes[q] = size - 1
    home[slot] = -1
    counters[COUNT_STORED] -= 1
    add_size(group_count, q, -1)
    if size == 1:
        return
    if j == size - 1:
        set_last(state, q)
    if counters[COUNT_BLOCKS] > 1 and size - 1 < (c >> 1):
        refill(state, q)


@inlined
def _insert(state: State, slot: int, p: float, hint: int) -> None:
    """Put the slot, its stamp already set, with priority p into its place: the block at
    position `hint` if that is the one (`find_position`), else the one found.

    The slot's stamp is newer than every stored one (`write_kernel` takes a batch's slots out
    first and puts them back in stamp order), so it ranks before every stored key of equal
    priority: its place is after the priorities above p, and no stamp is compared. The entries
    with a key above p's come first (one vector compare each); those that share p's key, if
    any, are ordered by their exact priorities."""
    home, entries, priority = state[HOME], state[ENTRIES], state[PRIORITY]
    sizes, position, free = state[SIZES], state[POSITION], state[FREE]
    blocks, last_key = state[BLOCKS], state[LAST_KEY]
    group_count, counters = state[GROUP_COUNT], state[COUNTERS]
    c = counters[COUNT_C]
    if counters[COUNT_BLOCKS] == 0:
        counters[COUNT_FREE] -= 1
        fresh = free[counters[COUNT_FREE]]
        blocks[0] = fresh
        position[fresh] = 0
        counters[COUNT_BLOCKS] = 1
        counters[COUNT_LAST] = 0
    last = counters[COUNT_LAST]
    q = hint
    if not (
        0 <= q <= last
        and blocks[q] >= 0
        and (q == last or last_key[q] <= p)
        and (q == 0 or last_key[q - 1] > p)
    ):
        q = find_position(state, last, p)
    block = blocks[q]
    size = sizes[q]
    base = block * c
    lo = 0
    mask = unsigned(counters[COUNT_SLOT_MASK])
    bound, floor = above(p, mask), tied(p, mask)
    for k in range(c):  # the keys above p's (vectorized)
        lo += (entries[unsigned(base) + unsigned(k)] > bound) & (k < size)
    # Then those with p's key (rarely any) and a priority above p: (p, s) goes before its ties.
    while lo < size and entries[base + lo] >= floor:
        if priority[slot_of(entries[base + lo], mask)] <= p:
            break
        lo += 1
    open_gap(entries, base, lo, c)  # the entries from lo on move up one
    entries[base + lo] = entry(slot, p, mask)
    sizes[q] = size + 1
    home[slot] = block
    counters[COUNT_STORED] += 1
    add_size(group_count, q, 1)
    if lo == size:
        set_last(state, q)
    if size + 1 == c:
        split(state, q)


@kernel
def write_kernel(
    stamp: NDArray[np.int64],
    home: NDArray[np.int32],
    entries: NDArray[np.uint64],
    priority: NDArray[np.float64],
    sizes: NDArray[np.int32],
    position: NDArray[np.int32],
    free: NDArray[np.int32],
    blocks: NDArray[np.int32],
    last_key: NDArray[np.float64],
    group_count: NDArray[np.int32],
    counters: NDArray[np.int64],
    segment_key: NDArray[np.float64],
    slots: NDArray[np.int64],
    priorities: NDArray[np.float64],
    stored_only: bool,
    scratch: NDArray[np.int64],
    scratch_keys: NDArray[np.float64],
) -> float:
    """For each k in turn: remove slots[k] if stored, give it priorities[k] and the next stamp,
    insert it. Returns the largest of `priorities` (0 for none), or -1 with nothing written when
    a slot is not in [0, capacity), or holds nothing while `stored_only`, or a priority is not
    finite and >= 0.

    Done in two passes with the same outcome: first every write's slot leaves its block and
    takes its stamp (a slot written twice: the last stamp), then each slot goes in once, with
    the priority of its last write. The passes let the loads overlap: the first prefetches the
    homes and blocks of the writes ahead; the second finds every slot's block at once (where an
    insert before it moved blocks, `_insert` finds it again) and prefetches the blocks ahead.
    `scratch` holds at least 2 len(slots) entries, `scratch_keys` len(slots)."""
    state = (stamp, home, entries, priority, sizes, position, free, blocks, last_key, group_count,
             counters, segment_key)  # fmt: skip
    largest = 0.0
    c = counters[COUNT_C]
    count = slots.shape[0]
    valid = True
    for k in range(count):  # without branches (vectorized); NaN fails p >= 0
        valid &= (slots[k] >= 0) & (slots[k] < stamp.shape[0])
        valid &= (priorities[k] >= 0.0) & (priorities[k] < np.inf)
    if not valid:
        return -1.0
    if stored_only:
        for k in range(count):  # the homes the first pass reads anyway, without branches
            valid &= home[slots[k]] >= 0
        if not valid:
            return -1.0
    clock = counters[COUNT_CLOCK]  # stamps above it were given in this call
    for k in range(count):
        if k + AHEAD < count:  # the homes of later writes, then the blocks they leave
            prefetch(home, slots[k + AHEAD])
            prefetch(stamp, slots[k + AHEAD])
            prefetch(priority, slots[k + AHEAD])
        if k + AHEAD // 2 < count and home[slots[k + AHEAD // 2]] >= 0:
            _prefetch_block(entries, home[slots[k + AHEAD // 2]] * c, c)
        slot = slots[k]
        largest = max(largest, priorities[k])
        if home[slot] >= 0:
            _remove(state, slot)
        counters[COUNT_CLOCK] += 1
        stamp[slot] = counters[COUNT_CLOCK]
        priority[slot] = priorities[k] + 0.0  # the last write's stays; -0.0 is kept as +0.0
    # The inserts: each write that is its slot's last, with its key.
    todo, p = scratch[:count], scratch_keys
    inserts = 0
    k = _next_last_write(stamp, slots, 0, clock)
    while k < count:
        todo[inserts] = slots[k]
        p[inserts] = priorities[k]  # (-0.0: `entry` and the searches take it as +0.0)
        inserts += 1
        k = _next_last_write(stamp, slots, k + 1, stamp[slots[k]])
    found = scratch[count : count + inserts]
    if counters[COUNT_BLOCKS] > 0:
        find_positions(state, p[:inserts], found)
    else:  # the order is empty: the first insert makes a block, the others search
        found[:] = -1
    for j in range(inserts):
        if j + AHEAD < inserts and 0 <= found[j + AHEAD] <= counters[COUNT_LAST]:
            ahead = blocks[found[j + AHEAD]]
            if ahead >= 0:
                _prefetch_block(entries, ahead * c, c)
        _insert(state, todo[j], p[j], found[j])
    return largest


@kernel
def remove_kernel(
    stamp: NDArray[np.int64],
    home: NDArray[np.int32],
    entries: NDArray[np.uint64],
    priority: NDArray[np.float64],
    sizes: NDArray[np.int32],
    position: NDArray[np.int32],
    free: NDArray[np.int32],
    blocks: NDArray[np.int32],
    last_key: NDArray[np.float64],
    group_count: NDArray[np.int32],
    counters: NDArray[np.int64],
    segment_key: NDArray[np.float64],
    slots: NDArray[np.int64],
) -> None:
    """Take each of `slots` (distinct stored slots, which the caller has checked) out of the
    order: it holds nothing afterwards (stamp -1, priority 0), and the ranks after it move up by
    one. The last slot to leave frees the one block left, so the order is empty as at the
    start (no block in use, `last` -1)."""
    state = (stamp, home, entries, priority, sizes, position, free, blocks, last_key, group_count,
             counters, segment_key)  # fmt: skip
    for k in range(slots.shape[0]):
        slot = slots[k]
        _remove(state, slot)
        stamp[slot] = -1
        priority[slot] = 0.0
        if counters[COUNT_STORED] == 0:  # the only block, at position 0, is empty: free it
            block = blocks[0]
            blocks[0] = -1
            position[block] = -1
            free[counters[COUNT_FREE]] = block
            counters[COUNT_FREE] += 1
            counters[COUNT_BLOCKS] = 0
            counters[COUNT_LAST] = -1


@inlined
def _next_last_write(stamp: NDArray[np.int64], slots: NDArray[np.int64], k: int, given: int) -> int:
    """The first write at or after k that is its slot's last in the call (count: none), given
    that stamp `given` was the last handed out before k: write k got stamp `given` + 1, and it
    is the last write of its slot if the slot kept that stamp."""
    count = slots.shape[0]
    while k < count:
        given += 1
        if stamp[slots[k]] == given:
            return k
        k += 1
    return count


@kernel
def build_kernel(
    stamp: NDArray[np.int64],
    home: NDArray[np.int32],
    entries: NDArray[np.uint64],
    priority: NDArray[np.float64],
    sizes: NDArray[np.int32],
    position: NDArray[np.int32],
    free: NDArray[np.int32],
    blocks: NDArray[np.int32],
    last_key: NDArray[np.float64],
    group_count: NDArray[np.int32],
    counters: NDArray[np.int64],
    segment_key: NDArray[np.float64],
    order: NDArray[np.int64],
    priorities: NDArray[np.float64],
) -> None:
    """Lay out `order` (the stored slots in rank order, with their priorities) in blocks about
    3/4 full: one block below C slots, else ceil(n / (3C/4)) blocks of sizes as equal as
    possible, each within [C/2, 3C/4] (n >= C for two blocks; n / nb > C/2 for three or more),
    at positions 0, 1, 2, ... before they are spread out."""
    state = (stamp, home, entries, priority, sizes, position, free, blocks, last_key, group_count,
             counters, segment_key)  # fmt: skip
    c = counters[COUNT_C]
    mask = unsigned(counters[COUNT_SLOT_MASK])
    n = order.shape[0]
    nb = 0 if n == 0 else 1 if n < c else -(-n // (3 * c // 4))
    physical = position.shape[0]
    sizes[:] = 0
    home[:] = -1
    position[:] = -1
    blocks[:] = -1
    for k in range(physical - nb):  # the free stack pops nb, nb + 1, ...
        free[k] = physical - 1 - k
    counters[COUNT_FREE] = physical - nb
    counters[COUNT_BLOCKS] = nb
    counters[COUNT_STORED] = n
    counters[COUNT_LAST] = nb - 1
    k = 0
    for q in range(nb):
        blocks[q] = q
        position[q] = q
        sizes[q] = n // nb + (1 if q < n % nb else 0)
        for j in range(q * c, q * c + sizes[q]):
            entries[j] = entry(order[k], priorities[k], mask)
            priority[order[k]] = priorities[k] + 0.0
            home[order[k]] = q
            k += 1
    if nb:
        spread(state)
    else:
        group_count[:] = 0
