"""What a run's snapshot is: an immutable `Telemetry` of plain arrays, and the pre-binned
histograms it carries (`rdqn.training.telemetry` says what each shows and records them). Safe to
hand to another thread or process: nothing in it is shared with the training loop, and this module
loads no kernel and no torch."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from rdqn.training.episodes import GreedyReturns, PlayedEpisode
from rdqn.training.evaluation import Evaluations
from rdqn.training.memory_view import Memories, SequenceMemories
from rdqn.training.sampler_check import GoodnessOfFit

__all__ = [
    "AGE_BINS",
    "RELATIVE_PROBABILITY_EDGES",
    "TD_STAGES",
    "WEIGHT_EDGES",
    "WEIGHT_RANGE",
    "BatchView",
    "Histogram",
    "HistogramHistory",
    "Telemetry",
    "effective_sample_size",
    "relative_probability_histogram",
    "weight_histogram",
]

RELATIVE_PROBABILITY_EDGES = np.linspace(-3.0, 3.0, 41)
"""log10(N * P(i)) bins: 0 is uniform; -3..3 spans a factor of 1000 either way."""
WEIGHT_RANGE = (1e-4, 10.0)
"""IS weights are binned on a log axis between these; others count in the end bins."""
WEIGHT_EDGES = np.linspace(-4.0, 1.0, 26)
"""log10(w) bins, five per decade over `WEIGHT_RANGE`: global normalisation keeps w <= 1 and real
weights are often 0.01 or less, which a 0..1 axis would pile into its first bin."""
AGE_BINS = 20
TD_STAGES = (0.1, 0.25, 0.5, 1.0)
"""Fractions of the planned updates at which the |TD error| distribution is kept."""


def effective_sample_size(weights: NDArray[np.float64]) -> float:
    """Kish's ESS = (sum w)^2 / sum w^2: B for equal weights, 1 when one weight dominates."""
    w = np.asarray(weights, dtype=np.float64)
    denominator = float(np.dot(w, w))
    return float(w.sum() ** 2 / denominator) if denominator > 0 else 0.0


@dataclass(frozen=True)
class Histogram:
    """Counts over bins `edges[k] <= x < edges[k+1]`; values outside are clipped into the ends."""

    edges: NDArray[np.float64]
    counts: NDArray[np.float64]

    @classmethod
    def of(cls, values: NDArray, edges: NDArray[np.float64]) -> Histogram:
        clipped = np.clip(values, edges[0], edges[-1])
        counts, _ = np.histogram(clipped, bins=edges)
        return cls(edges=edges.copy(), counts=counts.astype(np.float64))

    @property
    def centers(self) -> NDArray[np.float64]:
        return 0.5 * (self.edges[1:] + self.edges[:-1])


def relative_probability_histogram(probabilities: NDArray[np.float64], size: int) -> Histogram:
    """log10(N * P(i)) of each item on `RELATIVE_PROBABILITY_EDGES`: 0 is what uniform replay
    gives a buffer of `size` items, 1 ten times as often, -1 a tenth (P = 0 lands in the first
    bin)."""
    with np.errstate(divide="ignore"):
        relative = np.log10(np.asarray(probabilities, dtype=np.float64) * size)
    return Histogram.of(relative, RELATIVE_PROBABILITY_EDGES)


def weight_histogram(weights: NDArray[np.float64]) -> Histogram:
    """log10 of IS weights on `WEIGHT_EDGES` (clipped to `WEIGHT_RANGE`)."""
    return Histogram.of(np.log10(np.clip(weights, *WEIGHT_RANGE)), WEIGHT_EDGES)


@dataclass(frozen=True)
class HistogramHistory:
    """One histogram per recorded step: `counts[k]` was recorded at update `steps[k]`."""

    edges: NDArray[np.float64]
    steps: NDArray[np.int64]
    counts: NDArray[np.float64]


@dataclass(frozen=True)
class BatchView:
    """The last sampled batch, small enough to show row by row."""

    indices: NDArray[np.int64]
    generations: NDArray[np.int64]
    """The stamp of each slot's occupant when drawn: a slot the memory has reused since holds
    another (a transition's `RingStorage.generation`, a sequence's `SequenceIndex.number`)."""
    probabilities: NDArray[np.float64]
    weights: NDArray[np.float64]
    td_abs: NDArray[np.float64]
    ages: NDArray[np.int64]
    ess: float


@dataclass(frozen=True)
class Telemetry:
    """An immutable snapshot of a run. Arrays are private copies."""

    status: str
    error: str | None
    env_steps: int
    updates: int
    episodes: int
    total_steps: int
    beta: float
    epsilon: float
    steps_per_second: float
    scheme: str
    buffer_size: int
    """Steps stored (of `capacity`)."""
    capacity: int
    items: int
    """What the sampler draws from, N in N·P(i): the stored transitions, or for sequence replay
    the live sequences."""
    item: str
    """``"transition"`` or ``"sequence"``: what one item is."""
    slots: int
    """The sampler's slots (its tree's leaves that can hold an item): `capacity`, or for
    sequence replay the sequence slots."""
    slots_used: int
    """The slots filled so far (`buffer_size`, or the sequence slots given out)."""
    stale_updates: int
    episode_returns: NDArray[np.float64]
    episode_end_steps: NDArray[np.int64]
    episode_lengths: NDArray[np.int64]
    log_updates: NDArray[np.int64]
    losses: NDArray[np.float64]
    td_abs_mean: NDArray[np.float64]
    q_mean: NDArray[np.float64]
    ess: NDArray[np.float64]
    last_batch: BatchView | None
    priorities: Histogram | None
    priority_history: HistogramHistory
    weight_history: HistogramHistory
    td_stages: dict[str, Histogram]
    age_counts: Histogram | None
    fit: GoodnessOfFit | None
    tree_levels: list[NDArray[np.float64]]
    timings: dict[str, float] = field(default_factory=dict)
    # What the run's watchers see (`rdqn.runs.control.drive`): its latest greedy episode, the
    # greedy returns so far, the memory explorer's view in the snapshot after one was built.
    played: PlayedEpisode | None = None
    greedy: GreedyReturns | None = None
    memories: Memories | SequenceMemories | None = None
    evaluations: Evaluations | None = None
    """The run's greedy evaluations on held-out seeds (`rdqn.training.evaluation`)."""

    @property
    def progress(self) -> float:
        return min(1.0, self.env_steps / self.total_steps) if self.total_steps else 0.0
