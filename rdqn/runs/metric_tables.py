"""A run's metric tables (``episodes``, ``steps``): written in batches, read as DataFrames.

`MetricTables` is the part of the run store (`rdqn.runs.store.RunStore`, which hands its calls
on) that writes and reads them; the ``runs`` table is the store's own.

Columns come in the order and with the converters of `rdqn.runs.schema` (``EPISODE_COLUMNS``,
``STEP_COLUMNS``; the first column is the table's key). SQLite returns None for NULL, which would
make an all-NULL column ``object``; every column is given a numeric dtype instead: ``float64`` for
floats (NULL is NaN), ``int64`` for integers, or pandas' nullable ``Int64`` when a value is
missing.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rdqn.runs.schema import (
    EPISODE_COLUMNS,
    EPISODE_KEYS,
    INSERT_EPISODES,
    INSERT_STEPS,
    PROGRESS_SET,
    STEP_COLUMNS,
    STEP_KEYS,
    Converter,
    quoted_columns,
    row_params,
)
from rdqn.runs.store_access import Database

if TYPE_CHECKING:  # pandas loads with the first table read (see rdqn.runs.store)
    import pandas as pd

__all__ = ["MetricTables", "read_metric_frame"]


class MetricTables:
    """The ``episodes`` and ``steps`` rows of a store's runs (`rdqn.runs.store.RunStore`'s
    ``write_metrics``, ``episodes``, ``steps`` and ``export_csv``)."""

    def __init__(self, db: Database, path: Path) -> None:
        self._db = db
        self._path = path

    def _check_exists(self, conn: sqlite3.Connection, run_id: str) -> None:
        if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
            raise KeyError(f"no run with id {run_id!r} in {self._path}")

    def write_metrics(
        self,
        run_id: str,
        *,
        episodes: Sequence[Mapping[str, Any]] = (),
        steps: Sequence[Mapping[str, Any]] = (),
        progress: Mapping[str, int] | None = None,
    ) -> None:
        """Write episode rows, step rows and (optionally) progress counters in one transaction.

        Row keys are the columns of :data:`EPISODE_COLUMNS` / :data:`STEP_COLUMNS` (missing ones
        are stored as NULL; ``episode`` / ``updates`` are required). ``progress`` takes
        ``env_steps``, ``updates`` and ``episodes``. Rows that repeat a key replace the old row.
        """
        episode_params = row_params(run_id, episodes, EPISODE_COLUMNS, EPISODE_KEYS, "episode")
        step_params = row_params(run_id, steps, STEP_COLUMNS, STEP_KEYS, "step")
        with self._db.write() as conn:
            self._check_exists(conn, run_id)
            if episode_params:
                conn.executemany(INSERT_EPISODES, episode_params)
            if step_params:
                conn.executemany(INSERT_STEPS, step_params)
            if progress is not None:
                counters = tuple(int(progress[k]) for k in ("env_steps", "updates", "episodes"))
                conn.execute(
                    f"UPDATE runs SET {PROGRESS_SET}, updated_at = ? WHERE id = ?",
                    (*counters, time.time(), run_id),
                )

    def episodes(self, run_id: str, *, after: int | None = None) -> pd.DataFrame:
        """The run's episode rows ordered by ``episode`` (only ``episode > after`` if given)."""
        with self._db.read() as conn:
            self._check_exists(conn, run_id)
            return read_metric_frame(conn, run_id, "episodes", EPISODE_COLUMNS, after)

    def steps(self, run_id: str, *, after: int | None = None) -> pd.DataFrame:
        """The run's per-update rows ordered by ``updates`` (only ``updates > after`` if given)."""
        with self._db.read() as conn:
            self._check_exists(conn, run_id)
            return read_metric_frame(conn, run_id, "steps", STEP_COLUMNS, after)

    def export_csv(self, run_id: str, kind: Literal["episodes", "steps"]) -> str:
        """The run's ``episodes`` or ``steps`` as CSV text with a header row (floats round-trip)."""
        if kind == "episodes":
            frame = self.episodes(run_id)
        elif kind == "steps":
            frame = self.steps(run_id)
        else:
            raise ValueError(f"kind must be 'episodes' or 'steps', got {kind!r}")
        return str(frame.to_csv(index=False))

    def rewind(self, conn: sqlite3.Connection, run_id: str, counters: tuple[int, int, int]) -> None:
        """Drop the run's rows past ``counters`` (env steps, updates, episodes), inside the
        caller's write (a resume taking the run: `RunStore.set_status`)."""
        _, updates, episodes = counters
        conn.execute("DELETE FROM episodes WHERE run_id = ? AND episode > ?", (run_id, episodes))
        conn.execute("DELETE FROM steps WHERE run_id = ? AND updates > ?", (run_id, updates))


def read_metric_frame(
    conn: sqlite3.Connection,
    run_id: str,
    table: str,
    columns: tuple[tuple[str, Converter], ...],
    after: int | None = None,
) -> pd.DataFrame:
    """Run ``run_id``'s rows of ``table``, ordered by its key (only key > ``after`` if given);
    an empty frame with the columns when it has none (the caller checks that the run exists)."""
    import pandas as pd

    key = columns[0][0]
    sql = f"SELECT {quoted_columns(columns)} FROM {table} WHERE run_id = ?"
    params: list[Any] = [run_id]
    if after is not None:
        sql += f" AND {key} > ?"
        params.append(int(after))
    frame = pd.read_sql_query(f"{sql} ORDER BY {key}", conn, params=params)
    for name, convert in columns:
        column = frame[name]
        if convert is float:
            frame[name] = column.astype("float64")
        else:
            frame[name] = column.astype("Int64" if column.isna().any() else "int64")
    return frame
