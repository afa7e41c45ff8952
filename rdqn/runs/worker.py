"""A run in a worker: the same lifecycle and loop as in-process, driven by messages.

A worker trains one `RecordedRun` with `rdqn.runs.control.drive`, exactly as a thread in the
server would, and talks to the server over a *link*: a pipe between processes, queues between
threads, a Ray actor's mailbox. The messages:

    server -> worker   ("pause",)  ("resume",)  ("step",)  ("speed", steps_per_second | None)
                       ("stop", reason | None)
    worker -> server   ("snapshot", Telemetry)
                       ("record", method, args, kwargs)  a write for the server's run store
                       ("done", status, error)     the run is closed; nothing follows

A worker on the server's machine opens the server's SQLite store itself (`RunSpec.store_path`);
one that cannot (a Ray node elsewhere) relays every write instead (`RecordRelay`: status, metric
rows, manifest, checkpoint bytes) and the server makes it (`apply_record`). Either way the writes
happen as the run goes, so a worker that dies loses at most the rows of its last second. A
resumed run's checkpoint comes the same way: a path the worker reads, or the file's bytes.

A worker whose link to the server breaks stops its run ("the server went away") and exits: no
worker outlives its server.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from rdqn.config import SCHEMES, RunConfig
from rdqn.presets import preset
from rdqn.runs.control import RunControls, drive
from rdqn.runs.lifecycle import RecordedRun, ending
from rdqn.runs.store import RunRecords, RunStore
from rdqn.training.trainer import Trainer
from rdqn.validation import check_choice

__all__ = [
    "COMMANDS",
    "SERVER_GONE",
    "Link",
    "RecordRelay",
    "RunSpec",
    "apply_record",
    "run_worker",
    "warm_up",
]

COMMANDS: tuple[str, ...] = ("pause", "resume", "step", "speed", "stop")
RECORD_METHODS: tuple[str, ...] = ("set_status", "write_metrics", "set_manifest", "save_checkpoint")
SERVER_GONE = "stopped: the server went away"


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
    resume_from: str | bytes | None = None
    """A stopped run's resume checkpoint (`rdqn.runs.resume`): a file the worker can read, or
    its bytes; None: the run starts from the beginning."""


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

    def set_status(self, run_id: str, status: str, error: str | None = None) -> None:
        self._send(("record", "set_status", (run_id, status, error), {}))

    def write_metrics(self, run_id: str, **rows: Any) -> None:
        self._send(("record", "write_metrics", (run_id,), rows))

    def set_manifest(self, run_id: str, manifest: Mapping[str, Any]) -> None:
        self._send(("record", "set_manifest", (run_id, dict(manifest)), {}))

    def save_checkpoint(
        self, run_id: str, data: bytes, *, resume_env_steps: int | None = None
    ) -> None:
        self._send(
            ("record", "save_checkpoint", (run_id, data), {"resume_env_steps": resume_env_steps})
        )


def apply_record(
    store: RunStore, method: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> None:
    """Make a write a worker relayed (one of `RECORD_METHODS`) in the server's store."""
    check_choice("record method", method, RECORD_METHODS)
    getattr(store, method)(*args, **kwargs)


def _listen(link: Link, controls: RunControls) -> None:
    """Turn the server's commands into requests, until a stop or the end of the link."""
    while True:
        try:
            name, *args = link.recv()
        except (EOFError, OSError):
            controls.stop(SERVER_GONE)
            return
        if name == "pause":
            controls.pause()
        elif name == "resume":
            controls.resume()
        elif name == "step":
            controls.step_once()
        elif name == "speed":
            controls.set_speed(args[0])
        elif name == "stop":
            controls.stop(args[0] if args else None)
            return


def warm_up() -> None:
    """Load every compiled kernel a run uses, by training a tiny run of each replay scheme.

    The fused MLP update, the samplers' trees and the window gather are numba kernels: the first
    compile on a fresh checkout takes about 20 s, later processes load numba's on-disk cache in
    about a second. Done once where workers are forked from, no run waits for either.
    """
    torch.set_num_threads(1)
    for scheme in SCHEMES:
        tiny = preset("per-notebook").with_overrides(
            {
                "replay.scheme": scheme,
                "agent.device": "cpu",  # workers are forked from here: CUDA must stay untouched
                "replay.capacity": 64,
                "replay.batch_size": 16,
                "train.total_steps": 48,
                "train.learning_starts": 32,
                "train.log_every": 1,
                "train.histogram_every": 1,
            }
        )
        trainer = Trainer(tiny)
        trainer.run()
        trainer.snapshot()
        trainer.close()


def run_worker(spec: RunSpec, link: Link) -> None:
    """Train the run of ``spec``, taking commands from and sending events to ``link``."""
    torch.set_num_threads(1)
    controls = RunControls(paused=spec.paused, speed=spec.speed)
    lock = threading.Lock()

    def send(message: tuple[Any, ...]) -> None:
        try:
            with lock:
                link.send(message)
        except (EOFError, OSError):
            controls.stop(SERVER_GONE)

    try:
        store: RunRecords = RunStore(spec.store_path) if spec.store_path else RecordRelay(send)
    except Exception as err:  # noqa: BLE001 - the server records why the run could not start
        send(("done", *ending(err)))
        return
    threading.Thread(target=_listen, args=(link, controls), daemon=True).start()
    run = RecordedRun(spec.config, store, run_id=spec.run_id, resume_from=spec.resume_from)
    try:
        drive(
            run,
            controls,
            lambda snapshot: send(("snapshot", snapshot)),
            snapshot_interval=spec.snapshot_interval,
        )
    finally:
        send(("done", run.status, run.error))
        if isinstance(store, RunStore):
            with contextlib.suppress(Exception):
                store.close()
