"""Where the run store lives, whether it can be written, and what a failure means to its user.

`rdqn.runs.store.RunStore` opens its SQLite file through this module, and every SQLite or file
error it meets becomes one `StoreError` whose message names the path and says what to do:

    home folder is a file, /proc, not creatable     cannot create / use the folder: pick another
    <home>/rdqn.db is a folder                      move it away or set RDQN_HOME to another folder
    not a database, damaged, another program's      not an rdqn run store: move it away ...
    read-only file or folder                        opened for reading: listing, showing and
                                                    exporting work; a write says "read-only"
    disk full (SQLite, or a checkpoint file)        disk full while ...: free space in <folder>
    locked longer than the busy timeout             another process holds it: try again

A read-only store is opened with SQLite's ``mode=ro`` (no switch to WAL, no migration). A WAL
database whose folder is read-only cannot get the shared-memory file SQLite reads it with, so
when no write-ahead log is pending it is opened as ``immutable`` instead (nobody can write it:
the folder is read-only).
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

__all__ = ["StoreError", "checkpoint_error", "connect", "open_home", "store_error"]

ELSEWHERE = "set RDQN_HOME (or --home) to another folder"
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


class StoreError(RuntimeError):
    """The run store cannot be opened or written: the message names the path and what to do."""


def _writable(path: Path) -> bool:
    """Whether this process may write ``path`` (with its effective ids, as the kernel checks)."""
    if os.access in os.supports_effective_ids:
        return os.access(path, os.W_OK, effective_ids=True)
    return os.access(path, os.W_OK)


def open_home(db: Path) -> bool:
    """Check the store's file ``db`` and its folder, creating the folder if needed; returns
    whether the store is read-only (it exists, and this process may not write it or its folder).

    Raises `StoreError` for a folder that is a file or cannot be created, a ``db`` that is not
    a plain file, and a store that does not exist yet and cannot be created.
    """
    home = db.parent
    if home.exists() and not home.is_dir():
        raise StoreError(f"the run store folder {home} is a file, not a folder: {ELSEWHERE}")
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise StoreError(
            f"cannot create the run store folder {home}: {err.strerror or err}; {ELSEWHERE}"
        ) from err
    if db.is_dir():
        raise StoreError(f"{db} is a folder, not an rdqn run store: move it away or {ELSEWHERE}")
    if db.exists() and not db.is_file():
        raise StoreError(f"{db} is not a regular file, not an rdqn run store: {ELSEWHERE}")
    writable = _writable(home) and (not db.exists() or _writable(db))
    if not db.exists() and not writable:
        raise StoreError(
            f"cannot create the run store {db}: the folder {home} is not writable; {ELSEWHERE}"
        )
    return not writable


def connect(db: Path, *, read_only: bool, timeout: float) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), read-only or not; a
    read-only one is probed, so that an unreadable store fails here."""
    if not read_only:
        return sqlite3.connect(db, timeout=timeout, isolation_level=None, check_same_thread=False)
    uri = db.resolve().as_uri()
    conn = sqlite3.connect(
        f"{uri}?mode=ro", uri=True, timeout=timeout, isolation_level=None, check_same_thread=False
    )
    try:
        conn.execute("PRAGMA user_version").fetchone()
    except sqlite3.OperationalError:
        wal = db.with_name(db.name + "-wal")
        if wal.exists() and wal.stat().st_size:
            raise
        conn.close()
        conn = sqlite3.connect(
            f"{uri}?immutable=1",
            uri=True,
            timeout=timeout,
            isolation_level=None,
            check_same_thread=False,
        )
    return conn


def _name(error: sqlite3.Error) -> str:
    return getattr(error, "sqlite_errorname", "") or ""


def store_error(error: sqlite3.Error, db: Path) -> StoreError:
    """The `StoreError` for an SQLite error met while using the store ``db``."""
    name = _name(error)
    folder = db.parent
    if name.startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT")):
        return StoreError(
            f"{db} is not an rdqn run store (the file is not a database or is damaged): move it "
            f"away or {ELSEWHERE}"
        )
    if name.startswith("SQLITE_FULL") or "disk is full" in str(error):
        return StoreError(f"disk full while writing the run store {db}: free space in {folder}")
    if name.startswith("SQLITE_READONLY"):
        return read_only_error(db)
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return StoreError(
            f"the run store {db} is locked by another process for too long: try again"
        )
    if name.startswith("SQLITE_CANTOPEN"):
        return StoreError(f"cannot open the run store {db} ({error}): {ELSEWHERE}")
    if name.startswith("SQLITE_IOERR"):
        return StoreError(
            f"cannot read or write the run store {db} (disk I/O error): check the disk, or "
            f"{ELSEWHERE}"
        )
    return StoreError(f"the run store {db} failed: {error}")


def read_only_error(db: Path) -> StoreError:
    return StoreError(
        f"the run store {db} is read-only: runs can be listed, shown and exported, not written; "
        f"make {db.parent} writable or {ELSEWHERE}"
    )


def checkpoint_error(error: OSError, path: Path, run_id: str) -> StoreError:
    """The `StoreError` for a checkpoint file that could not be written (earlier checkpoints
    are untouched: writes are atomic, `rdqn.runs.checkpoints.write_checkpoint`)."""
    if error.errno in _NO_SPACE:
        return StoreError(
            f"disk full while saving the checkpoint of run {run_id} to {path}: free space in "
            f"{path.parent}"
        )
    return StoreError(
        f"cannot save the checkpoint of run {run_id} to {path}: {error.strerror or error}; make "
        f"{path.parent} writable or {ELSEWHERE}"
    )
