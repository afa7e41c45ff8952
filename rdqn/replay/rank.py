"""Rank-based prioritization, the paper's second variant, behind the same `Sampler` protocol."""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numpy.typing import NDArray

from rdqn.replay.checks import check_slot, check_update
from rdqn.replay.compiled import no_refcounts
from rdqn.replay.rank_order import (
    COUNT_C,
    COUNT_LAST,
    COUNT_STORED,
    RankOrder,
    rank_order_nbytes,
    select_kernel,
)
from rdqn.replay.samplers import (
    Draw,
    Normalization,
    check_attached,
    check_normalization,
)
from rdqn.replay.vector_power import power
from rdqn.validation import check_real

__all__ = ["RankBasedSampler", "rank_sampler_nbytes"]


def grid_cells(capacity: int) -> int:
    """Cells of the rank grid: one per 4 ranks (about 13 ranks per cell at the far end of the
    CDF for alpha 0.7, so a query's search stays within a few cache lines)."""
    return -(-capacity // 4)


def rank_sampler_nbytes(capacity: int) -> int:
    """`RankBasedSampler.nbytes` once attached to ``capacity`` slots, without allocating: the
    rank order (`rank_order_nbytes`), the float64 prefix sums of the rank masses and the int32
    rank grid over them."""
    return rank_order_nbytes(capacity) + 8 * capacity + 4 * (grid_cells(capacity) + 1)


class RankBasedSampler:
    """Rank-based prioritization (Schaul et al. 2015, section 3.3): P(i) ∝ (1 / rank(i))^alpha.

    rank(i) is the position of stored transition i when sorted by priority p_i = |delta_i|
    (raw, no eps: only the order matters), largest first. Ties are broken newest write first:
    every addition and every priority update of a slot gives it the next value of a write stamp,
    and the order key is (priority descending, stamp descending). A new transition gets the
    largest priority seen so far (1.0 at the start) and the newest stamp, so it is rank 1 at once.

    The order is exact at every `sample` and `probabilities`: it reflects every `on_add` and
    `update_priorities` before it (`RankOrder`: sorted blocks with counts of groups of them;
    O(log N + C) per write, C <= 64; per sample, one pass over the counts, about N / 128
    additions, then O(log N) per drawn rank). Over the n stored slots,
    P(rank r) = r^-alpha / sum_{k<=n} k^-alpha > 0. A draw is stratified over the rank-mass CDF:
    query k is (k + u_k) * total / B, u_k ~ U[0, 1), and the rank whose CDF segment holds it is
    drawn (the prefix sums and a grid over them that narrows each search to a few cache lines
    are computed once per capacity). IS weights as for
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
        self._capacity: int | None = None

    def attach(self, capacity: int) -> None:
        self._capacity = capacity
        self._ranks = RankOrder(capacity)
        self._rank_cdf = np.empty(capacity, np.float64)
        rank_cdf_kernel(self.alpha, self._rank_cdf)
        # grid[g] = how many prefix sums are <= g * cell: where the search for a query starts.
        cells = grid_cells(capacity)
        self._cell = self._rank_cdf[-1] / cells
        edges = np.arange(cells + 1) * self._cell
        self._rank_grid = np.searchsorted(self._rank_cdf, edges, side="right").astype(np.int32)
        # `rank_sample_kernel`'s leading arguments: they change only in place.
        order = self._ranks
        self._sampling = (self._rank_cdf, self._rank_grid, self._cell, self.alpha, self._mode)
        self._sampling += (self._max_weight, order.items, order.sizes, order.blocks)
        self._sampling += (order.group_count, order.counters)
        self._groups = order.group_count.shape[0]

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

    def sample(self, size: int, batch_size: int, beta: float, rng: np.random.Generator) -> Draw:
        self._order()
        indices = np.empty(batch_size, np.int64)
        probabilities = rng.random(out=np.empty(batch_size, np.float64))  # the u_k
        weights = np.empty(batch_size, np.float64)
        scratch = np.empty(batch_size + self._groups, np.int64)
        if not rank_sample_kernel(*self._sampling, beta, indices, probabilities, weights, scratch):
            raise ValueError("cannot sample: no transition is stored")
        return Draw(indices, probabilities, weights)

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
        wins. A slot that holds no transition keeps none (its magnitude only counts towards the
        largest priority seen). ``ValueError`` (state unchanged) as in `check_update`."""
        ranks = self._order()
        indices, magnitudes = check_update(indices, magnitudes, ranks.capacity)
        if indices.shape[0] == 0:
            return
        largest = ranks.update(indices, magnitudes)
        if largest > self.max_priority:
            self.max_priority = largest

    def probabilities(self, size: int) -> NDArray[np.float64]:
        """P(i) for every slot i < size (0 where nothing is stored), O(N)."""
        ranks = self._order()
        out = np.zeros(size)
        rank_probabilities_kernel(
            self._rank_cdf, self.alpha, ranks.items, ranks.sizes, ranks.blocks, ranks.counters, out
        )
        return out

    @property
    def nbytes(self) -> int:
        if self._capacity is None:
            return 0
        return self._ranks.nbytes + self._rank_cdf.nbytes + self._rank_grid.nbytes

    def state_dict(self) -> dict[str, Any]:
        """What continues the sampler identically: per-slot priorities and write stamps (-1: no
        transition), the last stamp given, the largest priority seen, alpha."""
        ranks = self._order()
        return {
            "name": self.name,
            "alpha": self.alpha,
            "max_priority": self.max_priority,
            "priorities": ranks.priorities(),
            "stamps": ranks.stamp.copy(),
            "clock": ranks.clock,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Load a `state_dict`, rebuilding the rank order from the keys (O(N log N)).

        A state saved before the order was exact (keys "order", "stored", "changes", no
        "stamps") still loads: slots [0, stored) were the stored ones, and their stamps are set to
        stored - slot, which keeps that sampler's tie rule (lower slot first); the next write
        gets stamp stored + 1, newer than all of them.
        """
        ranks = self._order()
        if state.get("name") != self.name:
            raise ValueError(f"state_dict is for sampler {state.get('name')!r}, not {self.name!r}")
        if state.get("alpha") != self.alpha:
            raise ValueError(
                f"state_dict was saved with alpha={state.get('alpha')}, this sampler has "
                f"alpha={self.alpha}"
            )
        priorities = np.asarray(state["priorities"], np.float64)
        if priorities.shape != (ranks.capacity,):
            raise ValueError(
                f"state_dict holds priorities of shape {priorities.shape}, this sampler has "
                f"{ranks.capacity} slots"
            )
        if "stamps" in state:
            stamps = np.asarray(state["stamps"], np.int64)
            clock = int(state["clock"])
        else:
            stored = int(state["stored"])
            slots = np.arange(ranks.capacity)
            stamps = np.where(slots < stored, stored - slots, -1).astype(np.int64)
            clock = stored
        stamped = stamps[stamps >= 0]
        if (
            stamps.shape != priorities.shape
            or np.unique(stamped).shape != stamped.shape
            or (stamped > clock).any()
        ):
            raise ValueError("state_dict stamps must be unique, <= clock, one per slot")
        ranks.load(priorities, stamps, clock)
        self.max_priority = float(state["max_priority"])


# ---------------------------------------------------------------- kernels


@numba.njit(cache=True, nogil=True)
def rank_cdf_kernel(alpha: float, out: NDArray[np.float64]) -> None:
    """out[j] = sum_{r <= j + 1} r^-alpha (the rank masses' prefix sums)."""
    total = 0.0
    for j in range(out.shape[0]):
        total += (j + 1.0) ** -alpha
        out[j] = total


@no_refcounts
def rank_sample_kernel(
    rank_cdf: NDArray[np.float64],
    rank_grid: NDArray[np.int32],
    cell: float,
    alpha: float,
    mode: int,
    max_weight: float,
    items: NDArray[np.int32],
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
    weights. The search for m_k covers only the grid cells g - 1 .. g + 1 around g = m_k / cell,
    whose prefix-sum counts bound its answer (a cell either side absorbs rounding).

    The u_k come in `out_probabilities`, which holds the queries until the P replace them;
    `out_indices` holds the searches' lengths, `scratch` (B + the groups' count entries) the
    ranks and `select_kernel`'s work space. No allocation: the kernel runs without numba's
    reference counts (`rdqn.replay.compiled`). False, the outputs unwritten, when nothing is
    stored."""
    n = counters[COUNT_STORED]
    if n == 0:
        return False
    total = rank_cdf[n - 1]
    batch = out_probabilities.shape[0]
    segment = total / batch
    cells = rank_grid.shape[0] - 1
    ranks = scratch[:batch]
    lengths = out_indices
    queries = out_probabilities
    longest = 0
    for k in range(batch):
        queries[k] = (k + queries[k]) * segment
        g = min(int(queries[k] / cell), cells)
        ranks[k] = rank_grid[max(g - 1, 0)]
        lengths[k] = rank_grid[min(g + 2, cells)] - ranks[k]
        longest = max(longest, lengths[k])
    # Branch-free halving, all queries one step at a time (their loads overlap); the answer
    # stays in [ranks[k], ranks[k] + lengths[k]].
    while longest > 1:
        for k in range(batch):
            half = lengths[k] >> 1
            ranks[k] += half if rank_cdf[ranks[k] + half] <= queries[k] else 0
            lengths[k] -= half
        longest -= longest >> 1
    for k in range(batch):
        if lengths[k] > 0:
            ranks[k] += rank_cdf[ranks[k]] <= queries[k]
        ranks[k] = min(ranks[k], n - 1)
    select_kernel(items, sizes, blocks, group_count, counters, ranks, out_indices, scratch[batch:])
    # P = r^-alpha / total for r = rank + 1. The weights from the ranks, so that rank n's is 1
    # exactly: (P / P_min)^-beta = (r / r_min)^(alpha beta), r_min = n (global) or the batch's
    # last rank (the ranks do not decrease), or (n P)^-beta (none). Each a vectorized `power`.
    last = n * 1.0 if mode == 0 else ranks[batch - 1] + 1.0
    for k in range(batch):
        out_probabilities[k] = ranks[k] + 1.0
        out_weights[k] = out_probabilities[k] / last
    power(out_probabilities, -alpha, out_probabilities)
    for k in range(batch):
        out_probabilities[k] /= total
    if mode == 2:
        for k in range(batch):
            out_weights[k] = n * out_probabilities[k]
        power(out_weights, -beta, out_weights)
    else:
        power(out_weights, alpha * beta, out_weights)
    if max_weight > 0.0:
        for k in range(batch):
            out_weights[k] = min(out_weights[k], max_weight)
    return True


@numba.njit(cache=True, nogil=True)
def rank_probabilities_kernel(
    rank_cdf: NDArray[np.float64],
    alpha: float,
    items: NDArray[np.int32],
    sizes: NDArray[np.int32],
    blocks: NDArray[np.int32],
    counters: NDArray[np.int64],
    out: NDArray[np.float64],
) -> None:
    """out[slot] = r^-alpha / total for every stored slot < out.shape[0], r its rank."""
    n, c = counters[COUNT_STORED], counters[COUNT_C]
    if n == 0:
        return
    total = rank_cdf[n - 1]
    rank = 0
    for q in range(counters[COUNT_LAST] + 1):
        block = blocks[q]
        for j in range(block * c, block * c + sizes[q]):  # none at a gap
            rank += 1
            if items[j] < out.shape[0]:
                out[items[j]] = (rank * 1.0) ** -alpha / total
