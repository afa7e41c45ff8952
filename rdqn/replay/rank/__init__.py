"""The rank engine: rank-based prioritized replay (Schaul et al. 2015, section 3.3) whose order is
exact at every draw. This page draws the whole structure; then read `sampler.py`, `order.py` and
`writes.py`, top to bottom.

What it computes. Stored slot i has a priority p_i = |delta_i| and a write stamp s_i that grows
with every write of any slot; rank 1 is the largest p (ties: the newest stamp). Over the n stored
slots P(rank r) = r^-alpha / S(n), S(r) = sum_{k <= r} k^-alpha, and the IS weight is
w = (P / P_min)^-beta = (r / r_min)^(alpha beta).

A sample of B, end to end (`sampler.rank_sample_kernel`, one call)::

    u_k ~ U[0, 1)        query m_k = (k + u_k) S(n) / B        B strata of the rank-mass CDF
      -> rank r_k        S(r_k - 1) <= m_k < S(r_k)            guessed from S's closed form,
                                                               checked on the prefix sums S
      -> slot at r_k     `order.select_kernel`, below          one pass over the group counts
      -> P, w            r^-alpha / S(n), (P / P_min)^-beta    one vector `power` each
                                                               (w: the samplers' one formula,
                                                               `importance_weights_kernel`)

An update of B priorities (`writes.write_kernel`, one call): each slot leaves its block, takes the
next stamp, and goes in where its new key belongs: a search over the blocks' last keys
(`search.py`), a count inside the block, a shift of the entries after it.

The order (`order.RankOrder`): sorted blocks of at most C slots (C a power of two, 8 to 64, near
sqrt(N)), laid out in a list of P positions, each holding a block or a gap (-1)::

    position               0             1      2             3               4 ...
    block (physical)       3             -1     0             5               -1
    entries: slots         [7, 2, 9]            [4, 0]        [1, 8, 6, 3]
      and their priorities [9., 7., 7.]         [5., 4.]      [3., 2., 2., 1.]
    sizes (by position)    3             0      2             4               0
    last key by position   7.            7.     4.            1.              (not kept)

    groups of GROUP positions (here 2, in the code 8):
    group counts           [ 3          ,  6                 , ...
    prefix ends            [ 3          ,  9                 , ...

The select, the slot at rank 5 (0-based): the first group whose prefix end is above 5 is group 1
(ranks 3..8); inside it, position 2 holds ranks 3..4 and position 3 ranks 5..8
(`prefix_position`: the running sums of the group's 8 sizes, one vector); so offset 5 - 5 = 0 of
block 5: slot 1. For a stratified batch the ranks ascend, and one pass over the group counts,
8 groups at a time, finds every rank's group (about N / 128 counts: 1,032 at N = 2^17).

The arrays. `blocks[q]`: the physical block at position q (-1: a gap); `sizes[q]` its slots (0 at
a gap); `position`: the inverse of `blocks` (-1: a free block, on the stack `free`); `home[i]`:
the block holding slot i; `stamp[i]`: -1 where slot i holds nothing; `group_count[g]`: the sum of
`sizes` over group g. Position 0 holds a block (once one is used); `last` is the last position
that does; a gap before `last` carries the last key of the block before it, so the last keys
never increase up to `last` and a search over them lands on a block. The last key of every
SEGMENT-th position is also kept apart (`segment_key`), so a search first finds its segment in a
few cache lines, then counts inside it. Stamps never enter a search: a write has the newest
stamp, so it goes before every stored key of its priority, at the first position whose last key
is not above it.

A block entry is one uint64: the slot in its low bits (as few as the capacity needs, 17 at 2^17
slots) and above them the high bits of the priority's float64 bits (`layout.entry`): for numbers
>= +0.0 the bits order as the numbers do, so a block's entries descend too and a search inside
it compares whole entries, one vector compare per 8. Entries whose key equals the searched
priority's (priorities within about 2^-35 relative at 2^17 slots) are told apart by the exact
priorities, kept by slot (`priority`).

Keeping the blocks in shape (`blocks.py`). A full block splits into the nearest gap (the blocks
in between move over by one position, at most `REACH`); a block that falls under C/2 borrows
from a neighbour holding more than C/2, else merges with it and leaves a gap; where no gap is in
reach, or a run of gaps grew past it, the blocks are spread out again, one every min(4, P /
blocks) positions, O(P), rarely. Invariants (`RankOrder.check_invariants`):

- keys strictly decrease in the order, within a block and from one block to the next;
- a block in use holds fewer than C slots, and at least C/2 when more than one is in use, so at
  most 2N/C + 1 blocks are used; P >= 2 (2N/C + 2), a multiple of 8 GROUP: a spread leaves a
  gap after every block;
- `group_count[g]` is the sum of `sizes` over group g.

Costs (P = O(N/C)). A write: a scan of its block O(C), a binary search over the segments
O(log P), counts inside a segment O(SEGMENT) and a block O(C), a shift of at most C entries, two
group counts changed; a split or merge O(C + REACH), once per C/2 writes into a block at most. A
batch of writes searches together, level by level, so that the loads overlap. A sample: one pass
over the group counts O(P / GROUP), then O(GROUP) per rank. A Fenwick tree over the groups (O(log
P) per write and per rank) is slower: its two point updates per write cost more than the
pass, up to N = 2^20 at least.

The modules::

    sampler.py        RankBasedSampler (the Sampler protocol, state dicts) and its kernels: the
                      rank-mass prefix sums, the sample, the probabilities
    order.py          RankOrder: its arrays, the select and walk kernels, invariants
    shape.py          C, the blocks, the positions, SEGMENT / GROUP and the bytes of it all
                      (plain arithmetic: a server sizes a run without loading a kernel)
    layout.py         the kernels' shared names: the arrays' places in the State tuple, the
                      counters, REACH, block entries (and GROUP / SEGMENT from shape.py)
    search.py         the block a key goes to
    writes.py         the write and build kernels (remove a slot, insert it)
    blocks.py         shifts, splits, borrows, merges, spreads

Every kernel allocates nothing (its caller passes the outputs and work arrays) and is compiled by
`rdqn.replay.kernels.compiled`, which also picks its fast building blocks (masked stores, the
popcount select, a prefetch, memmove, a bit cast, libmvec's vector pow) or their plain twins.
Import the sampler from `rdqn.replay` (`RankBasedSampler`).
"""
