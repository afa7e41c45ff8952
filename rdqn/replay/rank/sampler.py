"""Rank-based prioritization, the paper's second variant, behind the same `Sampler` protocol."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rdqn.replay.checks import check_draw, check_slot, check_update, well_typed
from rdqn.replay.holes import Holes
from rdqn.replay.kernels.compiled import kernel, mass, power, prefetch, rank_priority, refcounted
from rdqn.replay.rank.layout import COUNT_SLOT_MASK, slot_of
from rdqn.replay.rank.order import (
    CAPACITY_MAX,
    COUNT_C,
    COUNT_LAST,
    COUNT_STORED,
    RankOrder,
    select_kernel,
)
from rdqn.replay.rank.shape import rank_sampler_nbytes
from rdqn.replay.samplers import (
    Draw,
    Normalization,
    check_attached,
    check_same,
    check_sampler_name,
    stored_field,
    tuple_new,
)
from rdqn.replay.sampling_kernels import check_normalization, importance_weights_kernel
from rdqn.replay.sizes import check_nbytes
from rdqn.replay.state_checks import (
    array_field,
    integer_field,
    real_field,
    refuse,
    require_finite,
    require_nonnegative,
)
from rdqn.validation import check_integer, check_real

__all__ = ["RankBasedSampler"]


CLOCK_MAX = 1 << 62
"""The largest write stamp a loaded state may hold: 10^18 writes, beyond any run."""

LOG_FORM = 1e-4
"""Within this of alpha = 1, the inverse of the rank-mass CDF uses its logarithmic form
(`rank_cdf_offset`): (r + 1/2)^(1 - alpha) / (1 - alpha) cancels badly there."""


def rank_cdf_offset(alpha: float, rank_cdf: NDArray[np.float64]) -> float:
    """C in S(r) ≈ C + (r + 1/2)^(1 - alpha) / (1 - alpha), or C + ln(r + 1/2) near alpha = 1,
    fitted at the last rank R: S(R) - (R + 1/2)^(1 - alpha) / (1 - alpha).

    S(r) = sum_{k <= r} k^-alpha is the rank masses' prefix sum; the approximation is the
    midpoint rule for the integral of x^-alpha, off by O(r^-alpha-1) (Euler-Maclaurin), so its
    inverse finds a query's rank to within about one: `rank_sample_kernel` then checks that
    guess against the exact prefix sums."""
    last = rank_cdf.shape[0] + 0.5
    if abs(1.0 - alpha) < LOG_FORM:
        return float(rank_cdf[-1] - np.log(last))
    return float(rank_cdf[-1] - last ** (1.0 - alpha) / (1.0 - alpha))


class RankBasedSampler:
    """Rank-based prioritization (Schaul et al. 2015, section 3.3): P(i) ∝ (1 / rank(i))^alpha.

    rank(i) is the position of stored transition i when sorted by priority p_i = |delta_i|
    (raw, no eps: only the order matters), largest first. Ties are broken newest write first:
    every addition and every priority update of a slot gives it the next value of a write stamp,
    and the order key is (priority descending, stamp descending). A new transition gets the
    largest priority seen so far (1.0 at the start) and the newest stamp, so it is rank 1 at once.
    A removed slot (`on_remove`) leaves the order: n counts the items left.

    The order is exact at every `sample` and `probabilities`: it reflects every `on_add` and
    `update_priorities` before it (`RankOrder`: sorted blocks with counts of groups of them;
    O(log N + C) per write, C <= 64; per sample, one pass over the counts, about N / 128
    additions, then O(log N) per drawn rank). Over the n stored slots,
    P(rank r) = r^-alpha / sum_{k<=n} k^-alpha > 0. A draw is stratified over the rank-mass CDF:
    query k is (k + u_k) * total / B, u_k ~ U[0, 1), and the rank whose CDF segment holds it is
    drawn: the prefix sums are computed once per capacity, and an approximate inverse of them
    in closed form (`rank_cdf_offset`) guesses each query's rank, checked against the exact
    sums with one or two loads. IS weights as for
    `ProportionalSampler`; the "global" normalisation uses the smallest probability, rank n's.

    Args:
        alpha: rank exponent (0 = uniform; the paper uses 0.7).
        is_normalization, max_weight: as for `ProportionalSampler`.
    """

    name = "rank"

    def __init__(
        self,
        alpha: float = 0.7,
        is_normalization: Normalization = "global",
        max_weight: float | None = None,
    ) -> None:
        self.alpha = check_real("alpha", alpha, minimum=0.0)
        self.is_normalization = is_normalization
        self.max_weight = max_weight
        self._mode, self._max_weight = check_normalization(is_normalization, max_weight)
        self.max_priority = 1.0
        self.stored = 0
        """Slots that hold transitions: one past the highest slot added (`Sampler.on_add`)."""
        self._capacity: int | None = None
        self._holes = Holes(0)

    def attach(self, capacity: int) -> None:
        capacity = check_integer("capacity", capacity, minimum=1, maximum=CAPACITY_MAX)
        check_nbytes(
            f"rank sampler of capacity {capacity:,}",
            rank_sampler_nbytes(capacity),
            "the rank order and the rank masses' prefix sums",
            "choose a smaller capacity",
        )
        self._capacity = capacity
        self.stored = 0
        self._holes = Holes(capacity)
        self._ranks = RankOrder(capacity)
        self._rank_cdf = np.empty(capacity, np.float64)
        rank_cdf_kernel(self.alpha, self._rank_cdf)
        # `rank_sample_kernel`'s leading arguments: they change only in place.
        order = self._ranks
        offset = rank_cdf_offset(self.alpha, self._rank_cdf)
        self._sampling = (self._rank_cdf, offset, self.alpha, self._mode)
        self._sampling += (self._max_weight, order.entries, order.sizes, order.blocks)
        self._sampling += (order.group_count, order.counters)
        self._groups = order.group_count.shape[0]
        self._one = np.zeros(1, np.int64)

    def _order(self) -> RankOrder:
        check_attached(self._capacity, "RankBasedSampler")
        return self._ranks

    @property
    def priorities(self) -> NDArray[np.float64]:
        """p_i of every slot, 0 where nothing is stored (a read-only copy, O(N))."""
        priorities = self._order().priorities()
        priorities.flags.writeable = False
        return priorities

    def on_add(self, slot: int) -> None:
        ranks = self._order()
        slot = check_slot(slot, ranks.capacity)
        ranks.write_one(slot, self.max_priority)
        if slot >= self.stored:
            self.stored = slot + 1
        self._holes.fill(slot)

    def on_remove(self, slot: int) -> None:
        ranks = self._order()
        self._one[0] = self._holes.remove(slot, self.stored)
        ranks.remove(self._one)

    def sample(self, size: int, batch_size: int, beta: float, rng: np.random.Generator) -> Draw:
        if self._capacity is None:
            self._order()  # raises: not attached
        check_draw(size, batch_size, self.stored)
        if self._holes.count:
            self._holes.whole(size, self.stored)
        indices = np.empty(batch_size, np.int64)
        probabilities = rng.random(out=np.empty(batch_size, np.float64))  # the u_k
        weights = np.empty(batch_size, np.float64)
        scratch = np.empty(batch_size + self._groups, np.int64)
        if not rank_sample_kernel(*self._sampling, beta, indices, probabilities, weights, scratch):
            raise ValueError("cannot sample: no transition is stored")
        return tuple_new(Draw, (indices, probabilities, weights))

    @property
    def order(self) -> NDArray[np.int64]:
        """The stored slots, rank 1 first: `sample` lays the rank masses out in this order and
        draws one query in each of B equal segments (a fresh read-only array, O(N))."""
        slots = self._order().slots_in_order()
        slots.flags.writeable = False
        return slots

    def update_priorities(
        self, indices: NDArray[np.int64], magnitudes: NDArray[np.float64]
    ) -> None:
        """p_i = |delta_i|, each with the next write stamp; duplicates in one call: the last one
        wins. ``ValueError`` (state unchanged) as in `check_update` for indices that are not
        stored slots ([0, stored)) or magnitudes that are not finite and >= 0; also for a slot
        below `stored` that holds nothing (slots added out of order)."""
        if self._capacity is None:
            self._order()  # raises: not attached
        # Fast path: well-typed arrays go straight to the kernel, which checks their values.
        if not well_typed(indices, magnitudes):
            indices, magnitudes = check_update(indices, magnitudes, self.stored)
        ranks = self._ranks
        largest = ranks.update(indices, magnitudes)
        if largest < 0.0:  # refused, nothing written: name the bad value
            check_update(indices, magnitudes, self.stored)
            self._holes.check_update(indices)
            empty = indices[ranks.home[indices] < 0]
            raise ValueError(f"indices must be stored slots; slot {empty[0]} holds no transition")
        if largest > self.max_priority:
            self.max_priority = largest

    def probabilities(self, size: int) -> NDArray[np.float64]:
        """P(i) for every slot i < size (0 where nothing is stored), O(N)."""
        ranks = self._order()
        out = np.zeros(size)
        rank_probabilities_kernel(
            self._rank_cdf,
            self.alpha,
            ranks.entries,
            ranks.sizes,
            ranks.blocks,
            ranks.counters,
            out,
        )
        return out

    @property
    def nbytes(self) -> int:
        if self._capacity is None:
            return 0
        return self._ranks.nbytes + self._rank_cdf.nbytes + self._holes.nbytes

    def state_dict(self) -> dict[str, Any]:
        """What continues the sampler identically: per-slot priorities and write stamps (-1: no
        transition), the last stamp given, the largest priority seen, the stored slots, alpha."""
        ranks = self._order()
        return {
            "name": self.name,
            "alpha": self.alpha,
            "max_priority": self.max_priority,
            "stored": self.stored,
            "priorities": ranks.priorities(),
            "stamps": ranks.stamp.copy(),
            "clock": ranks.clock,
            **self._holes.state(),
        }

    def check_state(
        self, state: Mapping[str, Any]
    ) -> tuple[NDArray[np.float64], NDArray[np.int64], int, int, NDArray[np.int64]]:
        """(priorities, stamps, clock, stored, removed) of a `state_dict` this sampler can load;
        `ReplayStateError` otherwise, naming the field: the sampler and its alpha; a largest
        priority >= 1 (where it starts); priorities finite, >= 0, and 0 where no transition
        is; stamps -1 (none) or unique in [1, clock], none past the stored slots and none
        missing below them but at removed slots (`on_remove`).

        A state saved before the order was exact (keys "order", "stored", "changes", no
        "stamps") still loads: slots [0, stored) were the stored ones, and their stamps are set to
        stored - slot, which keeps that sampler's tie rule (lower slot first); the next write
        gets stamp stored + 1, newer than all of them."""
        capacity = self._order().capacity
        check_sampler_name(state, self.name)
        check_same(state, "alpha", self.alpha)
        real_field(state, "max_priority", 1.0)
        priorities = array_field(state, "priorities", (capacity,), np.dtype(np.float64))
        require_finite("priorities", priorities)
        require_nonnegative("priorities", priorities)
        stored = stored_field(state, capacity)
        if "stamps" in state or "order" not in state or stored is None:
            stamps = array_field(state, "stamps", (capacity,), np.dtype(np.int64))
            clock = integer_field(state, "clock", 0, CLOCK_MAX)
        else:
            slots = np.arange(capacity)
            stamps = np.where(slots < stored, stored - slots, -1).astype(np.int64)
            clock = stored
        bad = (stamps != -1) & ((stamps < 1) | (stamps > clock))
        if bad.any():
            k = int(np.argmax(bad))
            refuse(
                f"stamps[{k}] is {stamps[k]}; a stamp is -1 (no transition) or from 1 to the "
                f"clock, {clock}"
            )
        held = np.flatnonzero(stamps >= 0)
        ordered = np.sort(stamps[held])
        if ordered.size > 1 and (ordered[1:] == ordered[:-1]).any():
            twice = ordered[1:][ordered[1:] == ordered[:-1]][0]
            k, j = np.flatnonzero(stamps == twice)[:2]
            refuse(f"stamps[{k}] and stamps[{j}] are both {twice}: stamps must be unique")
        empty = (stamps < 0) & (priorities != 0.0)
        if empty.any():
            k = int(np.argmax(empty))
            refuse(f"priorities[{k}] is {priorities[k]}, but slot {k} holds no transition")
        extent = int(held[-1]) + 1 if held.size else 0
        removed = self._holes.check_state(state, capacity if stored is None else stored)
        if removed.size:
            if stored is None:
                refuse("a state with removed slots must say how many slots are stored")
            empty = np.flatnonzero(stamps[:stored] < 0)
            if extent > stored or not np.array_equal(empty, removed):
                refuse(
                    f"the stamps leave slots {empty[:8].tolist()} below stored={stored} "
                    f"without a transition, but removed names {removed[:8].tolist()}"
                )
            return priorities, stamps, clock, stored, removed
        if stored is not None and stored != extent:
            refuse(
                f"stored is {stored}, but the stamps give "
                + (f"slot {extent - 1} a transition" if extent else "no slot a transition")
            )
        if held.size != extent:
            k = int(np.argmax(stamps[:extent] < 0))
            refuse(f"slot {k} below stored={extent} holds no transition (stamp -1)")
        return priorities, stamps, clock, extent, removed

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Load a `state_dict` that `check_state` accepts (else nothing changes), rebuilding the
        rank order from the keys (O(N log N))."""
        priorities, stamps, clock, stored, removed = self.check_state(state)
        self._ranks.load(priorities, stamps, clock)
        self.max_priority = float(state["max_priority"])
        self.stored = stored
        self._holes.load(removed)


