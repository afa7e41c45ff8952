"""The formulas of prioritization, each written once (Schaul et al. 2015, arXiv:1511.05952,
section 3.3). One name per quantity:

- priority  p_i = |delta_i| + eps    the raw domain, what the learner reports (proportional)
            p_i = 1 / rank(i)        rank-based, rank 1 the largest |delta_i| (which the rank
                                     sampler keeps, to order by)
- mass      m_i = p_i^alpha          what the sampler draws by; alpha applied exactly once

so P(i) = m_i / sum_k m_k. eps > 0 keeps every stored transition drawable; alpha = 0 is exactly
uniform (0^0 = 1), alpha = 1 fully proportional. A replayed *sequence*
(`rdqn.replay.sequence_replay`) reports one |delta| mixed from its steps' (`sequence_priority`),
which its sampler takes as any other.

Plain Python, on a number or a NumPy array alike, and no numba: the classroom's pages and a
server use them without loading a kernel. The kernels call these same functions, compiled
(`rdqn.replay.kernels.compiled`); the vectorized mass of a whole batch (libmvec's `power`, within
4 ulp of libm's) is held to `mass` by the tests.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

__all__ = ["mass", "priority", "rank_priority", "sequence_priority"]

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


def sequence_priority(
    magnitudes: NDArray[np.float64], mask: NDArray[np.bool_], eta: float
) -> NDArray[np.float64]:
    """A sequence's |delta| from its steps' (R2D2: Kapturowski et al. 2019, section 2.3)::

        |delta| = eta * max_t |delta_t| + (1 - eta) * mean_t |delta_t|

    over the steps t that ``mask`` marks (those with a TD error: not the burn-in, not the
    padding), one row per sequence, each marking at least one step. R2D2 takes eta = 0.9: the
    mean alone washes out a sequence's one large error, the max alone makes every long sequence
    look urgent. eta = 1 is the max, eta = 0 the mean. The sampler then adds eps and raises it
    to alpha as for a transition."""
    values = np.where(mask, np.abs(magnitudes), 0.0)  # the max of |delta| >= 0 ignores zeros
    steps = mask.sum(axis=1)
    return eta * values.max(axis=1) + (1.0 - eta) * values.sum(axis=1) / steps
