"""The run store: runs, their configs, manifests and metrics in one embedded SQLite file.

A background training thread writes while dashboard and CLI threads read, possibly from two
processes (a dashboard and a CLI run sharing one ``RDQN_HOME``). SQLite's write-ahead log gives
exactly that: readers see the last committed snapshot and never block the single writer, and a
writer waits (``busy_timeout``) instead of failing when another process holds the write lock.
``synchronous=NORMAL`` means a commit costs no fsync in WAL mode; a power cut can lose the last
few commits but never corrupts the file.

Rules kept (the connections and transactions: `rdqn.runs.store_access.Database`):

* One ``sqlite3`` connection per thread (a ``threading.local``), never shared: a connection
  carries transaction state, so two threads on one connection interleave each other's writes.
* Every write is one ``BEGIN IMMEDIATE`` transaction: the write lock is taken up front, so a
  writer waits on ``busy_timeout`` rather than failing with "database is locked" when it tries to
  upgrade a read snapshot that another process has made stale.
* Metric rows are written in batches (`rdqn.runs.writer.RunWriter`); per-row commits would cost
  the training loop far more than the 2% the design allows.

Faults: a home that is a file or cannot be created, a file that is not an rdqn store (garbage,
damaged, another program's database), a read-only store (opened for reading, no migration), a
full disk, a lock held too long: each is one `StoreError` naming the path and what to do
(`rdqn.runs.store_access`), at open or at the read or write that meets it. A store opened on a
full disk is read as a read-only one is, and written again once there is space; a run's final
status that a full disk keeps out of the file is read from memory until it can be written
(`RunStore.set_status`).

A run's status is written through `rdqn.runs.lifecycle.record_status` only; the store calls it
itself for the runs of a process that died (`rdqn.runs.orphans`) and for a final status a full
disk kept out. The metric tables (``episodes``, ``steps``) are `rdqn.runs.metric_tables`'.

Layout (``default_home()`` is ``$RDQN_HOME`` or ``.rdqn``)::

    <home>/rdqn.db            this store (plus rdqn.db-wal, rdqn.db-shm while open)
    <home>/checkpoints/       checkpoint files; delete_run removes the ones that live here, and
                              opening the store the temporary files of interrupted saves

The ``runs`` table records a checkpoint in the home folder by its path relative to the folder,
so a copied or moved home resumes from its own files (`rdqn.runs.checkpoint_paths`); records read
(`RunStore.get_run`, `RunStore.list_runs`) give it as a path to open.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rdqn.runs.checkpoint_chunks import Chunks, remove_folder
from rdqn.runs.checkpoint_paths import CheckpointPaths
from rdqn.runs.checkpoints import remove_orphan_temporaries, write_checkpoint
from rdqn.runs.metric_tables import MetricTables
from rdqn.runs.migration import migrate
from rdqn.runs.orphans import orphans
from rdqn.runs.processes import this_process
from rdqn.runs.schema import (
    ACTIVE_STATUSES,
    FINAL_STATUSES,
    PROGRESS_SET,
    STATUSES,
    RunRecord,
    default_run_name,
)
from rdqn.runs.status import Counters, record_status
from rdqn.runs.store_access import (
    Database,
    StoreError,
    StoreFull,
    StoreMissing,
    checkpoint_error,
    open_home,
)
from rdqn.runs.unwritten import UnwrittenStatuses

if TYPE_CHECKING:  # pandas loads with the first table read: a worker that trains never does
    import pandas as pd


__all__ = [
    "RunRecord",
    "RunStore",
    "StoreError",
    "StoreFull",
    "StoreMissing",
    "default_home",
    "owner_hash",
]

_BUSY_TIMEOUT_MS = 10_000
_SWEEP_EVERY_S = 2.0
"""How often reading runs also looks for runs whose process died (`RunStore.mark_interrupted`)."""


def default_home() -> Path:
    """The store's home directory: ``$RDQN_HOME`` if set, else ``.rdqn`` (relative to the cwd)."""
    return Path(os.environ.get("RDQN_HOME", ".rdqn"))


