"""Comparing replay schemes across seeds: the runs, their learning curves, thresholds and a table.

A comparison is one config per (scheme, seed), every scheme on the same seeds (`comparison_configs`,
used by the CLI's ``compare`` and the dashboard's Compare page alike). Its default setup is the
`chain-lesson` preset (`LESSON_PRESET`), where prioritization wins within a lesson's minute; its
"solved" line is `comparison_threshold`. A learning curve is the
rolling mean of the last `window` episode returns, as a step function of environment steps (the
value at step x is what had been achieved by then). Curves of several seeds are sampled on one
grid of env steps and summarised by their mean and a min-max band (`aggregate`); drawing them is
the figure layer's job (`rdqn.figures`). The table (`summary_table`) gives each scheme's final
returns and steps to the threshold over its seeds, with the interquartile mean and its 95 %
stratified bootstrap interval (`rdqn.stats`, Agarwal et al. 2021) beside the mean, and the
probability that a prioritized scheme's seed ends above a uniform one's. Every page, figure
and report names a run the same way, `run_label` ('rank · α 0.7 · β₀ 0.5 · seed 1 · 077847';
`scheme_label` without seed and id).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from rdqn.config import RunConfig
from rdqn.envs import reward_threshold
from rdqn.presets import PAPER_RANK_ALPHA
from rdqn.stats import CONFIDENCE, Interval, improvement_interval, iqm_interval
from rdqn.validation import check_integer

__all__ = [
    "BASELINE",
    "FINAL_IQM",
    "GOAL_THRESHOLDS",
    "IMPROVEMENT",
    "LESSON_PRESET",
    "PAPER_RANK_PRESETS",
    "ROLLING_WINDOW",
    "STEPS_IQM",
    "Curve",
    "aggregate",
    "comparison_configs",
    "comparison_threshold",
    "episodes_to_threshold",
    "interval_column",
    "interval_ends",
    "learning_curve",
    "return_decimals",
    "rolling_mean",
    "run_label",
    "scheme_label",
    "shown_intervals",
    "summary_decimals",
    "summary_note",
    "summary_table",
]

ROLLING_WINDOW = 20
"""Episodes in the rolling mean of learning curves and of the threshold test."""

LESSON_PRESET = "chain-lesson"
"""The comparison a lesson starts from: prioritized replay visibly beats uniform replay in about
a minute of CPU for nine runs (`rdqn.presets` says what was measured). On CartPole the three
schemes look alike for tens of thousands of steps (docs/experiments.md, the PER notebook's
study)."""

PAPER_RANK_PRESETS: frozenset[str] = frozenset({"paper", "chain-lesson"})
"""Presets of the paper's tabular learner, whose rank-based runs use the paper's alpha 0.7."""

GOAL_THRESHOLDS: dict[str, float] = {
    "rdqn/BlindCliffwalk-v0": 0.8,
    "rdqn/SparseChain-v0": 0.8,
}
"""Return thresholds of envs without a registered one: their goal pays 1, so 0.8 means the goal
was reached in four episodes out of five."""


def comparison_threshold(env_id: str) -> float | None:
    """The default "solved" line of a comparison on ``env_id``: the env's registered reward
    threshold (475 for CartPole-v1), else `GOAL_THRESHOLDS`, else None."""
    registered = reward_threshold(env_id)
    return registered if registered is not None else GOAL_THRESHOLDS.get(env_id)


def comparison_configs(
    base: RunConfig, schemes: Sequence[str], seeds: Sequence[int]
) -> list[RunConfig]:
    """One config per (scheme, seed), every scheme on the same seeds, seed-major: where runs
    train one at a time, the first lap already shows every scheme.

    For the tabular presets (`PAPER_RANK_PRESETS`) rank-based replay uses the paper's alpha 0.7
    (proportional keeps its own), Schaul et al. 2015, table 3.
    """
    if not schemes:
        raise ValueError("schemes must name at least one replay scheme, got none")
    if not seeds:
        raise ValueError("seeds must hold at least one seed, got none")
    configs = []
    for seed in seeds:
        for scheme in schemes:
            overrides: dict[str, Any] = {"replay.scheme": scheme, "seed": seed}
            if scheme == "rank" and base.preset in PAPER_RANK_PRESETS:
                overrides["replay.alpha"] = PAPER_RANK_ALPHA
            configs.append(base.with_overrides(overrides))
    return configs


@dataclass(frozen=True)
class Curve:
    """One run's episodes: the env step at which each ended and its return."""

    end_steps: NDArray[np.int64]
    returns: NDArray[np.float64]

    @classmethod
    def from_episodes(cls, episodes: pd.DataFrame) -> Curve:
        """From a run's stored episode rows (`MetricTables.episodes`), skipping incomplete rows."""
        rows = episodes.dropna(subset=["env_steps", "return"])
        return cls(
            rows["env_steps"].to_numpy(dtype=np.int64),
            rows["return"].to_numpy(dtype=np.float64),
        )


