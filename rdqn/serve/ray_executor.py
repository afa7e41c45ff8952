"""Runs as Ray actors, for a class that outgrows one machine (``RDQN_EXECUTOR=ray``).

Each run is an actor holding one CPU. Inside it the run trains exactly as in a worker process
(`rdqn.serve.worker.run_worker`), linked by two queues to the actor's methods: the server sends
commands with fire-and-forget calls and collects events by polling. The actor runs one method
at a time, in the order called, so commands keep their order (pause, then resume). The web
server only relays and renders. An actor may live on another machine, where the server's SQLite file
is out of reach, so its writes are relayed to the server (`RunSpec.store_path` is None); a node
or actor that dies surfaces as an error of that call, and the run is recorded as failed with it.

A local instance's start is watched (`rdqn.serve.ray_start`) and, once started, so are its raylet
and control store: one that ended makes every run's worker lost with one line beginning
`RAY_LOST` (a launch then gives a worker lost already), without another call into Ray that would
wait for it.

Ray is an optional install (``pip install -r requirements-ray.txt``). ``address`` is ``local``
(start a Ray instance on this machine), ``auto`` (join the one ``ray start --head`` runs here)
or ``host:port`` of a cluster's head. Each node needs rdqn importable: a checkout on a shared
path (this one's folder is put on the actors' ``PYTHONPATH``) or ``pip install``.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from pathlib import Path
from typing import Any

from rdqn.serve.protocol import (
    WARM_UP_PART_NAMES,
    ExecutorUnavailable,
    QueueLink,
    RunSpec,
    WarmUp,
    Worker,
    drain,
)
from rdqn.serve.ray_start import (
    LOCAL_SYSTEM_CONFIG,
    RAY_LOGGER,
    WATCH_S,
    CoreProcesses,
    RayLost,
    check_reachable,
    join_cluster,
    lost_line,
    session_dir,
    start_local,
)

__all__ = [
    "RAY_LOST",
    "RAY_MISSING",
    "LostRayExecutor",
    "RayExecutor",
    "ray_lost",
]

_log = logging.getLogger(RAY_LOGGER)

RAY_MISSING = (
    "RDQN_EXECUTOR=ray needs Ray, which is not installed here: "
    "pip install -r requirements-ray.txt (or pip install 'rdqn[ray]')"
)
_ROOT = Path(__file__).resolve().parents[2]
_WAIT_S = 1.0
"""How long one poll of an actor waits for its answer (a starting actor's comes later: the
same call is waited for again at the next poll)."""
RAY_LOST: tuple[str, ...] = ("Ray lost ", "Ray did not start")
"""How an error begins when Ray itself is gone here (a process of its own lost): no retry on
this instance can help."""
_GONE_GRACE_S = 1.0
"""How long a lost actor waits to be told apart from a lost raylet."""


def ray_lost(what: str, err: BaseException) -> str:
    """One line saying that ``what`` (a worker, an actor) was lost, for the store and the pages
    students see; Ray's own text (addresses, namespaces, pids, about 1 kB) goes to the log."""
    _log.warning("%s was lost: %s: %s", what, type(err).__name__, err)
    return f"{what} was lost ({type(err).__name__}; the server's log has Ray's details)"


def _ray() -> Any:
    try:
        import ray
    except ImportError as err:
        raise ExecutorUnavailable(RAY_MISSING) from err
    return ray


class _RunActor:
    """The actor's body: a run in a thread, linked to the methods by queues."""

    def __init__(self, spec: RunSpec) -> None:
        self._commands: queue.Queue[Any] = queue.Queue()
        self._events: queue.Queue[Any] = queue.Queue()
        from rdqn.serve.worker import lower_priority, run_worker  # torch: in the actor's process

        link = QueueLink(self._commands, self._events)
        lower_priority()  # the actor's process is the run's own
        self._thread = threading.Thread(target=run_worker, args=(spec, link), daemon=True)
        self._thread.start()

    def command(self, message: tuple[Any, ...] | None) -> None:
        self._commands.put(message)

    def events(self, timeout: float) -> list[tuple[Any, ...]]:
        return drain(self._events, timeout)


