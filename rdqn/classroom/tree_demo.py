"""The sum-tree demo for the classroom: how proportional PER stores priorities and draws a batch.

Plain numpy/pandas, no plotting: the "Sum tree" page turns these numbers into widgets and figures.
Vocabulary and formulas as in `rdqn.replay.priorities` (one name per quantity):

- priority    p_i = |delta_i| + eps
- mass        m_i = p_i^alpha                          (what the sum tree stores; 0^0 = 1, so
                                                         alpha = 0 is exactly uniform)
- probability P(i) = m_i / sum_k m_k
- IS weight   w_i = (N P(i))^-beta / max_j (N P(j))^-beta

**The sum tree demo.** A stratified batch of B cuts the total mass into B equal segments and draws
one query in each, m_k = (k + u_k) * total / B with u_k ~ U[0, 1) (Schaul et al. 2015,
arXiv:1511.05952, appendix B.2.1). `rdqn.replay.SumTree.find` maps each query to its leaf; the
descent visits the leaf's ancestors, node (P + i) >> k for k = depth..0 in heap layout (node 1 the
root, leaf i at node P + i).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from rdqn.replay.priorities import mass
from rdqn.validation import check_real, is_real

if TYPE_CHECKING:  # the compiled tree loads when a page builds one, not with the server's Home
    from rdqn.replay import SumTree

__all__ = [
    "BatchDraw",
    "Tally",
    "accumulate",
    "build_tree",
    "check_priorities",
    "default_priorities",
    "descent_path",
    "draw_batch",
    "draw_counts",
    "importance_weights",
    "leaf_table",
    "masses",
    "random_priorities",
    "stratified_queries",
    "tree_leaf_count",
]

MAX_MAGNITUDE = 1e6
"""Largest |number| (reward, Q value, priority, eps) the worked examples accept: with alpha <= 1
every intermediate quantity then stays finite, and the numbers stay readable."""

_DEFAULT_PATTERN = (3.0, 0.5, 1.0, 0.2, 2.0, 0.8, 0.1, 1.5)


# --------------------------------------------------------------------------- sampling quantities


def masses(priorities: ArrayLike, alpha: float) -> NDArray[np.float64]:
    """m_i = p_i^alpha (`rdqn.replay.priorities.mass`; 0^0 = 1: alpha = 0 is exactly uniform)."""
    alpha = check_real("alpha", alpha, minimum=0.0)
    return mass(np.asarray(priorities, dtype=np.float64), alpha)


def importance_weights(
    probabilities: ArrayLike, beta: float, normalization: str = "global"
) -> NDArray[np.float64]:
    """w_i = (N P(i))^-beta / max_j (N P(j))^-beta over the items with P > 0 (NaN where P = 0).

    The max is over every item, so this is the paper's global normalisation when `probabilities`
    covers the whole buffer; the largest weight, that of the least likely item, is 1. Computed
    by the replay samplers' own kernel (`importance_weights_kernel`: the formula is written
    once), as (P(i) / P_min)^-beta; ``normalization="none"`` gives (N P(i))^-beta itself.
    """
    from rdqn.replay.sampling_kernels import (  # compiled: loads with the first draw
        check_normalization,
        importance_weights_kernel,
    )

    beta = check_real("beta", beta, minimum=0.0)
    p = np.asarray(probabilities, dtype=np.float64)
    positive = p > 0
    out = np.full(p.shape, np.nan)
    if positive.any():
        drawn = np.ascontiguousarray(p[positive])
        weights = np.empty(drawn.size)
        mode, no_clip = check_normalization(normalization, None)
        importance_weights_kernel(drawn, drawn.min(), p.size, float(beta), mode, no_clip, weights)
        out[positive] = weights
    return out


# --------------------------------------------------------------------------- the sum tree demo


def default_priorities(n: int) -> NDArray[np.float64]:
    """A fixed, uneven set of n priorities (a repeating pattern of 8) for the classroom."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    return np.resize(np.asarray(_DEFAULT_PATTERN), n)


