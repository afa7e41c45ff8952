"""How often uniform replay would have replayed a stored transition, by its age.

A trainer stores one transition per env step and, after step t (t = 1, 2, …) with
t > learning_starts and t divisible by train_every, draws a batch of B slots uniformly, with
replacement, from the N_t = min(t, capacity) stored. A transition written at step w is in every
such draw from step w on, so by step W (its age a = W - w) uniform replay replays it

    E[times replayed] = sum over update steps t in [w, W] of B / N_t

times on average. The memory explorer draws this line under the counts of the run's own replay:
above it, a scheme replays a memory more than uniform replay would.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["expected_uniform_replays"]


def expected_uniform_replays(
    ages: ArrayLike,
    env_steps: int,
    *,
    capacity: int,
    batch_size: int,
    learning_starts: int,
    train_every: int,
) -> NDArray[np.float64]:
    """E[times replayed] under uniform replay of the transitions of the given ``ages`` (0: the
    newest) after ``env_steps`` steps; 0 for an age the memory cannot hold (>= min(W, capacity))."""
    a = np.asarray(ages, dtype=np.int64)
    if (a < 0).any():
        raise ValueError(f"ages must be >= 0, got {a.min()}")
    steps = int(env_steps)
    if steps <= 0:
        return np.zeros(a.shape)
    # C[t] = sum over update steps t' <= t of B / N_t', for t = 0 … min(W, capacity); past the
    # capacity N_t is constant and the sum grows by B / capacity an update.
    head = min(steps, capacity)
    t = np.arange(head + 1)
    updates = (t > learning_starts) & (t % train_every == 0) & (t > 0)
    cumulative = np.cumsum(np.where(updates, batch_size / np.maximum(t, 1), 0.0))

    def c(upto: NDArray[np.int64]) -> NDArray[np.float64]:
        """C at steps ``upto`` (>= 0), also past the capacity."""
        within = cumulative[np.minimum(upto, head)]
        first = max(head, learning_starts) + 1  # the first step past both
        counted = np.maximum(upto, first - 1) // train_every - (first - 1) // train_every
        return within + np.where(upto > head, counted * batch_size / capacity, 0.0)

    written = steps - a  # the step each transition was written at
    expected = c(np.full(a.shape, steps)) - c(np.maximum(written - 1, 0))
    return np.where(a < min(steps, capacity), expected, 0.0)
