"""A run's metric tables (``episodes``, ``steps``, ``greedy``) and the latest episode it played
for its watchers (``watched``): written in batches, read as DataFrames (the greedy episodes as
`GreedyReturns` and a `PlayedEpisode`).

`MetricTables` is the part of the run store (`rdqn.runs.store.RunStore`, which hands its calls
on) that writes and reads them; the ``runs`` table is the store's own.

Columns come in the order and with the converters of `rdqn.runs.schema` (``EPISODE_COLUMNS``,
``STEP_COLUMNS``, ``GREEDY_COLUMNS``; the first column is the table's key). SQLite returns None
for NULL, which would make an all-NULL column ``object``; every column is given a numeric dtype
instead: ``float64`` for floats (NULL is NaN), ``int64`` for integers, or pandas' nullable
``Int64`` when a value is missing.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from rdqn.runs.schema import (
    EPISODE_COLUMNS,
    EPISODE_KEYS,
    EVALUATION_COLUMNS,
    EVALUATION_KEYS,
    GREEDY_COLUMNS,
    GREEDY_KEYS,
    INSERT_EPISODES,
    INSERT_EVALUATIONS,
    INSERT_GREEDY,
    INSERT_STEPS,
    INSERT_WATCHED,
    PROGRESS_SET,
    STEP_COLUMNS,
    STEP_KEYS,
    Converter,
    quoted_columns,
    row_params,
)
from rdqn.runs.store_access import Database
from rdqn.training.episodes import GreedyReturns, PlayedEpisode

if TYPE_CHECKING:  # pandas loads with the first table read (see rdqn.runs.store)
    import pandas as pd

__all__ = ["CSV_KINDS", "MetricTables", "read_metric_frame"]

CSV_KINDS = ("episodes", "steps", "evaluations")
"""The tables a run's CSV export offers."""


class MetricTables:
    """The ``episodes``, ``steps`` and ``greedy`` rows and the ``watched`` episode of a store's
    runs (`rdqn.runs.store.RunStore`'s ``write_metrics``, ``episodes``, ``steps``,
    ``greedy_returns``, ``watched_episode`` and ``export_csv``)."""

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
        greedy: Sequence[Mapping[str, Any]] = (),
        evaluations: Sequence[Mapping[str, Any]] = (),
        watched: PlayedEpisode | None = None,
        progress: Mapping[str, int] | None = None,
    ) -> None:
        """Write episode, step, greedy and evaluation rows, the latest watched episode
        (``watched``, kept as `PlayedEpisode.to_bytes`, replacing the one kept) and (optionally)
        progress counters in one transaction.

        Row keys are the columns of :data:`EPISODE_COLUMNS` / :data:`STEP_COLUMNS` /
        :data:`GREEDY_COLUMNS` (missing ones are stored as NULL; ``episode`` / ``updates`` /
        ``played`` are required). ``progress`` takes ``env_steps``, ``updates`` and
        ``episodes``. Rows that repeat a key replace the old row.
        """
        episode_params = row_params(run_id, episodes, EPISODE_COLUMNS, EPISODE_KEYS, "episode")
        step_params = row_params(run_id, steps, STEP_COLUMNS, STEP_KEYS, "step")
        greedy_params = row_params(run_id, greedy, GREEDY_COLUMNS, GREEDY_KEYS, "greedy")
        evaluation_params = row_params(
            run_id, evaluations, EVALUATION_COLUMNS, EVALUATION_KEYS, "evaluation"
        )
        watched_params = None
        if watched is not None:
            watched_params = (run_id, watched.env_steps, watched.to_bytes())
        with self._db.write() as conn:
            self._check_exists(conn, run_id)
            if episode_params:
                conn.executemany(INSERT_EPISODES, episode_params)
            if step_params:
                conn.executemany(INSERT_STEPS, step_params)
            if greedy_params:
                conn.executemany(INSERT_GREEDY, greedy_params)
            if evaluation_params:
                conn.executemany(INSERT_EVALUATIONS, evaluation_params)
            if watched_params is not None:
                conn.execute(INSERT_WATCHED, watched_params)
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

    def greedy_returns(self, run_id: str) -> GreedyReturns:
        """The greedy episodes the run played for its watchers, in the order played."""
        with self._db.read() as conn:
            self._check_exists(conn, run_id)
            frame = read_metric_frame(conn, run_id, "greedy", GREEDY_COLUMNS)
        return GreedyReturns(
            env_steps=frame["env_steps"].to_numpy(np.int64, na_value=0),
            returns=frame["return"].to_numpy(np.float64),
            lengths=frame["length"].to_numpy(np.int64, na_value=0),
        )

    def evaluations(self, run_id: str) -> pd.DataFrame:
        """The run's greedy evaluation episodes ordered by env step, then episode."""
        with self._db.read() as conn:
            self._check_exists(conn, run_id)
            frame = read_metric_frame(conn, run_id, "evaluations", EVALUATION_COLUMNS)
        return frame.sort_values(["env_steps", "episode"], kind="stable", ignore_index=True)

    def watched_episode(self, run_id: str) -> PlayedEpisode | None:
        """The latest greedy episode the run played (None: none yet, or one the store cannot
        read back, as written by another version)."""
        with self._db.read() as conn:
            self._check_exists(conn, run_id)
            row = conn.execute("SELECT episode FROM watched WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            return None
        try:
            return PlayedEpisode.from_bytes(row[0])
        except ValueError:
            return None

    def export_csv(self, run_id: str, kind: Literal["episodes", "steps", "evaluations"]) -> str:
        """The run's ``episodes``, ``steps`` or ``evaluations`` as CSV text with a header row
        (floats round-trip)."""
        if kind not in CSV_KINDS:
            raise ValueError(f"kind must be one of {', '.join(map(repr, CSV_KINDS))}, got {kind!r}")
        return str(getattr(self, kind)(run_id).to_csv(index=False))

    def rewind(self, conn: sqlite3.Connection, run_id: str, counters: tuple[int, int, int]) -> None:
        """Drop the run's rows past ``counters`` (env steps, updates, episodes), inside the
        caller's write (a resume taking the run: `RunStore.set_status`); the greedy episodes
        played and evaluated after the env step the run resumes from go too (that policy is
        gone)."""
        env_steps, updates, episodes = counters
        conn.execute("DELETE FROM episodes WHERE run_id = ? AND episode > ?", (run_id, episodes))
        conn.execute("DELETE FROM steps WHERE run_id = ? AND updates > ?", (run_id, updates))
        for table in ("greedy", "watched", "evaluations"):
            conn.execute(
                f"DELETE FROM {table} WHERE run_id = ? AND env_steps > ?", (run_id, env_steps)
            )


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
