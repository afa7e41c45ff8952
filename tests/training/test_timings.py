"""Tests for rdqn.training.timings: phases, accumulation, nesting, synchronisation, overhead."""

from __future__ import annotations

import time

import pytest

from rdqn.training.timings import ACT, ENV, EVALUATION, INIT, PHASES, SAMPLE, UPDATE, Timings


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_phase_names() -> None:
    assert PHASES == (INIT, ENV, ACT, SAMPLE, UPDATE, EVALUATION)
    assert len(set(PHASES)) == 6


def test_timings_accumulate_with_a_fake_clock() -> None:
    """Hand-computed: sample 0.25 + 0.5 (two regions), update 1.0 nested inside a 3.0 act."""
    clock = FakeClock()
    timings = Timings(clock=clock)
    with timings.measure(SAMPLE):
        clock.now += 0.25
    with timings.measure(SAMPLE):
        clock.now += 0.5
    with timings.measure(ACT):
        clock.now += 1.0
        with timings.measure(UPDATE):
            clock.now += 1.0
        clock.now += 1.0
    timings.add(EVALUATION, 2.0)
    assert timings.totals() == {SAMPLE: 0.75, ACT: 3.0, UPDATE: 1.0, EVALUATION: 2.0}
    assert timings.counts() == {SAMPLE: 2, ACT: 1, UPDATE: 1, EVALUATION: 1}


def test_timings_count_a_region_that_raises() -> None:
    clock = FakeClock()
    timings = Timings(clock=clock)
    with pytest.raises(RuntimeError), timings.measure(ENV):
        clock.now += 0.5
        raise RuntimeError("env crashed")
    assert timings.totals() == {ENV: 0.5}


def test_timings_default_clock_is_perf_counter() -> None:
    """Without an injected clock, a region lasts what `time.perf_counter` says: more than the
    readings taken inside it, less than the readings taken around it."""
    timings = Timings()
    inside = around = 0.0
    for _ in range(3):
        before = time.perf_counter()
        with timings.measure(ENV):
            first = time.perf_counter()
            last = time.perf_counter()
        after = time.perf_counter()
        inside, around = inside + (last - first), around + (after - before)
    assert inside <= timings.totals()[ENV] <= around
    assert timings.counts()[ENV] == 3


def test_timings_synchronize_around_each_region() -> None:
    clock = FakeClock()
    events: list[str] = []
    timings = Timings(clock=clock, synchronize=lambda: events.append("sync"))
    with timings.measure(UPDATE):
        events.append("body")
    assert events == ["sync", "body", "sync"]


def test_timings_snapshots_are_copies() -> None:
    timings = Timings()
    timings.add(ACT, 1.0)
    snapshot = timings.totals()
    timings.add(ACT, 1.0)
    assert snapshot == {ACT: 1.0} and timings.totals() == {ACT: 2.0}


@pytest.mark.parametrize("seconds", [-1.0, float("nan"), float("inf")])
def test_timings_reject_bad_durations(seconds: float) -> None:
    with pytest.raises(ValueError, match="seconds must be finite and >= 0"):
        Timings().add(ENV, seconds)


def test_a_region_reads_the_clock_twice() -> None:
    """The whole cost of a region: two clock reads (its overhead is a couple of microseconds)."""
    reads: list[float] = []
    clock = FakeClock()

    def counted() -> float:
        reads.append(clock())
        return reads[-1]

    timings = Timings(clock=counted)
    for _ in range(1_000):
        with timings.measure(ENV):
            pass
    assert len(reads) == 2_000
    assert timings.counts()[ENV] == 1_000


def test_timings_state_round_trip() -> None:
    timings = Timings()
    timings.add("sample", 0.5)
    timings.add("sample", 0.25)
    restored = Timings()
    restored.load_state_dict(timings.state_dict())
    assert restored.totals() == {"sample": 0.75} and restored.counts() == {"sample": 2}
