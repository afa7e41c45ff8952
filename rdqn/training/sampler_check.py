"""The sampler check: do a sampler's draws follow the P(i) it reports?

The check draws K diagnostic batches of B from the current priorities, groups the slots into J
bins of consecutive positions, and compares each bin's count O_j with E_j = K B pi_j, where
pi_j = sum_{i in bin j} P(i).

**Why not Pearson's chi-square against a multinomial.** Proportional and rank-based replay draw
*stratified* (Schaul et al. 2015, appendix B.2.1): the total mass is cut into B equal segments
and one uniform query falls in each. Lay the items out in the order the sampler cuts (slots for
the sum tree, ranks for rank-based replay) and a bin is an interval [a, b) of cumulative
probability: every segment inside it contributes exactly one draw per batch, and only the two
segments that hold its edges are random. A bin's count per batch therefore varies by at most
about +-1, whatever B is, where independent draws vary by sqrt(B pi_j (1 - pi_j)). Pearson's
statistic then sits far below its chi-square law and its p-value is about 1.000 every time:
it cannot tell a good sampler from a subtly bad one.

**The null law used instead (exact, no approximation).** Let C(x) be the cumulative
probability up to position x in the sampler's order, c_j = C(e_j) the bin edges' cumulative
probabilities (j = 1 .. J-1) and t_j = B c_j = k_j + f_j with integer k_j and f_j in [0, 1].
Segment k_j holds edge j at fraction f_j of its width. Let L_j = O_1 + ... + O_j, the draws left
of edge j over the K batches. Under a correct stratified sampler

    L_j = K k_j + M_j,   M_j = number of batches whose segment-k_j draw fell left of c_j.

Edges in different segments depend on different uniforms, so they are independent; the edges
j_1 < ... < j_m that share segment k cut it into pieces, and the K draws of that segment fall
into the pieces as Multinomial(K; f_{j_1}, f_{j_2} - f_{j_1}, ..., 1 - f_{j_m}), with observed
piece counts the differences of 0, M_{j_1}, ..., M_{j_m}, K. Independent draws (uniform replay)
are one multinomial: the K B draws over the J bins. The statistic is Pearson's

    X^2 = sum over those multinomials, sum over their cells (n - K p)^2 / (K p)

(a cell of probability 0 holding a draw makes X^2 infinite: impossible for a correct sampler),
and its p-value P(X^2_null >= X^2_observed) is estimated from R replicates drawn from exactly
that null law, p = (1 + #{X^2_r >= X^2}) / (1 + R), so small expected counts need no
chi-square approximation. A correct sampler gives p uniform on (0, 1]; a sampler that draws in
the wrong proportions, or independently where it claims to stratify, gives p near 1 / (R + 1).
The same replicates give each bin's 95 % null range, which the dashboard draws around E_j.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from rdqn.replay.scheme_registry import scheme_of
from rdqn.validation import check_integer

if TYPE_CHECKING:  # the samplers (compiled) load in the workers that check them
    from rdqn.replay import Sampler

__all__ = ["GoodnessOfFit", "check_draws", "check_sampler", "stratification"]

REPLICATES = 1000
"""Null replicates behind each p-value: the smallest p is 1 / 1001, "p < 0.001"."""
_TOLERANCE = 1e-9


@dataclass(frozen=True)
class GoodnessOfFit:
    """The sampler check's result: counts per bin, their null ranges, the statistic and p."""

    bin_edges: NDArray[np.int64]
    """J + 1 positions in the sampler's order (`axis`): bin j holds positions [e_j, e_{j+1})."""
    observed: NDArray[np.float64]
    """Draws per bin over all diagnostic batches."""
    expected: NDArray[np.float64]
    """K B pi_j: the draws P(i) predicts per bin."""
    low: NDArray[np.float64]
    """2.5 % quantile of each bin's count when the sampler is correct."""
    high: NDArray[np.float64]
    """97.5 % quantile of each bin's count when the sampler is correct."""
    statistic: float
    """Pearson's X^2 over the null's independent multinomials (module docstring)."""
    p_value: float
    """P(X^2 >= observed) for a correct sampler; uniform on (0, 1] when the sampler is right."""
    stratified: bool
    """Whether the null is stratified draws (else independent draws)."""
    axis: str
    """What the bins run over: "buffer slot" or "rank"."""
    batches: int
    batch_size: int


