"""The Sweeps page's logic: the sweeps in the run store, one sweep's progress, its heatmap over
two grid axes, and the curves of the cell a click picks.

Everything a sweep shows is read from the run store (`rdqn.sweeps`), so a sweep the command line
trains, or another server, is watched as well as one this server trains. The plain functions
(`trial_counts`, `heatmap_slice`, `selected_cell`, `value_label`) take data and return data, and
are tested without Streamlit; `sweep_summary` and `cell_seeds` read the store.

A heatmap shows one measure of `rdqn.sweeps.summary` per grid cell, over two grid axes (the
other axes held at chosen values): the mean over the cell's finished seeds, with the sample
standard deviation and how many seeds it stands for, and in its hover the interquartile mean
over those seeds with its 95 % stratified bootstrap interval (`rdqn.stats`):

    auc      the area under the reward curve, normalised by the budget (the return averaged
             over the whole budget: higher is better), over the finished seeds;
    steps    env steps until the rolling mean of 20 returns reached the threshold, over the
    updates  seeds that reached it (learner updates for ``updates``): lower is better.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from rdqn.compare import Curve
from rdqn.figures.sweeps import SeedCurve
from rdqn.runs.resume import stored_evaluations
from rdqn.runs.store import RunStore
from rdqn.sweeps import SweepSpec, summary
from rdqn.training.evaluation import Evaluations

__all__ = [
    "LIVE_STATUSES",
    "MEASURES",
    "Heatmap",
    "Measure",
    "cell_label",
    "cell_seeds",
    "heatmap_slice",
    "is_live",
    "selected_cell",
    "sweep_summary",
    "trial_counts",
    "value_label",
]

LIVE_STATUSES = ("created", "running", "paused")
"""A trial's run in one of these is waiting or training: the sweep is live."""


@dataclass(frozen=True)
class Measure:
    """A measure of `rdqn.sweeps.summary` the heatmap can show."""

    label: str
    column: str
    """The summary's column prefix (``<column>_mean``, ``<column>_std``)."""
    lower_is_better: bool


MEASURES: dict[str, Measure] = {
    "auc": Measure("area under the reward curve", "auc", False),
    "steps": Measure("env steps to the threshold", "steps_to_threshold", True),
    "updates": Measure("updates to the threshold", "updates_to_threshold", True),
}


def value_label(value: Any) -> str:
    """A grid value as an axis shows it: ``0.6``, ``rank``, ``true``, ``none``, ``{"n": 8}``."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return json.dumps(value) if value is not None else "none"
    if isinstance(value, float):
        return f"{value:g}"
    return json.dumps(value, sort_keys=True)


def _identity(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def trial_counts(trials: pd.DataFrame) -> dict[str, int]:
    """How a sweep's trials stand (`rdqn.sweeps.sweep_trials` rows, by the run that stands for
    each): finished, training (running or paused), waiting (filed, not started), failed,
    stopped, and not run (no run yet)."""
    status = trials["status"]
    return {
        "finished": int((status == "finished").sum()),
        "training": int(status.isin(("running", "paused")).sum()),
        "waiting": int((status == "created").sum()),
        "failed": int((status == "failed").sum()),
        "stopped": int((status == "stopped").sum()),
        "not run": int(status.isna().sum()),
    }


def is_live(trials: pd.DataFrame) -> bool:
    """Whether any trial of the sweep is waiting or training."""
    return bool(trials["status"].isin(LIVE_STATUSES).any())


@st.cache_data(max_entries=64, show_spinner=False)
def _cached_summary(
    _store: RunStore,
    path: str,
    sweep_id: str,
    state: tuple[tuple[str | None, str | None], ...],
    threshold: float | None,
) -> pd.DataFrame:
    """`rdqn.sweeps.summary`, once per store, sweep, state of its trials and threshold: a
    finished trial's rows never change, so every session watching a sweep shares one summary
    per state (``_store`` is not hashed: ``path`` names it)."""
    return summary(_store, sweep_id, threshold=threshold)


def sweep_summary(
    store: RunStore, sweep_id: str, trials: pd.DataFrame, threshold: float | None = None
) -> pd.DataFrame:
    """`rdqn.sweeps.summary` of the sweep whose trials stand as ``trials``, to ``threshold``
    (None: the env's), computed again only when one of them has changed (another run or
    status)."""
    state = tuple(zip(trials["run_id"], trials["status"], strict=True))
    return _cached_summary(store, str(store.path), sweep_id, state, threshold)


@dataclass(frozen=True)
class Heatmap:
    """One measure over two grid axes, every other axis held at one value. Rows follow
    ``y_labels``, columns ``x_labels``; NaN where no seed gives a value."""

    x_labels: list[str]
    y_labels: list[str]
    mean: np.ndarray
    sd: np.ndarray
    iqm: np.ndarray
    """Per cell, the IQM over its seeds and its 95 % interval's ends: (rows, columns, 3)."""
    notes: list[list[str]]
    """Per cell, how many seeds its value stands for: ``2/3 seeds``, ``1/2 reached``."""
    keys: list[list[str]]
    """Per cell, its key (`rdqn.sweeps.Trial.cell`)."""


