"""What the run store holds: statuses, a run's record, metric columns and the SQL schema with its
migrations.

`rdqn.runs.store.RunStore` runs these statements; `rdqn.runs.writer.RunWriter` checks rows
against the metric keys before they are queued. Migrations are append-only: ``MIGRATIONS[i]``
moves a database from ``PRAGMA user_version`` i to i + 1.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

__all__ = [
    "ACTIVE_STATUSES",
    "FINAL_STATUSES",
    "EPISODE_COLUMNS",
    "EPISODE_KEYS",
    "EVALUATION_COLUMNS",
    "EVALUATION_KEYS",
    "GREEDY_COLUMNS",
    "GREEDY_KEYS",
    "INSERT_EPISODES",
    "INSERT_EVALUATIONS",
    "INSERT_GREEDY",
    "INSERT_STEPS",
    "INSERT_WATCHED",
    "MIGRATIONS",
    "PROGRESS_SET",
    "RUN_COLUMNS",
    "SCHEMA_VERSION",
    "STATUSES",
    "STEP_COLUMNS",
    "STEP_KEYS",
    "Converter",
    "RunRecord",
    "default_run_name",
    "quoted_columns",
    "row_params",
]

STATUSES: tuple[str, ...] = ("created", "running", "paused", "finished", "failed", "stopped")
ACTIVE_STATUSES: tuple[str, ...] = ("running", "paused")
FINAL_STATUSES: tuple[str, ...] = ("finished", "failed", "stopped")

# (column, converter). Converters turn numpy/torch scalars into the Python types sqlite3 binds.
Converter = Callable[[Any], Any]
EPISODE_COLUMNS: tuple[tuple[str, Converter], ...] = (
    ("episode", int),
    ("env_steps", int),
    ("updates", int),
    ("return", float),
    ("length", int),
    ("wall_time", float),
)
STEP_COLUMNS: tuple[tuple[str, Converter], ...] = (
    ("updates", int),
    ("env_steps", int),
    ("loss", float),
    ("td_abs_mean", float),
    ("q_mean", float),
    ("beta", float),
    ("epsilon", float),
    ("ess", float),
    ("wall_time", float),
)
GREEDY_COLUMNS: tuple[tuple[str, Converter], ...] = (
    ("played", int),
    ("env_steps", int),
    ("return", float),
    ("length", int),
)
EVALUATION_COLUMNS: tuple[tuple[str, Converter], ...] = (
    ("env_steps", int),
    ("episode", int),
    ("seed", int),
    ("return", float),
    ("length", int),
)
EPISODE_KEYS = frozenset(name for name, _ in EPISODE_COLUMNS)
EVALUATION_KEYS = frozenset(name for name, _ in EVALUATION_COLUMNS)
STEP_KEYS = frozenset(name for name, _ in STEP_COLUMNS)
GREEDY_KEYS = frozenset(name for name, _ in GREEDY_COLUMNS)

_STATUS_CHECK = ", ".join(f"'{s}'" for s in STATUSES)
# MIGRATIONS[i] moves a database from user_version i to i + 1; append, never edit.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        f"""CREATE TABLE IF NOT EXISTS runs (
            id TEXT PRIMARY KEY,
            name TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            status TEXT NOT NULL DEFAULT 'created' CHECK (status IN ({_STATUS_CHECK})),
            preset TEXT,
            env_id TEXT NOT NULL,
            scheme TEXT NOT NULL,
            seed INTEGER NOT NULL,
            config_json TEXT NOT NULL,
            manifest_json TEXT,
            error TEXT,
            checkpoint_path TEXT,
            env_steps INTEGER NOT NULL DEFAULT 0,
            updates INTEGER NOT NULL DEFAULT 0,
            episodes INTEGER NOT NULL DEFAULT 0,
            group_id TEXT,
            owner_pid INTEGER
        )""",
        "CREATE INDEX IF NOT EXISTS runs_by_status ON runs (status)",
        "CREATE INDEX IF NOT EXISTS runs_by_group ON runs (group_id)",
        """CREATE TABLE IF NOT EXISTS episodes (
            run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            episode INTEGER NOT NULL,
            env_steps INTEGER,
            updates INTEGER,
            "return" REAL,
            length INTEGER,
            wall_time REAL,
            PRIMARY KEY (run_id, episode)
        ) WITHOUT ROWID""",
        """CREATE TABLE IF NOT EXISTS steps (
            run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            updates INTEGER NOT NULL,
            env_steps INTEGER,
            loss REAL,
            td_abs_mean REAL,
            q_mean REAL,
            beta REAL,
            epsilon REAL,
            ess REAL,
            wall_time REAL,
            PRIMARY KEY (run_id, updates)
        ) WITHOUT ROWID""",
    ),
    # 2: resumable runs. The env step of the resume state the run's checkpoint holds; NULL when
    # it holds none (a finished or failed run, or a checkpoint saved before resuming existed).
    ("ALTER TABLE runs ADD COLUMN resume_env_steps INTEGER",),
    # 3: dead processes. The start time of the run's process (`rdqn.runs.processes`): with the
    # pid, it tells a process that died (its pid since reused) from a live one. NULL in rows
    # written before. (The ``owner_`` columns name the run's process, not its owner.)
    ("ALTER TABLE runs ADD COLUMN owner_start INTEGER",),
    # 4: whose runs. A hash of the owner (an opaque token) that started or last resumed the run
    # (`rdqn.runs.store.owner_hash`), so that only that owner is offered to resume it, even
    # after a server restart. NULL for runs nobody owned (the command line) and older rows.
    ("ALTER TABLE runs ADD COLUMN owner_hash TEXT",),
    # 5: the greedy episodes a run played for its watchers (`rdqn.training.watcher`): each
    # one's return, and the latest one whole (`PlayedEpisode.to_bytes`), so that a run can be
    # watched and its greedy curve drawn after a server restart.
    (
        """CREATE TABLE IF NOT EXISTS greedy (
            run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            played INTEGER NOT NULL,
            env_steps INTEGER,
            "return" REAL,
            length INTEGER,
            PRIMARY KEY (run_id, played)
        ) WITHOUT ROWID""",
        """CREATE TABLE IF NOT EXISTS watched (
            run_id TEXT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
            env_steps INTEGER NOT NULL,
            episode BLOB NOT NULL
        )""",
    ),
    # 6: the run's greedy evaluations on held-out env seeds (`rdqn.training.evaluation`): one
    # row per episode of each evaluation.
    (
        """CREATE TABLE IF NOT EXISTS evaluations (
            run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            env_steps INTEGER NOT NULL,
            episode INTEGER NOT NULL,
            seed INTEGER,
            "return" REAL,
            length INTEGER,
            PRIMARY KEY (run_id, env_steps, episode)
        ) WITHOUT ROWID""",
    ),
)
SCHEMA_VERSION: int = len(MIGRATIONS)


@dataclass(frozen=True)
class RunRecord:
    """One row of ``runs`` with ``config`` and ``manifest`` parsed from their JSON columns.

    ``owner_pid`` is the process that last created, started, paused or resumed the run, and
    ``owner_start`` its start time (`rdqn.runs.processes`; None in rows of older stores): they let
    the store tell a dead process's runs from a live one's and mark them interrupted
    (`RunStore.mark_interrupted`, and whenever runs are read).
    ``resume_env_steps`` is the env step the run's checkpoint can resume from (None: it holds no
    resume state); see `rdqn.runs.resume.resume_blocker`.
    ``owner_hash`` is `rdqn.runs.store.owner_hash` of the owner that started or last resumed the
    run (None: nobody's, e.g. the command line's, or a row of an older store); never the owner
    itself.
    """

    id: str
    name: str | None
    created_at: float
    updated_at: float
    status: str
    preset: str | None
    env_id: str
    scheme: str
    seed: int
    config: dict[str, Any]
    manifest: dict[str, Any] | None
    error: str | None
    checkpoint_path: str | None
    env_steps: int
    updates: int
    episodes: int
    group_id: str | None
    owner_pid: int | None
    resume_env_steps: int | None
    owner_start: int | None
    owner_hash: str | None

    @property
    def default_name(self) -> str:
        """The name the run would have had if it had not been given one (`default_run_name`)."""
        return default_run_name(self.preset, self.scheme, self.env_id, self.seed)


def default_run_name(preset: str | None, scheme: str, env_id: str, seed: int) -> str:
    """What `RunStore.create_run` names a run it is not given a name for."""
    return f"{preset or scheme} {env_id} seed {seed}"


_JSON_FIELDS = {"config": "config_json", "manifest": "manifest_json"}
RUN_COLUMNS: tuple[str, ...] = tuple(_JSON_FIELDS.get(f.name, f.name) for f in fields(RunRecord))


def quoted_columns(columns: Sequence[tuple[str, Converter]]) -> str:
    return ", ".join(f'"{name}"' for name, _ in columns)


# "Last write wins" when a key repeats; a resumed run repeats none, since taking it drops
# the rows past its resume point first.
INSERT_EPISODES = (
    f"INSERT OR REPLACE INTO episodes (run_id, {quoted_columns(EPISODE_COLUMNS)}) "
    f"VALUES ({', '.join('?' * (len(EPISODE_COLUMNS) + 1))})"
)
INSERT_STEPS = (
    f"INSERT OR REPLACE INTO steps (run_id, {quoted_columns(STEP_COLUMNS)}) "
    f"VALUES ({', '.join('?' * (len(STEP_COLUMNS) + 1))})"
)
INSERT_GREEDY = (
    f"INSERT OR REPLACE INTO greedy (run_id, {quoted_columns(GREEDY_COLUMNS)}) "
    f"VALUES ({', '.join('?' * (len(GREEDY_COLUMNS) + 1))})"
)
INSERT_EVALUATIONS = (
    f"INSERT OR REPLACE INTO evaluations (run_id, {quoted_columns(EVALUATION_COLUMNS)}) "
    f"VALUES ({', '.join('?' * (len(EVALUATION_COLUMNS) + 1))})"
)
INSERT_WATCHED = "INSERT OR REPLACE INTO watched (run_id, env_steps, episode) VALUES (?, ?, ?)"
PROGRESS_SET = "env_steps = ?, updates = ?, episodes = ?"


def _convert(value: Any, convert: Converter) -> Any:
    return None if value is None else convert(value)


def row_params(
    run_id: str,
    rows: Sequence[Mapping[str, Any]],
    columns: tuple[tuple[str, Converter], ...],
    allowed: frozenset[str],
    kind: str,
) -> list[tuple[Any, ...]]:
    key = columns[0][0]
    params: list[tuple[Any, ...]] = []
    for row in rows:
        unknown = row.keys() - allowed
        if unknown:
            raise ValueError(
                f"unknown {kind} column(s) {sorted(unknown)}; known: {sorted(allowed)}"
            )
        if row.get(key) is None:
            raise ValueError(f"every {kind} row needs {key!r}, got {dict(row)!r}")
        params.append((run_id, *(_convert(row.get(name), conv) for name, conv in columns)))
    return params
