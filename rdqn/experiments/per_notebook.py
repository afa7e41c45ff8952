"""The PER notebook's study (seed notebook 002, sections 9-10): uniform against proportional
replay on CartPole-v1, with what prioritization does to the buffer along the way.

One trial is one (scheme, seed) of the `per-notebook` preset (64-64 MLP, Adam 1e-3, Huber loss,
hard target sync every 500 updates, capacity 10,000, batch 32, proportional alpha .6 with beta
annealed .4 -> 1, 100,000 env steps), trained to its budget by the ordinary `Trainer`. The
probes sit outside the trainer's loop and change nothing it draws (no generator is read), so a
trial trains exactly as ``rdqn train`` would:

- after every update, the batch the trainer just learned from (`Telemetry`'s last batch): its
  |delta| (what its priorities become), N * P(i) (1 = what uniform replay gives) and IS weights,
  counted into histograms per training stage (`STAGES`: 0-10 %, 10-25 %, 25-50 %, 50-100 % of
  the planned updates) on the log10 bins `TD_EDGES`, `RELATIVE_PROBABILITY_EDGES` and
  `WEIGHT_EDGES`, and the batches' mean |delta| between two probes;
- at ``probes`` evenly spaced updates, the whole buffer: every stored transition's TD error under
  the current online and target nets, delta_i = r_i + gamma (1 - terminated_i) max_a'
  Q_target(s'_i, a') - Q(s_i, a_i) (Double DQN: the online net's argmax), its mean, median and
  90th percentile and histogram, and (proportional) the histogram of N * P(i) over the buffer,
  the priority distribution.

The sampled batches' mean |delta| above the buffer's shows prioritization at work: proportional
replay samples the transitions whose error is large, uniform replay the buffer's average. Steps to
the threshold: the env step at which the mean return of 20 consecutive episodes first reached it
(`rdqn.compare.episodes_to_threshold`; 475 on CartPole-v1).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rdqn.compare import ROLLING_WINDOW, Curve, episodes_to_threshold, rolling_mean
from rdqn.config import RunConfig
from rdqn.presets import configure
from rdqn.training.telemetry import RELATIVE_PROBABILITY_EDGES, WEIGHT_EDGES, WEIGHT_RANGE
from rdqn.validation import check_choice, check_integer, check_real

__all__ = [
    "DEFAULT_PROBES",
    "PER_NOTEBOOK_SCHEMES",
    "STAGES",
    "TD_EDGES",
    "PerNotebookTrial",
    "buffer_td_errors",
    "per_notebook_summary",
    "per_notebook_trials",
    "run_per_notebook_trial",
]

PRESET = "per-notebook"
PER_NOTEBOOK_SCHEMES: tuple[str, ...] = ("uniform", "proportional")
DEFAULT_PROBES = 50
STAGES: tuple[float, ...] = (0.0, 0.1, 0.25, 0.5, 1.0)
"""Stage k holds the updates u with STAGES[k] < u / planned updates <= STAGES[k + 1]."""
TD_EDGES = np.linspace(-4.0, 2.0, 31)
"""log10 |delta| bins: 1e-4 to 100, five per decade (values outside count in the end bins)."""


@dataclass(frozen=True, kw_only=True)
class PerNotebookTrial:
    """One (scheme, seed) of the study, with its whole config."""

    scheme: str
    seed: int
    config: dict[str, Any] = field(repr=False)
    threshold: float = 475.0
    probes: int = DEFAULT_PROBES


def per_notebook_trials(
    schemes: Sequence[str],
    seeds: Sequence[int],
    *,
    steps: int | None = None,
    threshold: float = 475.0,
    probes: int = DEFAULT_PROBES,
    overrides: Mapping[str, Any] | None = None,
) -> list[PerNotebookTrial]:
    """Every (scheme, seed), seed-major; ``steps`` replaces the preset's budget (its warm-up
    capped at a tenth, `rdqn.presets.configure`). A bad value is one `ValueError` naming it."""
    if not schemes or not seeds:
        raise ValueError("schemes and seeds must each hold at least one value")
    for scheme in schemes:
        check_choice("scheme", scheme, PER_NOTEBOOK_SCHEMES)
    threshold = check_real("threshold", threshold)
    probes = check_integer("probes", probes, minimum=1, maximum=1000)
    trials = []
    for seed in seeds:
        for scheme in schemes:
            settings: dict[str, Any] = {**(overrides or {}), "replay.scheme": scheme, "seed": seed}
            if steps is not None:
                settings["train.total_steps"] = check_integer("steps", steps, minimum=1)
            config = configure(PRESET, settings)
            trials.append(
                PerNotebookTrial(
                    scheme=scheme,
                    seed=seed,
                    config=config.to_dict(),
                    threshold=threshold,
                    probes=probes,
                )
            )
    return trials


def _bins(values: NDArray[np.float64], edges: NDArray[np.float64]) -> NDArray[np.intp]:
    """Bin of each value on ``edges`` (values outside in the end bins)."""
    return np.clip(np.searchsorted(edges, values, side="right") - 1, 0, edges.shape[0] - 2)


def _log10(values: NDArray[np.float64], floor: float) -> NDArray[np.float64]:
    """log10 of the values (at least ``floor``), rounded to 9 decimals so that a value equal to
    a bin edge up to floating-point rounding (N * P(i) = 1 under uniform replay) lands in the
    bin that starts there."""
    return np.round(np.log10(np.maximum(values, floor)), 9)


def buffer_td_errors(trainer: Any) -> NDArray[np.float64]:
    """The TD error of every stored transition under the trainer's current nets (module
    docstring); reads the buffer without counting a sample, changes nothing."""
    import torch

    from rdqn.learn.targets import discounts, td_targets

    buffer, agent = trainer.buffer, trainer.agent
    size = len(buffer)
    storage = buffer.storage
    obs, next_obs, _, _ = storage.windows(np.arange(size, dtype=np.int64), buffer.window)
    actions = torch.from_numpy(storage.actions[:size].astype(np.int64))
    rewards = torch.from_numpy(storage.rewards[:size].astype(np.float32))
    discount = torch.from_numpy(
        discounts(agent.config.gamma, storage.terminated[:size]).astype(np.float32)
    )
    with torch.no_grad():
        obs_t = torch.from_numpy(np.ascontiguousarray(obs, dtype=np.float32))
        next_t = torch.from_numpy(np.ascontiguousarray(next_obs, dtype=np.float32))
        q = agent.online(obs_t).gather(1, actions[:, None]).squeeze(1)
        next_q = agent.target(next_t)
        next_online = agent.online(next_t) if agent.config.double_dqn else None
        delta = td_targets(rewards, discount, next_q, next_online) - q
    return delta.numpy().astype(np.float64)


class _Probes:
    """What the trial's probes collect (module docstring), as lists of plain numbers."""

    def __init__(self, planned: int, probes: int, prioritized: bool) -> None:
        self.planned = max(planned, 1)
        self.at = {int(round(u)) for u in np.linspace(0, planned, probes + 1)[1:]}
        self.prioritized = prioritized
        stages = len(STAGES) - 1
        self.stage_td = np.zeros((stages, TD_EDGES.shape[0] - 1))
        self.stage_rel = np.zeros((stages, RELATIVE_PROBABILITY_EDGES.shape[0] - 1))
        self.stage_weight = np.zeros((stages, WEIGHT_EDGES.shape[0] - 1))
        self.rows: dict[str, list[Any]] = {
            key: []
            for key in (
                "updates",
                "env_steps",
                "buffer_size",
                "buffer_td_mean",
                "buffer_td_median",
                "buffer_td_p90",
                "sampled_td_mean",
                "buffer_td_hist",
                "buffer_rel_prob_hist",
            )
        }
        self._sampled_sum = 0.0
        self._sampled_count = 0

    def on_update(self, update: int, batch: Any, size: int) -> None:
        stage = min(int(np.searchsorted(STAGES, update / self.planned, side="left")) - 1, 3)
        stage = max(stage, 0)
        td = np.asarray(batch.td_abs, dtype=np.float64)
        np.add.at(self.stage_td[stage], _bins(_log10(td, 1e-12), TD_EDGES), 1.0)
        relative = np.asarray(batch.probabilities, dtype=np.float64) * size
        bins = _bins(_log10(relative, 1e-300), RELATIVE_PROBABILITY_EDGES)
        np.add.at(self.stage_rel[stage], bins, 1.0)
        weights = np.clip(np.asarray(batch.weights, dtype=np.float64), *WEIGHT_RANGE)
        np.add.at(self.stage_weight[stage], _bins(_log10(weights, 0.0), WEIGHT_EDGES), 1.0)
        self._sampled_sum += float(td.sum())
        self._sampled_count += td.shape[0]

    def probe(self, trainer: Any) -> None:
        delta = np.abs(buffer_td_errors(trainer))
        rows = self.rows
        rows["updates"].append(trainer.updates)
        rows["env_steps"].append(trainer.env_steps)
        rows["buffer_size"].append(int(delta.shape[0]))
        rows["buffer_td_mean"].append(float(delta.mean()))
        rows["buffer_td_median"].append(float(np.median(delta)))
        rows["buffer_td_p90"].append(float(np.percentile(delta, 90)))
        sampled = self._sampled_sum / self._sampled_count if self._sampled_count else None
        rows["sampled_td_mean"].append(sampled)
        self._sampled_sum, self._sampled_count = 0.0, 0
        counts = np.bincount(_bins(_log10(delta, 1e-12), TD_EDGES), minlength=TD_EDGES.size - 1)
        rows["buffer_td_hist"].append(counts.tolist())
        if self.prioritized:
            relative = trainer.buffer.probabilities() * delta.shape[0]
            bins = _bins(_log10(relative, 1e-300), RELATIVE_PROBABILITY_EDGES)
            hist = np.bincount(bins, minlength=RELATIVE_PROBABILITY_EDGES.size - 1)
            rows["buffer_rel_prob_hist"].append(hist.tolist())

    def result(self) -> dict[str, Any]:
        labels = [f"{a:.0%}-{b:.0%}" for a, b in zip(STAGES[:-1], STAGES[1:], strict=True)]
        return {
            "probes": self.rows,
            "stages": {
                "labels": labels,
                "sampled_td_hist": self.stage_td.tolist(),
                "sampled_rel_prob_hist": self.stage_rel.tolist(),
                "sampled_weight_hist": self.stage_weight.tolist(),
            },
            "edges": {
                "log10_td": TD_EDGES.tolist(),
                "log10_rel_prob": RELATIVE_PROBABILITY_EDGES.tolist(),
                "log10_weight": WEIGHT_EDGES.tolist(),
            },
        }


