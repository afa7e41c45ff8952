"""The formulas of prioritization, each written once (Schaul et al. 2015, arXiv:1511.05952,
section 3.3). One name per quantity:

- priority  p_i = |delta_i| + eps    the raw domain, what the learner reports (proportional)
            p_i = 1 / rank(i)        rank-based, rank 1 the largest |delta_i| (which the rank
                                     sampler keeps, to order by)
- mass      m_i = p_i^alpha          what the sampler draws by; alpha applied exactly once

so P(i) = m_i / sum_k m_k. eps > 0 keeps every stored transition drawable; alpha = 0 is exactly
uniform (0^0 = 1), alpha = 1 fully proportional.

Plain Python, on a number or a NumPy array alike, and no numba: the classroom's pages and a
server use them without loading a kernel. The kernels call these same functions, compiled
(`rdqn.replay.kernels.compiled`); the vectorized mass of a whole batch (libmvec's `power`, within
4 ulp of libm's) is held to `mass` by the tests.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

__all__ = ["mass", "priority", "rank_priority"]

Values = TypeVar("Values", float, NDArray[np.float64])


def priority(magnitude: Values, eps: float) -> Values:
    """p = |delta| + eps."""
    return abs(magnitude) + eps


def rank_priority(rank: Values) -> Values:
    """p = 1 / rank, the rank-based priority (rank >= 1)."""
    return 1.0 / rank


def mass(priority: Values, alpha: float) -> Values:
    """m = p^alpha (p >= 0; 0^0 = 1)."""
    return priority**alpha