# ---------------------------------------------------------------- kernels


@refcounted
def rank_cdf_kernel(alpha: float, out: NDArray[np.float64]) -> None:
    """out[j] = sum_{r <= j + 1} r^-alpha (the rank masses' prefix sums)."""
    total = 0.0
    for j in range(out.shape[0]):
        total += mass(rank_priority(j + 1.0), alpha)
        out[j] = total


@kernel
def rank_sample_kernel(
    rank_cdf: NDArray[np.float64],
    offset: float,
    alpha: float,
    mode: int,
    max_weight: float,
    entries: NDArray[np.uint64],
    sizes: NDArray[np.int32],
    blocks: NDArray[np.int32],
    group_count: NDArray[np.int32],
    counters: NDArray[np.int64],
    beta: float,
    out_indices: NDArray[np.int64],
    out_probabilities: NDArray[np.float64],
    out_weights: NDArray[np.float64],
    scratch: NDArray[np.int64],
) -> bool:
    """Stratified queries m_k = (k + u_k) * total / B over the rank-mass CDF of the n stored
    slots; the rank drawn is the first whose prefix sum exceeds m_k (capped at rank n, for a
    query rounded onto the total), P = r^-alpha / total; then the slots at those ranks and the IS
    weights. The rank for m_k is guessed from the inverse of S(r) ≈ C + (r + 1/2)^(1 - alpha) /
    (1 - alpha) (C = `offset`, `rank_cdf_offset`), r + 1/2 = ((m - C)(1 - alpha))^(1 / (1 - alpha))
    (one vector `power` for all B), then checked against the exact prefix sums: the guess is
    right, or one rank off, nearly always; a step or two either way fixes that, and a binary
    search of the prefix sums anything further (where float64 cannot tell the sums of far
    ranks apart).

    The u_k come in `out_probabilities`, which holds the queries until the P replace them;
    `out_weights` holds the guesses, `scratch` (B + the groups' count entries) the ranks and
    `select_kernel`'s work space. No allocation: the kernel runs without numba's reference
    counts (`rdqn.replay.kernels.compiled`). False, the outputs unwritten, when nothing is
    stored."""
    n = counters[COUNT_STORED]
    if n == 0:
        return False
    total = rank_cdf[n - 1]
    batch = out_probabilities.shape[0]
    segment = total / batch
    ranks = scratch[:batch]
    queries = out_probabilities
    guesses = out_weights
    exponent = 1.0 - alpha
    for k in range(batch):
        queries[k] = (k + queries[k]) * segment
    if abs(exponent) < LOG_FORM:
        for k in range(batch):
            guesses[k] = np.exp(queries[k] - offset)
    else:
        for k in range(batch):
            guesses[k] = max((queries[k] - offset) * exponent, 0.0)
        power(guesses, 1.0 / exponent, guesses)
    for k in range(batch):  # the guessed ranks; the prefix sums their checks read, loaded together
        ranks[k] = n - 1  # a guess past the stored ranks, or not a number: from the last one
        if guesses[k] - 0.5 < n:  # m in [S(j), S(j + 1)) is 0-based rank j = floor(r)
            ranks[k] = max(int(np.floor(guesses[k] - 0.5)), 0)
        prefetch(rank_cdf, ranks[k])
    for k in range(batch):
        m = queries[k]
        rank = ranks[k]
        for _ in range(2):
            if rank > 0 and rank_cdf[rank - 1] > m:
                rank -= 1
            elif rank < n - 1 and rank_cdf[rank] <= m:
                rank += 1
        if (rank > 0 and rank_cdf[rank - 1] > m) or (rank < n - 1 and rank_cdf[rank] <= m):
            rank = min(np.searchsorted(rank_cdf[:n], m, side="right"), n - 1)
        ranks[k] = rank
    # The queries ascend, so do their ranks.
    select_kernel(
        entries, sizes, blocks, group_count, counters, ranks, out_indices, scratch[batch:], True
    )
    # P = (1 / r)^alpha / total for r = rank + 1 (`mass` by one vectorized `power`), and their
    # IS weights by the samplers' one formula; the smallest stored P is rank n's.
    for k in range(batch):
        out_probabilities[k] = rank_priority(ranks[k] + 1.0)
    power(out_probabilities, alpha, out_probabilities)
    for k in range(batch):
        out_probabilities[k] /= total
    min_probability = mass(rank_priority(n * 1.0), alpha) / total
    importance_weights_kernel(
        out_probabilities, min_probability, n, beta, mode, max_weight, out_weights
    )
    return True


@refcounted
def rank_probabilities_kernel(
    rank_cdf: NDArray[np.float64],
    alpha: float,
    entries: NDArray[np.uint64],
    sizes: NDArray[np.int32],
    blocks: NDArray[np.int32],
    counters: NDArray[np.int64],
    out: NDArray[np.float64],
) -> None:
    """out[slot] = r^-alpha / total for every stored slot < out.shape[0], r its rank."""
    n, c = counters[COUNT_STORED], counters[COUNT_C]
    if n == 0:
        return
    mask = np.uint64(counters[COUNT_SLOT_MASK])
    total = rank_cdf[n - 1]
    rank = 0
    for q in range(counters[COUNT_LAST] + 1):
        block = blocks[q]
        for j in range(block * c, block * c + sizes[q]):  # none at a gap
            rank += 1
            slot = slot_of(entries[j], mask)
            if slot < out.shape[0]:
                out[slot] = mass(rank_priority(rank * 1.0), alpha) / total