def run_per_notebook_trial(trial: PerNotebookTrial) -> dict[str, Any]:
    """Train the trial's config to its budget with the module docstring's probes.

    Returns the trial's fields (without its config), the episodes (``returns``, ``end_steps``),
    ``steps_to_threshold`` and ``episodes_to_threshold`` (None: never reached), the best and final
    20-episode means, counters, seconds, and the probes (`_Probes.result`).
    """
    import torch

    from rdqn.training.trainer import Trainer

    torch.set_num_threads(1)
    started = time.perf_counter()
    config = RunConfig.from_dict(trial.config)
    trainer = Trainer(config)
    probes = _Probes(config.train.planned_updates, trial.probes, config.replay.scheme != "uniform")
    while not trainer.done:
        before = trainer.updates
        trainer.step()
        if trainer.updates != before:
            batch = trainer.recorder.last_batch
            probes.on_update(trainer.updates, batch, len(trainer.buffer))
            if trainer.updates in probes.at:
                probes.probe(trainer)
    returns = np.array(trainer.recorder.episode_returns, dtype=np.float64)
    end_steps = np.array(trainer.recorder.episode_end_steps, dtype=np.int64)
    episodes, steps = episodes_to_threshold(Curve(end_steps, returns), trial.threshold)
    means = rolling_mean(returns, ROLLING_WINDOW)[ROLLING_WINDOW - 1 :]
    return {
        **{k: v for k, v in asdict(trial).items() if k != "config"},
        "alpha": config.replay.alpha,
        "beta0": config.replay.beta0,
        "env_steps": trainer.env_steps,
        "updates": trainer.updates,
        "episodes": int(returns.shape[0]),
        "steps_to_threshold": steps,
        "episodes_to_threshold": episodes,
        "best_mean20": float(means.max()) if means.size else None,
        "final_mean20": float(returns[-ROLLING_WINDOW:].mean()) if returns.size else None,
        "seconds": time.perf_counter() - started,
        "returns": returns.tolist(),
        "end_steps": end_steps.tolist(),
        **probes.result(),
    }


