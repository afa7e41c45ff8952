"""Every module whose kernels numba keeps in its on-disk cache, and what the warm-up
(`rdqn.serve.worker.warm_up`: the worker zygote, ``rdqn warm-up``) asks of them: the kernels,
where numba keeps them, whether it holds them all.

The list names modules of three layers: replay's own, the learner's fused MLP update
(`rdqn.learn`) and the telemetry's counts (`rdqn.training`). Replay may not import the layers
above it (`tests/test_layering.py`), so the registry holds names and imports none of them: its
caller, the serving layer, imports them and hands them to `kernels`. Importing this module loads
neither numba nor any kernel.

numba has no public call that says whether a kernel's machine code is in its cache: `cache_dirs`
and `all_cached` read its private cache index, and say "cannot tell" where another numba changed
it (`tests/replay/kernels/test_registry.py` then fails loudly).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

__all__ = ["KERNEL_MODULES", "all_cached", "cache_dirs", "kernels"]

KERNEL_MODULES: tuple[str, ...] = (
    "rdqn.replay.sumtree",
    "rdqn.replay.sampling_kernels",
    "rdqn.replay.rank.sampler",
    "rdqn.replay.rank.order",
    "rdqn.replay.rank.blocks",
    "rdqn.replay.rank.writes",
    "rdqn.replay.storage",
    "rdqn.replay.sequence_batch",
    "rdqn.replay.windows",
    "rdqn.replay.checks",
    "rdqn.learn.fused_mlp",
    "rdqn.training.telemetry_kernels",
)
"""The modules that define kernels numba caches on disk (``cache=True``, not inlined). The
compile policy's own probes (`compiled`) are not among them: every import of it loads them."""

Kernels = Callable[[], Iterable[Any]]
"""A call that lists the kernels (`kernels` of the imported `KERNEL_MODULES`)."""


def kernels(modules: Iterable[ModuleType]) -> list[Any]:
    """The kernels of `modules` that numba caches on disk: the dispatchers each module defines
    with ``cache=True`` (the inlined ones compile into their callers)."""
    import numba  # here, not at import: a caller that only names the modules loads no numba

    return [
        value
        for module in modules
        for value in vars(module).values()
        if isinstance(value, numba.core.registry.CPUDispatcher)
        and value.__module__ == module.__name__
        and not isinstance(value._cache, numba.core.caching.NullCache)  # cache=True
        and value.targetoptions.get("inline", "never") == "never"
    ]


def cache_dirs(listed: Kernels) -> list[str]:
    """Where numba keeps the `listed` kernels: ``__pycache__`` next to the sources, or a
    per-user folder when that is not writable (or ``NUMBA_CACHE_DIR``); empty where this numba
    does not tell (see `all_cached`). `listed` is called here: listing reads numba's internals
    too."""
    try:
        return sorted({kernel._cache._cache_path for kernel in listed()})
    except Exception:  # noqa: BLE001 - another numba's internals: nothing to name
        return []


def all_cached(listed: Kernels) -> bool | None:
    """Whether numba's on-disk cache holds machine code for every one of the `listed` kernels.

    Reads each kernel's cache index (milliseconds); an index written for an older version of
    the source reads as empty. False on a fresh checkout: the warm-up will compile. None where
    this numba cannot be asked (its private cache index changed); the kernels still compile
    and run.
    """
    try:
        return all(kernel._cache._cache_file._load_index() for kernel in listed())
    except Exception:  # noqa: BLE001 - another numba: cannot tell
        return None
