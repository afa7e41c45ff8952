"""Opening a store's file at this rdqn's schema: migrate it, or read an older one as it is.

``PRAGMA user_version`` is the schema version a file is at; `rdqn.runs.schema.MIGRATIONS` moves it
one version at a time. A file at a newer version, or a database with tables but no rdqn schema
(version 0 and tables: another program's), is refused untouched. A read-only file is never
migrated: the columns it lacks read as NULL.
"""

from __future__ import annotations

from pathlib import Path

from rdqn.runs.schema import MIGRATIONS, RUN_COLUMNS, SCHEMA_VERSION
from rdqn.runs.store_access import ELSEWHERE, Database, StoreError, full_error

__all__ = ["migrate"]


def migrate(db: Database, path: Path) -> str:
    """Bring the store at ``path`` to `SCHEMA_VERSION` (in WAL mode) unless it is read-only;
    return the column list that selects a run record from its ``runs`` table."""
    with db.read() as conn:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} has schema version {version}, newer than this rdqn "
            f"({SCHEMA_VERSION}): upgrade rdqn or {ELSEWHERE}"
        )
    if version == 0 and tables:
        raise StoreError(
            f"{path} is not an rdqn run store (a database of another program): move it "
            f"away or {ELSEWHERE}"
        )
    if db.read_only:
        if version == 0:
            if db.full:
                raise full_error(path)
            raise StoreError(f"{path} is an empty, read-only file: {ELSEWHERE}")
        db.may_write_again = db.full and version == SCHEMA_VERSION
        with db.read() as conn:
            present = {row[1] for row in conn.execute("PRAGMA table_info(runs)")}
        return ", ".join(name if name in present else f"NULL AS {name}" for name in RUN_COLUMNS)
    with db.errors():
        # Persistent, so once is enough; only now that the file is known to be a run store.
        db.connect().execute("PRAGMA journal_mode = WAL")
    if version != SCHEMA_VERSION:
        with db.write() as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]  # another process's?
            for statements in MIGRATIONS[version:]:
                for statement in statements:
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    return ", ".join(RUN_COLUMNS)
