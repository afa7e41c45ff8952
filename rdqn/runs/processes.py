"""Which process runs a run, and whether that process still lives.

A run in the store is 'running' or 'paused' only while some process drives it; a process killed
with SIGKILL (or a power cut) leaves it so for good. The store records that process as its
process id *and* its start time (the ``owner_pid`` and ``owner_start`` columns), because a pid
alone is no identity: once the process is gone the kernel hands its pid to the next one, and a
check of the pid alone would take that stranger for the run's process and leave the run
'running' forever. (A run's *owner*, elsewhere, is who may control it: an opaque token,
`rdqn.serve.run_owners`.)

    process (pid, start)      alive when
    (p, s), s known           /proc/p/stat exists, is not a zombie, and its start time is s
    (p, None)                 a process p exists (a row written before start times were kept,
                              or a system without /proc)
    (None, _)                 never: nobody owns it

The start time is field 22 of ``/proc/<pid>/stat``: clock ticks since boot, fixed for the life
of the process. Without ``/proc`` (macOS, Windows) it is None and the pid alone is checked.
Processes are told apart on one machine only: a store shared by several machines (a network
folder) or by processes in different pid namespaces (containers) needs its runs' processes on
one host, as the dashboard and the CLI beside it are.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["ProcessId", "process_alive", "process_start", "this_process"]

ProcessId = tuple[int, int | None]
"""(pid, start time in clock ticks since boot, None where unknown)."""

_PROC = Path("/proc")
_DEAD_STATES = frozenset("ZXx")  # zombie (killed, not yet reaped), dead
_this: ProcessId | None = None


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name, or None if there is no such
    process (or no /proc). The name is in parentheses and may hold spaces and parentheses
    itself, so the fields start after the last ')'."""
    try:
        text = (_PROC / str(pid) / "stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = text[text.rfind(")") + 1 :].split()
    return fields if len(fields) >= 20 else None


def process_start(pid: int) -> int | None:
    """Process ``pid``'s start time in clock ticks since boot; None without /proc or for no
    such process."""
    fields = _stat_fields(pid)
    return None if fields is None else int(fields[19])  # field 22; fields[0] is field 3


def this_process() -> ProcessId:
    """This process: its pid and start time (cached per pid: a fork is another
    process)."""
    global _this
    pid = os.getpid()
    if _this is None or _this[0] != pid:
        _this = (pid, process_start(pid))
    return _this


def _pid_exists(pid: int) -> bool:
    """Whether a process with this pid exists (POSIX only; elsewhere unknown -> False)."""
    if os.name != "posix":
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def process_alive(pid: int | None, start: int | None) -> bool:
    """Whether the process (``pid``, ``start``) still runs; see the module docstring."""
    if pid is None or pid <= 0:
        return False
    if (_PROC / "self" / "stat").exists():
        fields = _stat_fields(pid)
        if fields is None or fields[0] in _DEAD_STATES:
            return False
        return start is None or int(fields[19]) == start
    return _pid_exists(pid)
