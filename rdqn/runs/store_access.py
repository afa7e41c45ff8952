"""Where the run store lives, whether it can be written, and what a failure means to its user.

`rdqn.runs.store.RunStore` opens its SQLite file through this module, and every SQLite or file
error it meets becomes one `StoreError` whose message names the path and says what to do:

    home folder is a file, /proc, not creatable     cannot create / use the folder: pick another
    <home>/rdqn.db is a folder                      move it away or set RDQN_HOME to another folder
    not a database, damaged, another program's      not an rdqn run store: move it away ...
    read-only file or folder                        opened for reading: listing, showing and
                                                    exporting work; a write says "read-only"
    disk full (SQLite, or a checkpoint file)        disk full while ...: free space in <folder>
    disk full when the store is opened              opened for reading as above; a write says
                                                    "is full", or works once space is freed
    locked longer than the busy timeout             another process holds it: try again

A read-only store is opened with SQLite's ``mode=ro`` (no switch to WAL, no migration). A WAL
database whose folder is read-only cannot get the shared-memory file SQLite reads it with, so
when no write-ahead log is pending it is opened as ``immutable`` instead (nobody can write it:
the folder is read-only).

A full disk stops a WAL store from being opened at all, even to read: SQLite must first grow the
shared-memory file (``-shm``, 32 KiB) it reads the log through, and SQLite removes that file when
the last connection closes, so a store no process holds open cannot be read on a full disk
(`StoreFull`). `rdqn.runs.store.RunStore` then reads it the read-only way (``immutable`` when no
log is pending) and refuses writes with `full_error`, until a write finds space again: then it
reconnects for writing (`Database.write`), so freeing space needs no restart.

`Database` is the store's SQLite file as its threads use it: one connection per thread, never
shared (a connection carries transaction state, so two threads on one connection interleave each
other's writes), explicit transactions, and every SQLite error turned into a `StoreError`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import sys
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = [
    "Database",
    "StoreError",
    "StoreFull",
    "StoreMissing",
    "checkpoint_error",
    "connect",
    "full_error",
    "open_home",
    "read_only_error",
    "store_error",
]

ELSEWHERE = "set RDQN_HOME (or --home) to another folder"
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


class StoreError(RuntimeError):
    """The run store cannot be opened or written: the message names the path and what to do."""


class StoreMissing(StoreError):
    """There is no run store where one was to be read (`open_home` with ``create=False``)."""


class StoreFull(StoreError):
    """The disk holding the run store is full: SQLite could not write the store, its log, or
    the shared-memory file it reads a WAL store through."""


def _writable(path: Path) -> bool:
    """Whether this process may write ``path`` (with its effective ids, as the kernel checks)."""
    if os.access in os.supports_effective_ids:
        return os.access(path, os.W_OK, effective_ids=True)
    return os.access(path, os.W_OK)


def open_home(db: Path, *, create: bool = True) -> bool:
    """Check the store's file ``db`` and its folder, creating the folder if needed; returns
    whether the store is read-only (it exists, and this process may not write it or its folder).

    Raises `StoreError` for a folder that is a file or cannot be created, a ``db`` that is not
    a plain file, and a store that does not exist yet and cannot be created. Without
    ``create`` (a command that only reads), a store that does not exist yet raises
    `StoreMissing`, and nothing is created.
    """
    home = db.parent
    if home.exists() and not home.is_dir():
        raise StoreError(f"the run store folder {home} is a file, not a folder: {ELSEWHERE}")
    if not create and not db.exists():
        _check_missing_store(db)
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


def _check_missing_store(db: Path) -> None:
    """`StoreMissing` for a store that does not exist yet but could be created where ``db``
    is; `StoreError` for a place that could never hold one, as `open_home` would say when
    asked to create it (a folder under a file, a folder that is not writable)."""
    home = db.parent
    if db.is_symlink():
        raise StoreError(f"{db} is a broken link, not an rdqn run store: {ELSEWHERE}")
    if home.is_dir():
        if not _writable(home):
            raise StoreError(
                f"there is no run store at {db}, and none can be created: the folder {home} is "
                f"not writable; {ELSEWHERE}"
            )
    else:
        above = next((folder for folder in home.parents if folder.exists()), None)
        if above is not None and not above.is_dir():
            raise StoreError(
                f"cannot create the run store folder {home}: {above} is a file, not a folder; "
                f"{ELSEWHERE}"
            )
    raise StoreMissing(f"there is no run store at {db}")


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
        return StoreFull(f"disk full while writing the run store {db}: free space in {folder}")
    if name.startswith("SQLITE_IOERR_SHMSIZE"):  # the -shm file could not grow: no space
        return StoreFull(f"disk full while opening the run store {db}: free space in {folder}")
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


def full_error(db: Path) -> StoreFull:
    """What a write to a store opened for reading on a full disk says."""
    return StoreFull(
        f"the disk holding the run store {db} is full: runs can be listed, shown and exported, "
        f"not written; free space in {db.parent} or {ELSEWHERE}"
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


class _ThreadConnection:
    """One thread's connection, kept in that thread's locals: closed when the thread ends (its
    locals go, and with them the last reference; the store's first connection excepted) or when
    the store closes. Script threads come and go with every page run; their connections once
    stayed open until another thread connected (a reload storm left a dozen)."""

    __slots__ = ("__weakref__", "conn", "generation")

    def __init__(self, conn: sqlite3.Connection, generation: int) -> None:
        self.conn = conn
        self.generation = generation

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.conn.close()

    def __del__(self) -> None:
        self.close()


class Database:
    """The SQLite file ``path`` used from many threads (and processes): each thread gets its own
    connection; `read` is one snapshot, `write` one ``BEGIN IMMEDIATE`` transaction (the write
    lock taken up front, so a writer waits ``busy_timeout_ms`` rather than failing when another
    process made its read snapshot stale). Any SQLite error inside either is a `StoreError`; a
    write to a ``read_only`` database is one too."""

    def __init__(
        self, path: Path, *, read_only: bool, busy_timeout_ms: int, full: bool = False
    ) -> None:
        self.path = path
        self.read_only = read_only
        self.full = full
        """Opened for reading because the disk was full: a write says `full_error`, or, once
        space is back, reconnects for writing (`check_writable`)."""
        self.may_write_again = full
        """Whether a store opened on a full disk may switch to writing when space is back (not
        one of an older schema: it was read without being migrated)."""
        self._generation = 0
        """Bumped when the store switches to writing: connections of an earlier one reopen."""
        self._busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: weakref.WeakValueDictionary[int, _ThreadConnection] = (
            weakref.WeakValueDictionary()
        )
        self._keeper: _ThreadConnection | None = None
        """The first connection, kept open until the store closes: while one is open, SQLite
        keeps its log and shared-memory files (the last close folds the log into the database
        and deletes them, and a store that had filled its disk could then write again)."""
        self._closed = False
        self._pid = os.getpid()

    def connect(self) -> sqlite3.Connection:
        """This thread's connection (opened on first use)."""
        if self._closed:
            raise RuntimeError(f"the run store {self.path} is closed")
        if os.getpid() != self._pid:
            # A forked child must not touch its parent's connections (SQLite forbids it), not
            # even to close them: start afresh.
            self._local = threading.local()
            self._lock = threading.Lock()
            self._connections = weakref.WeakValueDictionary()
            self._keeper = None
            self._pid = os.getpid()
        held: _ThreadConnection | None = getattr(self._local, "held", None)
        if held is not None and held.generation == self._generation:
            return held.conn
        if held is not None:  # a read-only one, from before the store could be written again
            with self._lock:
                self._connections.pop(id(held), None)
            held.close()
        # check_same_thread=False only lets close() reclaim it: one thread uses it.
        conn = connect(self.path, read_only=self.read_only, timeout=self._busy_timeout_ms / 1000)
        try:
            conn.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
            if not self.read_only:
                conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
        except BaseException:
            conn.close()
            raise
        held = _ThreadConnection(conn, self._generation)
        with self._lock:
            self._connections[id(held)] = held
            if self._keeper is None or self._keeper.generation != self._generation:
                self._keeper = held
        self._local.held = held
        return conn

    def check_writable(self) -> None:
        """`StoreError` unless this store can be written: `read_only_error`, or `full_error`
        for a store opened on a full disk where there is still no space (`write` checks it)."""
        if self.read_only and not self._writable_again():
            raise full_error(self.path) if self.full else read_only_error(self.path)

    def _writable_again(self) -> bool:
        """For a store opened for reading on a full disk: whether a connection for writing can
        read it now (SQLite could grow its shared-memory file), switching to writing if so."""
        if not (self.full and self.may_write_again):
            return False
        probe = connect(self.path, read_only=False, timeout=self._busy_timeout_ms / 1000)
        try:
            probe.execute("PRAGMA user_version").fetchone()
        except sqlite3.Error:
            return False
        finally:
            probe.close()
        with self._lock:
            self.read_only = self.full = False
            self._generation += 1
        return True

    @contextmanager
    def errors(self) -> Iterator[None]:
        """Turn an SQLite error (raised directly, or wrapped by pandas) into a `StoreError`."""
        try:
            yield
        except sqlite3.Error as err:
            raise store_error(err, self.path) from err
        except Exception as err:
            if "pandas" not in sys.modules:  # loaded with the first table read: not its error
                raise
            import pandas as pd  # (waits if another thread is still importing it)

            if not isinstance(err, pd.errors.DatabaseError):
                raise
            cause = err.__cause__
            if isinstance(cause, sqlite3.Error):
                raise store_error(cause, self.path) from err
            raise StoreError(f"the run store {self.path} failed: {err}") from err

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, committed at the end, rolled back on any exception."""
        self.check_writable()
        with self.errors():
            conn = self.connect()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):  # the first error matters
                        conn.execute("ROLLBACK")
                raise

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """One read snapshot: every statement inside sees the same committed state."""
        with self.errors():
            conn = self.connect()
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")

    def close(self) -> None:
        """Close every thread's connection. Idempotent; later use raises ``RuntimeError``."""
        with self._lock:
            self._closed = True
            connections = list(self._connections.values())
            self._connections = weakref.WeakValueDictionary()
            self._keeper = None
        for held in connections:
            held.close()