def stratification(sampler: Sampler, size: int) -> tuple[bool, NDArray[np.int64] | None]:
    """(stratified, order): how `sampler` lays out the first `size` slots when it draws.

    As its scheme says (`Scheme.stratified_over`): the sum tree cuts the total in slot order
    (None); rank-based replay in rank order (slots not yet ranked have P = 0 and go last);
    uniform replay draws independently.
    """
    scheme = scheme_of(sampler)
    if scheme is None:
        raise ValueError(f"no sampler check for a {type(sampler).__name__}")
    if scheme.stratified_over != "rank":
        return scheme.stratified_over is not None, None
    ranks = sampler.order  # type: ignore[attr-defined]
    ranked = ranks[ranks < size]
    unranked = np.setdiff1d(np.arange(size), ranked, assume_unique=True)
    return True, np.concatenate([ranked, unranked])


def check_sampler(
    sampler: Sampler,
    size: int,
    batch_size: int,
    *,
    batches: int,
    bins: int,
    rng: np.random.Generator,
    replicates: int = REPLICATES,
) -> GoodnessOfFit:
    """Draw `batches` batches of `batch_size` from `sampler` (with `rng`) and check them.

    Samplers only read their state when they sample, so the check never changes what training
    draws next.
    """
    check_integer("size", size, minimum=1)
    stratified, order = stratification(sampler, size)
    draws = np.stack([sampler.sample(size, batch_size, 1.0, rng).indices for _ in range(batches)])
    return check_draws(
        draws,
        sampler.probabilities(size),
        order=order,
        stratified=stratified,
        bins=bins,
        rng=rng,
        replicates=replicates,
        axis="rank" if order is not None else "buffer slot",
    )


def check_draws(
    draws: NDArray[np.int64],
    probabilities: NDArray[np.float64],
    *,
    order: NDArray[np.int64] | None = None,
    stratified: bool,
    bins: int,
    rng: np.random.Generator,
    replicates: int = REPLICATES,
    axis: str = "buffer slot",
) -> GoodnessOfFit:
    """Check `draws` (K batches x B slots) against `probabilities` P(i) (module docstring).

    `order`: the slots in the order the sampler lays out their mass (None: slot order);
    `stratified`: whether each batch took one draw per equal-mass segment of that layout.
    """
    draws = np.asarray(draws, dtype=np.int64)
    if draws.ndim != 2 or draws.size == 0:
        raise ValueError(
            f"draws must be a non-empty (batches, batch_size) array, got {draws.shape}"
        )
    p = np.asarray(probabilities, dtype=np.float64)
    size = p.size
    if not (np.all(np.isfinite(p)) and np.all(p >= 0) and p.sum() > 0):
        raise ValueError("probabilities must be finite, >= 0 and not all 0")
    if draws.min() < 0 or draws.max() >= size:
        raise ValueError(f"draws must be slots in [0, {size}), got {draws.min()}..{draws.max()}")
    if order is not None:
        order = np.asarray(order, dtype=np.int64)
        if order.shape != (size,) or not np.all(np.bincount(order, minlength=size) == 1):
            raise ValueError(f"order must be a permutation of the {size} slots")
    check_integer("bins", bins, minimum=1)
    check_integer("replicates", replicates, minimum=1)
    batches, batch_size = draws.shape
    bins = min(bins, size)

    edges = np.linspace(0, size, bins + 1).astype(np.int64)
    placed = draws.ravel()
    if order is not None:
        position = np.empty(size, dtype=np.int64)
        position[order] = np.arange(size)
        placed, p = position[placed], p[order]
    bin_of = np.searchsorted(edges, placed, side="right") - 1
    observed = np.bincount(bin_of, minlength=bins).astype(np.float64)
    edge_mass = np.cumsum(p)[edges[1:] - 1]
    edge_mass = np.concatenate([[0.0], edge_mass / edge_mass[-1]])
    share = np.diff(edge_mass)
    expected = batches * batch_size * share

    if stratified:
        null = _stratified_null(edge_mass[1:-1], observed, batches, batch_size)
    else:
        null = _Null(
            trials=np.array([batches * batch_size]),
            probabilities=share[None, :],
            observed=observed[None, :],
            to_bins=lambda cells: cells[:, 0, :],
        )
    statistic = float(null.statistic(null.observed[None])[0])
    simulated = null.simulate(replicates, rng)
    exceed = np.count_nonzero(null.statistic(simulated) >= statistic * (1 - _TOLERANCE))
    low, high = np.quantile(null.to_bins(simulated), [0.025, 0.975], axis=0, method="inverted_cdf")
    return GoodnessOfFit(
        bin_edges=edges,
        observed=observed,
        expected=expected,
        low=low,
        high=high,
        statistic=statistic,
        p_value=float((1 + exceed) / (1 + replicates)),
        stratified=stratified,
        axis=axis,
        batches=batches,
        batch_size=batch_size,
    )


