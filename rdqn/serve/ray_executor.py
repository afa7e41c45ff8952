"""Runs as Ray actors, for a class that outgrows one machine (``RDQN_EXECUTOR=ray``).

Each run is an actor holding one CPU. Inside it the run trains exactly as in a worker process
(`rdqn.serve.worker.run_worker`), linked by two queues to the actor's methods: the server sends
commands with fire-and-forget calls and collects events by polling. The actor runs one method
at a time, in the order called, so commands keep their order (pause, then resume). The web
server only relays and renders. An actor may live on another machine, where the server's SQLite file
is out of reach, so its writes are relayed to the server (`RunSpec.store_path` is None); a node
or actor that dies surfaces as an error of that call, and the run is recorded as failed with it.

A local instance (``local``) is this process's children, its raylet and its control store (the
GCS) among them. Ray does not survive losing one of those: a start waits for Ray's own timeouts
or for ever, calls wait for a control store that is gone, and a minute later Ray ends this
process with one log line. So the start is watched (`START_TIMEOUT_S`) and, once started, so is
each of those two processes: one that ended raises `RayLost` at the start, and later makes every
run's worker lost with one line beginning `RAY_LOST` (a launch then gives a worker lost already),
without another call into Ray that would wait for it.

Ray is an optional install (``pip install -r requirements-ray.txt``). ``address`` is ``local``
(start a Ray instance on this machine), ``auto`` (join the one ``ray start --head`` runs here)
or ``host:port`` of a cluster's head. Each node needs rdqn importable: a checkout on a shared
path (this one's folder is put on the actors' ``PYTHONPATH``) or ``pip install``.
"""

from __future__ import annotations

import logging
import os
import queue
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from rdqn.serve.protocol import (
    WARM_UP_PART_NAMES,
    ExecutorUnavailable,
    QueueLink,
    RunSpec,
    WarmUp,
    Worker,
    drain,
)

__all__ = [
    "RAY_LOST",
    "RAY_MISSING",
    "LostRayExecutor",
    "RayExecutor",
    "RayLost",
    "check_reachable",
    "lost_line",
    "ray_lost",
    "start_given_up",
]

_log = logging.getLogger(__name__)

RAY_MISSING = (
    "RDQN_EXECUTOR=ray needs Ray, which is not installed here: "
    "pip install -r requirements-ray.txt (or pip install 'rdqn[ray]')"
)
_ROOT = Path(__file__).resolve().parents[2]
_WAIT_S = 1.0
"""How long one poll of an actor waits for its answer (a starting actor's comes later: the
same call is waited for again at the next poll)."""
REACH_TIMEOUT_S = 5.0
"""How long joining a cluster waits for its head's port to answer."""
JOIN_TIMEOUT_S = 20.0
"""How long joining a cluster may take in all: Ray itself retries a head that does not answer
as Ray for many minutes, printing a warning every few seconds."""
START_TIMEOUT_S = 60.0
"""How long starting a local instance may take: one whose worker was killed as it started can
wait for ever (a second or two is usual, ten on a loaded machine)."""
RAY_LOST: tuple[str, ...] = ("Ray lost ", "Ray did not start")
"""How an error begins when Ray itself is gone here (a process of its own lost): no retry on
this instance can help."""
_LOCAL_SYSTEM_CONFIG = {"enable_worker_prestart": False, "prestart_worker_first_driver": False}
"""No idle workers started ahead of the first actors: one of those killed as this process
registered with its raylet left ``ray.init`` waiting for ever (4 of 10 tries), holding the GIL,
so that nothing here could even time it out. Each actor starts its own worker instead."""
_CORE = ("raylet", "gcs_server")
"""A local instance's processes it cannot live without (their names in /proc)."""
_WATCH_S = 0.2
_GONE_GRACE_S = 1.0
"""How long a lost actor waits to be told apart from a lost raylet."""


_GIVEN_UP: list[threading.Thread] = []
"""Threads of this process still in a local ``ray.init`` that `_start_local` gave up on."""


