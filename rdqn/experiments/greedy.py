"""Studies scored by greedy evaluations: arms (replay schemes, replay modes) compared over seeds.

One trial is one config trained to its budget by the ordinary `Trainer`, with its greedy
evaluations (`rdqn.training.evaluation`: ``eval_episodes`` episodes on the held-out env seeds
every ``eval_every`` env steps). `train_greedy` records:

- its greedy evaluations (env step, each episode's return);
- its training returns (epsilon-greedy) as the mean return of the episodes ending in each bin of
  `CURVE_BIN` env steps (None where none ended);
- ``final_eval``: the mean greedy return of its last evaluation, the policy it ends with;
- ``eval_auc``: the mean of every evaluation's mean, the area under the greedy curve per
  evaluation, which credits learning sooner as well as learning more.

`greedy_summary` gives, per group (a game) and arm, both scores per seed with their medians and
ranges; the tables add IQMs with 95 % bootstrap intervals and the probability that a run of one
arm beats one of the baseline arm (`rdqn.stats`).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np

from rdqn.config import RunConfig

__all__ = ["CURVE_BIN", "greedy_summary", "train_greedy"]

CURVE_BIN = 10_000
"""Env steps per point of a trial's training-return curve."""


def _binned(end_steps: np.ndarray, returns: np.ndarray, total: int) -> list[float | None]:
    """The mean return of the episodes ending in each `CURVE_BIN` of env steps."""
    bins = -(-total // CURVE_BIN)
    which = np.minimum((end_steps - 1) // CURVE_BIN, bins - 1)
    sums = np.bincount(which, weights=returns, minlength=bins)
    counts = np.bincount(which, minlength=bins)
    return [float(s / c) if c else None for s, c in zip(sums, counts, strict=True)]


def train_greedy(trial: Any) -> dict[str, Any]:  # noqa: ANN401 (a study's trial dataclass)
    """Train ``trial.config`` (a `RunConfig` as a dict) to its budget on one torch thread; its
    record (the module docstring's): the trial's fields but its config, its α and β₀."""
    import torch

    from rdqn.training.trainer import Trainer

    torch.set_num_threads(1)
    started = time.perf_counter()
    config = RunConfig.from_dict(dict(trial.config))
    trainer = Trainer(config)
    try:
        trainer.run()
    finally:
        trainer.close()
    seconds = time.perf_counter() - started
    evaluations = trainer.evaluations
    returns = np.array(trainer.recorder.episode_returns, dtype=np.float64)
    end_steps = np.array(trainer.recorder.episode_end_steps, dtype=np.int64)
    means = evaluations.means
    return {
        **{k: v for k, v in asdict(trial).items() if k != "config"},
        "alpha": config.replay.alpha,
        "beta0": config.replay.beta0,
        "env_steps": trainer.env_steps,
        "updates": trainer.updates,
        "episodes": int(returns.shape[0]),
        "seconds": seconds,
        "steps_per_second": trainer.env_steps / seconds,
        "final_eval": float(means[-1]) if means.size else None,
        "eval_auc": float(means.mean()) if means.size else None,
        "evaluations": {
            "env_steps": evaluations.env_steps.tolist(),
            "returns": evaluations.returns.tolist(),
        },
        "curve_bin": CURVE_BIN,
        "train_curve": _binned(end_steps, returns, trainer.env_steps) if returns.size else [],
    }


def _median_range(values: Sequence[float]) -> tuple[float | None, float | None, float | None]:
    if not values:
        return None, None, None
    return statistics.median(values), min(values), max(values)


def greedy_summary(
    results: Sequence[Mapping[str, Any]], *, group: str, arm: str, arms: Sequence[str]
) -> list[dict[str, Any]]:
    """One row per (``group`` value, ``arm`` value) of the trials' ``results``, groups in their
    order of appearance, arms in the order of ``arms``: the seeds, the final greedy return and
    the greedy curve's mean per seed with their medians and ranges, and the median env steps
    per second."""
    rows = []
    for where in dict.fromkeys(r[group] for r in results):
        for which in (a for a in arms if any(r[arm] == a for r in results)):
            runs = sorted(
                (r for r in results if r[group] == where and r[arm] == which),
                key=lambda r: r["seed"],
            )
            if not runs:
                continue
            row: dict[str, Any] = {
                group: where,
                arm: which,
                "alpha": runs[0]["alpha"],
                "beta0": runs[0]["beta0"],
                "seeds": [r["seed"] for r in runs],
                "env_steps": runs[0]["env_steps"],
            }
            for key in ("final_eval", "eval_auc"):
                values = [r[key] for r in runs]
                row[key] = values
                done = [v for v in values if v is not None]
                row[f"{key}_median"], row[f"{key}_min"], row[f"{key}_max"] = _median_range(done)
            row["steps_per_second_median"] = statistics.median(r["steps_per_second"] for r in runs)
            rows.append(row)
    return rows