@dataclass(frozen=True)
class _Null:
    """Independent multinomials (g: trials[g] draws over the cells probabilities[g, :], padded
    with probability-0 cells), the observed cell counts, and how cell counts make bin counts."""

    trials: NDArray[np.int64]
    probabilities: NDArray[np.float64]
    observed: NDArray[np.float64]
    to_bins: Callable[[NDArray[np.float64]], NDArray[np.float64]]

    def simulate(self, replicates: int, rng: np.random.Generator) -> NDArray[np.float64]:
        """(replicates, groups, cells) counts drawn from the null, every multinomial at once as
        a chain of binomials: cell c gets Bin(draws left, p_c / (mass left))."""
        groups, width = self.probabilities.shape
        out = np.zeros((replicates, groups, width))
        left = np.broadcast_to(self.trials.astype(np.float64), (replicates, groups)).copy()
        mass_left = np.ones(groups)
        for c in range(width - 1):
            with np.errstate(divide="ignore", invalid="ignore"):
                chance = np.clip(self.probabilities[:, c] / mass_left, 0.0, 1.0)
            chance = np.where(mass_left > 0, chance, 0.0)
            out[:, :, c] = rng.binomial(left.astype(np.int64), chance)
            left -= out[:, :, c]
            mass_left = mass_left - self.probabilities[:, c]
        out[:, :, width - 1] = left
        return out

    def statistic(self, cells: NDArray[np.float64]) -> NDArray[np.float64]:
        """Pearson's sum of (n - K p)^2 / (K p) over every cell, per leading index; a draw in a
        cell of probability 0, or a negative count (impossible), gives inf."""
        mean = self.trials[:, None] * self.probabilities
        possible = mean > _TOLERANCE * self.trials[:, None]
        terms = np.where(possible, (cells - mean) ** 2 / np.where(possible, mean, 1.0), 0.0)
        impossible = ((~possible) & (cells > 0.5)) | (cells < -0.5)
        return np.where(impossible.any(axis=(-2, -1)), np.inf, terms.sum(axis=(-2, -1)))


def _stratified_null(
    edge_mass: NDArray[np.float64], observed: NDArray[np.float64], batches: int, batch_size: int
) -> _Null:
    """The stratified null of the module docstring: one multinomial per segment that holds a
    bin edge, over the pieces its edges cut it into."""
    t = batch_size * edge_mass
    segment = np.minimum(np.floor(t), batch_size - 1).astype(np.int64)
    fraction = np.clip(t - segment, 0.0, 1.0)
    left_of_edge = np.cumsum(observed)[:-1] - batches * segment  # M_j
    segments, group = np.unique(segment, return_inverse=True)
    # Edges are sorted, so the edges of a group are consecutive: rank within the group.
    first = np.searchsorted(group, np.arange(segments.size))
    place = np.arange(t.size) - first[group]
    width = int(place.max()) + 2 if t.size else 1
    groups = max(segments.size, 1)
    # Per group: the cumulative fraction and the draws left of each piece's right end; after a
    # group's last edge comes its last piece (up to 1, K draws), then empty padding pieces.
    cuts = np.ones((groups, width))
    reached = np.full((groups, width), float(batches))
    cuts[group, place] = fraction
    reached[group, place] = left_of_edge
    probabilities = np.diff(cuts, prepend=0.0, axis=1)
    cells = np.diff(reached, prepend=0.0, axis=1)

    def to_bins(simulated: NDArray[np.float64]) -> NDArray[np.float64]:
        left = np.cumsum(simulated, axis=2)[:, group, place] + batches * segment
        replicates = simulated.shape[0]
        total = np.full((replicates, 1), float(batches * batch_size))
        return np.diff(np.hstack([np.zeros((replicates, 1)), left, total]), axis=1)

    return _Null(
        trials=np.full(groups, batches),
        probabilities=probabilities,
        observed=cells,
        to_bins=to_bins,
    )