def start_given_up() -> bool:
    """Whether a local Ray's start given up on here (`RayLost`) may still run in its thread.
    Then the process should end with ``os._exit`` once its output is flushed: Ray's exit handler
    (``ray.shutdown``) and the interpreter's end would run beside that thread's C++: a sweep
    whose raylet was killed as Ray started ended by SIGSEGV after its last line in 2 of 34
    tries (0 of 28 since), and its end took about 2 s longer."""
    return any(thread.is_alive() for thread in _GIVEN_UP)


class RayLost(ExecutorUnavailable):
    """A local Ray lost a process of its own (its raylet, its control store) as it started, or
    did not start within `START_TIMEOUT_S`; ``what`` says which, as `RayExecutor.lost` does."""

    def __init__(self, message: str, what: str) -> None:
        super().__init__(message)
        self.what = what


def ray_lost(what: str, err: BaseException) -> str:
    """One line saying that ``what`` (a worker, an actor) was lost, for the store and the pages
    students see; Ray's own text (addresses, namespaces, pids, about 1 kB) goes to the log."""
    _log.warning("%s was lost: %s: %s", what, type(err).__name__, err)
    return f"{what} was lost ({type(err).__name__}; the server's log has Ray's details)"


def lost_line(what: str, when: str = "") -> str:
    """The one line a run records (and the CLI prints) when Ray lost ``what``."""
    return f"Ray lost {what}{' ' if when else ''}{when}; Ray's details are in the log"


class _CoreProcesses:
    """The raylet and control store of the Ray instance this process starts: its children,
    found in /proc, and asked how they stand without reaping them (Ray's own objects do that)."""

    def __init__(self) -> None:
        self._me = os.getpid()
        self._before = set(self._children())  # a failed start's leftovers are not this one's
        self.pids: dict[int, str] = {}

    def _children(self) -> dict[int, str]:
        """pid -> name of this process's children named as Ray's core processes."""
        found: dict[int, str] = {}
        try:
            entries = os.listdir("/proc")
        except OSError:  # no /proc: nothing is watched
            return found
        for entry in entries:
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as stat:
                    line = stat.read()
            except OSError:
                continue
            name = line[line.find("(") + 1 : line.rfind(")")]
            fields = line[line.rfind(")") + 2 :].split()
            if name in _CORE and len(fields) > 1 and fields[1] == str(self._me):
                found[int(entry)] = name
        return found

    def find(self) -> None:
        """Take in the core processes started since (until both are known)."""
        if len(self.pids) < len(_CORE):
            for pid, name in self._children().items():
                if pid not in self._before:
                    self.pids.setdefault(pid, name)

    def ended(self) -> str | None:
        """``its raylet (killed by SIGKILL)`` for a core process that ended; None while all
        live."""
        for pid, name in self.pids.items():
            try:
                info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:  # reaped already: it ended
                return f"its {name} (ended)"
            except OSError:
                continue
            if info is None:
                continue
            if info.si_code in (os.CLD_KILLED, os.CLD_DUMPED):
                try:
                    how = f"killed by {signal.Signals(info.si_status).name}"
                except ValueError:
                    how = f"killed by signal {info.si_status}"
            else:
                how = f"exit status {info.si_status}"
            return f"its {name} ({how})"
        return None

    def describe(self) -> str:
        return ", ".join(f"{name} pid {pid}" for pid, name in self.pids.items()) or "none found"


def _session_dir(ray: Any) -> str:
    node = getattr(getattr(ray, "_private", None), "worker", None)
    node = getattr(node, "_global_node", None)
    try:
        return str(node.get_session_dir_path()) if node is not None else "unknown"
    except Exception:  # noqa: BLE001 - only for the log
        return "unknown"