def _median_range(values: Sequence[float]) -> tuple[float | None, float | None, float | None]:
    if not values:
        return None, None, None
    return statistics.median(values), min(values), max(values)


def per_notebook_summary(results: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per scheme: seeds, how many reached the threshold, and median (min, max) of the
    env steps to it (over those that did), of the best and final 20-episode means, of the ratio
    of the sampled batches' mean |delta| to the buffer's (over every probe), and of seconds."""
    rows = []
    for scheme in PER_NOTEBOOK_SCHEMES:
        runs = sorted((r for r in results if r["scheme"] == scheme), key=lambda r: r["seed"])
        if not runs:
            continue
        reached = [r["steps_to_threshold"] for r in runs if r["steps_to_threshold"] is not None]
        ratios = []
        for run in runs:
            probes = run["probes"]
            pairs = zip(probes["sampled_td_mean"], probes["buffer_td_mean"], strict=True)
            ratios += [s / b for s, b in pairs if s is not None and b > 0]
        row: dict[str, Any] = {
            "scheme": scheme,
            "alpha": runs[0]["alpha"],
            "beta0": runs[0]["beta0"],
            "seeds": [r["seed"] for r in runs],
            "reached": len(reached),
            "steps_to_threshold": [r["steps_to_threshold"] for r in runs],
        }
        for key, values in (
            ("steps", reached),
            ("best_mean20", [r["best_mean20"] for r in runs if r["best_mean20"] is not None]),
            ("final_mean20", [r["final_mean20"] for r in runs if r["final_mean20"] is not None]),
            ("sampled_over_buffer_td", ratios),
            ("seconds", [r["seconds"] for r in runs]),
        ):
            row[f"{key}_median"], row[f"{key}_min"], row[f"{key}_max"] = _median_range(values)
        row["best_mean20"] = [r["best_mean20"] for r in runs]
        row["final_mean20"] = [r["final_mean20"] for r in runs]
        rows.append(row)
    return rows
