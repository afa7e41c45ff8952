"""Spread over runs: the interquartile mean, stratified bootstrap confidence intervals and the
probability of improvement, as Agarwal et al. 2021 define them ("Deep Reinforcement Learning at
the Edge of the Statistical Precipice", NeurIPS 2021, arXiv:2108.13264) and their library
rliable computes them (``rliable.metrics``, ``rliable.library``).

Scores are one number per run (a seed's final return, its env steps to a threshold), laid out as
a matrix ``scores[run, task]``; a 1-D array is the runs of one task. Here a task is usually one
configuration (a scheme of a comparison, a cell of a sweep, a row of an experiment's table).

**IQM.** With the n scores pooled over runs and tasks and sorted, x_(1) <= ... <= x_(n), and
k = floor(n / 4) cut from each end,

    IQM = (1 / (n - 2k)) * sum_{i = k+1}^{n-k} x_(i),

the mean of the middle half: exactly ``scipy.stats.trim_mean(x, 0.25)``, which is rliable's
``aggregate_iqm``. When 4 does not divide n, the whole-score cut keeps a little more than half:

    [1, 2, 3, 4, 5, 6, 7, 8]  k = 2   IQM = (3 + 4 + 5 + 6) / 4 = 4.5
    [1, 2, 3, 4, 100]         k = 1   IQM = (2 + 3 + 4) / 3 = 3
    [1, 2, 3, 4, 5, 100]      k = 1   IQM = (2 + 3 + 4 + 5) / 4 = 3.5
    n <= 3                    k = 0   IQM = the mean

**Stratified bootstrap.** A resample draws, in every task on its own, as many runs as the task has,
with replacement from that task's runs (its stratum; the tasks themselves are kept: rliable's
``StratifiedBootstrap`` without ``task_bootstrap``). The statistic of each of B resamples
(`RESAMPLES`, 2,000) is its bootstrap distribution, and the percentile interval is that
distribution's (1 - c) / 2 and (1 + c) / 2 quantiles (c = `CONFIDENCE`, 95 %; NumPy's linear
interpolation). The draws come from a `numpy.random.Generator`; without one, a fresh one seeded
with `BOOTSTRAP_SEED`, so a table shows the same interval every time it is drawn.

**Probability of improvement.** For runs x_1..x_m of X and y_1..y_n of Y on a task,

    P(X > Y) = (1 / (m n)) * sum_i sum_j [1(x_i > y_j) + 1/2 * 1(x_i = y_j)]
             = (1 / (m n)) * sum_i sum_j (sign(x_i - y_j) + 1) / 2,

the Mann-Whitney U statistic over m n (rliable's ``probability_of_improvement``), averaged over
the tasks. Its interval resamples X's and Y's runs independently within each task (rliable's
``StratifiedIndependentBootstrap``). 1/2 is a coin flip; "higher is better" is X's side, so for a
cost (steps to a threshold) swap the arguments.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rdqn.validation import check_integer, check_real

__all__ = [
    "BOOTSTRAP_SEED",
    "CONFIDENCE",
    "RESAMPLES",
    "Interval",
    "bootstrap_interval",
    "improvement_interval",
    "iqm",
    "iqm_interval",
    "probability_of_improvement",
    "stratified_resamples",
]

CONFIDENCE = 0.95
"""The intervals' coverage: 95 %."""

RESAMPLES = 2_000
"""Bootstrap resamples per interval (rliable's performance profiles use 2,000 too)."""

BOOTSTRAP_SEED = 0
"""The seed of the generator an interval draws from when the caller gives none."""

Statistic = Callable[[NDArray[np.float64]], NDArray[np.float64]]
"""Maps resamples ``(B, runs, tasks)`` to the statistic of each, ``(B,)``."""


@dataclass(frozen=True)
class Interval:
    """A point estimate and its confidence interval; NaN throughout where there are no runs."""

    estimate: float
    low: float
    high: float

    def text(self, fmt: Callable[[float], str] = "{:g}".format, missing: str = "-") -> str:
        """``estimate [low–high]``, each number by ``fmt``: '4.5 [3–6]'; ``missing`` without an
        estimate."""
        if math.isnan(self.estimate):
            return missing
        return f"{fmt(self.estimate)} [{fmt(self.low)}–{fmt(self.high)}]"


def _matrix(scores: ArrayLike, name: str = "scores") -> NDArray[np.float64]:
    """``scores`` as a finite ``(runs, tasks)`` float matrix (a 1-D array is one task)."""
    matrix = np.asarray(scores, dtype=np.float64)
    if matrix.ndim == 1:
        matrix = matrix[:, None]
    if matrix.ndim != 2:
        raise ValueError(f"{name} must be 1-D (runs) or 2-D (runs, tasks), got {matrix.ndim}-D")
    if not np.isfinite(matrix).all():
        raise ValueError(f"{name} must be finite numbers, got {matrix.ravel().tolist()[:8]}")
    return matrix


