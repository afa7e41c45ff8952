"""Sweeps started from the Sweeps page: trained in the server's run registry, owned like any run.

A sweep started here is `rdqn.sweeps.run_sweep` in a thread of the server, given the server's
registry (`rdqn.dashboard.state.registry`) and the session's owner: its trials are queued there
like a comparison's runs, so at most the registry's cap train at once, whoever started them,
and they belong to the browser that started the sweep (they stop when it goes away, or on its
Stop; `rdqn.dashboard.ownership`). The thread only waits on the trials (`run_sweep` polls them, so
none goes idle) and calls no ``st.*``: the page reads the sweep's progress from the run store.

What a page may start is kept small (`PAGE_MAX_TRIALS`, `PAGE_MAX_ENV_STEPS`: trials left to
run, not those finished before) and one sweep per browser at a time; a larger sweep is for
``python -m rdqn sweep`` on the server, whose results the page shows as well. Each refusal is a
`GridError` naming what is too large, as the command line's grid errors are.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import streamlit as st

from rdqn.config import field_docs
from rdqn.dashboard.state import registry, store
from rdqn.runs.schema import FINAL_STATUSES
from rdqn.runs.store import RunStore
from rdqn.serve.registry import RunRegistry
from rdqn.sweeps import GridError, SweepResult, SweepSpec, grid_from_items, run_sweep
from rdqn.sweeps.records import save_spec, trial_runs

__all__ = [
    "AXES",
    "PAGE_MAX_ENV_STEPS",
    "PAGE_MAX_SEEDS",
    "PAGE_MAX_TRIALS",
    "SweepJob",
    "SweepJobs",
    "grid_fields",
    "page_spec",
    "start_sweep",
    "sweep_jobs",
    "trials_to_run",
]

_log = logging.getLogger(__name__)

PAGE_MAX_TRIALS = 24
"""Trials a sweep started from the page may run (cells x seeds, less those finished before)."""
PAGE_MAX_ENV_STEPS = 200_000
"""Env steps, all trials together, a sweep started from the page may run."""
PAGE_MAX_SEEDS = 5
AXES: tuple[tuple[str | None, str], ...] = (
    ("replay.alpha", "0, 0.6, 1"),
    ("replay.scheme", "proportional, rank"),
    (None, ""),
)
"""The start form's axes, as it opens: a field (None: unused) and its values."""


def grid_fields() -> list[str]:
    """The config fields a grid may vary (``--grid`` takes them): all but the preset and seed."""
    return [name for name in field_docs() if name not in ("preset", "seed")]


def page_spec(
    preset: str, axes: Sequence[tuple[str | None, str]], seeds: int, steps: int
) -> SweepSpec:
    """The sweep the page's form describes: each axis a config field (None: unused) and its
    values as ``--grid`` takes them (``0,0.6,1``, ``proportional,rank``). `GridError` naming
    the entry for a bad one, exactly as the command line's ``--grid``."""
    items = [f"{name}={values}" for name, values in axes if name]
    return SweepSpec.from_grid(preset, grid_from_items(items), seeds, steps)


def trials_to_run(spec: SweepSpec, run_store: RunStore) -> tuple[int, int]:
    """(trials, env steps) that running ``spec`` would train: every trial whose run has not
    finished, with its budget (a stopped one counts whole: the bound, not the estimate)."""
    runs = trial_runs(run_store, spec)
    left = [
        t for t in spec.trials() if not any(r.status == "finished" for r in runs.get(t.key, []))
    ]
    return len(left), sum(spec.config(trial).train.total_steps for trial in left)


