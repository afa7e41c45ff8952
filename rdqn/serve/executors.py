"""Where runs train: worker processes by default, threads for tests, Ray for a cluster.

An executor starts a worker (`rdqn.serve.worker.run_worker`) for a `RunSpec` and returns the
server's end of the link, a `Worker`: send it commands, read its events, ask whether it lives.
`RunHandle` relays between a `Worker` and the pages; it does not care which executor made it.

    ProcessExecutor   one process per run, forked from a zygote that imported rdqn once, so a
                      run starts in a fraction of a second. The default: training never holds
                      the web server's GIL. Capacity: the machine's cores minus one.
    ThreadExecutor    a thread in this process (tests, and library use without a server).
    RayExecutor       a Ray actor per run (`rdqn.serve.ray_executor`), for more than one machine.

`executor_from_env` picks one from RDQN_EXECUTOR (process | thread | ray) and RDQN_RAY_ADDRESS;
`prepare_early` lets the web server start the default one's zygote as the server itself starts,
and hands it to the first `executor_from_env()` after that.
"""

from __future__ import annotations

import os
import queue
import threading
from typing import Any, Protocol

from rdqn.serve.protocol import (
    WARM_UP_PART_NAMES,
    ExecutorUnavailable,
    QueueLink,
    RunSpec,
    WarmUp,
    Worker,
    drain,
)
from rdqn.serve.zygote import Zygote
from rdqn.validation import check_choice

__all__ = [
    "EXECUTORS",
    "Executor",
    "ExecutorUnavailable",
    "ProcessExecutor",
    "QueueLink",
    "ThreadExecutor",
    "WarmUp",
    "Worker",
    "drain",
    "close_early",
    "executor_from_env",
    "prepare_early",
    "usable_cores",
]

EXECUTORS: tuple[str, ...] = ("process", "thread", "ray")


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity), not all the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class Executor(Protocol):
    """Starts workers."""

    name: str
    shares_store: bool
    """Whether workers can open the server's SQLite store (else they relay their writes)."""

    @property
    def capacity(self) -> int:
        """How many runs can train at once without slowing each other down."""
        ...

    def prepare(self) -> None:
        """Get ready for the first run in the background (imports, compiled kernels)."""
        ...

    def warm_up_progress(self) -> WarmUp:
        """How far `prepare`'s warm-up has come; ``ready`` once a launch waits for nothing."""
        ...

    def launch(self, spec: RunSpec) -> Worker: ...

    def close(self) -> None: ...


# --------------------------------------------------------------------------------- processes
class ProcessExecutor:
    """One worker process per run, forked from a zygote that imported rdqn and loaded its
    kernels once (`rdqn.serve.zygote`), so a run starts in milliseconds.

    ``capacity`` defaults to the cores but one (one is left for the web server).
    """

    name = "process"
    shares_store = True

    def __init__(self, *, capacity: int | None = None) -> None:
        self._capacity = capacity
        self._zygote = Zygote()

    @property
    def capacity(self) -> int:
        return self._capacity or max(1, usable_cores() - 1)

    def prepare(self) -> None:
        """Start the zygote now (it imports and warms up in seconds), so the first run does not
        wait for it."""
        self._zygote.ensure_running()

    def warm_up_progress(self) -> WarmUp:
        """The zygote's warm-up, as it reports it part by part."""
        return self._zygote.warm_up_progress()

    def launch(self, spec: RunSpec) -> Worker:
        return self._zygote.launch(spec)

    def close(self) -> None:
        """End the zygote; running workers end with their links."""
        self._zygote.close()


# ----------------------------------------------------------------------------------- threads
class _ThreadWorker:
    def __init__(
        self, thread: threading.Thread, commands: queue.Queue[Any], events: queue.Queue[Any]
    ):
        self._thread = thread
        self._commands = commands
        self._events = events

    def send(self, command: tuple[Any, ...]) -> None:
        self._commands.put(command)

    def events(self, timeout: float) -> list[tuple[Any, ...]]:
        return drain(self._events, timeout)

    def alive(self) -> bool:
        return self._thread.is_alive()

    def exit_reason(self) -> str:
        return "the worker thread ended before closing its run"

    def kill(self) -> None:
        self._commands.put(None)  # a thread cannot be killed: end its link, the run stops

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)


