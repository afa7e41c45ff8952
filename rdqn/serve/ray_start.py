"""Starting a local Ray instance, or joining a cluster, watched: one line and a bounded wait
where Ray itself would wait for ever or print warnings for minutes.

A local instance (``local``) is this process's children, its raylet and its control store (the
GCS) among them. Ray does not survive losing one of those: a start waits for Ray's own timeouts
or for ever. So `start_local` watches them (`CoreProcesses`, found in /proc) and gives up with
`RayLost` as soon as one ends, or after `START_TIMEOUT_S`; `join_cluster` gives up after
`JOIN_TIMEOUT_S`, and `check_reachable` first asks the head's port (`REACH_TIMEOUT_S`).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from rdqn.serve.protocol import ExecutorUnavailable

__all__ = [
    "JOIN_TIMEOUT_S",
    "LOCAL_SYSTEM_CONFIG",
    "RAY_LOGGER",
    "REACH_TIMEOUT_S",
    "START_TIMEOUT_S",
    "WATCH_S",
    "CoreProcesses",
    "RayLost",
    "check_reachable",
    "join_cluster",
    "lost_line",
    "session_dir",
    "start_given_up",
    "start_local",
]

RAY_LOGGER = "rdqn.serve.ray"
"""The logger of Ray's own text (addresses, pids, namespaces): a sweep's log file, the server's
log; runs and pages get one line."""
_log = logging.getLogger(RAY_LOGGER)

REACH_TIMEOUT_S = 5.0
"""How long joining a cluster waits for its head's port to answer."""
JOIN_TIMEOUT_S = 20.0
"""How long joining a cluster may take in all: Ray itself retries a head that does not answer
as Ray for many minutes, printing a warning every few seconds."""
START_TIMEOUT_S = 60.0
"""How long starting a local instance may take: one whose worker was killed as it started can
wait for ever (a second or two is usual, ten on a loaded machine)."""
LOCAL_SYSTEM_CONFIG = {"enable_worker_prestart": False, "prestart_worker_first_driver": False}
"""No idle workers started ahead of the first actors: one of those killed as this process
registered with its raylet left ``ray.init`` waiting for ever (4 of 10 tries), holding the GIL,
so that nothing here could even time it out. Each actor starts its own worker instead."""
_CORE = ("raylet", "gcs_server")
"""A local instance's processes it cannot live without (their names in /proc)."""
WATCH_S = 0.2


_GIVEN_UP: list[threading.Thread] = []
"""Threads of this process still in a local ``ray.init`` that `start_local` gave up on."""


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


def lost_line(what: str, when: str = "") -> str:
    """The one line a run records (and the CLI prints) when Ray lost ``what``."""
    return f"Ray lost {what}{' ' if when else ''}{when}; Ray's details are in the log"


class CoreProcesses:
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


def session_dir(ray: Any) -> str:
    node = getattr(getattr(ray, "_private", None), "worker", None)
    node = getattr(node, "_global_node", None)
    try:
        return str(node.get_session_dir_path()) if node is not None else "unknown"
    except Exception:  # noqa: BLE001 - only for the log
        return "unknown"


def start_local(
    ray: Any,
    num_cpus: int | None,
    options: dict[str, Any],
    core: CoreProcesses,
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
        done = started.wait(WATCH_S)
        core.find()
        what = core.ended()
        if what is not None:
            if failed:
                _log.warning("Ray's start failed: %s: %s", type(failed[0]).__name__, failed[0])
            _log.warning(
                "Ray lost %s as it started (%s; session %s)",
                what,
                core.describe(),
                session_dir(ray),
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
                session_dir(ray),
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


def join_cluster(ray: Any, address: str, options: dict[str, Any]) -> None:
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