def rolling_mean(values: NDArray[np.float64], window: int) -> NDArray[np.float64]:
    """Mean of the last `window` values at each position (fewer at the start)."""
    check_integer("window", window, minimum=1)
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return values
    csum = np.cumsum(np.insert(values, 0, 0.0))
    idx = np.arange(1, values.size + 1)
    start = np.maximum(idx - window, 0)
    return (csum[idx] - csum[start]) / (idx - start)


def learning_curve(
    curve: Curve, grid: NDArray[np.int64], window: int = ROLLING_WINDOW
) -> NDArray[np.float64]:
    """Rolling-mean return achieved by each grid step (NaN before the first episode ends)."""
    smooth = rolling_mean(curve.returns, window)
    position = np.searchsorted(curve.end_steps, grid, side="right") - 1
    out = np.full(grid.shape, np.nan)
    ok = position >= 0
    out[ok] = smooth[position[ok]]
    return out


def aggregate(
    curves: Sequence[Curve], grid: NDArray[np.int64], window: int = ROLLING_WINDOW
) -> dict[str, NDArray[np.float64]]:
    """Mean, min and max across runs of their learning curves on `grid` (NaN-aware)."""
    out = {name: np.full(grid.shape, np.nan) for name in ("mean", "low", "high")}
    if not curves:
        return out
    stacked = np.vstack([learning_curve(c, grid, window) for c in curves])
    valid = ~np.isnan(stacked).all(axis=0)
    with np.errstate(all="ignore"):
        for name, stat in (("mean", np.nanmean), ("low", np.nanmin), ("high", np.nanmax)):
            out[name][valid] = stat(stacked[:, valid], axis=0)
    return out


def episodes_to_threshold(
    curve: Curve, threshold: float, window: int = ROLLING_WINDOW
) -> tuple[int | None, int | None]:
    """(episodes, env steps) until the rolling mean of `window` returns first reaches threshold."""
    smooth = rolling_mean(curve.returns, window)
    # Require a full window so one lucky first episode does not count.
    hits = np.flatnonzero((smooth >= threshold) & (np.arange(smooth.size) >= window - 1))
    if hits.size == 0:
        return None, None
    return int(hits[0] + 1), int(curve.end_steps[hits[0]])


BASELINE = "uniform"
"""The scheme the others' probability of improvement is measured against."""

FINAL_IQM = "final return (IQM)"
STEPS_IQM = "steps to threshold (IQM)"
IMPROVEMENT = f"P(final return > {BASELINE})"
"""`summary_table`'s columns of an estimate with an interval (its ends: `interval_ends`)."""

_CI = f"[{CONFIDENCE:.0%} CI]"


def summary_note(table: pd.DataFrame) -> str:
    """What `summary_table`'s IQM and probability columns mean, for the page and the report
    (the probability's sentence only where the table has that column)."""
    note = (
        f"IQM: the interquartile mean over the seeds, the mean of their middle half; {_CI}: its "
        "stratified bootstrap percentile interval (2,000 resamples of the seeds)."
    )
    if IMPROVEMENT in table.columns:
        note += (
            f" {IMPROVEMENT}: the chance that a seed of the scheme ends above a seed of "
            f"{BASELINE} replay (ties count half), with its interval."
        )
    return note + " Agarwal et al. 2021, Deep RL at the Edge of the Statistical Precipice."


def interval_ends(name: str) -> tuple[str, str]:
    """The columns of the interval of `summary_table`'s estimate ``name``: its low and high
    ends, ``'<name> low'`` and ``'<name> high'``."""
    return f"{name} low", f"{name} high"


def interval_column(name: str) -> str:
    """The text column `shown_intervals` makes of estimate ``name`` and its interval:
    ``'<name> [95% CI]'``."""
    return f"{name} {_CI}"


def _interval_cells(name: str, interval: Interval) -> dict[str, float]:
    low, high = interval_ends(name)
    return {name: interval.estimate, low: interval.low, high: interval.high}


def summary_table(
    runs: Mapping[str, Sequence[Curve]], threshold: float | None, window: int = ROLLING_WINDOW
) -> pd.DataFrame:
    """One row per scheme: seeds; the final return (mean of each seed's last `window`
    episodes) over the seeds, its mean, min and IQM with the IQM's 95 % interval
    (`rdqn.stats.iqm_interval`); where `BASELINE` and another scheme are compared, each
    other scheme's probability that its seed's final return beats a `BASELINE` seed's
    (`rdqn.stats.improvement_interval`, NaN in the baseline's row); and, with a threshold, how
    many seeds reached it, the mean episodes and env steps to it over those that did, and their
    steps' IQM with its interval. Each interval's ends are the columns `interval_ends` names."""
    finals = {
        scheme: [float(np.mean(c.returns[-window:])) for c in curves if c.returns.size]
        for scheme, curves in runs.items()
    }
    compared = BASELINE in runs and len(runs) > 1
    rows = []
    for scheme, curves in runs.items():
        mine = finals[scheme]
        row: dict[str, Any] = {
            "scheme": scheme,
            "seeds": len(curves),
            "final return (mean)": float(np.mean(mine)) if mine else np.nan,
            "final return (min)": float(np.min(mine)) if mine else np.nan,
            **_interval_cells(FINAL_IQM, iqm_interval(mine)),
        }
        if compared:
            versus = (
                improvement_interval(mine, finals[BASELINE])
                if scheme != BASELINE
                else Interval(np.nan, np.nan, np.nan)
            )
            row |= _interval_cells(IMPROVEMENT, versus)
        if threshold is not None:
            reached = [episodes_to_threshold(c, threshold, window) for c in curves]
            hit = [r for r in reached if r[0] is not None]
            row["reached threshold"] = f"{len(hit)}/{len(curves)}"
            row["episodes to threshold"] = float(np.mean([h[0] for h in hit])) if hit else np.nan
            row["steps to threshold"] = float(np.mean([h[1] for h in hit])) if hit else np.nan
            row |= _interval_cells(STEPS_IQM, iqm_interval([float(h[1]) for h in hit]))
        rows.append(row)
    return pd.DataFrame(rows)


