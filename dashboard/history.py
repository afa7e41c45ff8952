"""Pure helpers behind the "Compare schemes" and "Saved runs" pages (no Streamlit here).

- A comparison is one config per (scheme, seed) (`rdqn.compare.comparison_configs`), tied together
  in the store by one group id; `default_budget` keeps it to a few minutes.
- A run's learning curve (`rdqn.compare.Curve`) comes from a live snapshot while the run is in
  the registry, and from the store's episode rows otherwise, so a reload loses nothing.
- `RunProgress` is one row of the comparison's status table; `runs_table` and `manifest_summary`
  are the saved-runs page's table and run card.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd

from rdqn.compare import ROLLING_WINDOW, Curve
from rdqn.config import SCHEMES
from rdqn.presets import preset
from rdqn.runs.handle import RunHandle
from rdqn.runs.registry import RunRegistry
from rdqn.runs.schema import FINAL_STATUSES
from rdqn.runs.store import RunRecord, RunStore

__all__ = [
    "COMPARE_STEP_CAP",
    "RunProgress",
    "curves_by_scheme",
    "default_budget",
    "final_return",
    "format_bytes",
    "group_progress",
    "manifest_summary",
    "progress_frame",
    "progress_from_handle",
    "progress_from_record",
    "run_label",
    "runs_table",
    "stored_counters",
]

COMPARE_STEP_CAP = 15_000
"""Default comparison budget: a few minutes of CPU for a handful of CartPole runs."""

_EMPTY_CURVE = Curve(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))


def default_budget(preset_name: str) -> int:
    """The preset's step budget, capped so a comparison finishes in a few minutes."""
    return min(preset(preset_name).train.total_steps, COMPARE_STEP_CAP)


@dataclass(frozen=True)
class RunProgress:
    """One run of a comparison as its status table shows it."""

    run_id: str
    scheme: str
    seed: int
    status: str
    """created runs waiting for a slot read 'queued'; the rest are the store's statuses."""
    env_steps: int
    total_steps: int
    episodes: int
    curve: Curve
    error: str | None = None

    @property
    def progress(self) -> float:
        return min(1.0, self.env_steps / self.total_steps) if self.total_steps else 0.0

    @property
    def done(self) -> bool:
        return self.status in FINAL_STATUSES


def progress_from_handle(handle: RunHandle) -> RunProgress:
    """A live run's row, from its latest snapshot (reading it counts as a poll)."""
    snapshot = handle.snapshot()
    status = "queued" if handle.status == "created" else handle.status
    curve = (
        Curve(snapshot.episode_end_steps.copy(), snapshot.episode_returns.copy())
        if snapshot is not None
        else _EMPTY_CURVE
    )
    return RunProgress(
        run_id=handle.id,
        scheme=handle.config.replay.scheme,
        seed=handle.config.seed,
        status=status,
        env_steps=snapshot.env_steps if snapshot is not None else 0,
        total_steps=handle.config.train.total_steps,
        episodes=snapshot.episodes if snapshot is not None else 0,
        curve=curve,
        error=handle.error,
    )


def progress_from_record(record: RunRecord, episodes: pd.DataFrame) -> RunProgress:
    """A stored run's row (a run no registry holds any more: finished, or from before a reload)."""
    counters = stored_counters(record, episodes)
    return RunProgress(
        run_id=record.id,
        scheme=record.scheme,
        seed=record.seed,
        status=record.status,
        env_steps=counters["env_steps"],
        total_steps=int(record.config.get("train", {}).get("total_steps", 0)),
        episodes=counters["episodes"],
        curve=Curve.from_episodes(episodes),
        error=record.error,
    )


def group_progress(
    run_ids: Iterable[str], registry: RunRegistry, store: RunStore
) -> list[RunProgress]:
    """Rows for a comparison's runs: live ones from the registry, the rest from the store.

    Runs deleted from the store meanwhile are left out.
    """
    rows = []
    for run_id in run_ids:
        handle = registry.get(run_id)
        if handle is not None:
            rows.append(progress_from_handle(handle))
            continue
        try:
            rows.append(progress_from_record(store.get_run(run_id), store.episodes(run_id)))
        except KeyError:
            continue
    return rows


def curves_by_scheme(
    rows: Iterable[RunProgress], order: Sequence[str] = SCHEMES
) -> dict[str, list[Curve]]:
    """Each scheme's curves (one per seed), schemes in `order` then any others as met."""
    grouped: dict[str, list[Curve]] = {}
    for row in rows:
        grouped.setdefault(row.scheme, []).append(row.curve)
    ranked = sorted(grouped, key=lambda s: order.index(s) if s in order else len(order))
    return {scheme: grouped[scheme] for scheme in ranked}


