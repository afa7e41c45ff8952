"""Running a sweep: every trial a recorded run on the serving layer, resumable, stoppable.

`run_sweep` files each trial as a run of the run store (`rdqn.serve.handle.RunHandle`, through a
`rdqn.serve.registry.RunRegistry` that caps how many train at once and queues the rest), exactly
as a comparison or the dashboard does, with the sweep id as the runs' ``group_id``:

    processes (default)  worker processes forked from the zygote, ``workers`` at once (default:
                         one per usable core); each writes its rows into the SQLite store.
    Ray (``ray=...``)    one Ray actor per trial, on a local instance or a cluster; the actors
                         relay every write (status, metric rows, manifest, checkpoint bytes) to
                         this process, the driver, which alone writes the store.

What a call does with each trial, by the run that stands for it (`rdqn.sweeps.records`):

    finished             nothing: it is done (a rerun of the same sweep skips it)
    stopped, resumable   resumed under its id, from its checkpoint (`rdqn.runs.resume`)
    anything else        a new run (none yet, failed, or stopped without a resume state)

A trial whose run fails is recorded with its error and the sweep goes on; one whose worker died
under it (killed, out of memory, a Ray node lost: `lost_worker`) or could not be launched is run
again once, as a new run, the lost one staying recorded as failed. ``stop`` (a callable giving a
reason, as the CLI's Ctrl-C handler does) ends the sweep between two polls: every trial training
or queued is stopped and recorded 'stopped' with the reason (training ones with a resume
checkpoint), so a rerun goes on where it stopped. A KeyboardInterrupt does the same, then
propagates. A sweep whose trials a live process is training already is refused (`SweepBusy`).

A local Ray that loses a process of its own (its raylet or control store: `ray_gone`), as it
starts or later, can run nothing more: each run it held is recorded failed in one line saying so
(`rdqn.serve.ray_executor.RAY_LOST`), not retried, and the sweep stops as above with the reason
"stopped: Ray lost its raylet (killed by SIGKILL)". One lost as Ray started still files every
trial's run, failed or stopped with that line. Ray's own text (pids, its session) goes to
``<home>/sweeps/<sweep id>.log`` while the sweep runs its own Ray, not to the terminal. Its
raylet lost while ``ray.init`` connects this process to it, Ray's C++ may end this process
instead (exit 1 with its own line, or SIGABRT in gRPC), out of Python's reach: the spec is
filed before Ray starts, so `--resume` still finishes the sweep.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from rdqn.limits import check_threads
from rdqn.runs.lifecycle import INTERRUPTED_BY_USER
from rdqn.runs.resume import ResumeError, resume_blocker
from rdqn.runs.schema import FINAL_STATUSES
from rdqn.runs.store import RunStore
from rdqn.serve.executors import Executor, ProcessExecutor, usable_cores
from rdqn.serve.handle import RunHandle
from rdqn.serve.ray_executor import RAY_LOST, LostRayExecutor
from rdqn.serve.ray_start import RAY_LOGGER, RayLost
from rdqn.serve.registry import RunRegistry
from rdqn.sweeps.records import TrialRun, save_spec, spec_path, trial_runs
from rdqn.sweeps.spec import SweepSpec, Trial
from rdqn.sweeps.tasks import ray_module
from rdqn.validation import check_integer

__all__ = [
    "LOST_WORKER",
    "SweepBusy",
    "SweepProgress",
    "SweepResult",
    "TrialOutcome",
    "lost_worker",
    "make_executor",
    "ray_gone",
    "run_sweep",
]

LOST_WORKER: tuple[str, ...] = (
    "the worker process",
    "the worker zygote",
    "the worker could not be started",
    "the worker thread",
    "the Ray actor",
)
"""How the serving layer's errors begin when a run's worker died under it
(`rdqn.serve.zygote.ZygoteWorker.exit_reason`, `rdqn.serve.ray_executor`)."""
SNAPSHOT_INTERVAL_S = 2.0
"""Seconds between a trial's snapshots (about 30 KB each): nobody watches a trial's live curves
closely, and under Ray every snapshot crosses the network."""
MAX_ATTEMPTS = 2
"""Runs a trial gets in one call when its workers die: the first and one retry."""
_POLL_S = 0.2


def lost_worker(error: str | None) -> bool:
    """Whether a failed run's error says its worker died (not that its training raised)."""
    return error is not None and error.startswith(LOST_WORKER)