def _iqm_rows(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """The IQM of each row of ``values`` ``(B, n)``: the rows sorted, floor(n / 4) cut from each
    end, the rest averaged."""
    n = values.shape[1]
    cut = n // 4
    return np.sort(values, axis=1)[:, cut : n - cut].mean(axis=1)


def _batched_iqm(resamples: NDArray[np.float64]) -> NDArray[np.float64]:
    """The IQM of each resample ``(B, runs, tasks)``, its runs and tasks pooled."""
    return _iqm_rows(resamples.reshape(resamples.shape[0], -1))


def iqm(scores: ArrayLike) -> float:
    """The interquartile mean of ``scores`` (1-D runs, or ``(runs, tasks)`` pooled): the module
    docstring's formula, ``scipy.stats.trim_mean(scores, 0.25, axis=None)``; NaN for none."""
    matrix = _matrix(scores)
    if matrix.size == 0:
        return math.nan
    return float(_iqm_rows(matrix.reshape(1, -1))[0])


def stratified_resamples(
    scores: ArrayLike, resamples: int, rng: np.random.Generator
) -> NDArray[np.float64]:
    """``resamples`` stratified resamples of ``scores`` ``(runs, tasks)``, ``(B, runs, tasks)``:
    every task's column drawn again from its own runs, with replacement."""
    matrix = _matrix(scores)
    check_integer("resamples", resamples, minimum=1)
    runs, tasks = matrix.shape
    picks = rng.integers(0, runs, size=(resamples, runs, tasks))
    return matrix[picks, np.arange(tasks)]


def _percentiles(distribution: NDArray[np.float64], confidence: float) -> tuple[float, float]:
    tail = (1.0 - confidence) / 2
    low, high = np.quantile(distribution, [tail, 1.0 - tail])
    return float(low), float(high)


def _checked(confidence: float, rng: np.random.Generator | None) -> np.random.Generator:
    check_real("confidence", confidence, minimum=0.0, maximum=1.0, open_minimum=True)
    return rng if rng is not None else np.random.default_rng(BOOTSTRAP_SEED)


def bootstrap_interval(
    scores: ArrayLike,
    statistic: Statistic,
    *,
    confidence: float = CONFIDENCE,
    resamples: int = RESAMPLES,
    rng: np.random.Generator | None = None,
) -> Interval:
    """``statistic`` of ``scores`` and its stratified bootstrap percentile interval (the module
    docstring's). ``statistic`` maps ``(B, runs, tasks)`` to ``(B,)``: the mean over everything
    is ``lambda s: s.mean(axis=(1, 2))``. NaN throughout for no runs."""
    matrix = _matrix(scores)
    rng = _checked(confidence, rng)
    if matrix.size == 0:
        return Interval(math.nan, math.nan, math.nan)
    estimate = float(statistic(matrix[None])[0])
    distribution = statistic(stratified_resamples(matrix, resamples, rng))
    return Interval(estimate, *_percentiles(distribution, confidence))


def iqm_interval(
    scores: ArrayLike,
    *,
    confidence: float = CONFIDENCE,
    resamples: int = RESAMPLES,
    rng: np.random.Generator | None = None,
) -> Interval:
    """The IQM of ``scores`` with its stratified bootstrap percentile interval (95 %, 2,000
    resamples, `BOOTSTRAP_SEED` unless ``rng`` is given)."""
    return bootstrap_interval(
        scores, _batched_iqm, confidence=confidence, resamples=resamples, rng=rng
    )


def _improvement(x: NDArray[np.float64], y: NDArray[np.float64]) -> NDArray[np.float64]:
    """P(X > Y) of each batch: ``x`` ``(B, m, tasks)``, ``y`` ``(B, n, tasks)``, the mean of
    (sign(x_i - y_j) + 1) / 2 over the pairs, then over the tasks."""
    signs = np.sign(x[:, :, None, :] - y[:, None, :, :])
    return ((signs.mean(axis=(1, 2)) + 1.0) / 2.0).mean(axis=1)


def _pair(x: ArrayLike, y: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    mx, my = _matrix(x, "x"), _matrix(y, "y")
    if mx.shape[1] != my.shape[1]:
        raise ValueError(f"x and y must have the same tasks, got {mx.shape[1]} and {my.shape[1]}")
    return mx, my


def probability_of_improvement(x: ArrayLike, y: ArrayLike) -> float:
    """P(X > Y) of the module docstring for the runs ``x`` of X and ``y`` of Y (1-D, or
    ``(runs, tasks)`` with the same tasks); NaN when either has no runs.

    x = [1, 2, 3], y = [2, 2]: the pairs (1, 2) twice lose, (2, 2) twice tie, (3, 2) twice win:
    (0 + 0 + 1/2 + 1/2 + 1 + 1) / 6 = 1/2."""
    mx, my = _pair(x, y)
    if mx.size == 0 or my.size == 0:
        return math.nan
    return float(_improvement(mx[None], my[None])[0])


def improvement_interval(
    x: ArrayLike,
    y: ArrayLike,
    *,
    confidence: float = CONFIDENCE,
    resamples: int = RESAMPLES,
    rng: np.random.Generator | None = None,
) -> Interval:
    """P(X > Y) with its percentile interval: X's runs and Y's resampled independently within
    each task (X's draws first, from the same generator); NaN throughout when either has no
    runs."""
    mx, my = _pair(x, y)
    rng = _checked(confidence, rng)
    if mx.size == 0 or my.size == 0:
        return Interval(math.nan, math.nan, math.nan)
    estimate = float(_improvement(mx[None], my[None])[0])
    xs = stratified_resamples(mx, resamples, rng)
    ys = stratified_resamples(my, resamples, rng)
    return Interval(estimate, *_percentiles(_improvement(xs, ys), confidence))
