"""The proportional sampler's compiled kernels: IS weights, the fused stratified draw, and the
priority update (`rdqn.replay.samplers` holds the samplers that call them; the rank-based
sampler and the sum-tree demo use `importance_weights_kernel` too, so the formula is written
once). Names as in `rdqn.replay.priorities`: priority p_i = |delta_i| + eps, mass m_i =
p_i^alpha, P(i) = m_i / sum_k m_k, weight w_i = (N P(i))^-beta / max_j w_j.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from rdqn.replay.kernels.compiled import kernel, power, priority
from rdqn.replay.sumtree import descend_sorted, update_tree_kernel
from rdqn.validation import Real, check_choice

__all__ = [
    "BAD_MAGNITUDE",
    "BAD_SLOT",
    "OVERFLOW",
    "ZERO_TOTAL",
    "check_normalization",
    "importance_weights_kernel",
    "priority_update_kernel",
    "stratified_sample_kernel",
]

_NORMALIZATION_CODES = {"global": 0, "batch": 1, "none": 2}
_MAX_WEIGHT = Real(minimum=0.0, open_minimum=True, optional=True)


def check_normalization(mode: str, max_weight: float | None) -> tuple[int, float]:
    """The kernel's code for an IS-weight normalisation, and the weight clip (0: none)."""
    check_choice("is_normalization", mode, tuple(_NORMALIZATION_CODES))
    clip = _MAX_WEIGHT.check("max_weight", max_weight)
    return _NORMALIZATION_CODES[mode], 0.0 if clip is None else clip


@kernel
def importance_weights_kernel(
    probabilities: NDArray[np.float64],
    min_probability: float,
    size: int,
    beta: float,
    mode: int,
    max_weight: float,
    out: NDArray[np.float64],
) -> None:
    """w_i for each sampled P(i): mode 0 global, 1 batch, 2 none; clipped at max_weight if > 0.

    w_i = (P(i) / P_min)^-beta (global, batch) or (N P(i))^-beta (none): the bases first, then
    one vectorized `power` over them all."""
    n = probabilities.shape[0]
    if mode == 1:
        min_probability = np.inf
        for k in range(n):
            min_probability = min(min_probability, probabilities[k])
    for k in range(n):
        # P(i) / P_min >= 1 exactly: a P_min computed apart (the rank sampler's n^-alpha / S(n))
        # may round a last place away from the P(i) it equals, and no weight may exceed 1.
        out[k] = (
            size * probabilities[k] if mode == 2 else max(probabilities[k] / min_probability, 1.0)
        )
    power(out, -beta, out)
    if max_weight > 0.0:
        for k in range(n):
            out[k] = min(out[k], max_weight)


@kernel
def stratified_sample_kernel(
    nodes: NDArray[np.float64],
    offset: int,
    size: int,
    beta: float,
    mode: int,
    max_weight: float,
    out_indices: NDArray[np.int64],
    out_probabilities: NDArray[np.float64],
    out_weights: NDArray[np.float64],
) -> float:
    """One fused pass: stratified queries, tree descent, P(i) and IS weights; returns the total
    mass, and leaves the outputs unwritten when it is not positive and finite (the caller then
    refuses the sample).

    Query k is m_k = (k + u_k) * total / B with u_k ~ U[0, 1): one uniform draw in each of B equal
    segments of the total mass (Schaul et al. 2015, appendix B.2.1). The u_k come in
    `out_probabilities`; the queries and the descent's work space live there until the P(i)
    replace them."""
    total = nodes[1, 0]
    if not (total > 0.0 and total < np.inf):
        return total
    n = out_probabilities.shape[0]
    segment = total / n
    for k in range(n):
        out_probabilities[k] = (k + out_probabilities[k]) * segment
    descend_sorted(nodes, offset, out_probabilities, out_indices, out_probabilities)
    for k in range(n):
        out_probabilities[k] = nodes[out_indices[k], 0] / total
        out_indices[k] -= offset
    importance_weights_kernel(
        out_probabilities, nodes[1, 1] / total, size, beta, mode, max_weight, out_weights
    )
    return total


# Negative results of `priority_update_kernel`: why an update was refused (the tree unchanged).
OVERFLOW = -1.0
BAD_SLOT = -2.0
BAD_MAGNITUDE = -3.0
ZERO_TOTAL = -4.0


@kernel
def priority_update_kernel(
    nodes: NDArray[np.float64],
    offset: int,
    stored: int,
    indices: NDArray[np.int64],
    magnitudes: NDArray[np.float64],
    eps: float,
    alpha: float,
    scratch: NDArray[np.float64],
) -> float:
    """Set masses (|delta| + eps)^alpha (`rdqn.replay.priorities`: `priority`, then `mass` for
    the whole batch by one vector `power`); returns the largest priority, or a negative code when
    the update is refused and the tree left as it was: BAD_SLOT (an index outside [0, stored)),
    BAD_MAGNITUDE (a magnitude not finite and >= 0), OVERFLOW (a mass or the total overflows) or
    ZERO_TOTAL (no transition would keep a positive mass, so nothing could be sampled)."""
    n = indices.shape[0]
    masses = scratch[:n]
    previous = scratch[n : 2 * n]
    largest = 0.0
    for k in range(n):
        if indices[k] < 0 or indices[k] >= stored:
            return BAD_SLOT
        if not (magnitudes[k] >= 0.0 and np.isfinite(magnitudes[k])):
            return BAD_MAGNITUDE
    for k in range(n):
        masses[k] = priority(magnitudes[k], eps)
        largest = max(largest, masses[k])
    power(masses, alpha, masses)
    for k in range(n):
        if not np.isfinite(masses[k]):
            return OVERFLOW
        previous[k] = nodes[indices[k] + offset, 0]
    update_tree_kernel(nodes, offset, indices, masses)
    total = nodes[1, 0]
    if not (np.isfinite(total) and total > 0.0):
        update_tree_kernel(nodes, offset, indices, previous)
        return OVERFLOW if total > 0.0 else ZERO_TOTAL
    return largest