def ray_gone(error: str | None) -> bool:
    """Whether a run's error says Ray itself lost a process of its own under it (no retry on
    that Ray can help); also as a stopped run's ("stopped; ...") or a resume's ("not resumed:
    ...")."""
    if error is None:
        return False
    for prefix in ("not resumed: ", "stopped; "):
        error = error.removeprefix(prefix)
    return error.startswith(RAY_LOST)


class SweepBusy(RuntimeError):
    """The sweep's trials are being trained by a live process already."""


@dataclass(frozen=True)
class TrialOutcome:
    """How one trial stands after `run_sweep`."""

    key: str
    run_id: str | None
    """The run that stands for the trial (None: never filed)."""
    status: str
    """finished, failed or stopped (as recorded)."""
    error: str | None
    runs: int
    """Runs this call filed or resumed for it (0: it was finished before; 2: retried)."""


@dataclass(frozen=True)
class SweepResult:
    """What `run_sweep` did: where the sweep is recorded and how each trial stands."""

    sweep_id: str
    store_path: Path
    spec_path: Path
    trials: tuple[TrialOutcome, ...]
    """Every trial, in the spec's order."""
    stopped: str | None = None
    """Why the sweep ended before its trials did (None: every trial ended)."""

    def count(self, status: str) -> int:
        return sum(outcome.status == status for outcome in self.trials)

    @property
    def skipped(self) -> int:
        """Trials finished before this call (not rerun)."""
        return sum(outcome.runs == 0 and outcome.status == "finished" for outcome in self.trials)

    @property
    def complete(self) -> bool:
        """Every trial finished."""
        return all(outcome.status == "finished" for outcome in self.trials)


@dataclass(frozen=True)
class SweepProgress:
    """Counts of a sweep's trials, as a progress callback hears them."""

    total: int
    finished: int
    failed: int
    stopped: int
    running: int
    queued: int
    elapsed_s: float
    eta_s: float | None = field(default=None)
    """Seconds left at the rate trials finished in this call (None until one has)."""


def make_executor(workers: int | None = None, ray: str | None = None) -> Executor:
    """Worker processes, ``workers`` at once (default: one per usable core), or Ray at ``ray``
    (``"local"``: a local instance of ``workers`` CPUs, default all; else a cluster's address).
    `ExecutorUnavailable` when Ray is asked for and missing or out of reach."""
    if workers is not None:
        workers = check_integer("workers", workers, minimum=1)
    if ray is not None:
        ray_module()  # the install hint, before Ray's own import error
        from rdqn.serve.ray_executor import RayExecutor

        return RayExecutor(ray, num_cpus=workers if ray == "local" else None)
    if workers is not None:
        check_threads(workers, setting="workers")
    return ProcessExecutor(capacity=workers or usable_cores())


def run_sweep(
    spec: SweepSpec,
    store: RunStore,
    *,
    workers: int | None = None,
    ray: str | None = None,
    progress: bool | Callable[[SweepProgress], None] = True,
    stop: Callable[[], str | None] | None = None,
    registry: RunRegistry | None = None,
    owner: str | None = None,
) -> SweepResult:
    """Run every trial of ``spec`` not finished yet, recorded in ``store``; returns when each
    has ended or ``stop`` gave a reason (see the module docstring).

    Args:
        workers: trials training at once (default: one per usable core; under Ray the CPUs of
            the local instance, or of the cluster).
        ray: None for worker processes; ``"local"`` or a cluster's address for Ray actors.
        progress: True: a tqdm bar on stderr (done, running, failed, time left); a callable
            hears a `SweepProgress` at every poll; False: nothing.
        stop: asked at every poll; a reason (not None) stops the sweep, recorded as such.
        registry: run the trials in this registry instead (a server's: its cap, queue and
            executor; ``workers`` and ``ray`` are then ignored), as ``owner``'s runs.
    """
    plan = _plan(spec, store)
    # Filed before Ray starts: Ray's own C++ can end this process as it starts (its raylet lost
    # while `ray.init` connects: exit 1, or SIGABRT in gRPC), and `--resume` needs the spec.
    spec_file = save_spec(store, spec)
    own = registry is None
    with _ray_log(store, spec, ray if own else None):
        if registry is None:
            executor: Executor
            try:
                executor = make_executor(workers, ray)
            except RayLost as lost:  # every trial is filed, failed or stopped, saying so
                executor = LostRayExecutor(lost, capacity=workers or 1)
            executor.prepare()
            registry = RunRegistry(
                store,
                executor=executor,
                max_active=workers or executor.capacity,
                idle_timeout=None,
                keep_finished=1_000_000,  # the sweep keeps its handles; so may the registry
            )
        return _run(spec, spec_file, store, registry, own, owner, plan, progress, stop)


