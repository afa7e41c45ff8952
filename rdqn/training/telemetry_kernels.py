"""The compiled kernel of the telemetry (`rdqn.training.telemetry`): apart, so that the web
server, which only reads snapshots, never loads numba for them."""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import NDArray

__all__ = ["count_batch_kernel"]


@numba.njit(cache=True, nogil=True)
def count_batch_kernel(
    weights: NDArray[np.float64],
    ages: NDArray[np.int64],
    buffer_size: int,
    weight_edges: NDArray[np.float64],
    low: float,
    high: float,
    weight_counts: NDArray[np.float64],
    age_counts: NDArray[np.float64],
) -> None:
    """Count one batch into the running histograms: log10(clip(w, low, high)) on `weight_edges`
    (bins [e_k, e_{k+1}), the last one closed), and each age a into bin
    min(a * bins // max(buffer_size, 1), bins - 1) of `age_counts` (bins = its length)."""
    last = weight_edges.shape[0] - 2
    for k in range(weights.shape[0]):
        log_weight = np.log10(min(max(weights[k], low), high))
        weight_counts[min(np.searchsorted(weight_edges, log_weight, side="right") - 1, last)] += 1
    bins = age_counts.shape[0]
    for k in range(ages.shape[0]):
        age_counts[min(ages[k] * bins // max(buffer_size, 1), bins - 1)] += 1
