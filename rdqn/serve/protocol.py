"""What the server and a run's worker say to each other: torch-free, so the web server that
serves the pages never imports torch (workers and the zygote do, `rdqn.serve.worker`).

    server -> worker   ("pause",)  ("resume",)  ("step",)  ("speed", steps_per_second | None)
                       ("stop", reason | None)  ("play",)  ("memories",)
    worker -> server   ("snapshot", Telemetry)
                       ("record", method, args, kwargs)  a write for the server's run store
                       ("done", status, error)     the run is closed; nothing follows

A `Worker` is the server's end of a worker's link, whatever runs it (a process, a thread, a Ray
actor); `QueueLink` is a worker's end made of two queues (`drain` reads one). A `RunSpec` says
which run a worker trains; a worker that cannot open the server's store sends
its writes (`RecordRelay`) and the server makes them (`apply_record`). A `WarmUp` says how far
the loading of the compiled kernels has come, part by part (`WARM_UP_PART_NAMES`).
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from rdqn.schemes import SCHEMES
from rdqn.validation import check_choice

if TYPE_CHECKING:  # the server starts the zygote (it imports this module) before it loads these
    from rdqn.config import RunConfig
    from rdqn.runs.checkpoint_chunks import Chunks
    from rdqn.runs.resume import ResumePoint
    from rdqn.runs.store import RunStore

__all__ = [
    "COMMANDS",
    "ExecutorUnavailable",
    "QueueLink",
    "Worker",
    "drain",
    "RECORD_METHODS",
    "RUN_START_PART_NAMES",
    "SERVER_GONE",
    "TRAINING_NICENESS",
    "WARM_UP_PART_NAMES",
    "WARM_UP_SCHEMES",
    "Link",
    "RecordRelay",
    "RunSpec",
    "WarmUp",
    "apply_record",
]

COMMANDS: tuple[str, ...] = ("pause", "resume", "step", "speed", "stop", "play", "memories")
RECORD_METHODS: tuple[str, ...] = ("set_status", "write_metrics", "set_manifest", "save_checkpoint")
SERVER_GONE = "stopped: the server went away"
TRAINING_NICENESS = 10
"""How much a process that trains lowers its CPU priority (`os.nice`): the zygote as it starts
(its workers inherit it) and a Ray actor (`rdqn.serve.worker.lower_priority`)."""

WARM_UP_SCHEMES: tuple[str, ...] = ("proportional", *(s for s in SCHEMES if s != "proportional"))
"""The replay schemes in the order the warm-up loads them: the demo's (proportional) first."""

WARM_UP_PART_NAMES: tuple[str, ...] = (
    f"{WARM_UP_SCHEMES[0]} replay",
    "fused MLP update",
    "sum tree",
    *(f"{scheme} replay" for scheme in WARM_UP_SCHEMES[1:]),
    "checkpoint and resume",
    "recurrent net",
)
"""The parts of a warm-up, in order (`rdqn.serve.worker.WARM_UP_PARTS` does each)."""

RUN_START_PART_NAMES: tuple[str, ...] = WARM_UP_PART_NAMES[
    : WARM_UP_PART_NAMES.index("checkpoint and resume")
]
"""The parts a run waits for: the zygote reports these (`WarmUp` over them) and forks runs at once
after them. It loads the others (a checkpoint's torch optimizer, whose import of torch._dynamo is
most of a second of CPU; the LSTM's first call) once its first run is on its way
(`rdqn.serve.zygote.main`): a run forked before them loads what it needs itself."""


@dataclass(frozen=True)
class RunSpec:
    """What a worker needs to train a run the server has filed."""

    run_id: str
    config: RunConfig
    store_path: str | None
    """The server's run store, if the worker can open it; None: relay the writes."""
    paused: bool = False
    speed: float | None = None
    snapshot_interval: float = 0.5
    resume: ResumePoint | None = None
    """Where a stopped run resumes (`rdqn.runs.resume`; its checkpoint a file the worker can
    read, or with its bytes); None: a new run, from the beginning."""


class Link(Protocol):
    """The worker's end of its connection to the server."""

    def send(self, message: tuple[Any, ...]) -> None: ...

    def recv(self) -> tuple[Any, ...]:
        """The next command; raises ``EOFError`` (or ``OSError``) once the server is gone."""
        ...


