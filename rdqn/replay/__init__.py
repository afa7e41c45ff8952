"""The replay engine: ring storage + pluggable samplers, sum tree, windows and schedules; and
R2D2's sequence replay beside the windows (`SequenceReplay`).

>>> from rdqn.replay import ReplayBuffer, ProportionalSampler
>>> buf = ReplayBuffer(50_000, (4,), window=8, sampler=ProportionalSampler(alpha=0.6), seed=0)

The names below load their modules on first use (PEP 562): importing one numba-free module of
the package (`rdqn.replay.sizes`, whose byte counts a server checks a run's settings against)
loads no kernel.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rdqn.replay.buffer import Batch, ReplayBuffer
    from rdqn.replay.rank.sampler import RankBasedSampler
    from rdqn.replay.samplers import Draw, ProportionalSampler, Sampler, UniformSampler
    from rdqn.replay.schedules import LinearSchedule
    from rdqn.replay.sequence_replay import SequenceBatch, SequenceReplay
    from rdqn.replay.sequences import SequenceIndex
    from rdqn.replay.sizes import ReplaySizeError, replay_nbytes
    from rdqn.replay.state_checks import ReplayStateError
    from rdqn.replay.storage import RingStorage
    from rdqn.replay.sumtree import SumTree
    from rdqn.replay.windows import WindowBuilder, gather_windows

_HOMES = {
    "Batch": "buffer",
    "Draw": "samplers",
    "LinearSchedule": "schedules",
    "ProportionalSampler": "samplers",
    "RankBasedSampler": "rank.sampler",
    "ReplayBuffer": "buffer",
    "ReplaySizeError": "sizes",
    "ReplayStateError": "state_checks",
    "RingStorage": "storage",
    "Sampler": "samplers",
    "SequenceBatch": "sequence_replay",
    "SequenceIndex": "sequences",
    "SequenceReplay": "sequence_replay",
    "SumTree": "sumtree",
    "UniformSampler": "samplers",
    "WindowBuilder": "windows",
    "gather_windows": "windows",
    "replay_nbytes": "sizes",
}
"""Each public name, and the module of the package that defines it."""

__all__ = [
    "Batch",
    "Draw",
    "LinearSchedule",
    "ProportionalSampler",
    "RankBasedSampler",
    "ReplayBuffer",
    "ReplaySizeError",
    "ReplayStateError",
    "RingStorage",
    "Sampler",
    "SequenceBatch",
    "SequenceIndex",
    "SequenceReplay",
    "SumTree",
    "UniformSampler",
    "WindowBuilder",
    "gather_windows",
    "replay_nbytes",
]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    globals()[name] = value  # once loaded, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
