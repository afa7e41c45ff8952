"""A run in a worker: the same lifecycle and loop as in-process, driven by messages.

A worker trains one `RecordedRun` with `rdqn.runs.control.drive`, exactly as a thread in the
server would, and talks to the server over a *link*: a pipe between processes, queues between
threads, a Ray actor's mailbox. The messages:

    server -> worker   ("pause",)  ("resume",)  ("step",)  ("speed", steps_per_second | None)
                       ("stop", reason | None)  ("play",)  ("memories",)
    worker -> server   ("snapshot", Telemetry)
                       ("record", method, args, kwargs)  a write for the server's run store
                       ("done", status, error)     the run is closed; nothing follows

The messages and the run's spec are `rdqn.serve.protocol`'s (torch-free, for the server).
A worker on the server's machine opens the server's SQLite store itself (`RunSpec.store_path`);
one that cannot (a Ray node elsewhere) relays every write instead (`RecordRelay`: status, metric
rows, manifest, checkpoint bytes) and the server makes it (`apply_record`). Either way the writes
happen as the run goes, so a worker that dies loses at most the rows of its last second. A
resumed run's checkpoint comes the same way: a path the worker reads, or the file's bytes;
the worker checks it whole before it takes the run (`rdqn.runs.resume.restore`), so the
server never loads torch to resume one.

A worker whose link to the server breaks stops its run ("the server went away") and exits: no
worker outlives its server.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import torch

from rdqn.learn import fused_mlp
from rdqn.presets import preset
from rdqn.replay import ProportionalSampler, ReplayBuffer, WindowBuilder
from rdqn.replay.kernels import registry as kernel_registry
from rdqn.replay.sumtree import SumTree
from rdqn.runs.control import MEMORIES, PLAY, RunControls, drive
from rdqn.runs.lifecycle import RecordedRun, RunRecords, ending
from rdqn.runs.store import RunStore
from rdqn.serve.protocol import (
    COMMANDS,
    RUN_START_PART_NAMES,
    SERVER_GONE,
    TRAINING_NICENESS,
    WARM_UP_PART_NAMES,
    WARM_UP_SCHEMES,
    Link,
    RecordRelay,
    RunSpec,
    WarmUp,
    apply_record,
)
from rdqn.training.trainer import Trainer

__all__ = [
    "COMMANDS",
    "SERVER_GONE",
    "TRAINING_NICENESS",
    "Link",
    "RecordRelay",
    "LATER_PARTS",
    "RUN_START_PARTS",
    "WARM_UP_PARTS",
    "RunSpec",
    "WarmUp",
    "apply_record",
    "kernel_cache_dirs",
    "kernels_cached",
    "lower_priority",
    "run_worker",
    "warm_up",
]


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
        elif name in (PLAY, MEMORIES):
            controls.request(name)
        elif name == "stop":
            controls.stop(args[0] if args else None)
            return


def _tiny_run(
    name: str,
    scheme: str | None = None,
    *,
    resume: bool = True,
    extra: dict[str, Any] | None = None,
) -> None:
    """Train a tiny run of preset ``name`` (with ``extra`` overrides) to its end, and
    (``resume``) resume it: every kernel its path calls is loaded (a resumed rank-based run
    rebuilds its order from the stored keys)."""
    overrides: dict[str, Any] = {
        "agent.device": "cpu",  # workers are forked from here: CUDA must stay untouched
        "replay.capacity": 64,
        "replay.batch_size": 16,
        "train.total_steps": 48,
        "train.learning_starts": 32,
        "train.log_every": 1,
        "train.histogram_every": 1,
    }
    if scheme is not None:
        overrides["replay.scheme"] = scheme
    config = preset(name).with_overrides({**overrides, **(extra or {})})
    trainer = Trainer(config)
    trainer.run()
    trainer.snapshot()
    if not resume:
        trainer.close()
        return
    resumed = Trainer(config)
    resumed.restore(trainer.checkpoint_state(resumable=True))
    for closing in (trainer, resumed):
        closing.close()


def _sum_tree() -> None:
    """The sum tree's update and find, as the tree pages call them (runs only update it)."""
    tree = SumTree(8)
    tree.update(np.arange(4), np.ones(4))
    tree.find(np.array([0.5, 3.5]))


SEQUENCES = {
    "replay.mode": "sequences",
    "replay.sequence_length": 8,
    "replay.sequence_overlap": 4,
    "replay.burn_in": 2,
    "replay.capacity": 32,
    "train.total_steps": 96,
}
"""A tiny run's R2D2 sequences (`rdqn.replay.sequence_replay`: its gather kernel), rank-based
over a ring that wraps, so sequences leave the exact order (`RankOrder.remove`'s kernel)."""


