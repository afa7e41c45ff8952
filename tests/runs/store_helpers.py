"""Helpers shared by the run-store and writer tests: a config, a filed run, metric rows."""

from __future__ import annotations

from rdqn.runs.store import RunStore

CONFIG = {"alpha": 0.6, "beta0": 0.4, "window": 8, "hidden": [128, 128], "name": "e14"}


def new_run(store: RunStore, **overrides: object) -> str:
    args: dict[str, object] = {
        "config": CONFIG,
        "preset": "e14",
        "env_id": "CartPole-v1",
        "scheme": "proportional",
        "seed": 7,
    }
    args.update(overrides)
    return store.create_run(**args)  # type: ignore[arg-type]


def episode_rows(n: int, start: int = 0) -> list[dict[str, object]]:
    return [
        {
            "episode": i,
            "env_steps": 10 * (i + 1),
            "updates": 5 * i,
            "return": 0.1 * i - 1 / 3,
            "length": 10,
            "wall_time": 1.5 * i,
        }
        for i in range(start, start + n)
    ]


def step_rows(n: int, start: int = 0) -> list[dict[str, object]]:
    return [
        {
            "updates": u,
            "env_steps": 4 * u,
            "loss": 1.0 / (u + 3),
            "td_abs_mean": 0.5 + u,
            "q_mean": -0.25 * u,
            "beta": 0.4 + 1e-3 * u,
            "epsilon": 1.0 - 1e-3 * u,
            "ess": 100.0 / 7,
            "wall_time": 0.01 * u,
        }
        for u in range(start, start + n)
    ]