def owner_hash(owner: str) -> str:
    """What the store keeps of a run's owner: the first 16 hex digits of its SHA-256, enough to
    tell one owner's runs from another's, never the owner (a client's secret) itself."""
    return hashlib.sha256(owner.encode()).hexdigest()[:16]


_GUARDED = frozenset(
    {"status", "error", "owner_pid", "resume_env_steps", "env_steps", "updates", "episodes"}
)
"""The columns `RunStore.set_status` may be told to expect."""


def _check_status(status: str) -> None:
    if status not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}, got {status!r}")


def _to_json(value: Mapping[str, Any], what: str) -> str:
    try:
        return json.dumps(dict(value), sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} must be JSON-serialisable: {exc}") from exc


class RunStore:
    """Runs, configs, manifests and per-episode / per-update metrics in SQLite (WAL).

    ``path`` is the database file (default ``default_home() / "rdqn.db"``); checkpoints belong in
    ``checkpoint_dir`` = ``<db directory>/checkpoints``. Safe to use from many threads (each gets
    its own connection) and from several processes. Call :meth:`close` once all threads are done.
    Unknown run ids raise ``KeyError``; invalid arguments raise ``ValueError``.

    Runs whose process died (killed, crashed) are marked 'stopped' as interrupted
    whenever runs are read (`get_run`, `list_runs`; at most every ``_SWEEP_EVERY_S`` seconds):
    see `mark_interrupted`.

    Its metric rows are read through ``metrics`` (`rdqn.runs.metric_tables.MetricTables`:
    ``store.metrics.episodes(run_id)``, steps, greedy returns, evaluations, the watched episode,
    CSV export).

    Without ``create`` (for commands that only read), a store that does not exist is not
    created: `StoreMissing` (a `StoreError`) says so.

    A store this process may not write opens ``read_only``: everything that reads works, every
    write raises `StoreError`. Any failure of the file (see the module docstring) raises
    `StoreError`, at open or later.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, create: bool = True) -> None:
        db = Path(path) if path is not None else default_home() / "rdqn.db"
        if str(db) == ":memory:":
            raise ValueError("path must be a file: an in-memory database is private to one thread")
        read_only = open_home(db, create=create)
        self.path: Path = db
        self._checkpoints = CheckpointPaths(db)
        self.checkpoint_dir: Path = self._checkpoints.folder
        self._db = Database(db, read_only=read_only, busy_timeout_ms=_BUSY_TIMEOUT_MS)
        self.metrics = MetricTables(self._db, db)
        self._next_sweep = 0.0
        self._unwritten = UnwrittenStatuses()
        try:
            try:
                self._run_columns = migrate(self._db, db)
            except StoreFull:
                if read_only:
                    raise
                # Too full to open a WAL store even to read it (`rdqn.runs.store_access`):
                # what is stored is read as a read-only store is, writes wait for space.
                self._db.close()
                self._db = Database(db, read_only=True, busy_timeout_ms=_BUSY_TIMEOUT_MS, full=True)
                self.metrics = MetricTables(self._db, db)
                self._run_columns = migrate(self._db, db)
        except BaseException:
            self.close()
            raise
        if self.checkpoint_dir.exists() and not self.checkpoint_dir.is_dir():
            # Found at a run's first save, after its whole budget: say so before any run.
            self.close()
            raise StoreError(
                f"{self.checkpoint_dir} is a file: the store keeps its runs' checkpoints in a "
                "folder of that name; move the file away"
            )
        if not self.read_only:
            remove_orphan_temporaries(self.checkpoint_dir)

    @property
    def read_only(self) -> bool:
        """Whether writes are refused: the file or its folder is read-only, or the disk was full
        when it was opened (until a write finds space again)."""
        return self._db.read_only

    def close(self) -> None:
        """Close every thread's connection. Idempotent; later calls raise ``RuntimeError``."""
        self._db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- runs -------------------------------------------------------------------------------

    def create_run(
        self,
        *,
        config: Mapping[str, Any],
        name: str | None = None,
        preset: str | None = None,
        env_id: str,
        scheme: str,
        seed: int,
        group_id: str | None = None,
    ) -> str:
        """Insert a run with status ``'created'`` and return its id (12 hex digits of a uuid4).

        ``name`` defaults to ``"<preset or scheme> <env_id> seed <seed>"``.
        """
        config_json = _to_json(config, "config")
        run_id = uuid.uuid4().hex[:12]
        now = time.time()
        label = name if name is not None else default_run_name(preset, scheme, env_id, seed)
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO runs (id, name, created_at, updated_at, status, preset, env_id, "
                "scheme, seed, config_json, group_id, owner_pid, owner_start) "
                "VALUES (?, ?, ?, ?, 'created', ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, label, now, now, preset, env_id, scheme, int(seed), config_json)
                + (group_id, *this_process()),
            )
        return run_id

    def _update_run(
        self, conn: sqlite3.Connection, run_id: str, sql: str, params: tuple[Any, ...]
    ) -> None:
        cursor = conn.execute(
            f"UPDATE runs SET {sql}, updated_at = ? WHERE id = ?", (*params, time.time(), run_id)
        )
        if cursor.rowcount == 0:
            raise KeyError(f"no run with id {run_id!r} in {self.path}")

    def set_status(
        self,
        run_id: str,
        status: str,
        error: str | None = None,
        *,
        expect: Mapping[str, Any] | None = None,
        rewind: Counters | None = None,
    ) -> bool:
        """Set ``status`` (one of :data:`STATUSES`) and ``error`` (``None`` clears it); called by
        `rdqn.runs.lifecycle.record_status` only, which says what ``expect`` and ``rewind`` do.
        Returns False, writing nothing, when the run is not as ``expect`` says.

        Moving to ``'running'`` or ``'paused'`` records this process as the run's process.

        A final status that a full disk keeps out of the file (`StoreFull`, raised) is kept in
        memory (`rdqn.runs.unwritten`): this store reads the run with it, and writes it at the
        first read, every few seconds, that finds space.
        """
        _check_status(status)
        expected = dict(expect or {})
        if not expected.keys() <= _GUARDED:
            raise ValueError(f"expect takes {sorted(_GUARDED)}, got {sorted(expected)}")
        sets, params = "status = ?, error = ?", (status, error)
        if status in ACTIVE_STATUSES:
            sets, params = f"{sets}, owner_pid = ?, owner_start = ?", (*params, *this_process())
        if rewind is not None:
            sets, params = f"{sets}, {PROGRESS_SET}", (*params, *map(int, rewind))
        try:
            with self._db.write() as conn:
                names = sorted(expected)
                columns = ", ".join(["id", *names])
                row = conn.execute(f"SELECT {columns} FROM runs WHERE id = ?", (run_id,)).fetchone()
                if row is None:
                    raise KeyError(f"no run with id {run_id!r} in {self.path}")
                if list(row[1:]) != [expected[name] for name in names]:
                    return False  # another process took or closed the run meanwhile
                if rewind is not None:
                    self.metrics.rewind(conn, run_id, rewind)
                self._update_run(conn, run_id, sets, params)
        except StoreFull:
            if status in FINAL_STATUSES and not expected:
                self._unwritten.keep(run_id, status, error)
            raise
        self._unwritten.written(run_id)
        return True

    def _write_unwritten(self) -> None:
        """Write the statuses a full disk kept out (`set_status`), while there is space."""
        for run_id, (status, error) in self._unwritten.copy().items():
            try:
                record_status(self, run_id, status, error)
            except KeyError:  # deleted since
                self._unwritten.written(run_id)
            except StoreError:
                return

    def set_manifest(self, run_id: str, manifest: Mapping[str, Any]) -> None:
        """Store the run manifest (see :func:`rdqn.runs.manifest.build_manifest`) as JSON."""
        manifest_json = _to_json(manifest, "manifest")
        with self._db.write() as conn:
            self._update_run(conn, run_id, "manifest_json = ?", (manifest_json,))

    def set_checkpoint(
        self,
        run_id: str,
        path: str | os.PathLike[str] | None,
        *,
        resume_env_steps: int | None = None,
    ) -> None:
        """Record the run's latest checkpoint file (``None`` forgets it) and, if it holds a resume
        state, the env step it resumes from. A file in the store's folder is recorded relative
        to it (a copied or moved store reads its own files); any other as an absolute path."""
        value = None if path is None else self._checkpoints.stored(Path(path))
        resume = None if value is None or resume_env_steps is None else int(resume_env_steps)
        with self._db.write() as conn:
            self._update_run(
                conn, run_id, "checkpoint_path = ?, resume_env_steps = ?", (value, resume)
            )

    def save_checkpoint(
        self,
        run_id: str,
        data: bytes,
        *,
        chunks: Chunks | None = None,
        resume_env_steps: int | None = None,
    ) -> Path:
        """Write a run's checkpoint (`rdqn.runs.checkpoints.checkpoint_parts`: its bytes and
        chunks) atomically to `checkpoint_path_for` and record the file (with
        ``resume_env_steps`` when it holds a resume state, `rdqn.runs.resume`); returns its
        path."""
        self.get_run(run_id)
        self._db.check_writable()
        target = self.checkpoint_path_for(run_id)
        try:
            path = write_checkpoint(data, target, chunks)
        except OSError as err:
            raise checkpoint_error(err, target, run_id) from err
        self.set_checkpoint(run_id, path, resume_env_steps=resume_env_steps)
        return path

    def set_owner_hash(self, run_id: str, owner: str | None) -> None:
        """Record whose run it is as `owner_hash` of ``owner`` (None: nobody's); the owner itself
        is never stored."""
        value = None if owner is None else owner_hash(owner)
        with self._db.write() as conn:
            self._update_run(conn, run_id, "owner_hash = ?", (value,))

    def checkpoint_path_for(self, run_id: str) -> Path:
        """Where a run's checkpoint belongs: ``checkpoint_dir / "<run_id>.pt"``."""
        return self._checkpoints.for_run(run_id)

    def get_run(self, run_id: str) -> RunRecord:
        """The run's record; ``KeyError`` naming the id if there is none."""
        self._sweep()
        with self._db.read() as conn:
            cursor = conn.cursor()
            cursor.row_factory = sqlite3.Row
            row = cursor.execute(
                f"SELECT {self._run_columns} FROM runs WHERE id = ?", (run_id,)
            ).fetchone()
        if row is None:
            raise KeyError(f"no run with id {run_id!r} in {self.path}")
        values = dict(row)
        values["status"], values["error"] = self._unwritten.get(
            run_id, (values["status"], values["error"])
        )
        values["checkpoint_path"] = self._checkpoints.read(values["checkpoint_path"])
        config = json.loads(values.pop("config_json"))
        manifest_json = values.pop("manifest_json")
        manifest = None if manifest_json is None else json.loads(manifest_json)
        return RunRecord(config=config, manifest=manifest, **values)

    def list_runs(self, status: str | None = None, group_id: str | None = None) -> pd.DataFrame:
        """Runs as a DataFrame, newest first, one column per ``runs`` column (JSON kept as text)."""
        self._sweep()
        clauses: list[str] = []
        params: list[Any] = []
        unwritten = self._unwritten.copy()
        if status is not None:
            _check_status(status)
            if not unwritten:  # else filtered below, on the statuses as read
                clauses.append("status = ?")
                params.append(status)
        if group_id is not None:
            clauses.append("group_id = ?")
            params.append(group_id)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        sql = f"SELECT {self._run_columns} FROM runs {where} ORDER BY created_at DESC, rowid DESC"
        import pandas as pd

        with self._db.read() as conn:
            frame = pd.read_sql_query(sql, conn, params=params)
        for run_id, (run_status, error) in unwritten.items():
            frame.loc[frame["id"] == run_id, ["status", "error"]] = [run_status, error]
        if unwritten and status is not None:
            frame = frame[frame["status"] == status].reset_index(drop=True)
        paths = [
            self._checkpoints.read(v) if isinstance(v, str) else v for v in frame["checkpoint_path"]
        ]
        frame["checkpoint_path"] = pd.Series(paths, index=frame.index, dtype=object)
        return frame

    def statuses(self) -> dict[str, str]:
        """Each run's status by id, as `list_runs` gives it, without its other columns: cheap
        enough for a page to poll."""
        self._sweep()
        unwritten = self._unwritten.copy()
        with self._db.read() as conn:
            found = dict(conn.execute("SELECT id, status FROM runs").fetchall())
        for run_id, (status, _) in unwritten.items():
            if run_id in found:
                found[run_id] = status
        return found

    def delete_run(self, run_id: str) -> None:
        """Delete the run, its episode and step rows (cascade), and its checkpoint file (with its
        chunks) if that
        file lies under :attr:`checkpoint_dir` (files elsewhere are the caller's)."""
        with self._db.write() as conn:
            row = conn.execute(
                "SELECT checkpoint_path FROM runs WHERE id = ?", (run_id,)
            ).fetchone()
            if row is None:
                raise KeyError(f"no run with id {run_id!r} in {self.path}")
            conn.execute("DELETE FROM runs WHERE id = ?", (run_id,))
        self._unwritten.written(run_id)
        checkpoint = self._checkpoints.read(row[0])
        if checkpoint is not None and self._checkpoints.is_own(checkpoint):
            Path(checkpoint).resolve().unlink(missing_ok=True)
            remove_folder(Path(checkpoint).resolve())

    def mark_interrupted(self) -> int:
        """Mark runs a dead process left behind as ``'stopped'``, with the reason: runs it left
        ``'running'``/``'paused'`` ("interrupted: the process running it ended") and runs it
        queued that never started. Returns how many runs were marked.

        A run's process is dead when no process with its pid and start time runs
        (`rdqn.runs.processes`); a run whose process still lives (say a CLI run beside the
        dashboard) is left alone. Reading runs does the same every few seconds; this call is for
        startup, before this process starts any run: it also takes runs of this process's pid
        as left over from a crashed predecessor that had it.
        """
        if self.read_only:
            return 0  # nothing can be marked; readers see the runs as they were left
        return self._mark_orphans(startup=True)

    def _mark_orphans(self, *, startup: bool) -> int:
        """Mark `rdqn.runs.orphans.orphans` stopped, each only if it is still as read."""
        marked = 0
        for orphan in orphans(self._db, startup=startup):
            marked += bool(
                record_status(self, orphan.run_id, "stopped", orphan.reason, expect=orphan.expect())
            )
        return marked

    def _sweep(self) -> None:
        """`mark_interrupted` for reads: at most every ``_SWEEP_EVERY_S`` seconds, and this
        process's own runs are alive."""
        now = time.monotonic()
        if now < self._next_sweep or (self.read_only and not self._unwritten):
            return
        self._next_sweep = now + _SWEEP_EVERY_S
        if self._unwritten:
            self._write_unwritten()
        if not self.read_only:
            # A full disk must not fail the read: the runs are marked at a sweep with space.
            with contextlib.suppress(StoreFull):
                self._mark_orphans(startup=False)

    # -- metrics (rdqn.runs.metric_tables) -------------------------------------------------

    def write_metrics(self, run_id: str, **rows: Any) -> None:
        """`MetricTables.write_metrics`: episode, step and greedy rows, the latest watched
        episode, and progress, in one write (the call a worker's relayed store answers too)."""
        self.metrics.write_metrics(run_id, **rows)
