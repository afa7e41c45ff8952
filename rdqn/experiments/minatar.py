"""Where prioritization matters: DQN with uniform against prioritized replay on MinAtar games.

One trial is one (game, scheme, seed) of the `minatar` preset (MinAtar's conv net, Revisiting
Rainbow's DQN settings; `rdqn.presets` says where they differ), trained to its budget by the
ordinary `Trainer`, with its greedy evaluations (`rdqn.training.evaluation`: ``eval_episodes``
episodes on the held-out env seeds every ``eval_every`` env steps). A trial records:

- its greedy evaluations (env step, each episode's return);
- its training returns (epsilon-greedy) as the mean return of the episodes ending in each bin of
  `CURVE_BIN` env steps (None where none ended);
- ``final_eval``: the mean greedy return of its last evaluation, the policy it ends with;
- ``eval_auc``: the mean of every evaluation's mean, the area under the greedy curve per
  evaluation, which credits learning sooner as well as learning more.

The summary gives, per game and scheme, both scores per seed; the table their medians, ranges,
IQMs with 95 % bootstrap intervals, and the probability that a prioritized run beats a uniform
one (`rdqn.stats`).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from rdqn.config import SCHEMES, RunConfig
from rdqn.envs.minatar import MINATAR_ENVS
from rdqn.presets import configure
from rdqn.validation import check_choice, check_integer

__all__ = [
    "CURVE_BIN",
    "MINATAR_DEFAULT_GAMES",
    "MINATAR_DEFAULT_SCHEMES",
    "MinAtarTrial",
    "minatar_summary",
    "minatar_trials",
    "run_minatar_trial",
]

PRESET = "minatar"
MINATAR_DEFAULT_GAMES: tuple[str, ...] = (
    "rdqn/MinAtar-Breakout-v0",
    "rdqn/MinAtar-SpaceInvaders-v0",
)
MINATAR_DEFAULT_SCHEMES: tuple[str, ...] = ("uniform", "proportional")
CURVE_BIN = 10_000
"""Env steps per point of a trial's training-return curve."""


@dataclass(frozen=True, kw_only=True)
class MinAtarTrial:
    """One (game, scheme, seed) of the study, with its whole config."""

    game: str
    scheme: str
    seed: int
    config: dict[str, Any] = field(repr=False)


def minatar_trials(
    games: Sequence[str],
    schemes: Sequence[str],
    seeds: Sequence[int],
    *,
    steps: int | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> list[MinAtarTrial]:
    """Every (game, scheme, seed), seed-major then game; ``steps`` replaces the preset's
    budget, keeping its exploration span (100,000 env steps, or the budget when shorter) and
    evaluating 20 times. A bad value is one `ValueError` naming it."""
    if not games or not schemes or not seeds:
        raise ValueError("games, schemes and seeds must each hold at least one value")
    for game in games:
        check_choice("game", game, tuple(MINATAR_ENVS))
    for scheme in schemes:
        check_choice("scheme", scheme, SCHEMES)
    trials = []
    for seed in seeds:
        for game in games:
            for scheme in schemes:
                settings: dict[str, Any] = {"env.id": game, "replay.scheme": scheme, "seed": seed}
                if steps is not None:
                    budget = check_integer("steps", steps, minimum=100)
                    settings |= {
                        "train.total_steps": budget,
                        "train.epsilon_fraction": min(1.0, 100_000 / budget),
                        "train.eval_every": max(1, budget // 20),
                    }
                config = configure(PRESET, {**settings, **(overrides or {})})
                trials.append(
                    MinAtarTrial(game=game, scheme=scheme, seed=seed, config=config.to_dict())
                )
    return trials


def _binned(end_steps: np.ndarray, returns: np.ndarray, total: int) -> list[float | None]:
    """The mean return of the episodes ending in each `CURVE_BIN` of env steps."""
    bins = -(-total // CURVE_BIN)
    which = np.minimum((end_steps - 1) // CURVE_BIN, bins - 1)
    sums = np.bincount(which, weights=returns, minlength=bins)
    counts = np.bincount(which, minlength=bins)
    return [float(s / c) if c else None for s, c in zip(sums, counts, strict=True)]


def run_minatar_trial(trial: MinAtarTrial) -> dict[str, Any]:
    """Train the trial's config to its budget; its record (the module docstring's)."""
    import torch

    from rdqn.training.trainer import Trainer

    torch.set_num_threads(1)
    started = time.perf_counter()
    config = RunConfig.from_dict(trial.config)
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


def minatar_summary(results: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per (game, scheme), games in their order of appearance, schemes in `SCHEMES`
    order: seeds, the
    final greedy return and the greedy curve's mean per seed with their medians and ranges, and
    the median env steps per second."""
    rows = []
    games = list(dict.fromkeys(r["game"] for r in results))
    schemes = [scheme for scheme in SCHEMES if any(r["scheme"] == scheme for r in results)]
    for game in games:
        for scheme in schemes:
            runs = sorted(
                (r for r in results if r["game"] == game and r["scheme"] == scheme),
                key=lambda r: r["seed"],
            )
            if not runs:
                continue
            row: dict[str, Any] = {
                "game": game,
                "scheme": scheme,
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
