"""The writing kernels of `rdqn.replay.rank_order.RankOrder`: take a slot out of its sorted block
and put it back in its place, split, borrow, merge and spread blocks, lay out a whole order.
The layout they keep and its invariants are `rdqn.replay.rank_order`'s; the constants they share
are in `rank_order_layout`, the search for a key's block in `rank_order_search`."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from rdqn.replay.prefetch import prefetch
from rdqn.replay.rank_order_layout import (
    AHEAD,
    BLOCKS,
    COUNT_BLOCKS,
    COUNT_C,
    COUNT_CLOCK,
    COUNT_FREE,
    COUNT_LAST,
    COUNT_SPREADS,
    COUNT_STORED,
    COUNTERS,
    FREE,
    GROUP,
    GROUP_FENWICK,
    HOME,
    ITEMS,
    KEYS,
    LAST_KEY,
    POSITION,
    REACH,
    SEGMENT,
    SEGMENT_KEY,
    SIZES,
    State,
    inlined,
    no_refcounts,
    unsigned,
)
from rdqn.replay.rank_order_search import find_position, find_positions

__all__ = ["build_kernel", "write_kernel"]

_NB, _N, _CLOCK, _C, _FREE, _LAST = (
    COUNT_BLOCKS,
    COUNT_STORED,
    COUNT_CLOCK,
    COUNT_C,
    COUNT_FREE,
    COUNT_LAST,
)
_U = unsigned


@inlined
def _prefetch_block(items: NDArray[np.int32], keys: NDArray[np.float64], base: int, c: int) -> None:
    """Prefetch the cache lines of a block's slots and keys (64-byte lines)."""
    for k in range(0, c, 16):
        prefetch(items, base + k)
    for k in range(0, c, 8):
        prefetch(keys, base + k)


@inlined
def _shift_up(array: NDArray, start: int, count: int) -> None:
    """array[start + 1 : start + 1 + count] = array[start : start + count]."""
    base = _U(start)
    for k in range(count - 1, -1, -1):
        array[base + _U(k + 1)] = array[base + _U(k)]


@inlined
def _shift_down(array: NDArray, start: int, count: int) -> None:
    """array[start : start + count] = array[start + 1 : start + 1 + count]."""
    base = _U(start)
    for k in range(count):
        array[base + _U(k)] = array[base + _U(k + 1)]


@no_refcounts
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


@inlined
def _add_size(group_fenwick: NDArray[np.int64], q: int, delta: int) -> None:
    """The block at position q gained delta slots: a Fenwick point update of its group."""
    i = q // GROUP + 1
    end = group_fenwick.shape[0] - 1
    while i <= end:
        group_fenwick[i] += delta
        i += i & -i