def random_priorities(n: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """n log-normal priorities rounded to 2 decimals, at least 0.01 (spanning ~two decades)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    return np.maximum(np.round(rng.lognormal(0.0, 1.0, n), 2), 0.01)


def check_priorities(values: Sequence[Any] | pd.Series) -> NDArray[np.float64]:
    """Leaf priorities as floats; ValueError naming every bad leaf (non-numeric, NaN, inf, < 0).

    At least one priority must be > 0, otherwise there is nothing to sample.
    """
    items = list(values)
    if not items:
        raise ValueError("priorities must not be empty")
    out = np.empty(len(items), dtype=np.float64)
    bad = []
    for i, value in enumerate(items):
        number = _as_number(value)
        if number is None or not 0 <= number <= MAX_MAGNITUDE:
            bad.append(f"leaf {i} ({_show(value)})")
        else:
            out[i] = number
    if bad:
        noun = "cells" if len(bad) > 1 else "cell"
        raise ValueError(
            f"priorities must be numbers in [0, {MAX_MAGNITUDE:g}]; bad {noun}: {', '.join(bad)}"
        )
    if not (out > 0).any():
        raise ValueError("at least one priority must be > 0, otherwise nothing can be sampled")
    return out


def leaf_table(priorities: ArrayLike, alpha: float, beta: float) -> pd.DataFrame:
    """Per leaf: priority p_i, mass p_i^alpha, P(i) and IS weight w_i (N = number of leaves).

    Index `leaf`; a leaf with P(i) = 0 is never sampled, so its weight is NaN.
    """
    p = np.asarray(priorities, dtype=np.float64)
    m = masses(p, alpha)
    total = m.sum()
    if not total > 0:
        raise ValueError(f"the total mass must be > 0, got {total}")
    probability = m / total
    return pd.DataFrame(
        {
            "priority": p,
            "mass": m,
            "probability": probability,
            "weight": importance_weights(probability, beta),
        },
        index=pd.RangeIndex(p.size, name="leaf"),
    )


def tree_leaf_count(capacity: int) -> int:
    """P, the leaves of a `SumTree` of `capacity` slots: the smallest power of two >= capacity.

    Leaves capacity .. P - 1 are padding: they always hold 0 and are never drawn.
    """
    if capacity < 1:
        raise ValueError(f"capacity must be >= 1, got {capacity}")
    return 1 << max(0, (int(capacity) - 1).bit_length())


def build_tree(leaf_masses: ArrayLike) -> SumTree:
    """A `SumTree` holding `leaf_masses` (one leaf each)."""
    from rdqn.replay import SumTree

    m = np.asarray(leaf_masses, dtype=np.float64).reshape(-1)
    tree = SumTree(m.size, track_min=False)
    tree.update(np.arange(m.size), m)
    return tree


def stratified_queries(total: float, uniforms: ArrayLike) -> NDArray[np.float64]:
    """m_k = (k + u_k) * total / B, one query in each of B equal segments of the total.

    B is the size of the last axis of `uniforms` (shape (B,) for one batch, (n, B) for n).
    """
    u = np.atleast_1d(np.asarray(uniforms, dtype=np.float64))
    if u.size and not ((u >= 0) & (u < 1)).all():
        raise ValueError(f"uniforms must lie in [0, 1), got {u[~((u >= 0) & (u < 1))][0]}")
    b = u.shape[-1]
    return (np.arange(b) + u) * (float(total) / max(b, 1))


def descent_path(leaf: int, offset: int) -> list[int]:
    """Node ids the sum-tree search visits to reach `leaf`, root (1) first: (offset + leaf) >> k."""
    if not 0 <= leaf < offset:
        raise ValueError(f"leaf must be in [0, {offset}), got {leaf}")
    node = offset + int(leaf)
    return [node >> k for k in range(offset.bit_length() - 1, -1, -1)]


@dataclass(frozen=True)
class BatchDraw:
    """One stratified batch: its queries, the leaves `SumTree.find` returned, their paths."""

    total: float
    uniforms: NDArray[np.float64]
    queries: NDArray[np.float64]
    leaves: NDArray[np.int64]
    paths: list[list[int]]

    def frame(self) -> pd.DataFrame:
        """One row per query: its segment [lo, hi), u_k, m_k, the leaf and the path."""
        b = self.queries.size
        segment = self.total / b if b else 0.0
        return pd.DataFrame(
            {
                "segment from": np.arange(b) * segment,
                "segment to": (np.arange(b) + 1) * segment,
                "u": self.uniforms,
                "query": self.queries,
                "leaf": self.leaves,
                "path": [" → ".join(str(j) for j in path) for path in self.paths],
            },
            index=pd.RangeIndex(1, b + 1, name="k"),
        )


def draw_batch(tree: SumTree, uniforms: ArrayLike) -> BatchDraw:
    """Queries (k + u_k) * total / B found in `tree` with `SumTree.find`, and their paths."""
    u = np.asarray(uniforms, dtype=np.float64).reshape(-1)
    queries = stratified_queries(tree.total, u)
    leaves = tree.find(queries) if u.size else np.zeros(0, dtype=np.int64)
    paths = [descent_path(int(i), tree.offset) for i in leaves]
    return BatchDraw(tree.total, u, queries, leaves, paths)


def draw_counts(
    tree: SumTree, batch_size: int, batches: int, rng: np.random.Generator
) -> NDArray[np.int64]:
    """How often each leaf is drawn in `batches` stratified batches of `batch_size`."""
    if batch_size < 1 or batches < 1:
        raise ValueError(f"batch_size and batches must be >= 1, got {batch_size} and {batches}")
    queries = stratified_queries(tree.total, rng.random((batches, batch_size)))
    return np.bincount(tree.find(queries.reshape(-1)), minlength=tree.capacity)


@dataclass(frozen=True)
class Tally:
    """Accumulated draw counts per leaf, valid only for the leaf masses they were drawn under."""

    masses: tuple[float, ...]
    counts: tuple[int, ...]

    @classmethod
    def empty(cls, leaf_masses: ArrayLike) -> Tally:
        m = tuple(float(x) for x in np.asarray(leaf_masses, dtype=np.float64).reshape(-1))
        return cls(m, (0,) * len(m))

    def matches(self, leaf_masses: ArrayLike) -> bool:
        """Whether these counts were drawn from exactly `leaf_masses`."""
        m = np.asarray(leaf_masses, dtype=np.float64).reshape(-1)
        return m.shape == (len(self.masses),) and bool(np.array_equal(m, self.masses))

    def add(self, counts: ArrayLike) -> Tally:
        c = np.asarray(counts, dtype=np.int64).reshape(-1)
        if c.shape != (len(self.counts),):
            raise ValueError(f"counts must have {len(self.counts)} entries, got {c.size}")
        return Tally(self.masses, tuple(int(a + b) for a, b in zip(self.counts, c, strict=True)))

    @property
    def total(self) -> int:
        return sum(self.counts)


def tally_with(tally: Tally | None, leaf_masses: ArrayLike, counts: ArrayLike) -> Tally:
    """`tally` plus per-leaf `counts` drawn from `leaf_masses`. A tally drawn from other masses
    (priorities or alpha changed since) starts again from zero."""
    if tally is None or not tally.matches(leaf_masses):
        tally = Tally.empty(leaf_masses)
    return tally.add(counts)


def accumulate(
    tally: Tally | None,
    leaf_masses: ArrayLike,
    batch_size: int,
    batches: int,
    rng: np.random.Generator,
) -> Tally:
    """`tally` plus `batches` stratified batches drawn from `leaf_masses` with a `SumTree`
    (`tally_with`)."""
    counts = draw_counts(build_tree(leaf_masses), batch_size, batches, rng)
    return tally_with(tally, leaf_masses, counts)


# --------------------------------------------------------------------------- helpers


def _as_number(value: object) -> float | None:
    """A float from a number or numeric text; None for anything else (None, bools, words)."""
    if is_real(value):
        return float(value)  # type: ignore[arg-type]
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _show(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "an empty cell"
    return repr(value)
