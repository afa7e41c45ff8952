"""Runs a dead process left behind: 'running' or 'paused' with nobody driving them, or queued by
a process that ended before starting them. The store marks them 'stopped' with the reason, so
that every page and the command line read them as they are (interrupted, resumable) instead of
as training forever.

A run's owner is dead when no process with its pid and start time runs (`rdqn.runs.owners`).
Each run is marked in its own conditional update: only if its status and owner are still those
read, so a run that another process resumed or closed in between is left alone.
"""

from __future__ import annotations

import time

from rdqn.runs.owners import owner_alive, this_process
from rdqn.runs.store_access import Database

__all__ = ["ORPHAN_REASONS", "mark_dead_owners"]

ORPHAN_REASONS = {
    "created": "never started: the process that queued it ended",
    "running": "interrupted: the process running it ended",
    "paused": "interrupted: the process running it ended",
}
"""The error a run of each status gets when its owner is found dead."""


def mark_dead_owners(db: Database, *, startup: bool) -> int:
    """Mark the runs of dead owners 'stopped' (`ORPHAN_REASONS`); returns how many. With
    ``startup`` (before this process starts any run), runs owned by this process's pid are
    taken as left over from a crashed predecessor that had it."""
    me = this_process()[0]
    with db.read() as conn:
        rows = conn.execute(
            "SELECT id, status, owner_pid, owner_start FROM runs WHERE status IN (?, ?, ?)",
            tuple(ORPHAN_REASONS),
        ).fetchall()
    orphans = [
        (run_id, status, pid)
        for run_id, status, pid, start in rows
        if (startup and pid == me) or not owner_alive(pid, start)
    ]
    if not orphans:
        return 0
    marked = 0
    with db.write() as conn:
        for run_id, status, pid in orphans:
            marked += conn.execute(
                "UPDATE runs SET status = 'stopped', updated_at = ?, "
                "error = COALESCE(error, ?) WHERE id = ? AND status = ? AND owner_pid IS ?",
                (time.time(), ORPHAN_REASONS[status], run_id, status, pid),
            ).rowcount
    return marked