class _RayWorker:
    """A run's actor, polled; ``gone`` says when Ray itself lost a process of its own (then no
    call goes into Ray: it would wait for that process)."""

    def __init__(self, ray: Any, actor: Any, gone: Any, lost: str | None = None) -> None:
        self._ray = ray
        self._actor = actor
        self._gone = gone
        self._lost = lost
        self._asked: Any = None  # the events call not answered yet
        self._heard = False

    def _ray_gone(self) -> bool:
        what = self._gone()
        if what is not None and self._lost is None:
            when = "while the run trained" if self._heard else "before the run started"
            self._lost = lost_line(what, when)
        return what is not None

    def send(self, command: tuple[Any, ...]) -> None:
        if self._lost is None and not self._ray_gone():
            self._actor.command.remote(command)

    def events(self, timeout: float) -> list[tuple[Any, ...]]:
        if self._lost is not None or self._ray_gone():
            return []
        try:
            # The actor answers at once (it must not block the commands queued behind); one
            # that is busy or still starting answers later, to the same call (a new call would
            # leave the answer, and the events in it, to nobody).
            if self._asked is None:
                self._asked = self._actor.events.remote(0.0)
            ready, _ = self._ray.wait([self._asked], timeout=_WAIT_S)
            if not ready:
                return []
            events = list(self._ray.get(self._asked))
        except Exception as err:  # noqa: BLE001 - the actor or its node is gone
            # Ray's own loss may be what killed it (its raylet's sockets close as it dies, a
            # moment before it can be seen dead): then that is the line, and no retry helps.
            deadline = time.monotonic() + _GONE_GRACE_S
            while not self._ray_gone() and time.monotonic() < deadline:
                time.sleep(WATCH_S)
            if self._lost is None:
                self._lost = ray_lost("the Ray actor", err)
            return []
        self._asked = None
        if events:
            self._heard = True
        else:
            time.sleep(timeout)
        return events

    def alive(self) -> bool:
        return self._lost is None

    def exit_reason(self) -> str:
        return self._lost or "the Ray actor ended before closing its run"

    def kill(self) -> None:
        if self._actor is not None and not self._ray_gone():
            self._ray.kill(self._actor, no_restart=True)
        self._lost = self._lost or "the Ray actor was killed"

    def join(self, timeout: float) -> None:
        if self._actor is not None and not self._ray_gone():
            self._ray.kill(self._actor, no_restart=True)  # its run is closed: free its CPU


class RayExecutor:
    """One Ray actor per run; capacity: the cluster's CPUs."""

    name = "ray"
    shares_store = False

    def __init__(self, address: str = "local", *, num_cpus: int | None = None) -> None:
        ray = self._ray = _ray()
        self._started = False
        self._core: CoreProcesses | None = None
        self._lost: str | None = None
        self._release = threading.Event()  # ends the thread that started Ray (`close`)
        if not ray.is_initialized():
            options: dict[str, Any] = {
                "include_dashboard": False,
                "logging_level": "ERROR",
                "log_to_driver": False,
                "runtime_env": {"env_vars": {"PYTHONPATH": str(_ROOT)}},
            }
            check_reachable(address)
            try:
                if address == "local":
                    self._core = CoreProcesses()
                    options["_system_config"] = LOCAL_SYSTEM_CONFIG
                    start_local(ray, num_cpus, options, self._core, self._release)
                else:
                    join_cluster(ray, address, options)
            except ExecutorUnavailable:
                raise
            except Exception as err:  # noqa: BLE001 - any failure to reach the cluster
                raise ExecutorUnavailable(
                    f"cannot start or join Ray at RDQN_RAY_ADDRESS={address!r}: {err}"
                ) from err
            self._started = True
        self._actor_class = ray.remote(num_cpus=1)(_RunActor)

    @property
    def capacity(self) -> int:
        return max(1, int(self._ray.cluster_resources().get("CPU", 1)))

    def lost(self) -> str | None:
        """``its raylet (killed by SIGKILL)`` once the local instance this executor started has
        lost a process it cannot live without (logged once); None while it has not, and for a
        cluster joined, whose processes are not this one's to see."""
        if self._lost is None and self._started and self._core is not None:
            what = self._core.ended()
            if what is not None:
                self._lost = what
                _log.warning(
                    "Ray lost %s (%s; session %s)",
                    what,
                    self._core.describe(),
                    session_dir(self._ray),
                )
        return self._lost

    def prepare(self) -> None:
        """Nothing ahead of time: each actor is a fresh process on some node."""

    def warm_up_progress(self) -> WarmUp:
        """Ready: there is nothing to wait for here. Each actor loads the kernels it needs
        when its run starts (numba's cache on its node; `python -m rdqn warm-up` fills it)."""
        return WarmUp(len(WARM_UP_PART_NAMES), len(WARM_UP_PART_NAMES))

    def launch(self, spec: RunSpec) -> Worker:
        if self.lost() is not None:  # creating an actor would wait for the lost process
            return _RayWorker(self._ray, None, self.lost)
        actor = self._actor_class.options(name=f"rdqn-run-{spec.run_id}").remote(spec)
        return _RayWorker(self._ray, actor, self.lost)

    def close(self) -> None:
        """Leave the Ray instance this executor started (a joined cluster stays up)."""
        started, self._started = self._started, False  # its processes end now: not lost
        try:
            if started and self._ray.is_initialized():
                self._ray.shutdown()
        finally:
            self._release.set()


class LostRayExecutor:
    """Stands for a local Ray that was lost as it started (`RayLost`): every launch gives a
    worker lost already, so each run is recorded failed with the one line, not left unfiled."""

    name = "ray"
    shares_store = False

    def __init__(self, lost: RayLost, *, capacity: int = 1) -> None:
        self._what = lost.what
        self._capacity = capacity

    @property
    def capacity(self) -> int:
        return self._capacity

    def lost(self) -> str:
        return self._what

    def prepare(self) -> None:
        """Nothing: there is no Ray to prepare."""

    def warm_up_progress(self) -> WarmUp:
        return WarmUp(len(WARM_UP_PART_NAMES), len(WARM_UP_PART_NAMES))

    def launch(self, spec: RunSpec) -> Worker:
        return _RayWorker(None, None, self.lost, lost=lost_line(self._what))

    def close(self) -> None:
        """Nothing to leave: Ray's processes end with this one."""
