"""Reading a run's metric tables (``episodes``, ``steps``) as DataFrames.

Columns come in the order and with the converters of `rdqn.runs.schema` (``EPISODE_COLUMNS``,
``STEP_COLUMNS``; the first column is the table's key). SQLite returns None for NULL, which would
make an all-NULL column ``object``; every column is given a numeric dtype instead: ``float64`` for
floats (NULL is NaN), ``int64`` for integers, or pandas' nullable ``Int64`` when a value is missing.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from rdqn.runs.schema import Converter, quoted_columns

if TYPE_CHECKING:  # pandas loads with the first table read (see rdqn.runs.store)
    import pandas as pd

__all__ = ["read_metric_frame"]


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
