"""Work for a forked worker in the zygote's tests: functions the worker imports by name."""

from __future__ import annotations

import sys

from rdqn.serve.worker import _kernels


def rank_kernels_loaded(_: object) -> bool:
    """In a worker: whether the process it was forked from had loaded the rank sampler's
    kernels (the warm-up's rank replay part, one of its last)."""
    return any(k.signatures for k in _kernels() if k.__module__.startswith("rdqn.replay.rank"))


def dynamo_loaded(_: object) -> bool:
    """In a worker: whether the process it was forked from had imported torch._dynamo (what a
    checkpoint's torch optimizer imports: the warm-up's later parts)."""
    return "torch._dynamo" in sys.modules