class RecordRelay:
    """`RunRecords` that sends each write to the server instead of making it."""

    def __init__(self, send: Callable[[tuple[Any, ...]], None]) -> None:
        self._send = send

    def set_status(
        self,
        run_id: str,
        status: str,
        error: str | None = None,
        *,
        expect: Mapping[str, Any] | None = None,
        rewind: tuple[int, int, int] | None = None,
    ) -> None:
        """Relayed (`rdqn.runs.lifecycle.record_status`): the server's store decides, and the
        server ends a run its store refused to let a resume take (`RunHandle`)."""
        guard = {"expect": None if expect is None else dict(expect), "rewind": rewind}
        self._send(("record", "set_status", (run_id, status, error), guard))

    def write_metrics(self, run_id: str, **rows: Any) -> None:
        self._send(("record", "write_metrics", (run_id,), rows))

    def set_manifest(self, run_id: str, manifest: Mapping[str, Any]) -> None:
        self._send(("record", "set_manifest", (run_id, dict(manifest)), {}))

    def save_checkpoint(
        self,
        run_id: str,
        data: bytes,
        *,
        chunks: Chunks | None = None,
        resume_env_steps: int | None = None,
    ) -> None:
        """Relayed with the chunks' bytes (those the server does not hold yet: the run sends
        None for the rest, `RecordedRun`)."""
        sent = (
            None
            if chunks is None
            else {d: None if c is None else bytes(c) for d, c in chunks.items()}
        )
        self._send(
            (
                "record",
                "save_checkpoint",
                (run_id, data),
                {"chunks": sent, "resume_env_steps": resume_env_steps},
            )
        )


def apply_record(
    store: RunStore, method: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> Any:
    """Make a write a worker relayed (one of `RECORD_METHODS`) in the server's store; returns
    what the store returns (False: a status it refused to write, `RunStore.set_status`)."""
    check_choice("record method", method, RECORD_METHODS)
    return getattr(store, method)(*args, **kwargs)


@dataclass(frozen=True)
class WarmUp:
    """How far a warm-up (`rdqn.serve.worker.warm_up`) has come: ``done`` of ``total`` parts."""

    done: int
    total: int
    compiling: bool = False
    """Whether numba compiles the kernels (a fresh checkout: tens of seconds) rather than
    loading them from its on-disk cache (about a second)."""
    part: str = ""
    """The part in progress ("" once ready)."""

    @property
    def ready(self) -> bool:
        """Every part is done: no run waits for a kernel."""
        return self.done >= self.total


class ExecutorUnavailable(RuntimeError):
    """The executor asked for cannot run here (Ray missing, or its cluster out of reach)."""


class Worker(Protocol):
    """The server's end of one worker."""

    def send(self, command: tuple[Any, ...]) -> None:
        """Send a command (a lost worker ignores it)."""
        ...

    def events(self, timeout: float) -> list[tuple[Any, ...]]:
        """The events that arrived, waiting up to ``timeout`` s for the first one."""
        ...

    def alive(self) -> bool: ...

    def exit_reason(self) -> str:
        """Why a worker that is no longer alive ended (for the run's error)."""
        ...

    def kill(self) -> None:
        """End the worker at once (its run is recorded as it stood)."""
        ...

    def join(self, timeout: float) -> None:
        """Wait for a worker that has closed its run to end, and release it."""
        ...


def drain(events: queue.Queue[Any], timeout: float) -> list[Any]:
    """Every item waiting in ``events``, after waiting up to ``timeout`` s for the first."""
    out = []
    try:
        out.append(events.get(timeout=timeout))
        while True:
            out.append(events.get_nowait())
    except queue.Empty:
        return out


class QueueLink:
    """The worker's end of a link made of two queues (a thread, or inside a Ray actor)."""

    def __init__(self, commands: queue.Queue[Any], events: queue.Queue[Any]) -> None:
        self._commands = commands
        self._events = events

    def send(self, message: tuple[Any, ...]) -> None:
        self._events.put(message)

    def recv(self) -> tuple[Any, ...]:
        message = self._commands.get()
        if message is None:
            raise EOFError("the server closed the link")
        return message
