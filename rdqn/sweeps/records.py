"""Where a sweep is recorded: its trials are runs of the run store, its spec a file beside it.

    <home>/rdqn.db                 every trial is a run like any other, its group_id the sweep id
    <home>/sweeps/<sweep id>.json  the sweep's spec (`SweepSpec.to_dict`), written once

A trial's runs are found by the sweep id (the runs' ``group_id``) and matched to trials by their
stored configs (`SweepSpec.key_of`: the grid fields and the seed), so nothing but the spec is
kept apart from the runs. A trial may have several runs (one failed, then retried); the one that
stands for it is its finished run, else its newest (`trial_runs`). The spec file is written
atomically (a temporary file renamed over it); a copied home folder keeps its sweeps.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from rdqn.config import RunConfig
from rdqn.runs.store import RunStore
from rdqn.runs.store_access import StoreError, StoreFull
from rdqn.sweeps.spec import GridError, SweepSpec

__all__ = [
    "TrialRun",
    "list_sweeps",
    "load_spec",
    "save_spec",
    "spec_path",
    "sweep_trials",
    "trial_runs",
]


_SWEEP_ID = re.compile(r"[0-9a-f]{12}")


def spec_path(store: RunStore, sweep_id: str) -> Path:
    """Where the spec of sweep ``sweep_id`` lives: ``<home>/sweeps/<sweep_id>.json``;
    `GridError` for an id that is not one (12 hex digits: `SweepSpec.id`), which could name a
    file elsewhere (``../../etc``)."""
    if not _SWEEP_ID.fullmatch(sweep_id):
        raise GridError(f"{sweep_id!r} is not a sweep id (12 hex digits, as `sweep list` shows)")
    return store.path.parent / "sweeps" / f"{sweep_id}.json"


def save_spec(store: RunStore, spec: SweepSpec) -> Path:
    """Write ``spec`` under its id (once: the same id is the same sweep); returns the file.
    `StoreError` (`StoreFull` for a full disk) naming the file when it cannot be written (a
    read-only home): nothing is filed then."""
    path = spec_path(store, spec.id)
    if path.is_file():
        return path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as err:
        raise _unwritable(path, err) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(spec.to_dict(), handle, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except BaseException as err:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(err, OSError):
            raise _unwritable(path, err) from None
        raise
    return path


def _unwritable(path: Path, err: OSError) -> StoreError:
    kind = StoreFull if err.errno == errno.ENOSPC else StoreError
    return kind(f"the sweep's file {path} cannot be written: {err.strerror or err}")


def load_spec(store: RunStore, sweep_id: str) -> SweepSpec:
    """The spec of sweep ``sweep_id`` (`GridError` naming the file when there is none, or it
    cannot be read)."""
    path = spec_path(store, sweep_id)
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in path.parent.glob("*.json"))) or "none"
        raise GridError(f"no sweep {sweep_id!r} in {path.parent.parent} (sweeps there: {known})")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return SweepSpec.from_dict(data)
    except (OSError, ValueError) as err:
        raise GridError(f"sweep file {path} cannot be read: {err}") from None


@dataclass(frozen=True)
class TrialRun:
    """A run of a trial, as the store has it."""

    run_id: str
    status: str
    error: str | None
    env_steps: int
    created_at: float


def trial_runs(store: RunStore, spec: SweepSpec) -> dict[str, list[TrialRun]]:
    """Trial key -> the trial's runs, the one that stands for it first (its finished run, else
    the newest), then the rest newest first. Runs of the sweep whose config is not one of its
    trials (a config from another rdqn) are left out."""
    frame = store.list_runs(group_id=spec.id)
    found: dict[str, list[TrialRun]] = {}
    for row in frame.itertuples(index=False):
        try:
            key = spec.key_of(RunConfig.from_dict(json.loads(row.config_json)))
        except (ValueError, TypeError):
            continue
        found.setdefault(key, []).append(
            TrialRun(row.id, row.status, row.error, int(row.env_steps), float(row.created_at))
        )
    for runs in found.values():  # list_runs is newest first; a finished run goes first
        runs.sort(key=lambda run: run.status != "finished")
    return found


def sweep_trials(store: RunStore, spec: SweepSpec) -> pd.DataFrame:
    """One row per trial, in the spec's order: its key, grid fields, seed, the run that stands
    for it (id, status, error, env steps; None for a trial with no run yet) and its runs."""
    runs = trial_runs(store, spec)
    rows: list[dict[str, Any]] = []
    for trial in spec.trials():
        mine = runs.get(trial.key, [])
        first = mine[0] if mine else None
        rows.append(
            {
                "key": trial.key,
                **trial.overrides,
                "seed": trial.seed,
                "run_id": first.run_id if first else None,
                "status": first.status if first else None,
                "error": first.error if first else None,
                "env_steps": first.env_steps if first else 0,
                "runs": len(mine),
            }
        )
    frame = pd.DataFrame(rows)
    for name in ("run_id", "status", "error"):  # None where there is no run, not NaN
        frame[name] = pd.Series([row[name] for row in rows], index=frame.index, dtype=object)
    return frame


def list_sweeps(store: RunStore) -> pd.DataFrame:
    """The sweeps recorded beside ``store``, newest first: id, preset, grid fields, trials and
    how many finished, failed or stopped, and when the spec was written."""
    folder = store.path.parent / "sweeps"
    rows: list[dict[str, Any]] = []
    for path in sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True):
        try:
            spec = load_spec(store, path.stem)
        except GridError:
            continue
        statuses = sweep_trials(store, spec)["status"]
        rows.append(
            {
                "sweep_id": spec.id,
                "preset": spec.preset,
                "grid": ", ".join(spec.grid) or "(seeds only)",
                "trials": len(statuses),
                "finished": int((statuses == "finished").sum()),
                "failed": int((statuses == "failed").sum()),
                "stopped": int((statuses == "stopped").sum()),
                "created_at": path.stat().st_mtime,
            }
        )
    columns = ["sweep_id", "preset", "grid", "trials", "finished", "failed", "stopped"]
    return pd.DataFrame(rows, columns=[*columns, "created_at"])
