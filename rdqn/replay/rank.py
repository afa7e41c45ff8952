"""Rank-based prioritization, the paper's second variant, behind the same `Sampler` protocol."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from rdqn.replay.checks import check_slot, check_update
from rdqn.replay.samplers import (
    Draw,
    Normalization,
    check_attached,
    check_normalization,
    importance_weights_kernel,
)
from rdqn.validation import check_integer, check_real

__all__ = ["RankBasedSampler"]


class RankBasedSampler:
    """Rank-based prioritization (Schaul et al. 2015, section 3.3): P(i) ∝ (1 / rank(i))^alpha.

    rank(i) is the position of transition i when sorted by priority |delta_i|, largest first
    (ties: lower slot first). Sorting costs O(N log N), so, as in the paper, the order is refreshed
    only after `sort_every` priority updates or additions (and on the first addition) and kept
    between refreshes. Until the next sort, a transition stored beyond the last sort's size is not
    drawn, and a slot keeps its rank: once the ring is full, a new transition inherits the rank of
    the one it overwrote. Every reported P(i) is the exact probability under the order actually
    used, so IS weights stay consistent. Sorting happens when priorities change, never inside
    `sample`/`probabilities`, which are read-only. The rank masses r^-alpha and their prefix sums
    (the segment boundaries) are computed once per capacity; a draw is a stratified inverse-CDF
    search over ranks, O(B log N).

    Args:
        alpha: rank exponent (0 = uniform; the paper uses 0.7).
        sort_every: re-sort after this many updates/additions (1 = always exact).
        is_normalization, max_weight: as for `ProportionalSampler`.
    """

    name = "rank"

    def __init__(
        self,
        alpha: float = 0.7,
        sort_every: int = 64,
        is_normalization: Normalization = "global",
        max_weight: float | None = None,
    ) -> None:
        self.alpha = check_real("alpha", alpha, minimum=0.0)
        self.sort_every = check_integer("sort_every", sort_every, minimum=1)
        self.is_normalization = is_normalization
        self.max_weight = max_weight
        self._mode, self._max_weight = check_normalization(is_normalization, max_weight)
        self.max_priority = 1.0
        self._capacity: int | None = None

    def attach(self, capacity: int) -> None:
        self._capacity = capacity
        self.priorities = np.zeros(capacity, np.float64)
        self._rank_mass = np.arange(1, capacity + 1, dtype=np.float64) ** -self.alpha
        self._rank_cdf = np.cumsum(self._rank_mass)
        self._order = np.empty(0, np.int64)
        self._stored = 0
        self._changes = 0

    def _changed(self, count: int) -> None:
        self._changes += count
        if self._changes >= self.sort_every or self._order.shape[0] == 0:
            self._order = np.argsort(-self.priorities[: self._stored], kind="stable")
            self._changes = 0

    def on_add(self, slot: int) -> None:
        check_slot(slot, check_attached(self._capacity, "RankBasedSampler"))
        self.priorities[slot] = self.max_priority
        self._stored = max(self._stored, slot + 1)
        self._changed(1)

    def sample(self, size: int, batch_size: int, beta: float, rng: np.random.Generator) -> Draw:
        check_attached(self._capacity, "RankBasedSampler")
        n = self._order.shape[0]
        total = self._rank_cdf[n - 1]
        queries = (np.arange(batch_size) + rng.random(batch_size)) * (total / batch_size)
        ranks = np.minimum(np.searchsorted(self._rank_cdf[:n], queries, side="right"), n - 1)
        probabilities = self._rank_mass[ranks] / total
        weights = np.empty(batch_size, np.float64)
        importance_weights_kernel(
            probabilities,
            self._rank_mass[n - 1] / total,
            n,
            beta,
            self._mode,
            self._max_weight,
            weights,
        )
        return Draw(self._order[ranks], probabilities, weights)

    @property
    def order(self) -> NDArray[np.int64]:
        """The ranked slots as of the last sort, rank 1 first: `sample` lays the rank masses out
        in this order and draws one query in each of B equal segments (a read-only view)."""
        view = self._order.view()
        view.flags.writeable = False
        return view

    def update_priorities(
        self, indices: NDArray[np.int64], magnitudes: NDArray[np.float64]
    ) -> None:
        capacity = check_attached(self._capacity, "RankBasedSampler")
        indices, magnitudes = check_update(indices, magnitudes, capacity)
        if indices.shape[0] == 0:
            return
        self.priorities[indices] = magnitudes
        self.max_priority = max(self.max_priority, float(magnitudes.max()))
        self._changed(1)

    def probabilities(self, size: int) -> NDArray[np.float64]:
        check_attached(self._capacity, "RankBasedSampler")
        out = np.zeros(size)
        n = self._order.shape[0]
        if n:
            out[self._order] = self._rank_mass[:n] / self._rank_cdf[n - 1]
        return out

    @property
    def nbytes(self) -> int:
        if self._capacity is None:
            return 0
        return int(
            self.priorities.nbytes
            + self._rank_mass.nbytes
            + self._rank_cdf.nbytes
            + self._order.nbytes
        )

    def state_dict(self) -> dict[str, Any]:
        check_attached(self._capacity, "RankBasedSampler")
        return {
            "name": self.name,
            "alpha": self.alpha,
            "max_priority": self.max_priority,
            "priorities": self.priorities.copy(),
            "order": self._order.copy(),
            "stored": self._stored,
            "changes": self._changes,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        check_attached(self._capacity, "RankBasedSampler")
        if state.get("name") != self.name:
            raise ValueError(f"state_dict is for sampler {state.get('name')!r}, not {self.name!r}")
        if state["priorities"].shape != self.priorities.shape or state["alpha"] != self.alpha:
            raise ValueError("state_dict does not match this sampler's capacity or alpha")
        self.priorities[...] = state["priorities"]
        self._order = np.asarray(state["order"], np.int64).copy()
        self._stored = int(state["stored"])
        self._changes = int(state["changes"])
        self.max_priority = float(state["max_priority"])
