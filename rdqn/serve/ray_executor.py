"""Runs as Ray actors, for a class that outgrows one machine (``RDQN_EXECUTOR=ray``).

Each run is an actor holding one CPU. Inside it the run trains exactly as in a worker process
(`rdqn.serve.worker.run_worker`), linked by two queues to the actor's methods: the server sends
commands with fire-and-forget calls and collects events by polling. The actor runs one method
at a time, in the order called, so commands keep their order (pause, then resume). The web
server only relays and renders. An actor may live on another machine, where the server's SQLite file
is out of reach, so its writes are relayed to the server (`RunSpec.store_path` is None); a node
or actor that dies surfaces as an error of that call, and the run is recorded as failed with it.

Ray is an optional install (``pip install -r requirements-ray.txt``). ``address`` is ``local``
(start a Ray instance on this machine), ``auto`` (join the one ``ray start --head`` runs here)
or ``host:port`` of a cluster's head. Each node needs rdqn importable: a checkout on a shared
path (this one's folder is put on the actors' ``PYTHONPATH``) or ``pip install``.
"""

from __future__ import annotations

import logging
import queue
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

__all__ = ["RAY_MISSING", "RayExecutor", "check_reachable", "ray_lost"]

_log = logging.getLogger(__name__)

RAY_MISSING = (
    "RDQN_EXECUTOR=ray needs Ray, which is not installed here: "
    "pip install -r requirements-ray.txt (or pip install 'rdqn[ray]')"
)
_ROOT = Path(__file__).resolve().parents[2]
_CALL_TIMEOUT_S = 60.0
REACH_TIMEOUT_S = 5.0
"""How long joining a cluster waits for its head's port to answer."""
JOIN_TIMEOUT_S = 20.0
"""How long joining a cluster may take in all: Ray itself retries a head that does not answer
as Ray for many minutes, printing a warning every few seconds."""


def ray_lost(what: str, err: BaseException) -> str:
    """One line saying that ``what`` (a worker, an actor) was lost, for the store and the pages
    students see; Ray's own text (addresses, namespaces, pids, about 1 kB) goes to the log."""
    _log.warning("%s was lost: %s: %s", what, type(err).__name__, err)
    return f"{what} was lost ({type(err).__name__}; the server's log has Ray's details)"


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
    def __init__(self, ray: Any, actor: Any) -> None:
        self._ray = ray
        self._actor = actor
        self._lost: str | None = None

    def send(self, command: tuple[Any, ...]) -> None:
        if self._lost is None:
            self._actor.command.remote(command)

    def events(self, timeout: float) -> list[tuple[Any, ...]]:
        if self._lost is not None:
            return []
        try:
            # The actor answers at once (it must not block the commands queued behind).
            events = list(self._ray.get(self._actor.events.remote(0.0), timeout=_CALL_TIMEOUT_S))
        except self._ray.exceptions.GetTimeoutError:
            return []  # a busy or still-starting actor: ask again
        except Exception as err:  # noqa: BLE001 - the actor or its node is gone
            self._lost = ray_lost("the Ray actor", err)
            return []
        if not events:
            time.sleep(timeout)
        return events

    def alive(self) -> bool:
        return self._lost is None

    def exit_reason(self) -> str:
        return self._lost or "the Ray actor ended before closing its run"

    def kill(self) -> None:
        self._ray.kill(self._actor, no_restart=True)
        self._lost = self._lost or "the Ray actor was killed"

    def join(self, timeout: float) -> None:
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
                    ray.init(num_cpus=num_cpus, **options)
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

    def prepare(self) -> None:
        """Nothing ahead of time: each actor is a fresh process on some node."""

    def warm_up_progress(self) -> WarmUp:
        """Ready: there is nothing to wait for here. Each actor loads the kernels it needs
        when its run starts (numba's cache on its node; `python -m rdqn warm-up` fills it)."""
        return WarmUp(len(WARM_UP_PART_NAMES), len(WARM_UP_PART_NAMES))

    def launch(self, spec: RunSpec) -> Worker:
        actor = self._actor_class.options(name=f"rdqn-run-{spec.run_id}").remote(spec)
        return _RayWorker(self._ray, actor)

    def close(self) -> None:
        """Leave the Ray instance this executor started (a joined cluster stays up)."""
        if self._started and self._ray.is_initialized():
            self._ray.shutdown()
            self._started = False
