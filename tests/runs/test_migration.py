"""Tests for rdqn.runs.migration: a new store is at the schema's version in WAL mode, an older one
gains its columns with its rows kept, a newer one is refused."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from rdqn.runs.processes import process_start
from rdqn.runs.schema import MIGRATIONS, SCHEMA_VERSION
from rdqn.runs.store import RunStore, owner_hash


def an_old_store(path: Path, version: int, insert: str, *params: object) -> None:
    """A store file at schema ``version`` (its migrations run by hand) holding the run
    ``insert`` writes: what an older rdqn left."""
    raw = sqlite3.connect(path)
    for statements in MIGRATIONS[:version]:
        for statement in statements:
            raw.execute(statement)
    raw.execute(f"PRAGMA user_version = {version}")
    raw.execute(insert, params)
    raw.commit()
    raw.close()


def test_wal_mode_and_schema_version(store: RunStore) -> None:
    raw = sqlite3.connect(store.path)
    try:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 1
    finally:
        raw.close()


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "rdqn.db"
    RunStore(path).close()
    raw = sqlite3.connect(path)
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    raw.close()
    with pytest.raises(RuntimeError, match="newer than this rdqn"):
        RunStore(path)


def test_a_version_1_store_gains_the_resume_column(tmp_path: Path) -> None:
    path = tmp_path / "rdqn.db"
    an_old_store(
        path,
        1,
        "INSERT INTO runs (id, created_at, updated_at, status, env_id, scheme, seed, config_json, "
        "checkpoint_path, env_steps) VALUES ('old', 0, 0, 'stopped', 'CartPole-v1', 'uniform', 0, "
        "'{}', '/somewhere/old.pt', 40)",
    )
    with RunStore(path) as s:
        record = s.get_run("old")
        assert (record.status, record.env_steps, record.resume_env_steps) == ("stopped", 40, None)


def test_a_version_3_store_gains_the_owner_hash_column(tmp_path: Path) -> None:
    path = tmp_path / "rdqn.db"
    an_old_store(
        path,
        3,
        "INSERT INTO runs (id, created_at, updated_at, status, env_id, scheme, seed, config_json) "
        "VALUES ('old', 0, 0, 'stopped', 'CartPole-v1', 'uniform', 0, '{}')",
    )
    with RunStore(path) as s:
        assert s.get_run("old").owner_hash is None  # nobody's
        assert list(s.list_runs()["owner_hash"]) == [None]
        s.set_owner_hash("old", "a browser")
        assert s.get_run("old").owner_hash == owner_hash("a browser")
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    raw.close()


def test_a_version_4_store_gains_the_greedy_episodes(tmp_path: Path) -> None:
    """Its runs have played none (as far as the store knows), and can record some now."""
    path = tmp_path / "rdqn.db"
    an_old_store(
        path,
        4,
        "INSERT INTO runs (id, created_at, updated_at, status, env_id, scheme, seed, config_json) "
        "VALUES ('old', 0, 0, 'finished', 'CartPole-v1', 'uniform', 0, '{}')",
    )
    with RunStore(path) as s:
        assert len(s.metrics.greedy_returns("old")) == 0
        assert s.metrics.watched_episode("old") is None
        s.write_metrics("old", greedy=[{"played": 0, "env_steps": 0, "return": 9.0, "length": 9}])
        assert s.metrics.greedy_returns("old").returns.tolist() == [9.0]
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    raw.close()


def test_a_version_5_store_gains_the_evaluations(tmp_path: Path) -> None:
    """Its runs have none (as far as the store knows), can record some now, and export them."""
    path = tmp_path / "rdqn.db"
    an_old_store(
        path,
        5,
        "INSERT INTO runs (id, created_at, updated_at, status, env_id, scheme, seed, config_json) "
        "VALUES ('old', 0, 0, 'finished', 'CartPole-v1', 'uniform', 0, '{}')",
    )
    with RunStore(path) as s:
        assert s.metrics.evaluations("old").empty
        row = {"env_steps": 100, "episode": 0, "seed": 10_000, "return": 9.0, "length": 9}
        s.write_metrics("old", evaluations=[row])
        assert s.metrics.export_csv("old", "evaluations") == (
            "env_steps,episode,seed,return,length\n100,0,10000,9.0,9\n"
        )
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 6
    raw.close()


def test_a_version_2_store_gains_the_owner_start_column(tmp_path: Path) -> None:
    path = tmp_path / "rdqn.db"
    an_old_store(
        path,
        2,
        "INSERT INTO runs (id, created_at, updated_at, status, env_id, scheme, seed, config_json, "
        "owner_pid) VALUES ('old', 0, 0, 'running', 'CartPole-v1', 'uniform', 0, '{}', ?)",
        os.getpid(),
    )
    with RunStore(path) as s:
        record = s.get_run("old")  # its owner (this pid, start unknown) is taken as alive
        assert (record.status, record.owner_pid, record.owner_start) == (
            "running",
            os.getpid(),
            None,
        )
        s.set_status("old", "paused")
        assert s.get_run("old").owner_start == process_start(os.getpid())