def _check_size(spec: SweepSpec, run_store: RunStore) -> None:
    trials, steps = trials_to_run(spec, run_store)
    if trials > PAGE_MAX_TRIALS:
        raise GridError(
            f"the sweep would run {trials} trials (cells x seeds); a sweep started from this "
            f"page runs at most {PAGE_MAX_TRIALS}: use fewer values or seeds, or run it on the "
            "server with python -m rdqn sweep"
        )
    if steps > PAGE_MAX_ENV_STEPS:
        raise GridError(
            f"the sweep would run {steps:,} env steps in all (trials x steps per trial); a "
            f"sweep started from this page runs at most {PAGE_MAX_ENV_STEPS:,}: use fewer "
            "steps, values or seeds, or run it on the server with python -m rdqn sweep"
        )


@dataclass
class SweepJob:
    """A sweep this server trains for one owner: its thread, and how it ended."""

    spec: SweepSpec
    owner: str
    thread: threading.Thread | None = None
    stop_reason: str | None = None
    """Set by `SweepJobs.stop`: the sweep stops its trials at its next poll, with this reason."""
    result: SweepResult | None = None
    error: str | None = None
    """Why the sweep itself ended with an error (its trials' own errors are in the store)."""
    done: threading.Event = field(default_factory=threading.Event)

    @property
    def live(self) -> bool:
        return not self.done.is_set()

    def run(self, run_store: RunStore, run_registry: RunRegistry) -> None:
        try:
            self.result = run_sweep(
                self.spec,
                run_store,
                registry=run_registry,
                owner=self.owner,
                progress=False,
                stop=lambda: self.stop_reason,
            )
        except Exception as err:  # noqa: BLE001 - told to the page, logged in one line
            self.error = f"{type(err).__name__}: {err}"
            _log.error("sweep %s ended with an error: %s", self.spec.id, self.error)
        finally:
            self.done.set()


class SweepJobs:
    """The sweeps this server trains, by sweep id (the page's one shared object of them)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[str, SweepJob] = {}

    def get(self, sweep_id: str) -> SweepJob | None:
        with self._lock:
            return self._jobs.get(sweep_id)

    def start(
        self, spec: SweepSpec, owner: str, run_store: RunStore, run_registry: RunRegistry
    ) -> SweepJob:
        """Train ``spec``'s unfinished trials for ``owner`` in ``run_registry``. `GridError`
        (nothing started) when it is too large for the page, when this owner trains another
        sweep, or when its trials are being trained already (here or by another process)."""
        _check_size(spec, run_store)
        with self._lock:
            for job in self._jobs.values():
                if job.live and job.owner == owner:
                    raise GridError(
                        f"your sweep {job.spec.id} is still running: stop it or let it finish "
                        "before you start another"
                    )
            current = self._jobs.get(spec.id)
            if current is not None and current.live:
                raise GridError(f"sweep {spec.id} is running already, started by another session")
            for key, runs in trial_runs(run_store, spec).items():
                busy = next((run for run in runs if run.status not in FINAL_STATUSES), None)
                if busy is not None:
                    raise GridError(
                        f"sweep {spec.id} is being run already (trial {key} has run "
                        f"{busy.run_id} {busy.status}): wait for it to end, or stop it there"
                    )
            save_spec(run_store, spec)  # listed at once, before the thread has begun
            job = SweepJob(spec, owner)
            job.thread = threading.Thread(
                target=job.run,
                args=(run_store, run_registry),
                name=f"rdqn-sweep-{spec.id}",
                daemon=True,
            )
            self._jobs[spec.id] = job
            job.thread.start()
            return job

    def stop(self, sweep_id: str, reason: str) -> None:
        """Ask the sweep to stop its trials (each recorded 'stopped' with ``reason``,
        resumable); returns at once."""
        job = self.get(sweep_id)
        if job is not None and job.live:
            job.stop_reason = reason


@st.cache_resource(show_spinner=False)
def sweep_jobs() -> SweepJobs:
    """The server's sweeps started from the page."""
    return SweepJobs()


def start_sweep(spec: SweepSpec, owner: str) -> SweepJob:
    """`SweepJobs.start` on the server's store and registry."""
    return sweep_jobs().start(spec, owner, store(), registry())
