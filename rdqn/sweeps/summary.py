"""A sweep's results per grid cell: the area under the reward curve and the steps to a threshold,
over the seeds.

The reward curve of a run is the learning curve of `rdqn.compare`: R(s), the mean return of the
last W episodes that ended by env step s (W = `ROLLING_WINDOW`, 20), a step function that is 0
before the first episode ends. Its normalised area over the budget T is

    AUC = (1/T) * integral_0^T R(s) ds = (1/T) * sum_k R_k * (s_{k+1} - s_k),   s_{K+1} = T,

where s_k is the env step at which episode k ended and R_k the rolling mean then: the run's
return averaged over its whole budget, in units of return (a run that learns sooner has the
larger AUC; 500 is CartPole-v1's most). Steps (and updates) to a threshold are the env steps
(learner updates) when the rolling mean of a full window first reached it
(`rdqn.compare.episodes_to_threshold`); the threshold is the env's (`comparison_threshold`: 475
on CartPole-v1, 0.8 on the chain and Blind Cliffwalk) unless one is given.

Only finished trials count: a failed or stopped run's curve is cut short. Steps to threshold
are summarised over the seeds that reached it (``reached`` says how many did). Beside the mean,
median, sd and range, each measure gets its interquartile mean over the seeds (the mean of their
middle half) with its 95 % stratified bootstrap interval, 2,000 resamples of the cell's seeds
(`rdqn.stats`; Agarwal et al. 2021).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from rdqn.compare import (
    ROLLING_WINDOW,
    Curve,
    comparison_threshold,
    episodes_to_threshold,
    rolling_mean,
)
from rdqn.runs.store import RunStore
from rdqn.stats import iqm_interval
from rdqn.sweeps.records import load_spec, sweep_trials
from rdqn.sweeps.spec import Trial, cell_key
from rdqn.validation import check_integer

__all__ = ["STATS", "reward_auc", "summary", "threshold_crossing"]

STATS: tuple[str, ...] = ("mean", "median", "std", "min", "max", "iqm", "iqm_low", "iqm_high")
"""The statistics over seeds each measure gets, as ``<measure>_<stat>`` columns: ``iqm`` with
its 95 % interval's ends (`rdqn.stats.iqm_interval`)."""


def reward_auc(curve: Curve, total_steps: int, window: int = ROLLING_WINDOW) -> float:
    """The normalised area under the reward curve over a budget of ``total_steps`` env steps
    (the module docstring's AUC); episodes that ended past the budget are left out.

    Episodes ending at steps 2 and 5 with returns 1 and 3, budget 10, window 1: R is 0 on
    [0, 2), 1 on [2, 5), 3 on [5, 10], so AUC = (1*3 + 3*5) / 10 = 1.8 (window 2: R_2 = 2,
    AUC = (3 + 2*5) / 10 = 1.3).
    """
    budget = check_integer("total_steps", total_steps, minimum=1)
    inside = curve.end_steps <= budget
    ends = curve.end_steps[inside].astype(np.float64)
    if ends.size == 0:
        return 0.0
    smooth = rolling_mean(curve.returns[inside], window)
    spans = np.append(ends[1:], float(budget)) - ends
    return float(np.dot(smooth, spans) / budget)


def threshold_crossing(
    episodes: pd.DataFrame, threshold: float, window: int = ROLLING_WINDOW
) -> tuple[int | None, int | None]:
    """(env steps, learner updates) when the rolling mean of a full ``window`` of returns
    first reached ``threshold`` in a run's episode rows; (None, None) if it never did."""
    rows = episodes.dropna(subset=["env_steps", "return"]).reset_index(drop=True)
    count, steps = episodes_to_threshold(Curve.from_episodes(rows), threshold, window)
    if count is None:
        return None, None
    updates = rows["updates"].iloc[count - 1]
    return steps, None if pd.isna(updates) else int(updates)


def _stats(name: str, values: Sequence[float]) -> dict[str, float]:
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        return {f"{name}_{stat}": np.nan for stat in STATS}
    interval = iqm_interval(data)
    return {
        f"{name}_mean": float(data.mean()),
        f"{name}_median": float(np.median(data)),
        f"{name}_std": float(data.std(ddof=1)) if data.size > 1 else 0.0,
        f"{name}_min": float(data.min()),
        f"{name}_max": float(data.max()),
        f"{name}_iqm": interval.estimate,
        f"{name}_iqm_low": interval.low,
        f"{name}_iqm_high": interval.high,
    }


def summary(
    store: RunStore,
    sweep_id: str,
    *,
    threshold: float | None = None,
    window: int = ROLLING_WINDOW,
) -> pd.DataFrame:
    """One row per grid cell of sweep ``sweep_id``, in the spec's order: the grid fields, then
    ``cell`` (its key), ``seeds`` (trials), ``finished``, ``failed``, ``threshold``, ``reached``
    (finished seeds that reached it), ``auc_*``, ``steps_to_threshold_*``,
    ``updates_to_threshold_*`` and ``final_return_*`` (mean of the last ``window`` returns)
    for each statistic of `STATS` over the finished seeds (NaN where none), and ``run_ids``
    (the finished trials' runs, for their curves). `GridError` for an unknown sweep."""
    window = check_integer("window", window, minimum=1)
    spec = load_spec(store, sweep_id)
    trials = sweep_trials(store, spec).set_index("key")
    by_cell: dict[str, list[Trial]] = {}
    for trial in spec.trials():
        by_cell.setdefault(trial.cell, []).append(trial)
    rows: list[dict[str, Any]] = []
    for cell in spec.cells():
        mine = by_cell[cell_key(cell)]
        config = spec.config(mine[0])
        line = threshold if threshold is not None else comparison_threshold(config.env.id)
        aucs, finals, steps, updates, run_ids = [], [], [], [], []
        failed = 0
        for trial in mine:
            record = trials.loc[trial.key]
            failed += record["status"] == "failed"
            if record["status"] != "finished":
                continue
            episodes = store.metrics.episodes(record["run_id"])
            curve = Curve.from_episodes(episodes)
            run_ids.append(record["run_id"])
            aucs.append(reward_auc(curve, spec.config(trial).train.total_steps, window))
            if curve.returns.size:
                finals.append(float(np.mean(curve.returns[-window:])))
            if line is not None:
                step, update = threshold_crossing(episodes, line, window)
                if step is not None:
                    steps.append(step)
                if update is not None:
                    updates.append(update)
        rows.append(
            {
                **cell,
                "cell": cell_key(cell),
                "seeds": len(mine),
                "finished": len(run_ids),
                "failed": failed,
                "threshold": np.nan if line is None else float(line),
                "reached": len(steps),
                **_stats("auc", aucs),
                **_stats("steps_to_threshold", steps),
                **_stats("updates_to_threshold", updates),
                **_stats("final_return", finals),
                "run_ids": run_ids,
            }
        )
    return pd.DataFrame(rows)
