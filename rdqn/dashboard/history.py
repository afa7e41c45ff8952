"""Pure helpers behind the "Compare schemes" and "Saved runs" pages (no Streamlit here).

- A comparison is one config per (scheme, seed) (`rdqn.compare.comparison_configs`), tied together
  in the store by one group id; `default_budget` keeps it to a few minutes.
- A run's learning curve (`rdqn.compare.Curve`) comes from a live snapshot while the run is in
  the registry, and from the store's episode rows otherwise, so a reload loses nothing.
- `RunProgress` is one row of the comparison's status table; `runs_table` and `manifest_summary`
  are the saved-runs page's table and run card.
- Every page names a run the same way, `rdqn.compare.run_label`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd

from rdqn.compare import ROLLING_WINDOW, Curve, comparison_threshold, run_label, scheme_label
from rdqn.config import SCHEMES, RunConfig
from rdqn.presets import configure, preset
from rdqn.runs.schema import FINAL_STATUSES
from rdqn.runs.store import RunRecord, RunStore
from rdqn.serve.handle import RunHandle
from rdqn.serve.registry import RunRegistry

__all__ = [
    "COMPARE_STEP_CAP",
    "RunProgress",
    "comparison_base",
    "curves_by_scheme",
    "default_budget",
    "final_return",
    "format_bytes",
    "group_progress",
    "manifest_summary",
    "progress_frame",
    "progress_from_handle",
    "progress_from_record",
    "runs_table",
    "scheme_labels",
    "stored_counters",
    "stored_threshold",
    "waiting_note",
]

COMPARE_STEP_CAP = 15_000
"""Default comparison budget: a few minutes of CPU for a handful of CartPole runs."""

_EMPTY_CURVE = Curve(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))


def default_budget(preset_name: str) -> int:
    """The preset's step budget, capped so a comparison finishes in a few minutes."""
    return min(preset(preset_name).train.total_steps, COMPARE_STEP_CAP)


def comparison_base(preset_name: str, env_id: str, steps: int) -> RunConfig:
    """The config a comparison's runs start from: the preset on ``env_id`` for ``steps`` env
    steps. The preset's own budget keeps its own warm-up (`chain-lesson`'s long warm-up of
    random play is part of what it shows); another budget caps the warm-up at a tenth of it,
    as `rdqn.presets.configure` does."""
    overrides: dict[str, Any] = {"env.id": env_id}
    if steps != preset(preset_name).train.total_steps:
        overrides["train.total_steps"] = steps
    return configure(preset_name, overrides)


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
    label: str | None = None
    """`run_label` of the run (None: its scheme and seed are all that is known)."""
    settings: str | None = None
    """`scheme_label` of the run: its scheme, α and β₀."""
    waiting: str | None = None
    """Why a queued run waits and its place in line (`waiting_note`); None when not queued."""
    learning_starts: int = 0
    """Env steps of warm-up before the first learner update."""

    @property
    def name(self) -> str:
        """The row's label: `label`, else scheme and seed."""
        return self.label or f"{self.scheme} · seed {self.seed}"

    @property
    def progress(self) -> float:
        return min(1.0, self.env_steps / self.total_steps) if self.total_steps else 0.0

    @property
    def done(self) -> bool:
        return self.status in FINAL_STATUSES


def progress_from_handle(handle: RunHandle) -> RunProgress:
    """A live run's row, from its latest snapshot (reading it counts as a poll)."""
    snapshot = handle.snapshot()
    status = handle.status
    if status == "created":  # waiting for a slot, or for its worker's first report
        status = "starting" if handle.started else "queued"
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
        label=run_label(handle.config, handle.id),
        settings=scheme_label(handle.config),
        learning_starts=handle.config.train.learning_starts,
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
        label=run_label(record.config, record.id),
        settings=scheme_label(record.config),
        learning_starts=int(record.config.get("train", {}).get("learning_starts", 0)),
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
            row = progress_from_handle(handle)
            if row.status == "queued":
                note = waiting_note(registry.position(run_id), registry.max_active)
                row = replace(row, waiting=note)
            rows.append(row)
            continue
        try:
            rows.append(progress_from_record(store.get_run(run_id), store.metrics.episodes(run_id)))
        except KeyError:
            continue
    return rows


def stored_threshold(env_id: str) -> float | None:
    """`rdqn.compare.comparison_threshold` of a stored run's environment; None for an id this
    version does not know (a run recorded by another version, or a damaged record)."""
    try:
        return comparison_threshold(env_id)
    except ValueError:
        return None


def waiting_note(place: tuple[int, int] | None, max_active: int) -> str:
    """Why a queued run waits: 'waiting, 2nd in line (1 run at a time on this server)' (its
    place first, where a narrow column still shows it).

    ``place`` is `RunRegistry.position` (1-based place, queue length); None: not in the queue
    any more, it is being started.
    """
    if place is None:
        return "starting"
    runs = "1 run" if max_active == 1 else f"{max_active} runs"
    return f"waiting, {_ordinal(place[0])} in line ({runs} at a time on this server)"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def scheme_labels(rows: Iterable[RunProgress]) -> dict[str, str]:
    """Each scheme's settings as `scheme_label` gives them (α, β₀), for legends and tables."""
    labels: dict[str, str] = {}
    for row in rows:
        labels.setdefault(row.scheme, row.settings or row.scheme)
    return labels


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
    then seed, named by `run_label`; a queued run's status says why it waits."""
    ranked = {scheme: k for k, scheme in enumerate(SCHEMES)}
    ordered = sorted(rows, key=lambda r: (ranked.get(r.scheme, len(ranked)), r.scheme, r.seed))
    return pd.DataFrame(
        {
            "run": [r.name for r in ordered],
            "status": [r.waiting or r.status for r in ordered],
            "progress": [round(100 * r.progress) for r in ordered],
            "env steps": [r.env_steps for r in ordered],
            "episodes": [r.episodes for r in ordered],
            f"return (last {ROLLING_WINDOW})": [final_return(r.curve.returns) for r in ordered],
            "error": [r.error or "" for r in ordered],
            "scheme": [r.scheme for r in ordered],
        }
    )


def runs_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The saved-runs table from `RunStore.list_runs()` (order kept: newest first), each run
    named by `run_label`; ``scheme`` is there to colour the rows, not to be shown."""
    configs = [json.loads(text) if text else {} for text in runs["config_json"]]
    return pd.DataFrame(
        {
            "run": [
                run_label(config or {"replay": {"scheme": scheme}, "seed": seed}, run_id)
                for config, scheme, seed, run_id in zip(
                    configs, runs["scheme"], runs["seed"], runs["id"], strict=True
                )
            ],
            "name": runs["name"],
            "status": runs["status"],
            "preset": runs["preset"],
            "env": runs["env_id"],
            "env steps": runs["env_steps"],
            "episodes": runs["episodes"],
            "created": [datetime.fromtimestamp(t) for t in runs["created_at"]],
            "id": runs["id"],
            "scheme": runs["scheme"],
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
