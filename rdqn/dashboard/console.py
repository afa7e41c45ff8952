"""The teacher's console (the server's admin only): who is here, every student run and the
queue, and the class's brakes: pause every student run, stop them (resumable), end the class.

A student run is one another browser started (not this session's). The actions ask the run
registry as the admin (``owner=None``: `RunRegistry.may_control`), and check that this session
is the admin again when they run (a callback can outlive the token).
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd
import streamlit as st

from rdqn.compare import run_label
from rdqn.dashboard.admin import is_admin
from rdqn.dashboard.live_run import has_ended
from rdqn.dashboard.state import live_pages, registry, session
from rdqn.serve.handle import RunHandle

__all__ = [
    "CLASS_ENDED",
    "STOPPED_BY_THE_TEACHER",
    "end_the_class",
    "pause_runs",
    "runs_frame",
    "stop_runs",
    "student_runs",
]

STOPPED_BY_THE_TEACHER = "stopped by the teacher"
CLASS_ENDED = "stopped: the teacher ended the class"


def student_runs() -> list[RunHandle]:
    """The runs of every other browser that have not ended (training, paused or queued), in
    the order they were started."""
    me = session().owner
    runs = [h for h in registry().runs() if h.owner != me and not has_ended(h)]
    return sorted(runs, key=lambda h: h.created)


def runs_frame(runs: Iterable[RunHandle]) -> pd.DataFrame:
    """One row a run: its id, its browser (a short label), its status (a queued run's place),
    its steps and settings."""
    rows = []
    for handle in runs:
        status = handle.status
        if (place := registry().position(handle.id)) is not None:
            status = f"queued ({place[0]} of {place[1]})"
        snap = handle.snapshot(touch=False)
        total = handle.config.train.total_steps
        rows.append(
            {
                "run": handle.id,
                "browser": f"browser {(handle.owner or 'nobody')[:4]}",
                "status": status,
                "steps": f"{snap.env_steps if snap else 0:,} of {total:,}",
                "settings": run_label(handle.config),
            }
        )
    return pd.DataFrame(rows, columns=["run", "browser", "status", "steps", "settings"])


def _as_admin() -> bool:
    if is_admin():
        return True
    st.session_state["console.said"] = "Only the server's admin can do that."
    return False


def pause_runs(run_ids: Iterable[str]) -> None:
    """Pause those of ``run_ids`` that train (each saves its checkpoint and frees its slot; its
    owner resumes it); queued runs keep their place."""
    if not _as_admin():
        return
    paused = 0
    for run_id in run_ids:
        handle = registry().get(run_id)
        if handle is not None and handle.expected_status == "running":
            registry().pause(run_id)
            paused += 1
    st.session_state["console.said"] = f"Paused {paused} run{'s' * (paused != 1)}."


def stop_runs(run_ids: Iterable[str], reason: str = STOPPED_BY_THE_TEACHER) -> int:
    """Stop ``run_ids`` (each saves a resume checkpoint: its owner can go on with it)."""
    if not _as_admin():
        return 0
    stopped = 0
    for run_id in run_ids:
        handle = registry().get(run_id)
        if handle is not None and not has_ended(handle):
            registry().stop(run_id, wait=False, reason=reason)
            stopped += 1
    st.session_state["console.said"] = f"Stopped {stopped} run{'s' * (stopped != 1)}, resumable."
    return stopped


def end_the_class() -> None:
    """Stop every run on the server, the teacher's own too (resumable), and end every class:
    its followers are told it has ended."""
    if not _as_admin():
        return
    runs = [h.id for h in registry().runs() if not has_ended(h)]
    stopped = stop_runs(runs, CLASS_ENDED)
    pages = live_pages()
    codes = list(pages.followers())
    for code in codes:
        if (owner := pages.owner_of(code)) is not None:
            pages.forget(owner)
    st.session_state["console.said"] = (
        f"The class has ended: {stopped} run{'s' * (stopped != 1)} stopped (resumable), "
        f"{len(codes)} class code{'s' * (len(codes) != 1)} closed."
    )