def final_return(returns: Sequence[float] | np.ndarray, window: int = ROLLING_WINDOW) -> float:
    """Mean return of the last `window` episodes (NaN with no episodes)."""
    values = np.asarray(returns, dtype=np.float64)
    return float(values[-window:].mean()) if values.size else float("nan")


def progress_frame(rows: Sequence[RunProgress]) -> pd.DataFrame:
    """The comparison's status table: one row per run, by scheme (uniform, proportional, rank)
    then seed."""
    ranked = {scheme: k for k, scheme in enumerate(SCHEMES)}
    ordered = sorted(rows, key=lambda r: (ranked.get(r.scheme, len(ranked)), r.scheme, r.seed))
    return pd.DataFrame(
        {
            "scheme": [r.scheme for r in ordered],
            "seed": [r.seed for r in ordered],
            "status": [r.status for r in ordered],
            "progress": [round(100 * r.progress) for r in ordered],
            "env steps": [r.env_steps for r in ordered],
            "episodes": [r.episodes for r in ordered],
            f"return (last {ROLLING_WINDOW})": [final_return(r.curve.returns) for r in ordered],
            "error": [r.error or "" for r in ordered],
        }
    )


def runs_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The saved-runs table from `RunStore.list_runs()` (order kept: newest first)."""
    return pd.DataFrame(
        {
            "id": runs["id"],
            "name": runs["name"],
            "status": runs["status"],
            "preset": runs["preset"],
            "env": runs["env_id"],
            "scheme": runs["scheme"],
            "seed": runs["seed"],
            "env steps": runs["env_steps"],
            "episodes": runs["episodes"],
            "created": [datetime.fromtimestamp(t) for t in runs["created_at"]],
        }
    )


def stored_counters(record: RunRecord, episodes: pd.DataFrame) -> dict[str, int]:
    """Env steps, updates and episodes of a stored run, at least as far as its episode rows go.

    A run training in another process (the CLI) may write episode rows before its counters.
    """
    counters = {
        "env_steps": record.env_steps,
        "updates": record.updates,
        "episodes": record.episodes,
    }
    if not episodes.empty:
        last = episodes.iloc[-1]
        for name, column in (
            ("env_steps", "env_steps"),
            ("updates", "updates"),
            ("episodes", "episode"),
        ):
            if not pd.isna(last[column]):
                counters[name] = max(counters[name], int(last[column]))
    return counters


def run_label(run_id: str, scheme: str, seed: int) -> str:
    """A short unique legend label: 'proportional s0 · 6c24e5'."""
    return f"{scheme} s{seed} · {run_id[:6]}"


def format_bytes(count: float | None) -> str:
    """1536 -> '1.5 KiB'; None -> 'n/a'."""
    if count is None:
        return "n/a"
    value = float(count)
    if abs(value) < 1024:
        return f"{value:,.0f} B"
    for unit in ("KiB", "MiB"):
        value /= 1024
        if abs(value) < 1024:
            return f"{value:,.1f} {unit}"
    return f"{value / 1024:,.1f} GiB"


def _shape(shape: Sequence[int] | None) -> str:
    return " × ".join(str(n) for n in shape) if shape else "?"


def _counter(name: str, value: int) -> str:
    if name.endswith("_bytes"):
        return f"{format_bytes(value)} {name.removesuffix('_bytes').replace('_', ' ')}"
    return f"{value:,} {name.replace('_', ' ')}"


def manifest_summary(manifest: Mapping[str, Any]) -> dict[str, str]:
    """The run card's reproduction facts as short text: versions, device, seed, shapes,
    counters and source revision."""
    environment = manifest.get("environment") or {}
    inputs = manifest.get("inputs") or {}
    versions = environment.get("versions") or {}
    counters = manifest.get("counters") or {}
    return {
        "versions": ", ".join(f"{name} {version}" for name, version in versions.items() if version),
        "device": f"{manifest.get('device', '?')} ({environment.get('torch_device_name', '?')}), "
        f"{manifest.get('dtype', '?')}, {environment.get('torch_num_threads', '?')} thread(s)",
        "seed": str(manifest.get("seed", "?")),
        "observation shape": _shape(inputs.get("obs_shape")),
        "batch shape": f"{_shape(inputs.get('batch_obs_shape'))} (batch × window × observation)",
        "actions": str(inputs.get("n_actions", "?")),
        "counters": ", ".join(_counter(name, value) for name, value in counters.items()),
        "source revision": str(environment.get("source_revision", "unknown")),
    }