def _run(
    spec: SweepSpec,
    spec_file: Path,
    store: RunStore,
    registry: RunRegistry,
    own: bool,
    owner: str | None,
    plan: list[_Slot],
    progress: bool | Callable[[SweepProgress], None],
    stop: Callable[[], str | None] | None,
) -> SweepResult:
    sweep = _Sweep(spec, registry, owner, plan, _reporter(progress))
    reason: str | None = None
    try:
        sweep.submit()
        reason = sweep.watch(stop)
    except KeyboardInterrupt:
        sweep.stop(INTERRUPTED_BY_USER, registry if own else None)
        raise
    except BaseException:
        sweep.stop("stopped: the sweep failed", registry if own else None)
        raise
    else:
        if reason is not None:
            sweep.stop(reason, registry if own else None)
    finally:
        sweep.close()
        if own:
            registry.shutdown()
    return SweepResult(spec.id, store.path, spec_file, sweep.outcomes(), reason)


@contextlib.contextmanager
def _ray_log(store: RunStore, spec: SweepSpec, ray: str | None) -> Iterator[None]:
    """While a sweep runs on a Ray of its own, Ray's text (addresses, pids, about 1 kB a lost
    worker) goes to ``<home>/sweeps/<sweep id>.log``, not to the terminal: runs record one line.
    Nothing where the folder cannot be made (a read-only home: the sweep fails on its spec)."""
    if ray is None:
        yield
        return
    path = spec_path(store, spec.id).with_suffix(".log")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        yield
        return
    handler = logging.FileHandler(path, encoding="utf-8", delay=True)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger = logging.getLogger(RAY_LOGGER)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        handler.close()


@dataclass
class _Slot:
    """A trial in this call: its run now (None: nothing to do) and how many it got."""

    trial: Trial
    before: TrialRun | None
    action: str  # "done" | "resume" | "new"
    handle: RunHandle | None = None
    runs: int = 0
    ended: tuple[str, str | None] | None = None


def _plan(spec: SweepSpec, store: RunStore) -> list[_Slot]:
    runs = trial_runs(store, spec)
    slots: list[_Slot] = []
    for trial in spec.trials():
        mine = runs.get(trial.key, [])
        first = mine[0] if mine else None
        busy = next((run for run in mine if run.status not in FINAL_STATUSES), None)
        if busy is not None:
            raise SweepBusy(
                f"sweep {spec.id} is being run already: trial {trial.key} has run {busy.run_id} "
                f"{busy.status}; wait for it to end or stop it, then run the sweep again"
            )
        if first is not None and first.status == "finished":
            slots.append(_Slot(trial, first, "done", ended=("finished", None)))
        elif first is not None and first.status == "stopped":
            blocked = resume_blocker(store, first.run_id) is not None
            slots.append(_Slot(trial, first, "new" if blocked else "resume"))
        else:
            slots.append(_Slot(trial, first, "new"))
    return slots


