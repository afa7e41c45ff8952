"""Runs a dead process left behind: 'running' or 'paused' with nobody driving them, or queued by
a process that ended before starting them. The store marks them 'stopped' with the reason
(`rdqn.runs.store.RunStore.mark_interrupted`, through `rdqn.runs.lifecycle.record_status`), so
that every page and the command line read them as they are (interrupted, resumable) instead of
as training forever.

A run's process is dead when no process with its pid and start time runs
(`rdqn.runs.processes`). Each run is marked in its own conditional write: only if its status,
process and error are still those read here, so a run that another process resumed or closed
in between is left alone.
"""

from __future__ import annotations

from typing import NamedTuple

from rdqn.runs.processes import process_alive, this_process
from rdqn.runs.store_access import Database

__all__ = ["ORPHAN_REASONS", "Orphan", "orphans"]

ORPHAN_REASONS = {
    "created": "never started: the process that queued it ended",
    "running": "interrupted: the process running it ended",
    "paused": "interrupted: the process running it ended",
}
"""The error a run of each status gets when its process is found dead."""


class Orphan(NamedTuple):
    """A run whose process is dead, as read: it is marked only if it is still so."""

    run_id: str
    status: str
    owner_pid: int | None
    error: str | None

    @property
    def reason(self) -> str:
        """The error it is marked 'stopped' with: its own if it has one, else why it stopped."""
        return self.error if self.error is not None else ORPHAN_REASONS[self.status]

    def expect(self) -> dict[str, object]:
        """The run as it must still be to be marked (`rdqn.runs.lifecycle.record_status`)."""
        return {"status": self.status, "owner_pid": self.owner_pid, "error": self.error}


def orphans(db: Database, *, startup: bool) -> list[Orphan]:
    """The runs of dead processes (`ORPHAN_REASONS`' statuses). With ``startup`` (before this
    process starts any run), runs of this process's pid are taken as left over from a crashed
    predecessor that had it."""
    me = this_process()[0]
    with db.read() as conn:
        rows = conn.execute(
            "SELECT id, status, owner_pid, owner_start, error FROM runs WHERE status IN (?, ?, ?)",
            tuple(ORPHAN_REASONS),
        ).fetchall()
    return [
        Orphan(run_id, status, pid, error)
        for run_id, status, pid, start, error in rows
        if (startup and pid == me) or not process_alive(pid, start)
    ]