@no_refcounts
def _count_groups(
    group_fenwick: NDArray[np.int64], sizes: NDArray[np.int32], blocks: NDArray[np.int32]
) -> None:
    """Node i sums the slots of groups [i - lowbit(i), i), group g being the blocks at positions
    [g GROUP, (g + 1) GROUP): each group's count, then each node added to its parent, O(P)."""
    end = group_fenwick.shape[0] - 1
    group_fenwick[:] = 0
    for q in range(blocks.shape[0]):
        if blocks[q] >= 0:
            group_fenwick[q // GROUP + 1] += sizes[blocks[q]]
    for i in range(1, end + 1):
        parent = i + (i & -i)
        if parent <= end:
            group_fenwick[parent] += group_fenwick[i]


@inlined
def _write_last(state: State, q: int, key: float) -> None:
    """The last key of position q is `key`; a segment's last position's, its too."""
    state[LAST_KEY][q] = key
    if q % SEGMENT == SEGMENT - 1:
        state[SEGMENT_KEY][q // SEGMENT] = key


@no_refcounts
def _set_last(state: State, q: int) -> None:
    """Record the last key of the block at position q, and copy it into the gaps after q."""
    keys, sizes, blocks, counters = state[KEYS], state[SIZES], state[BLOCKS], state[COUNTERS]
    block = blocks[q]
    key = keys[block * counters[_C] + sizes[block] - 1]
    _write_last(state, q, key)
    k = q + 1
    while k <= counters[_LAST] and blocks[k] < 0:
        _write_last(state, k, key)
        k += 1


@inlined
def _place(state: State, src: int, dst: int) -> None:
    """Move the block at position src to the gap at position dst."""
    sizes, position, blocks = state[SIZES], state[POSITION], state[BLOCKS]
    last_key, group_fenwick = state[LAST_KEY], state[GROUP_FENWICK]
    block = blocks[src]
    blocks[dst] = block
    blocks[src] = -1
    position[block] = dst
    _write_last(state, dst, last_key[src])
    _add_size(group_fenwick, src, -sizes[block])
    _add_size(group_fenwick, dst, sizes[block])


@no_refcounts
def _spread(state: State) -> None:
    """Lay the blocks out again, in order, one every min(4, P / blocks) positions, O(P)."""
    sizes, position, blocks = state[SIZES], state[POSITION], state[BLOCKS]
    group_fenwick, counters = state[GROUP_FENWICK], state[COUNTERS]
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
        _set_last(state, k * step)
    _count_groups(group_fenwick, sizes, blocks)


@no_refcounts
def _split(state: State, q: int) -> None:
    """Move the upper half of the full block at position q to a new block in the position after
    it: the nearest gap within `REACH` on either side, the blocks in between moved over by one;
    where there is none, after spreading the blocks out."""
    home, items, keys = state[HOME], state[ITEMS], state[KEYS]
    sizes, position, free = state[SIZES], state[POSITION], state[FREE]
    blocks, group_fenwick, counters = state[BLOCKS], state[GROUP_FENWICK], state[COUNTERS]
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
            _place(state, k - 1, k)
        at = q + 1
    elif left_ok:
        for k in range(left, q):
            _place(state, k + 1, k)
        at = q
    else:
        _spread(state)
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
    _set_last(state, at - 1)
    _set_last(state, at)
    _add_size(group_fenwick, at - 1, half - c)
    _add_size(group_fenwick, at, c - half)


@no_refcounts
def _refill(state: State, q: int) -> None:
    """The block at position q fell to C/2 - 1 slots (and it has a neighbour): borrow the
    nearest slot of a neighbour that holds more than C/2, else merge with a neighbour (the two
    then hold at most C - 1; the later one's position becomes a gap)."""
    home, items, keys = state[HOME], state[ITEMS], state[KEYS]
    sizes, position, free = state[SIZES], state[POSITION], state[FREE]
    blocks, group_fenwick, counters = state[BLOCKS], state[GROUP_FENWICK], state[COUNTERS]
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
        _set_last(state, before)
        _add_size(group_fenwick, before, -1)
        _add_size(group_fenwick, q, 1)
    elif after <= last and sizes[blocks[after]] > (c >> 1):
        right = blocks[after]
        _move(home, items, keys, right * c, block * c + size, 1, block)
        _shift_down(items, right * c, sizes[right] - 1)
        _shift_down(keys, right * c, sizes[right] - 1)
        sizes[right] -= 1
        sizes[block] = size + 1
        _set_last(state, q)
        _add_size(group_fenwick, after, -1)
        _add_size(group_fenwick, q, 1)
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
        _set_last(state, first)
        _add_size(group_fenwick, second, -moved)
        _add_size(group_fenwick, first, moved)
        if second - first > REACH or (after <= last and after - first > REACH):
            _spread(state)


@inlined
def _remove(state: State, slot: int) -> None:
    """Take a stored slot out of its block (the insert that always follows refills a block it
    empties: the only one, at position 0)."""
    home, items, keys = state[HOME], state[ITEMS], state[KEYS]
    sizes, position, group_fenwick = state[SIZES], state[POSITION], state[GROUP_FENWICK]
    counters = state[COUNTERS]
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
    _add_size(group_fenwick, q, -1)
    if size == 1:
        return
    if j == size - 1:
        _set_last(state, q)
    if counters[_NB] > 1 and size - 1 < (c >> 1):
        _refill(state, q)


@inlined
def _insert(state: State, slot: int, p: float, hint: int) -> None:
    """Put the slot, its stamp already set, with priority p into its place: the block at
    position `hint` if that is the one (`find_position`), else the one found.

    The slot's stamp is newer than every stored one (`write_kernel` takes a batch's slots out
    first and puts them back in stamp order), so it ranks before every stored key of equal
    priority: its place is after the keys above p, and no stamp is compared."""
    home, items, keys = state[HOME], state[ITEMS], state[KEYS]
    sizes, position, free = state[SIZES], state[POSITION], state[FREE]
    blocks, last_key = state[BLOCKS], state[LAST_KEY]
    group_fenwick, counters = state[GROUP_FENWICK], state[COUNTERS]
    c = counters[_C]
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
        and (q == last or last_key[q] <= p)
        and (q == 0 or last_key[q - 1] > p)
    ):
        q = find_position(state, last, p)
    block = blocks[q]
    size = sizes[block]
    base = block * c
    lo = 0
    for k in range(size):  # the keys above p (vectorized): (p, s) goes before its ties
        lo += keys[_U(base) + _U(k)] > p
    _shift_up(items, base + lo, size - lo)
    _shift_up(keys, base + lo, size - lo)
    items[base + lo] = slot
    keys[base + lo] = p
    sizes[block] = size + 1
    home[slot] = block
    counters[_N] += 1
    _add_size(group_fenwick, q, 1)
    if lo == size:
        _set_last(state, q)
    if size + 1 == c:
        _split(state, q)


@no_refcounts
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
    group_fenwick: NDArray[np.int64],
    counters: NDArray[np.int64],
    segment_key: NDArray[np.float64],
    slots: NDArray[np.int64],
    priorities: NDArray[np.float64],
    stored_only: bool,
    scratch: NDArray[np.int64],
    scratch_keys: NDArray[np.float64],
) -> float:
    """For each k in turn: remove slots[k] if stored, give it priorities[k] and the next stamp,
    insert it (a slot that holds nothing is skipped when `stored_only`). Returns the largest of
    `priorities` (0 for none).

    Done in two passes with the same outcome: first every write's slot leaves its block and
    takes its stamp (a slot written twice: the last stamp), then each slot goes in once, with
    the priority of its last write. The passes let the loads overlap: the first prefetches the
    homes and blocks of the writes ahead; the second finds every slot's block at once (where an
    insert before it moved blocks, `_insert` finds it again) and prefetches the blocks ahead.
    `scratch` holds at least 2 len(slots) entries, `scratch_keys` len(slots)."""
    state = (stamp, home, items, keys, sizes, position, free, blocks, last_key, group_fenwick,
             counters, segment_key)  # fmt: skip
    largest = 0.0
    c = counters[_C]
    count = slots.shape[0]
    clock = counters[_CLOCK]  # stamps above it were given in this call
    for k in range(count):
        if k + AHEAD < count:  # the homes of later writes, then the blocks they leave
            prefetch(home, slots[k + AHEAD])
            prefetch(stamp, slots[k + AHEAD])
        if k + AHEAD // 2 < count and home[slots[k + AHEAD // 2]] >= 0:
            _prefetch_block(items, keys, home[slots[k + AHEAD // 2]] * c, c)
        slot = slots[k]
        largest = max(largest, priorities[k])
        if home[slot] >= 0:
            _remove(state, slot)
        elif stored_only and stamp[slot] <= clock:
            continue
        counters[_CLOCK] += 1
        stamp[slot] = counters[_CLOCK]
    # The inserts: each write that is its slot's last, with its key.
    todo, p = scratch[:count], scratch_keys
    inserts = 0
    k = _next_last_write(stamp, slots, clock, stored_only, 0, clock)
    while k < count:
        todo[inserts] = slots[k]
        p[inserts] = priorities[k]
        inserts += 1
        k = _next_last_write(stamp, slots, clock, stored_only, k + 1, stamp[slots[k]])
    found = scratch[count : count + inserts]
    if counters[_NB] > 0:
        find_positions(state, p[:inserts], found)
    else:  # the order is empty: the first insert makes a block, the others search
        found[:] = -1
    for j in range(inserts):
        if j + AHEAD < inserts and 0 <= found[j + AHEAD] <= counters[_LAST]:
            ahead = blocks[found[j + AHEAD]]
            if ahead >= 0:
                _prefetch_block(items, keys, ahead * c, c)
        _insert(state, todo[j], p[j], found[j])
    return largest


@inlined
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


@no_refcounts
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
    group_fenwick: NDArray[np.int64],
    counters: NDArray[np.int64],
    segment_key: NDArray[np.float64],
    order: NDArray[np.int64],
    priorities: NDArray[np.float64],
) -> None:
    """Lay out `order` (the stored slots in rank order, with their priorities) in blocks about
    3/4 full: one block below C slots, else ceil(n / (3C/4)) blocks of sizes as equal as
    possible, each within [C/2, 3C/4] (n >= C for two blocks; n / nb > C/2 for three or more),
    at positions 0, 1, 2, ... before they are spread out."""
    state = (stamp, home, items, keys, sizes, position, free, blocks, last_key, group_fenwick,
             counters, segment_key)  # fmt: skip
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
        _spread(state)
    else:
        group_fenwick[:] = 0
