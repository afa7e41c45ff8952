"""Sizes no machine can hold are refused before anything is allocated (`rdqn.replay.sizes`).

Regression: ``ReplayBuffer(10, (2**40,))`` and ``SumTree(2**40)`` ended in NumPy's
``MemoryError`` ("Unable to allocate 80.0 TiB ..."), a rank sampler of 2**30 slots asked for
45 GiB and filled it page by page, and an observation shape whose size overflows int64
(``(2**32, 2**32)``) built a buffer of empty observations. Each structure now refuses, with a
``ReplaySizeError`` (a ``ValueError``) naming the size and the bytes it needs, when those bytes
exceed the machine's physical memory. The bound is patched in most tests below, so that they
do not depend on the machine (and never allocate what they mean to refuse).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from rdqn.replay import (
    ProportionalSampler,
    RankBasedSampler,
    ReplayBuffer,
    ReplaySizeError,
    RingStorage,
    Sampler,
    SequenceReplay,
    SumTree,
    UniformSampler,
    WindowBuilder,
    gather_windows,
    replay_nbytes,
    sizes,
)
from rdqn.replay.rank.shape import rank_sampler_nbytes
from rdqn.replay.sizes import sequence_replay_nbytes, sequence_slots, sum_tree_nbytes

SAMPLERS: dict[str, Callable[[], Sampler]] = {
    "uniform": UniformSampler,
    "proportional": ProportionalSampler,
    "rank": RankBasedSampler,
}
MiB = 1 << 20


@pytest.fixture
def memory(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], None]:
    """Sets the physical memory the replay structures are checked against."""

    def set_memory(nbytes: int) -> None:
        monkeypatch.setattr(sizes, "physical_memory", lambda: nbytes)

    return set_memory


def test_the_reported_buffer_is_refused_naming_its_size() -> None:
    """80 TiB on any machine: refused with the capacity, the shape and the bytes."""
    needed = replay_nbytes(10, 2**40, "uniform")
    with pytest.raises(ReplaySizeError, match=r"capacity 10 × obs_shape \(1099511627776,\)") as err:
        ReplayBuffer(10, (2**40,))
    message = str(err.value)
    assert "80.0 TiB" in message and f"{needed:,} bytes" in message
    assert "physical memory" in message
    assert isinstance(err.value, ValueError)


def test_the_reported_sum_tree_is_refused_naming_its_size() -> None:
    with pytest.raises(ValueError, match=r"SumTree of capacity 1,099,511,627,776 needs 32.0 TiB"):
        SumTree(2**40)


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: ReplayBuffer(10, (2**40,)), "ReplayBuffer"),
        (lambda: ReplayBuffer(2**44, (1,)), "ReplayBuffer"),
        (lambda: ReplayBuffer(2**42, (4,), sampler=ProportionalSampler()), "sum tree"),
        (lambda: RingStorage(2**44, (1,), np.float32), "RingStorage"),
        (lambda: SumTree(2**40), "SumTree"),
        (lambda: SumTree(2**40, track_min=False), "SumTree"),
        (lambda: ProportionalSampler().attach(2**40), "SumTree"),
        (lambda: WindowBuilder(2**46, (4,)), "WindowBuilder"),
        (lambda: WindowBuilder(4, (2**46,)), "WindowBuilder"),
        (lambda: gather_windows(np.zeros((4, 2)), [0], [0], 2**46), "window"),
    ],
)
def test_sizes_beyond_any_machine_are_refused(build: Callable[[], object], match: str) -> None:
    """Tens of TiB or more: beyond the memory of any machine that runs the tests (most above
    2**48 bytes, the address space of today's 64-bit processors)."""
    with pytest.raises(ReplaySizeError, match=match):
        build()


def test_an_observation_size_that_overflows_int64_is_refused() -> None:
    """(2**32, 2**32) has 2**64 values: NumPy's int64 product wrapped to 0 and the buffer stored
    empty observations."""
    with pytest.raises(ReplaySizeError, match=r"obs_shape \(4294967296, 4294967296\)"):
        ReplayBuffer(4, (2**32, 2**32))
    with pytest.raises(ReplaySizeError, match="RingStorage"):
        RingStorage(4, (2**32, 2**32), np.float32)


def test_windows_beyond_the_memory_are_refused_before_a_sample_allocates_them(
    memory: Callable[[int], None],
) -> None:
    """A batch of windows that would not fit (2 B T observations and their masks) is refused
    before the sample allocates it, naming the batch and the window; a batch that fits is drawn.
    (A run's config refuses a window longer than its capacity, `tests/test_config.py`.)"""
    huge = ReplayBuffer(10, (4,), window=2**40)
    huge.add(np.zeros(4, np.float32), 0, 1.0, np.ones(4, np.float32), False, False)
    with pytest.raises(ReplaySizeError, match=r"a batch of 1 windows of 1,099,511,627,776 obs"):
        huge.sample(1)
    buf = ReplayBuffer(64, (4,), window=64)
    for t in range(8):
        buf.add(np.full(4, t, np.float32), 0, 1.0, np.full(4, t + 1, np.float32), False, False)
    needed = 2 * 8 * 64 * (4 * 4 + 1)  # B = 8, T = 64, float32 observations of 4
    memory(needed - 1)
    with pytest.raises(ReplaySizeError, match=rf"8 windows of 64 .*\({needed:,} bytes\)"):
        buf.sample(8)
    memory(needed)
    assert buf.sample(8).obs.shape == (8, 64, 4)


def test_a_rank_sampler_larger_than_memory_is_refused(memory: Callable[[int], None]) -> None:
    """2**30 slots need 45.3 GiB: refused on a machine of 16 GiB before a page is touched."""
    memory(16 << 30)
    with pytest.raises(ReplaySizeError, match=r"rank sampler of capacity 1,073,741,824 needs 45.3"):
        RankBasedSampler().attach(2**30)


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_the_bound_is_the_replay_estimate_the_server_limits_use(
    name: str, memory: Callable[[int], None]
) -> None:
    """`replay_nbytes` (what `rdqn.limits` checks) is the estimate: a buffer that needs one byte
    more than the machine has is refused, one that fits is built, whatever part tips it."""
    capacity, shape = 4096, (8,)
    needed = replay_nbytes(capacity, 8, name)
    memory(needed - 1)
    with pytest.raises(ReplaySizeError, match=f"{needed:,} bytes"):
        ReplayBuffer(capacity, shape, sampler=SAMPLERS[name]())
    memory(needed)
    buf = ReplayBuffer(capacity, shape, sampler=SAMPLERS[name]())
    assert buf.nbytes == needed


def test_each_structure_checks_its_own_bytes(memory: Callable[[int], None]) -> None:
    memory(sum_tree_nbytes(1000) - 1)
    with pytest.raises(ReplaySizeError, match="SumTree of capacity 1,000"):
        SumTree(1000)
    SumTree(1000, track_min=False)  # half the bytes
    memory(rank_sampler_nbytes(1000) - 1)
    with pytest.raises(ReplaySizeError, match="rank sampler of capacity 1,000"):
        RankBasedSampler().attach(1000)


def test_the_refusal_allocates_nothing(memory: Callable[[int], None]) -> None:
    """The buffer's whole estimate is checked before its storage exists: a sampler that tips
    it over is not attached, and no storage was built for it."""
    attached: list[int] = []

    class Watching(ProportionalSampler):
        def attach(self, capacity: int) -> None:
            attached.append(capacity)
            super().attach(capacity)

    memory(replay_nbytes(1024, 4, "proportional") - 1)
    built: list[int] = []
    original = RingStorage.__init__

    def watched(self: RingStorage, *args: object) -> None:
        built.append(1)
        original(self, *args)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(RingStorage, "__init__", watched)
        with pytest.raises(ReplaySizeError):
            ReplayBuffer(1024, (4,), sampler=Watching())
    assert attached == [] and built == []


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_normal_sizes_are_unaffected(name: str) -> None:
    """2**20 transitions of CartPole's observations (about 60 to 100 MiB) and the presets'
    capacities build on any machine that runs the tests."""
    for capacity in (10_000, 50_000, 2**20):
        buf = ReplayBuffer(capacity, (4,), window=8, sampler=SAMPLERS[name]())
        assert buf.nbytes == replay_nbytes(capacity, 4, name)
    assert SumTree(2**20).nbytes == sum_tree_nbytes(2**20)


def test_physical_memory_is_known_and_plausible() -> None:
    """At least 256 MiB, at most 2**48 bytes (the fallback where the OS does not say)."""
    assert 256 * MiB <= sizes.physical_memory() <= 2**48


@pytest.mark.parametrize(
    ("nbytes", "text"),
    [(512, "512 bytes"), (3 * MiB, "3.0 MiB"), (5 << 30, "5.0 GiB"), (80 << 40, "80.0 TiB")],
)
def test_byte_counts_are_shown_in_binary_units(nbytes: int, text: str) -> None:
    assert sizes.format_bytes(nbytes) == text


def test_sequence_slots_by_hand() -> None:
    """S = min(C, 2 ceil(C / s)): C = 1,000, m = 40, o = 20 (s = 20): 100; s = 3: 2 x 334 =
    668; s = 1 (every step begins a sequence): C itself."""
    assert sequence_slots(1000, 40, 20) == 100
    assert sequence_slots(1000, 4, 1) == 668
    assert sequence_slots(1000, 5, 4) == 1000


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_a_full_sequence_replay_holds_what_its_estimate_says(name: str) -> None:
    """Steps, sequence slots with 7 state values each, the sampler over them with its removed
    flags: `sequence_replay_nbytes` once a slot was removed (the flags allocated)."""
    replay = SequenceReplay(
        40, (3,), sequence_length=4, overlap=2, state_size=7, sampler=SAMPLERS[name]()
    )
    obs, state = np.zeros(3), np.zeros(7)
    for k in range(100):
        replay.add(obs, 0, 0.0, obs, k % 5 == 4, False, state=state)
    assert replay.sampler.nbytes > 0 or name == "uniform"
    slots = replay.index.capacity
    assert replay.nbytes == sequence_replay_nbytes(40, 3, name, slots, 7)
