"""The replay engine: ring storage + pluggable samplers, sum tree, windows and schedules.

>>> from rdqn.replay import ReplayBuffer, ProportionalSampler
>>> buf = ReplayBuffer(50_000, (4,), window=8, sampler=ProportionalSampler(alpha=0.6), seed=0)
"""

from rdqn.replay.buffer import Batch, ReplayBuffer, replay_nbytes
from rdqn.replay.rank.sampler import RankBasedSampler
from rdqn.replay.samplers import Draw, ProportionalSampler, Sampler, UniformSampler
from rdqn.replay.schedules import LinearSchedule
from rdqn.replay.sizes import ReplaySizeError
from rdqn.replay.state_checks import ReplayStateError
from rdqn.replay.storage import RingStorage
from rdqn.replay.sumtree import SumTree
from rdqn.replay.windows import WindowBuilder, gather_windows

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
    "SumTree",
    "UniformSampler",
    "WindowBuilder",
    "gather_windows",
    "replay_nbytes",
]