class ThreadExecutor:
    """A worker thread in this process: same protocol, no process boundary (tests, library)."""

    name = "thread"
    shares_store = True

    def __init__(self) -> None:
        self._warm_up = WarmUp(0, len(WARM_UP_PART_NAMES))

    @property
    def capacity(self) -> int:
        return max(1, usable_cores() - 1)

    def prepare(self) -> None:
        """Load the compiled kernels in the background, so the first run does not wait."""
        # Not a daemon, said explicitly (a thread inherits its creator's flag, and a Streamlit
        # script thread is a daemon): an interpreter that exits in the middle of the warm-up
        # aborts inside numba or torch ("terminate called without an active exception").
        from rdqn.serve.worker import warm_up  # torch: only where runs train in this process

        threading.Thread(
            target=warm_up, args=(self._heard,), name="rdqn-warm-up", daemon=False
        ).start()

    def _heard(self, progress: WarmUp) -> None:
        self._warm_up = progress  # one writer (the warm-up thread); readers see whole objects

    def warm_up_progress(self) -> WarmUp:
        """The warm-up thread's progress ((0, n) until `prepare`). A run launched before it
        is ready loads (or compiles) the kernels it needs itself."""
        return self._warm_up

    def launch(self, spec: RunSpec) -> Worker:
        from rdqn.serve.worker import run_worker

        commands: queue.Queue[Any] = queue.Queue()
        events: queue.Queue[Any] = queue.Queue()
        thread = threading.Thread(
            target=run_worker,
            args=(spec, QueueLink(commands, events)),
            name=f"rdqn-run-{spec.run_id}",
            daemon=True,
        )
        thread.start()
        return _ThreadWorker(thread, commands, events)

    def close(self) -> None:
        """Nothing to release."""


_early: list[ProcessExecutor] = []
_early_lock = threading.Lock()


def prepare_early() -> None:
    """Start this process's environment-chosen executor's warm-up now, when it is the default
    `ProcessExecutor` (a zygote is a process: starting one takes milliseconds here, while it
    imports torch and loads the kernels on its own). The web server calls this as it starts, so
    the warm-up runs while the first page is served, not after it; the next
    `executor_from_env()` in this process takes the prepared executor over. Any other executor
    (threads, Ray) or a bad setting is left to that call, which says what is wrong."""
    if os.environ.get("RDQN_EXECUTOR", "process") != "process":
        return
    executor = ProcessExecutor()
    executor.prepare()
    with _early_lock:
        _early.append(executor)


def close_early() -> None:
    """End an executor `prepare_early` made that nobody took (a server that served no page)."""
    with _early_lock:
        unclaimed = list(_early)
        _early.clear()
    for executor in unclaimed:
        executor.close()


def executor_from_env(environ: dict[str, str] | None = None) -> Executor:
    """The executor RDQN_EXECUTOR names (default: process); for Ray, RDQN_RAY_ADDRESS says
    which cluster: ``local`` (the default: start one on this machine), ``auto`` or
    ``host:port``. Raises `ExecutorUnavailable` when Ray is asked for but not installed.

    Without ``environ``, an executor `prepare_early` made is handed over (once)."""
    if environ is None:
        with _early_lock:
            if _early:
                return _early.pop()
    env = os.environ if environ is None else environ
    name = check_choice("RDQN_EXECUTOR", env.get("RDQN_EXECUTOR", "process"), EXECUTORS)
    if name == "thread":
        return ThreadExecutor()
    if name == "ray":
        from rdqn.serve.ray_executor import RayExecutor

        return RayExecutor(address=env.get("RDQN_RAY_ADDRESS", "local"))
    return ProcessExecutor()