def shown_intervals(table: pd.DataFrame) -> pd.DataFrame:
    """`summary_table` for reading: each estimate and its interval's ends become one text
    column, `interval_column` (``'<name> [95% CI]'``), ``'2.50 [1.00–4.00]'`` at the column's
    decimals (`summary_decimals`), ``'-'`` where there is none; the other columns as they
    were."""
    decimals = summary_decimals(table)
    shown = table.copy()
    for name in (FINAL_IQM, IMPROVEMENT, STEPS_IQM):
        if name not in shown.columns:
            continue
        low, high = interval_ends(name)
        number = f"{{:,.{decimals[name]}f}}".format
        text = [
            Interval(*values).text(number)
            for values in zip(shown[name], shown[low], shown[high], strict=True)
        ]
        at = shown.columns.get_loc(name)
        shown = shown.drop(columns=[name, low, high])
        shown.insert(at, interval_column(name), text)
    return shown


def _settings(source: RunConfig | Mapping[str, Any]) -> tuple[str, float, float, float, int]:
    """(scheme, alpha, beta0, beta_end, seed) of a `RunConfig` or of its dict."""
    if isinstance(source, RunConfig):
        replay = source.replay
        return replay.scheme, replay.alpha, replay.beta0, replay.beta_end, source.seed
    replay = source.get("replay") or {}
    return (
        str(replay.get("scheme", "?")),
        float(replay.get("alpha", math.nan)),
        float(replay.get("beta0", math.nan)),
        float(replay.get("beta_end", 1.0)),
        int(source.get("seed", 0)),
    )


def scheme_label(source: RunConfig | Mapping[str, Any]) -> str:
    """A run's replay settings: 'rank · α 0.7 · β₀ 0.5'; 'uniform' alone (α and β do not
    apply). A β that stays put (``beta_end == beta0``) reads 'β 0', not 'β₀ 0'.

    ``source`` is a `RunConfig` or its dict (`RunConfig.to_dict()`, a stored run's config).
    """
    scheme, alpha, beta0, beta_end, _ = _settings(source)
    if scheme == "uniform":
        return scheme
    beta = f"β {beta0:g}" if beta0 == beta_end else f"β₀ {beta0:g}"
    return f"{scheme} · α {alpha:g} · {beta}"


def run_label(source: RunConfig | Mapping[str, Any], run_id: str | None = None) -> str:
    """How every page names a run: its scheme, α and β₀ (`scheme_label`), seed, short id:
    'rank · α 0.7 · β₀ 0.5 · seed 1 · 077847', 'uniform · seed 1 · 077847'.

    ``source`` is a `RunConfig` (a live run's, a run not started yet) or its dict (a stored run's
    ``config``); without ``run_id`` the label ends at the seed.
    """
    label = f"{scheme_label(source)} · seed {_settings(source)[4]}"
    return f"{label} · {run_id[:6]}" if run_id else label


def return_decimals(values: Iterable[float]) -> int:
    """Decimals for a column of returns: 2 when every return is below 10 in size (a goal worth
    1, as in the chain and the cliffwalk), else 1 (CartPole's hundreds)."""
    finite = [abs(v) for v in values if v is not None and math.isfinite(v)]
    return 2 if finite and max(finite) < 10 else 1


def summary_decimals(table: pd.DataFrame) -> dict[str, int]:
    """Decimals per number column of `rdqn.compare.summary_table`, the same all down a column:
    the return columns alike (`return_decimals` over them all, the IQM's and its interval's
    too), episodes and env steps to the threshold (means and IQMs over seeds) as whole numbers,
    probabilities with 2."""
    returns = [name for name in table.columns if str(name).startswith("final return")]
    decimals = return_decimals(table[returns].to_numpy(dtype=float).ravel()) if returns else 1
    counts = ("seeds", "episodes to threshold", "steps to threshold", STEPS_IQM)
    counts += interval_ends(STEPS_IQM)
    chances = (IMPROVEMENT, *interval_ends(IMPROVEMENT))
    return (
        {name: decimals for name in returns}
        | {n: 0 for n in counts if n in table.columns}
        | {n: 2 for n in chances if n in table.columns}
    )