def _frames() -> None:
    """Observations stored as flags (MinAtar's frames, `rdqn.envs.minatar`) gathered as replay
    and the acting window gather them, without the optional minatar package."""
    frame = np.zeros((10, 10, 4), np.bool_)
    buffer = ReplayBuffer(64, frame.shape, obs_dtype=np.bool_, sampler=ProportionalSampler())
    for step in range(32):
        buffer.add(frame, 0, 0.0, frame, step % 8 == 7, False)
    buffer.sample(16, beta=0.5)
    windows = WindowBuilder(1, frame.shape, np.bool_)
    windows.reset(frame)
    windows.window_and_mask()


def _recurrent() -> None:
    """The LSTM over windows (e14, e14-lesson, e15) and over stored sequences; frames of flags."""
    _tiny_run("e14-lesson")
    _tiny_run("e14-lesson", "rank", extra=SEQUENCES)
    _frames()


def _checkpoints() -> None:
    """A checkpoint of a tiny run of each scheme, and its resume."""
    for scheme in WARM_UP_SCHEMES:
        _tiny_run("per-notebook", scheme)


WARM_UP_PARTS: tuple[tuple[str, Callable[[], None]], ...] = tuple(
    zip(
        WARM_UP_PART_NAMES,
        (
            # The demo's path first: Home's Start demo, pressed while the server starts, forks
            # its run after this part (`rdqn.serve.zygote.main`), warm. The zygote forks the
            # runs asked for between two parts, and loads the long ones (`LATER_PARTS`) only
            # once its first run is on its way: a checkpoint builds a torch optimizer, which
            # imports torch._dynamo (most of a second of CPU), and which training with the
            # fused MLP update never needs.
            partial(_tiny_run, "demo", resume=False),
            fused_mlp.warm_up,
            _sum_tree,
            *(
                partial(_tiny_run, "per-notebook", scheme, resume=False)
                for scheme in WARM_UP_SCHEMES[1:]
            ),
            _checkpoints,
            # Windows of observations and the LSTM (e14, e14-lesson, e15), and sequences: no
            # numba kernel of their own beyond the gathers, but the first call sets up torch's
            # recurrent path.
            _recurrent,
        ),
        strict=True,
    )
)
"""The warm-up, in the parts it reports (`WARM_UP_PART_NAMES`): each loads (or compiles) the
kernels of one path."""
RUN_START_PARTS = WARM_UP_PARTS[: len(RUN_START_PART_NAMES)]
"""The parts a run waits for (`RUN_START_PART_NAMES`)."""
LATER_PARTS = WARM_UP_PARTS[len(RUN_START_PART_NAMES) :]
"""The parts no run waits for: the zygote loads them after its first launch."""


def _kernels() -> list[Any]:
    """The numba kernels a run or page calls: those of every module the kernel registry names
    (`rdqn.replay.kernels.registry`), imported here, where every layer may be."""
    modules = map(importlib.import_module, kernel_registry.KERNEL_MODULES)
    return kernel_registry.kernels(modules)


def kernel_cache_dirs() -> list[str]:
    """Where numba keeps the compiled kernels (`rdqn.replay.kernels.registry.cache_dirs`)."""
    return kernel_registry.cache_dirs(_kernels)


def kernels_cached() -> bool | None:
    """Whether numba's cache holds every kernel; None where this numba cannot tell
    (`rdqn.replay.kernels.registry.all_cached`)."""
    return kernel_registry.all_cached(_kernels)


def warm_up(
    on_progress: Callable[[WarmUp], None] | None = None,
    between_parts: Callable[[], None] | None = None,
    parts: tuple[tuple[str, Callable[[], None]], ...] = WARM_UP_PARTS,
) -> None:
    """Load every compiled kernel a run uses, part by part (``parts``, default all:
    `WARM_UP_PARTS`).

    The fused MLP update, the samplers' trees and the window gather are numba kernels (those
    of the modules `rdqn.replay.kernels.registry` names): the first compile on a fresh
    checkout takes tens of seconds, later processes load numba's on-disk cache quickly. Done
    once where workers are forked from, no run waits for either. ``on_progress`` hears
    `WarmUp(0, n)` first (n parts), then once after each part; ``between_parts`` is called
    after each part but the last (the zygote starts the runs asked for meanwhile).
    """
    torch.set_num_threads(1)
    total = len(parts)
    compiling = kernels_cached() is not True  # not known: say compiling, the safe guess
    tell = on_progress or (lambda progress: None)
    for done, (name, part) in enumerate(parts):
        if done and between_parts is not None:
            between_parts()
        tell(WarmUp(done, total, compiling, name))
        part()
    tell(WarmUp(total, total, compiling))


def lower_priority() -> None:
    """Lower this process's CPU priority by `TRAINING_NICENESS`, for a process of its own.

    On a shared server the pages come first: a run training flat out on every core must not
    make thirty students' pages and buttons wait for it. Under contention a niced worker gets
    about a tenth of the CPU of a page; alone on a core it trains at full speed. New threads
    inherit the priority, so a process calls this before it starts its run's thread.
    """
    with contextlib.suppress(OSError):  # raising a niceness is always allowed; be safe anyway
        os.nice(TRAINING_NICENESS)


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
    run = RecordedRun(spec.config, store, run_id=spec.run_id, resume=spec.resume)
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
