"""Whole training runs timed episode by episode, and what the demo benchmarks read off them.

`train_timed` trains one config headless (the `Trainer`'s own loop, one torch thread) and keeps,
for every episode, its return, the env step at which it ended, and the wall second and the CPU
second (this process's) since the trainer began to be built: a run's time includes building the
env, the nets and the memory. On a shared machine the wall time depends on what else runs; the
CPU time of a one-thread run is what it would take on a core of its own.
`warm_up` loads the compiled kernels before the first. `reached` finds where the mean of
`WINDOW` consecutive returns first reaches a threshold; `final_mean` is the mean of the last
`WINDOW` returns. `benchmarks/bench_demo.py` and
`benchmarks/bench_whole_loop.py` (whose SB3 runs report the same fields) use them.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import numpy as np

WINDOW = 20
"""Episodes in the rolling mean (`rdqn.compare.ROLLING_WINDOW`)."""
SOLVED = 475.0
"""CartPole-v1's reward threshold (gymnasium's `spec.reward_threshold`)."""


class _Episodes:
    """A `rdqn.training.trainer.MetricsSink` keeping (env step, return, wall second) per episode."""

    def __init__(self, started: float, cpu_started: float) -> None:
        self.started = started
        self.cpu_started = cpu_started
        self.end_steps: list[int] = []
        self.returns: list[float] = []
        self.end_seconds: list[float] = []
        self.end_cpu_seconds: list[float] = []

    def add_episode(self, **row: Any) -> None:
        self.end_steps.append(int(row["env_steps"]))
        self.returns.append(float(row["return"]))
        self.end_seconds.append(time.perf_counter() - self.started)
        self.end_cpu_seconds.append(time.process_time() - self.cpu_started)

    def add_step(self, **row: Any) -> None:
        pass


def train_timed(config_dict: dict[str, Any]) -> dict[str, Any]:
    """Train ``config_dict`` (a `RunConfig.to_dict()`) to its end in this process."""
    import torch

    from rdqn.config import RunConfig
    from rdqn.training.trainer import Trainer

    torch.set_num_threads(1)
    config = RunConfig.from_dict(config_dict)
    started, cpu_started = time.perf_counter(), time.process_time()
    episodes = _Episodes(started, cpu_started)
    trainer = Trainer(config, sink=episodes)
    trainer.run()
    return {
        "seed": config.seed,
        "env_steps": trainer.env_steps,
        "seconds": time.perf_counter() - started,
        "cpu_seconds": time.process_time() - cpu_started,
        "end_steps": episodes.end_steps,
        "returns": episodes.returns,
        "end_seconds": episodes.end_seconds,
        "end_cpu_seconds": episodes.end_cpu_seconds,
    }


def warm_up() -> None:
    """A 1,200-step run of the `demo` preset, every scheme: loads the compiled kernels (numba's
    cache) and what torch imports lazily, so that timed runs after it do not pay for them."""
    from rdqn.presets import preset

    for scheme in ("proportional", "uniform"):
        overrides = {"replay.scheme": scheme, "train.total_steps": 1_200}
        train_timed(preset("demo").with_overrides(overrides).to_dict())


def reached(run: dict[str, Any], threshold: float = SOLVED) -> dict[str, Any] | None:
    """Env step, wall second and CPU second of the episode at which the mean of `WINDOW`
    consecutive returns first reached ``threshold`` (None if it never did)."""
    returns = np.asarray(run["returns"], dtype=np.float64)
    if returns.size < WINDOW:
        return None
    means = np.convolve(returns, np.ones(WINDOW) / WINDOW, mode="valid")
    hits = np.flatnonzero(means >= threshold)
    if hits.size == 0:
        return None
    last = int(hits[0]) + WINDOW - 1
    return {
        "env_steps": int(run["end_steps"][last]),
        "seconds": float(run["end_seconds"][last]),
        "cpu_seconds": float(run["end_cpu_seconds"][last]),
    }


def final_mean(run: dict[str, Any]) -> float | None:
    """Mean of the last `WINDOW` returns (None with fewer episodes)."""
    returns = run["returns"][-WINDOW:]
    return float(np.mean(returns)) if len(returns) == WINDOW else None


def spread(values: list[float]) -> dict[str, float] | None:
    """Median, min and max (None for no values)."""
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def measures(run: dict[str, Any]) -> dict[str, Any]:
    """What the benchmarks' tables read from one run (its curve stays in the results file)."""
    solved = reached(run, SOLVED)
    return {
        "steps_to_475": solved and solved["env_steps"],
        "seconds_to_475": solved and solved["seconds"],
        "cpu_seconds_to_475": solved and solved["cpu_seconds"],
        "end_mean20": final_mean(run),
        "env_steps": run["env_steps"],
        "env_steps_per_s": run["env_steps"] / run["seconds"],
        "env_steps_per_cpu_s": run["env_steps"] / run["cpu_seconds"],
    }


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Over the seeds of one variant: steps per wall and per CPU second, how many reached 475,
    and the env steps, wall and CPU seconds to it (each median, min, max)."""
    measured = [measures(row) for row in rows]
    hit = [m for m in measured if m["steps_to_475"] is not None]
    return {
        "seeds": [row["seed"] for row in rows],
        "reached_475": f"{len(hit)}/{len(measured)}",
        "steps_to_475": spread([m["steps_to_475"] for m in hit]),
        "seconds_to_475": spread([m["seconds_to_475"] for m in hit]),
        "cpu_seconds_to_475": spread([m["cpu_seconds_to_475"] for m in hit]),
        "env_steps_per_s": spread([m["env_steps_per_s"] for m in measured]),
        "env_steps_per_cpu_s": spread([m["env_steps_per_cpu_s"] for m in measured]),
    }


def median_range(value: dict[str, float] | None, fmt: str) -> str:
    """A `spread` as "median (min–max)" in ``fmt``; "–" for none."""
    if value is None:
        return "–"
    return f"{value['median']:{fmt}} ({value['min']:{fmt}}–{value['max']:{fmt}})"
