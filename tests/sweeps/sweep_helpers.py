"""A sweep's runs filed by hand, as `run_sweep` files them (for the record and summary tests)."""

from __future__ import annotations

from collections.abc import Sequence

from rdqn.runs.store import RunStore
from rdqn.sweeps import SweepSpec, Trial


def file_trial(
    store: RunStore,
    spec: SweepSpec,
    trial: Trial,
    status: str,
    episodes: Sequence[tuple[int, int, float]] = (),
    error: str | None = None,
) -> str:
    """A run of ``trial`` in its sweep's group with ``episodes`` rows (end step, updates,
    return) and ``status``; returns its id."""
    config = spec.config(trial)
    run_id = store.create_run(**config.record_fields(), group_id=spec.id, name=trial.key)
    rows = [
        {"episode": k + 1, "env_steps": end, "updates": updates, "return": ret}
        for k, (end, updates, ret) in enumerate(episodes)
    ]
    store.write_metrics(run_id, episodes=rows)
    store.set_status(run_id, status, error)
    return run_id