def heatmap_slice(
    table: pd.DataFrame,
    spec: SweepSpec,
    x: str | None,
    y: str | None,
    fixed: Mapping[str, Any],
    measure: str,
) -> Heatmap:
    """The cells of ``table`` (`rdqn.sweeps.summary` of ``spec``, one row per cell in the spec's
    order) with grid field ``x`` along the columns and ``y`` along the rows (None: a single
    column or row), every other grid field at its value in ``fixed``."""
    chosen = MEASURES[measure]
    others = [name for name in spec.grid if name not in (x, y)]
    missing = [name for name in others if name not in fixed]
    if missing:
        raise ValueError(f"no value chosen for the grid field(s) {', '.join(missing)}")
    cells = spec.cells()
    if len(cells) != len(table):
        raise ValueError(f"the summary has {len(table)} rows for {len(cells)} cells")
    keys = {
        _cell_identity(spec, cell): key for cell, key in zip(cells, _cell_keys(spec), strict=True)
    }
    rows = {
        _cell_identity(spec, cell): row
        for cell, row in zip(cells, table.to_dict("records"), strict=True)
    }
    xs = list(spec.grid[x]) if x is not None else [None]
    ys = list(spec.grid[y]) if y is not None else [None]
    mean = np.full((len(ys), len(xs)), np.nan)
    sd = np.full((len(ys), len(xs)), np.nan)
    iqm = np.full((len(ys), len(xs), 3), np.nan)
    notes: list[list[str]] = []
    key_grid: list[list[str]] = []
    for i, y_value in enumerate(ys):
        notes.append([])
        key_grid.append([])
        for j, x_value in enumerate(xs):
            cell = {name: fixed[name] for name in others}
            if x is not None:
                cell[x] = x_value
            if y is not None:
                cell[y] = y_value
            found = _cell_identity(spec, cell)
            row = rows[found]
            mean[i, j] = row[f"{chosen.column}_mean"]
            sd[i, j] = row[f"{chosen.column}_std"]
            iqm[i, j] = [row[f"{chosen.column}_iqm{end}"] for end in ("", "_low", "_high")]
            if measure == "auc":
                notes[i].append(f"{row['finished']}/{row['seeds']} seeds")
            elif row["finished"]:
                notes[i].append(f"{row['reached']}/{row['finished']} reached")
            else:
                notes[i].append(f"0/{row['seeds']} finished")
            key_grid[i].append(keys[found])
    return Heatmap(
        x_labels=[value_label(v) for v in xs] if x is not None else [""],
        y_labels=[value_label(v) for v in ys] if y is not None else [""],
        mean=mean,
        sd=sd,
        iqm=iqm,
        notes=notes,
        keys=key_grid,
    )


def _cell_identity(spec: SweepSpec, cell: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(_identity(cell[name]) for name in spec.grid)


def _cell_keys(spec: SweepSpec) -> list[str]:
    """Each cell's key, in the order of ``spec.cells()`` (the first seed's trials are those)."""
    return [trial.cell for trial in spec.trials()[: len(spec.cells())]]


def cell_label(spec: SweepSpec, key: str) -> str:
    """Cell ``key`` as a person reads it: ``replay.alpha = 0.6, replay.scheme = rank``."""
    trial = next(trial for trial in spec.trials() if trial.cell == key)
    return ", ".join(f"{name} = {value_label(trial.overrides[name])}" for name in spec.grid)


def selected_cell(points: Sequence[Mapping[str, Any]], keys: Sequence[Sequence[str]]) -> str | None:
    """The cell a click on the heatmap picked: the key its marker carries (``customdata``) in
    the chart's selection points, if it is one of ``keys``."""
    known = {key for row in keys for key in row}
    for point in points:
        key = point.get("customdata")
        if isinstance(key, str) and key in known:
            return key
    return None


_SEED_STATES = {"running": "training", "paused": "training", "created": "waiting"}


def cell_seeds(store: RunStore, spec: SweepSpec, trials: pd.DataFrame, key: str) -> list[SeedCurve]:
    """The trials of cell ``key`` that have a run, each with its episodes so far, labelled by
    seed and, unless finished, how its run stands: ``seed 1 (training)``, ``(stopped)``."""
    runs = trials.set_index("key")
    out: list[SeedCurve] = []
    for trial in spec.trials():
        if trial.cell != key:
            continue
        record = runs.loc[trial.key]
        if record["run_id"] is None:
            continue
        curve = Curve.from_episodes(store.metrics.episodes(record["run_id"]))
        status = record["status"]
        note = "" if status == "finished" else f" ({_SEED_STATES.get(status, status)})"
        out.append(SeedCurve(f"seed {trial.seed}{note}", curve, status == "finished"))
    return out


def cell_evaluations(
    store: RunStore, spec: SweepSpec, trials: pd.DataFrame, key: str
) -> list[Evaluations]:
    """The greedy evaluations of cell ``key``'s trials that have a run (`stored_evaluations`)."""
    runs = trials.set_index("key")
    return [
        stored_evaluations(store, runs.loc[trial.key]["run_id"])
        for trial in spec.trials()
        if trial.cell == key and runs.loc[trial.key]["run_id"] is not None
    ]