class _Sweep:
    """One call's trials: files them, watches their handles, retries lost workers."""

    def __init__(
        self,
        spec: SweepSpec,
        registry: RunRegistry,
        owner: str | None,
        slots: list[_Slot],
        report: Callable[[SweepProgress], None] | None,
    ) -> None:
        self.spec = spec
        self.registry = registry
        self.owner = owner
        self.slots = slots
        self.report = report
        self.started = time.monotonic()
        self.finished_here = 0
        self.gone: str | None = None
        """Why Ray can run nothing more here (a trial's run said Ray lost a process)."""

    def submit(self) -> None:
        for slot in self.slots:
            if slot.action == "resume" and slot.before is not None:
                try:
                    slot.handle = self.registry.resume(
                        slot.before.run_id,
                        owner=self.owner,
                        queue=True,
                        snapshot_interval=SNAPSHOT_INTERVAL_S,
                    )
                    slot.runs += 1
                    continue
                except ResumeError:  # its checkpoint went bad since: start it afresh
                    slot.action = "new"
            if slot.action == "new":
                self._new_run(slot)

    def _new_run(self, slot: _Slot) -> None:
        [slot.handle] = self.registry.enqueue(
            [self.spec.config(slot.trial)],
            owner=self.owner,
            name=f"sweep {self.spec.id}: {slot.trial.key}",
            group_id=self.spec.id,
            snapshot_interval=SNAPSHOT_INTERVAL_S,
        )
        slot.runs += 1

    def watch(self, stop: Callable[[], str | None] | None) -> str | None:
        """Poll until every trial has ended (None) or ``stop`` gives a reason, or Ray lost a
        process of its own (the reason, returned)."""
        while True:
            reason = stop() if stop is not None else None
            if reason is not None:
                return reason
            pending = False
            for slot in self.slots:
                if slot.ended is None and slot.handle is not None:
                    pending = self._poll(slot) or pending
            if self.report is not None:
                self.report(self.progress())
            if self.gone is not None:
                return self.gone
            if not pending:
                return None
            time.sleep(_POLL_S)

    def _poll(self, slot: _Slot) -> bool:
        """Whether the trial is still pending after looking at its run."""
        handle = slot.handle
        assert handle is not None
        if handle.status not in FINAL_STATUSES:
            handle.snapshot()  # watched: a server's registry stops runs nobody polls
            return True
        if ray_gone(handle.error):  # Ray lost a process of its own: nothing more runs on it
            self.gone = self.gone or self._gone_reason(handle.error)
        # A worker that died, or could not be launched (a zygote that died, say): run it again.
        lost = not handle.started or lost_worker(handle.error)
        if handle.status == "failed" and lost and slot.runs < MAX_ATTEMPTS and not self.gone:
            self._new_run(slot)
            return True
        slot.ended = (handle.status, handle.error)
        self.finished_here += handle.status == "finished"
        return False

    def _gone_reason(self, error: str | None) -> str:
        """The sweep's stop reason once Ray lost a process: which one, as the executor says."""
        lost = getattr(self.registry.executor, "lost", None)
        what = lost() if callable(lost) else None
        return f"stopped: Ray lost {what}" if what else f"stopped: {error}"

    def progress(self) -> SweepProgress:
        counts = {"finished": 0, "failed": 0, "stopped": 0, "running": 0, "queued": 0}
        for slot in self.slots:
            if slot.ended is not None:
                counts[slot.ended[0]] += 1
            elif slot.handle is not None and slot.handle.started:
                counts["running"] += 1
            else:
                counts["queued"] += 1
        elapsed = time.monotonic() - self.started
        left = counts["running"] + counts["queued"]
        eta = elapsed / self.finished_here * left if self.finished_here else None
        return SweepProgress(len(self.slots), **counts, elapsed_s=elapsed, eta_s=eta)

    def stop(self, reason: str, registry: RunRegistry | None) -> None:
        """Stop every trial not ended, recorded 'stopped' with ``reason``: by shutting down
        the sweep's own ``registry``, else one by one (queued ones first, so that none starts
        as a training one ends)."""
        if registry is not None:
            registry.shutdown(reason)
        else:
            handles = [s.handle for s in self.slots if s.handle is not None and s.ended is None]
            handles.sort(key=lambda handle: handle.started)
            for handle in handles:
                self.registry.stop(handle.id, wait=False, reason=reason, owner=self.owner)
            for handle in handles:
                handle.stop(reason=reason)
        for slot in self.slots:
            if slot.ended is None and slot.handle is not None:
                slot.handle.join(15.0)
                slot.ended = (slot.handle.status, slot.handle.error)

    def close(self) -> None:
        if self.report is not None:
            self.report(self.progress())
            closing = getattr(self.report, "close", None)
            if closing is not None:
                closing()

    def outcomes(self) -> tuple[TrialOutcome, ...]:
        out = []
        for slot in self.slots:
            status, error = slot.ended or ("stopped", "the sweep ended before it ran")
            run_id = slot.handle.id if slot.handle is not None else None
            if run_id is None and slot.before is not None:
                run_id = slot.before.run_id
            out.append(TrialOutcome(slot.trial.key, run_id, status, error, slot.runs))
        return tuple(out)


class _Bar:
    """A tqdm bar of trials on stderr: finished, failed and stopped ones count as done (those
    done before this call from the start, outside the rate); the postfix says how many run,
    wait and failed; tqdm's own estimate is the time left."""

    def __init__(self) -> None:
        self.bar: tqdm[Any] | None = None

    def __call__(self, progress: SweepProgress) -> None:
        done = progress.finished + progress.failed + progress.stopped
        if self.bar is None:
            self.bar = tqdm(
                total=progress.total,
                initial=done,
                desc="sweep",
                unit="trial",
                dynamic_ncols=True,
                mininterval=0.5,
            )
        self.bar.set_postfix_str(
            f"running {progress.running}, queued {progress.queued}, failed {progress.failed}",
            refresh=False,
        )
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _reporter(
    progress: bool | Callable[[SweepProgress], None],
) -> Callable[[SweepProgress], Any] | None:
    if callable(progress):
        return progress
    return _Bar() if progress else None