def _start_local(
    ray: Any,
    num_cpus: int | None,
    options: dict[str, Any],
    core: _CoreProcesses,
    release: threading.Event,
) -> None:
    """``ray.init`` of a local instance, watched: `RayLost` as soon as its raylet or control
    store ends, or after `START_TIMEOUT_S` (the attempt goes on in a daemon thread, which ends
    with the process, by ``os._exit``: `start_given_up`; Ray's processes end with it too).

    The thread that starts Ray lives on until ``release`` is set (after `ray.shutdown`): Ray
    ties its processes to their parent with Linux's parent-death signal, which a parent
    *thread*'s end sends, so they would all die with a thread that only started them."""
    failed: list[BaseException] = []
    started = threading.Event()

    def start() -> None:
        try:
            ray.init(num_cpus=num_cpus, **options)
        except BaseException as err:  # noqa: BLE001 - handed to the caller
            failed.append(err)
            return
        finally:
            started.set()
        release.wait()

    thread = threading.Thread(target=start, name="rdqn-ray", daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        done = started.wait(_WATCH_S)
        core.find()
        what = core.ended()
        if what is not None:
            if failed:
                _log.warning("Ray's start failed: %s: %s", type(failed[0]).__name__, failed[0])
            _log.warning(
                "Ray lost %s as it started (%s; session %s)",
                what,
                core.describe(),
                _session_dir(ray),
            )
            what = f"{what} as it started here"
            _GIVEN_UP.append(thread)
            raise RayLost(lost_line(what), what)
        if done:
            break
        if time.monotonic() > deadline:
            _log.warning(
                "Ray did not start within %g s (%s; session %s)",
                START_TIMEOUT_S,
                core.describe(),
                _session_dir(ray),
            )
            what = f"a process as it started here (it did not start within {START_TIMEOUT_S:g} s)"
            _GIVEN_UP.append(thread)
            raise RayLost(
                f"Ray did not start here within {START_TIMEOUT_S:g} s (a process of its own "
                "lost or stuck as it started); Ray's details are in the log",
                what,
            )
    if failed:
        raise failed[0]


def check_reachable(address: str, timeout: float = REACH_TIMEOUT_S) -> None:
    """`ExecutorUnavailable` in one line unless ``host:port`` (or ``ray://host:port``) accepts
    a connection within ``timeout`` seconds; ``local`` and ``auto`` are not checked."""
    if address in ("local", "auto"):
        return
    parts = urlsplit(address if "://" in address else f"//{address}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:  # a port that is not a number
        host, port = None, None
    if not host or port is None:
        raise ExecutorUnavailable(
            f"RDQN_RAY_ADDRESS={address!r} is not host:port (nor local or auto)"
        )
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as err:
        why = "no answer" if isinstance(err, TimeoutError) else (err.strerror or str(err))
        raise ExecutorUnavailable(
            f"cannot reach Ray at {address}: {why} within {timeout:g} s "
            "(is `ray start --head` running there, and its port open?)"
        ) from None


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
                time.sleep(_WATCH_S)
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


def _join(ray: Any, address: str, options: dict[str, Any]) -> None:
    """``ray.init(address=address)``, given up after `JOIN_TIMEOUT_S` with one line (the
    attempt goes on in a daemon thread, which ends with the process)."""
    failed: list[BaseException] = []

    def join() -> None:
        try:
            ray.init(address=address, **options)
        except BaseException as err:  # noqa: BLE001 - handed to the caller
            failed.append(err)

    thread = threading.Thread(target=join, name="rdqn-ray-join", daemon=True)
    thread.start()
    thread.join(JOIN_TIMEOUT_S)
    if thread.is_alive():
        raise ExecutorUnavailable(
            f"cannot join Ray at {address}: no Ray answered there within {JOIN_TIMEOUT_S:g} s "
            "(is `ray start --head` running there?)"
        )
    if failed:
        raise failed[0]


class RayExecutor:
    """One Ray actor per run; capacity: the cluster's CPUs."""

    name = "ray"
    shares_store = False

    def __init__(self, address: str = "local", *, num_cpus: int | None = None) -> None:
        ray = self._ray = _ray()
        self._started = False
        self._core: _CoreProcesses | None = None
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
                    self._core = _CoreProcesses()
                    options["_system_config"] = _LOCAL_SYSTEM_CONFIG
                    _start_local(ray, num_cpus, options, self._core, self._release)
                else:
                    _join(ray, address, options)
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
                    _session_dir(self._ray),
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
