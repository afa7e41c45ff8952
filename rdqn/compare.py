"""Comparing replay schemes across seeds: the runs, their learning curves, thresholds and a table.

A comparison is one config per (scheme, seed), every scheme on the same seeds (`comparison_configs`,
used by the CLI's ``compare`` and the dashboard's Compare page alike). Its default setup is the
`chain-lesson` preset (`LESSON_PRESET`), where prioritization wins within a lesson's minute; its
"solved" line is `comparison_threshold`. A learning curve is the
rolling mean of the last `window` episode returns, as a step function of environment steps (the
value at step x is what had been achieved by then). Curves of several seeds are sampled on one
grid of env steps and summarised by their mean and a min-max band (`aggregate`); drawing them is
the figure layer's job (`rdqn.figures`). Every page, figure and report names a run the same way,
`run_label` ('rank · α 0.7 · β₀ 0.5 · seed 1 · 077847'; `scheme_label` without seed and id).
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
from rdqn.validation import check_integer

__all__ = [
    "GOAL_THRESHOLDS",
    "LESSON_PRESET",
    "PAPER_RANK_PRESETS",
    "ROLLING_WINDOW",
    "Curve",
    "aggregate",
    "comparison_configs",
    "comparison_threshold",
    "episodes_to_threshold",
    "learning_curve",
    "return_decimals",
    "rolling_mean",
    "run_label",
    "scheme_label",
    "summary_decimals",
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
        """From a run's stored episode rows (`RunStore.episodes`), skipping incomplete rows."""
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


def summary_table(
    runs: Mapping[str, Sequence[Curve]], threshold: float | None, window: int = ROLLING_WINDOW
) -> pd.DataFrame:
    """One row per scheme: seeds, final return (mean of the last `window` episodes), and the
    mean episodes / env steps to the threshold over the seeds that reached it."""
    rows = []
    for scheme, curves in runs.items():
        finals = [float(np.mean(c.returns[-window:])) for c in curves if c.returns.size]
        row: dict[str, Any] = {
            "scheme": scheme,
            "seeds": len(curves),
            "final return (mean)": float(np.mean(finals)) if finals else np.nan,
            "final return (min)": float(np.min(finals)) if finals else np.nan,
        }
        if threshold is not None:
            reached = [episodes_to_threshold(c, threshold, window) for c in curves]
            hit = [r for r in reached if r[0] is not None]
            row["reached threshold"] = f"{len(hit)}/{len(curves)}"
            row["episodes to threshold"] = float(np.mean([h[0] for h in hit])) if hit else np.nan
            row["steps to threshold"] = float(np.mean([h[1] for h in hit])) if hit else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


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
    the return columns alike (`return_decimals` over both), episodes and env steps to the
    threshold (means over seeds) as whole numbers."""
    returns = [name for name in table.columns if str(name).startswith("final return")]
    decimals = return_decimals(table[returns].to_numpy(dtype=float).ravel()) if returns else 1
    counts = ("seeds", "episodes to threshold", "steps to threshold")
    return {name: decimals for name in returns} | {n: 0 for n in counts if n in table.columns}
