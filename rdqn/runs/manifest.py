"""Run manifests: what ran, where, on what inputs, and where the time and memory went.

So that a run can be reproduced and its speed explained, it records the resolved Python and
framework versions, backend, dtype, seed, input shapes, batch size and the exact source revision;
the time of each phase of the loop *separately* (`rdqn.training.timings.PHASES`: initialisation,
environment, acting, data preparation, updates, evaluation); peak process memory and parameter bytes
*separately* (parameter bytes exclude activations, gradients, optimizer state and input buffers);
and training updates, environment steps and episodes as separate counters.
"Configured maximum" is not "completed budget": the counters say what actually ran.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from rdqn.learn.nets import parameter_bytes as network_parameter_bytes
from rdqn.training.timings import PHASES, Timings

if TYPE_CHECKING:
    from rdqn.training.trainer import Trainer

__all__ = [
    "MANIFEST_VERSION",
    "build_manifest",
    "current_memory_bytes",
    "environment_info",
    "manifest_of",
    "peak_memory_bytes",
    "source_revision",
]

MANIFEST_VERSION = 1


_PACKAGES: tuple[str, ...] = ("torch", "numpy", "gymnasium", "numba", "pandas")
_PACKAGE_DIR = Path(__file__).resolve().parents[1]
_GIT_TIMEOUT_S = 2.0


def peak_memory_bytes() -> int:
    """Peak resident set size of this process in bytes (``ru_maxrss``); 0 where unavailable.

    Linux reports kilobytes, macOS bytes. This is the whole process (Python, torch, replay
    memory, activations), not the framework's own allocation.
    """
    try:
        import resource
    except ImportError:
        return 0
    peak = int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    return peak if sys.platform == "darwin" else peak * 1024


def current_memory_bytes() -> int | None:
    """Current resident set size in bytes from ``/proc/self/statm``; ``None`` where unavailable."""
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            resident_pages = int(handle.read().split()[1])
        return resident_pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def _package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _git(args: Iterable[str], cwd: Path) -> str | None:
    """stdout of ``git <args>`` in ``cwd``, or ``None`` on any failure or after the timeout."""
    # GIT_OPTIONAL_LOCKS=0: `git status` must not take index.lock under someone's running git.
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"}
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def source_revision(directory: str | os.PathLike[str] | None = None) -> str:
    """The git commit of ``directory`` (default: the ``rdqn`` package), ``"+dirty"`` appended if
    files under it differ from that commit (untracked files included), or ``"unknown"`` outside
    a git checkout, without git, or when git takes longer than 2 s.

    Only changes under the directory count: the package is the code that produced the numbers.
    """
    where = Path(directory) if directory is not None else _PACKAGE_DIR
    head = _git(["rev-parse", "HEAD"], where)
    if head is None or not head.strip():
        return "unknown"
    revision = head.strip()
    status = _git(["status", "--porcelain", "--", "."], where)
    if status is None:
        return f"{revision}+unknown-status"
    return f"{revision}+dirty" if status.strip() else revision


def _accelerator() -> tuple[str, str]:
    """(backend, device name): CUDA if available, else MPS, else CPU."""
    if torch.cuda.is_available():
        return "cuda", torch.cuda.get_device_name(0)
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps", platform.machine()
    return "cpu", platform.processor() or platform.machine()


def environment_info() -> dict[str, Any]:
    """Resolved versions, platform, CPU count, torch backend/threads/dtype and source revision.

    Package versions come from the installed distributions (``None`` when not installed).
    """
    backend, device_name = _accelerator()
    return {
        "versions": {
            "python": platform.python_version(),
            **{name: _package_version(name) for name in _PACKAGES},
        },
        "python_implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "torch_backend": backend,
        "torch_device_name": device_name,
        "torch_cuda_version": torch.version.cuda,
        "torch_default_dtype": str(torch.get_default_dtype()).removeprefix("torch."),
        "torch_num_threads": torch.get_num_threads(),
        "source_revision": source_revision(),
    }


def _jsonable(value: Any, where: str) -> Any:
    """Plain JSON types from numpy scalars/arrays, tuples, paths; ``TypeError`` otherwise."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path | torch.dtype | torch.device):
        return str(value)
    if isinstance(value, Mapping):
        return {str(key): _jsonable(item, f"{where}[{key!r}]") for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(item, f"{where}[{i}]") for i, item in enumerate(value)]
    raise TypeError(f"manifest value at {where} has non-JSON type {type(value).__name__}")


def _framework_peak_bytes(device: str) -> int | None:
    """Peak bytes allocated by torch's CUDA caching allocator; ``None`` off CUDA."""
    if device.startswith("cuda") and torch.cuda.is_available():
        return int(torch.cuda.max_memory_allocated(torch.device(device)))
    return None


def build_manifest(
    *,
    seed: int,
    config: Mapping[str, Any],
    obs_shape: Iterable[int],
    n_actions: int,
    batch_size: int,
    window: int,
    parameter_bytes: int,
    device: str,
    dtype: str,
    learner: str,
    timings: Timings | None,
    counters: Mapping[str, int],
    environment: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A JSON-serialisable run manifest (the module docstring lists what it records).

    ``parameter_bytes``: bytes of trainable parameters (pass the online and target networks'
    total if both are kept). ``counters``: e.g. ``{"updates": ..., "env_steps": ...,
    "episodes": ...}``, kept separate. ``learner`` names the update implementation (e.g.
    ``"autograd"`` or ``"fused-mlp"``). ``environment`` reuses an :func:`environment_info` result;
    by default it is collected now. Peak process memory, current process memory, the
    framework's peak allocation (CUDA only) and ``parameter_bytes`` are separate fields.
    """
    shape = [int(n) for n in obs_shape]
    timing_section = None
    if timings is not None:
        timing_section = {
            "seconds": {**dict.fromkeys(PHASES, 0.0), **timings.totals()},
            "counts": timings.counts(),
        }
    manifest = {
        "manifest_version": MANIFEST_VERSION,
        "created_at": time.time(),
        "seed": int(seed),
        "config": config,
        "inputs": {
            "obs_shape": shape,
            "n_actions": int(n_actions),
            "batch_size": int(batch_size),
            "window": int(window),
            "batch_obs_shape": [int(batch_size), int(window), *shape],
        },
        "device": device,
        "dtype": dtype,
        "learner": learner,
        "environment": environment if environment is not None else environment_info(),
        "timings": timing_section,
        "counters": counters,
        "parameter_bytes": int(parameter_bytes),
        "peak_memory_bytes": peak_memory_bytes(),
        "current_memory_bytes": current_memory_bytes(),
        "framework_peak_allocated_bytes": _framework_peak_bytes(device),
    }
    return dict(_jsonable(manifest, "manifest"))


def manifest_of(trainer: Trainer) -> dict[str, Any]:
    """The manifest of a trainer's run so far: its config, shapes, timings, counters and memory."""
    config = trainer.config
    return build_manifest(
        seed=config.seed,
        config=config.to_dict(),
        obs_shape=trainer.obs_shape,
        n_actions=trainer.n_actions,
        batch_size=config.replay.batch_size,
        window=config.replay.window,
        parameter_bytes=network_parameter_bytes(trainer.agent.online),
        device=str(trainer.agent.device),
        dtype="float32",
        learner=trainer.agent.learner,
        timings=trainer.timings,
        counters={
            "env_steps": trainer.env_steps,
            "updates": trainer.updates,
            "episodes": trainer.episodes,
            "stale_updates": trainer.buffer.stale_updates,
            "replay_bytes": trainer.buffer.nbytes,
        },
    )
