"""rdqn.runs.store_access: every SQLite error inside `Database.errors`, raised directly or
wrapped by pandas, becomes one `StoreError`; anything else passes through unchanged."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from rdqn.runs.store_access import Database, StoreError


@pytest.fixture
def database(tmp_path: Path) -> Database:
    return Database(tmp_path / "rdqn.db", read_only=False, busy_timeout_ms=100)


def test_an_sqlite_error_is_a_store_error(database: Database) -> None:
    with pytest.raises(StoreError, match="rdqn.db"), database.errors():
        raise sqlite3.OperationalError("disk I/O error")


def test_pandas_wrapping_an_sqlite_error_is_the_same_store_error(database: Database) -> None:
    with pytest.raises(StoreError) as direct, database.errors():
        raise sqlite3.OperationalError("disk I/O error")
    wrapped = pd.errors.DatabaseError("Execution failed on sql 'SELECT 1': disk I/O error")
    wrapped.__cause__ = sqlite3.OperationalError("disk I/O error")
    with pytest.raises(StoreError) as through_pandas, database.errors():
        raise wrapped
    assert str(through_pandas.value) == str(direct.value)


def test_a_pandas_database_error_of_its_own_is_a_store_error(database: Database) -> None:
    expected = pytest.raises(StoreError, match="the run store .* failed: no such table")
    with expected, database.errors():
        raise pd.errors.DatabaseError("no such table")


def test_other_errors_pass_through(database: Database) -> None:
    with pytest.raises(ValueError, match="not a store error"), database.errors():
        raise ValueError("not a store error")


def test_a_real_read_of_a_damaged_file_through_pandas_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "rdqn.db"
    path.write_bytes(b"this is not a database" * 100)
    database = Database(path, read_only=True, busy_timeout_ms=100)
    with pytest.raises(StoreError, match="is not an rdqn run store"), database.errors():
        pd.read_sql_query("SELECT 1 FROM runs", database.connect())
