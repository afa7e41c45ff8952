"""The PER cycle every implementation in the replay benchmark performs, and its NumPy oracle.

One cycle on a tree of N leaf masses q_i (q_i = (|delta_i| + eps)^alpha, total Q = sum_i q_i):

1. 128 stratified masses, sorted: m_k = (k + u_k) * Q / 128, u_k ~ U[0, 1), k = 0..127;
2. for each m_k the leaf i_k with c_{i-1} <= m_k < c_i (c_i = q_0 + ... + q_i, c_{-1} = 0)
   and its probability P(i_k) = q_{i_k} / Q;
3. one write of 128 new masses q_{i_k} <- (|delta_k| + eps)^alpha (a repeated leaf: last wins).

This module is plain NumPy: both the main environment and the peer venv import it, so the
constants and the oracle that checks every adapter are the same on both sides.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

BATCH = 128
ALPHA, BETA, EPS = 0.6, 0.4, 1e-6
LOG2_SIZES = (14, 17, 20)
DELTA_SETS = 16  # the cycles rotate through this many precomputed TD-error vectors


def initial_magnitudes(n: int) -> np.ndarray:
    """|delta| of the n stored transitions every implementation starts from (same seed)."""
    return np.random.default_rng(1).random(n) + 0.1


def delta_sets(count: int = DELTA_SETS) -> list[np.ndarray]:
    """The TD errors written back by successive cycles (standard normal, fixed seed)."""
    rng = np.random.default_rng(0)
    return [rng.standard_normal(BATCH) for _ in range(count)]


def leaf_mass(magnitudes: np.ndarray) -> np.ndarray:
    """q = (|delta| + eps)^alpha."""
    return (np.abs(magnitudes) + EPS) ** ALPHA


def stratified_masses(u: np.ndarray, total: float) -> np.ndarray:
    """m_k = (k + u_k) * total / BATCH: one mass in each of BATCH equal strata, sorted."""
    return (np.arange(len(u)) + u) * (total / len(u))


def oracle_draw(leaves: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Leaf index and P(i) of each stratified mass, by prefix sums over the whole array."""
    cumulative = np.cumsum(leaves)
    total = cumulative[-1]
    indices = np.searchsorted(cumulative, stratified_masses(u, total), side="right")
    indices = np.minimum(indices, len(leaves) - 1)
    return indices, leaves[indices] / total


def oracle_write(leaves: np.ndarray, indices: np.ndarray, deltas: np.ndarray) -> np.ndarray:
    """The leaves after one write of (|delta| + eps)^alpha at indices (a repeated index: last)."""
    out = leaves.copy()
    out[indices] = leaf_mass(deltas)
    return out


def draw_mismatches(
    leaves: np.ndarray,
    u: np.ndarray,
    indices: np.ndarray,
    probabilities: np.ndarray,
    rtol: float,
) -> list[str]:
    """Why a drawn (indices, P) disagrees with the oracle beyond rounding; [] when it agrees.

    Leaf j is accepted for m_k when c_{j-1} - tol <= m_k <= c_j + tol with tol = rtol * Q (a mass
    within rounding of a boundary may fall on either side), j has positive mass, and P(j) agrees
    with q_j / Q to rtol.
    """
    cumulative = np.cumsum(leaves)
    total = cumulative[-1]
    masses = stratified_masses(u, total)
    indices = np.asarray(indices, np.int64)
    probabilities = np.asarray(probabilities, np.float64)
    if indices.shape != masses.shape:
        return [f"{indices.shape[0]} indices for {masses.shape[0]} masses"]
    if indices.min() < 0 or indices.max() >= len(leaves):
        return [f"an index outside [0, {len(leaves)}): {indices.min()}..{indices.max()}"]
    tol = rtol * total
    lower = np.where(indices > 0, cumulative[indices - 1], 0.0)
    upper = cumulative[indices]
    wrong = (masses < lower - tol) | (masses > upper + tol) | (leaves[indices] <= 0)
    problems = [
        f"mass {masses[k]:.6g} -> leaf {indices[k]} spanning [{lower[k]:.6g}, {upper[k]:.6g})"
        for k in np.flatnonzero(wrong)[:3]
    ]
    expected = leaves[indices] / total
    off = ~np.isclose(probabilities, expected, rtol=rtol, atol=0.0)
    problems += [
        f"P(leaf {indices[k]}) = {probabilities[k]:.6g}, expected {expected[k]:.6g}"
        for k in np.flatnonzero(off)[:3]
    ]
    return problems


def seconds_per_cycle(cycle: Callable[[object], object], deltas: list, calls: int) -> float:
    """Mean wall time of `calls` cycles, rotating through the precomputed TD errors."""
    count = len(deltas)
    start = time.perf_counter()
    for i in range(calls):
        cycle(deltas[i % count])
    return (time.perf_counter() - start) / calls


def stratum_mismatches(
    leaves: np.ndarray, indices: np.ndarray, weights: np.ndarray, rtol: float
) -> list[str]:
    """For a sampler that draws its own u: leaf i_k must overlap stratum k, its IS weight match.

    Stratum k is [k Q / B, (k + 1) Q / B); leaf j spans [c_{j-1}, c_j). The weight of a draw,
    normalized by the largest possible, is (q_i / q_min)^-beta.
    """
    cumulative = np.cumsum(leaves)
    total = cumulative[-1]
    indices = np.asarray(indices, np.int64)
    k = np.arange(len(indices))
    width = total / len(indices)
    tol = rtol * total
    lower = np.where(indices > 0, cumulative[indices - 1], 0.0)
    upper = cumulative[indices]
    wrong = (upper < k * width - tol) | (lower > (k + 1) * width + tol) | (leaves[indices] <= 0)
    problems = [
        f"stratum {j} [{j * width:.6g}, {(j + 1) * width:.6g}) -> leaf {indices[j]} "
        f"spanning [{lower[j]:.6g}, {upper[j]:.6g})"
        for j in np.flatnonzero(wrong)[:3]
    ]
    expected = (leaves[indices] / leaves.min()) ** -BETA
    off = ~np.isclose(weights, expected, rtol=rtol, atol=0.0)
    problems += [
        f"weight of leaf {indices[j]} = {weights[j]:.6g}, expected {expected[j]:.6g}"
        for j in np.flatnonzero(off)[:3]
    ]
    return problems
