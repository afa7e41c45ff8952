"""The replay API's error contract: bad indices and priorities are a ``ValueError`` naming the
argument, raised before anything is written.

Regression: out-of-range indices raised ``IndexError`` (or, in the proportional
sampler's compiled update, wrote out of bounds and crashed the process), negative ones wrapped
around silently, float and object arrays raised ``IndexError``/``TypeError``/numba's
``TypingError``. Regression: a zero total priority (eps = 0, every |delta| = 0) was
accepted by `update_priorities` and only failed at the next `sample`, while `probabilities()`
returned NaN. Every call below runs against each sampler, and the state afterwards must equal
the state before, bit for bit.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rdqn.replay import (
    Batch,
    ProportionalSampler,
    RankBasedSampler,
    ReplayBuffer,
    Sampler,
    SumTree,
    UniformSampler,
)
from tests.replay.conftest import _assert_same

CAPACITY = 8
STORED = 5
SAMPLERS: dict[str, Callable[[], Sampler]] = {
    "uniform": UniformSampler,
    "proportional": lambda: ProportionalSampler(alpha=0.6, eps=1e-3),
    "rank": lambda: RankBasedSampler(alpha=0.7),
}

BAD_INDICES: dict[str, Any] = {
    "past the end": np.array([0, 1, 100]),
    "negative": np.array([0, -1, 2]),
    "huge uint64": np.array([0, 1, 2**64 - 1], dtype=np.uint64),
    "float": np.array([0.0, 1.0, 2.0]),
    "object": np.array([0, 1, 2], dtype=object),
    "object with None": np.array([0, None, 2], dtype=object),
    "bool": np.array([True, False, True]),
    "strings": np.array(["0", "1", "2"]),
    "two-dimensional": np.array([[0, 1, 2]]),
    "python floats": [0.5, 1.0, 2.0],
}
BAD_MAGNITUDES: dict[str, Any] = {
    "nan": np.array([0.5, np.nan, 0.1]),
    "inf": np.array([0.5, np.inf, 0.1]),
    "-inf": np.array([0.5, -np.inf, 0.1]),
    "negative": np.array([0.5, -0.2, 0.1]),
    "object with None": np.array([0.5, None, 0.1], dtype=object),
    "strings": ["a", "b", "c"],
    "too few": np.array([0.5, 0.1]),
    "two-dimensional": np.ones((3, 1)),
    "None": None,
    "mapping": {"a": 1.0},
}


def filled_buffer(name: str) -> tuple[ReplayBuffer, Batch]:
    buf = ReplayBuffer(CAPACITY, (2,), window=2, sampler=SAMPLERS[name](), seed=3)
    for k in range(STORED):
        buf.add(np.full(2, float(k)), k % 2, 1.0, np.full(2, k + 1.0), False, False)
    return buf, buf.sample(3)


def assert_refused(call: Callable[[], object], state: Callable[[], Any], match: str) -> None:
    """``call`` raises ValueError matching ``match`` (and no warning), ``state()`` unchanged."""
    before = state()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=match):
            call()
    _assert_same(state(), before, "state")


@pytest.mark.parametrize("name", list(SAMPLERS))
@pytest.mark.parametrize("case", list(BAD_INDICES))
def test_bad_batch_indices(name: str, case: str) -> None:
    buf, batch = filled_buffer(name)
    bad = dataclasses.replace(batch, indices=BAD_INDICES[case])
    assert_refused(lambda: buf.update_priorities(bad, [0.5, 0.5, 0.5]), buf.state_dict, "indices")


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_batch_index_of_an_unfilled_slot(name: str) -> None:
    """Slot 6 exists (capacity 8) but holds no transition yet (5 stored)."""
    buf, batch = filled_buffer(name)
    bad = dataclasses.replace(batch, indices=np.array([0, 1, 6]))
    assert_refused(lambda: buf.update_priorities(bad, [0.5, 0.5, 0.5]), buf.state_dict, r"\[0, 5\)")


@pytest.mark.parametrize("name", list(SAMPLERS))
@pytest.mark.parametrize("case", list(BAD_MAGNITUDES))
def test_bad_td_errors(name: str, case: str) -> None:
    buf, batch = filled_buffer(name)
    td = BAD_MAGNITUDES[case]
    assert_refused(lambda: buf.update_priorities(batch, td), buf.state_dict, "td_errors")


@pytest.mark.parametrize("name", list(SAMPLERS))
@pytest.mark.parametrize(
    ("case", "batch_of", "match"),
    [
        ("not a batch", lambda b: "batch", "batch must be a Batch"),
        (
            "generations short",
            lambda b: dataclasses.replace(b, generations=b.generations[:2]),
            "generations",
        ),
        (
            "generations float",
            lambda b: dataclasses.replace(b, generations=b.generations * 1.0),
            "generations",
        ),
    ],
)
def test_bad_batch(name: str, case: str, batch_of: Callable[[Batch], Any], match: str) -> None:
    buf, batch = filled_buffer(name)
    bad = batch_of(batch)
    assert_refused(lambda: buf.update_priorities(bad, [0.5, 0.5, 0.5]), buf.state_dict, match)


@pytest.mark.parametrize("name", list(SAMPLERS))
@pytest.mark.parametrize("case", list(BAD_INDICES))
def test_bad_ages_indices(name: str, case: str) -> None:
    buf, _ = filled_buffer(name)
    assert_refused(lambda: buf.ages(BAD_INDICES[case]), buf.state_dict, "indices")


@pytest.mark.parametrize("name", list(SAMPLERS))
@pytest.mark.parametrize("case", list(BAD_INDICES))
def test_sampler_update_bad_indices(name: str, case: str) -> None:
    buf, _ = filled_buffer(name)
    sampler = buf.sampler
    assert_refused(
        lambda: sampler.update_priorities(BAD_INDICES[case], np.full(3, 0.5)),
        sampler.state_dict,
        "indices",
    )


@pytest.mark.parametrize("name", list(SAMPLERS))
@pytest.mark.parametrize("as_list", [False, True], ids=["int64 array", "list"])
def test_sampler_update_of_a_slot_never_stored_is_refused(name: str, as_list: bool) -> None:
    """Regression: after ``attach(8)`` and two additions, an update of slot 5 was
    accepted: the proportional sampler then drew index 5 (>= the size, 2) in 974 of 2,000 draws,
    the rank sampler skipped it silently and the uniform one took it. Each refuses it now,
    naming the stored slots, with the state unchanged; no draw reaches past the size."""
    sampler = SAMPLERS[name]()
    sampler.attach(CAPACITY)
    sampler.on_add(0)
    sampler.on_add(1)
    indices = [1, 5] if as_list else np.array([1, 5])
    assert_refused(
        lambda: sampler.update_priorities(indices, np.array([0.5, 3.0])),
        sampler.state_dict,
        r"indices must be slots in \[0, 2\), got 5",
    )
    rng = np.random.default_rng(0)
    drawn = np.concatenate([sampler.sample(2, 2, 0.4, rng).indices for _ in range(1000)])
    assert drawn.min() >= 0 and drawn.max() < 2
    sampler.update_priorities(np.array([1, 0]), np.array([0.5, 3.0]))  # stored slots: accepted


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_sampler_stored_slots_follow_the_ring(name: str) -> None:
    """Slots become updatable as they are added, all of them once the ring has wrapped, and a
    loaded state keeps the count (a fresh sampler loading it refuses what the saved one did)."""
    sampler = SAMPLERS[name]()
    sampler.attach(4)
    for slot in range(3):
        sampler.on_add(slot)
        sampler.update_priorities(np.array([slot]), np.array([1.0 + slot]))
        with pytest.raises(ValueError, match=rf"\[0, {slot + 1}\), got {slot + 1}"):
            sampler.update_priorities(np.array([slot + 1]), np.array([1.0]))
    copy = SAMPLERS[name]()
    copy.attach(4)
    copy.load_state_dict(sampler.state_dict())
    with pytest.raises(ValueError, match=r"\[0, 3\), got 3"):
        copy.update_priorities(np.array([3]), np.array([1.0]))
    for slot in (3, 0, 1):
        sampler.on_add(slot)
    sampler.update_priorities(np.arange(4), np.full(4, 2.0))


@pytest.mark.parametrize("name", list(SAMPLERS))
@pytest.mark.parametrize("case", list(BAD_MAGNITUDES))
def test_sampler_update_bad_magnitudes(name: str, case: str) -> None:
    buf, _ = filled_buffer(name)
    sampler = buf.sampler
    assert_refused(
        lambda: sampler.update_priorities(np.array([0, 1, 2]), BAD_MAGNITUDES[case]),
        sampler.state_dict,
        "magnitudes",
    )


@pytest.mark.parametrize("name", list(SAMPLERS))
@pytest.mark.parametrize("slot", [CAPACITY, -1, 1.0, True, "1", None])
def test_sampler_on_add_bad_slot(name: str, slot: Any) -> None:
    buf, _ = filled_buffer(name)
    sampler = buf.sampler
    assert_refused(lambda: sampler.on_add(slot), sampler.state_dict, "slot")


@pytest.mark.parametrize("case", [c for c in BAD_INDICES if c != "two-dimensional"])
def test_sum_tree_bad_indices(case: str) -> None:
    """(A SumTree flattens its index arrays, so shape is not an error there.)"""
    tree = SumTree(4)
    tree.update([0, 1], [1.0, 2.0])
    indices = BAD_INDICES[case]
    if case == "past the end":
        indices = np.array([0, 1, 4])
    state = lambda: (tree.sum_nodes.copy(), tree.min_nodes.copy())  # noqa: E731
    assert_refused(lambda: tree.update(indices, [1.0] * np.asarray(indices).size), state, "indices")
    assert_refused(lambda: tree[indices], state, "indices")


@pytest.mark.parametrize(
    "case", [c for c in BAD_MAGNITUDES if c not in ("too few", "two-dimensional")]
)
def test_sum_tree_bad_values(case: str) -> None:
    tree = SumTree(4)
    tree.update([0, 1], [1.0, 2.0])
    values = BAD_MAGNITUDES[case]
    count = 1 if values is None or isinstance(values, dict) else 3
    state = lambda: (tree.sum_nodes.copy(), tree.min_nodes.copy())  # noqa: E731
    assert_refused(lambda: tree.update(np.arange(count), values), state, "values")


def test_sum_tree_leaves_size_out_of_range() -> None:
    tree = SumTree(4)
    for size in (-1, 5, 1.5):
        with pytest.raises(ValueError, match="size"):
            tree.leaves(size)  # type: ignore[arg-type]


def test_zero_total_is_refused_by_the_update_that_causes_it() -> None:
    """eps = 0 and |delta| = 0 for every stored transition: refused at update_priorities (buffer
    unchanged), so probabilities() never returns NaN and sample() keeps working."""
    buf = ReplayBuffer(4, (1,), sampler=ProportionalSampler(alpha=0.6, eps=0.0), seed=0)
    for k in range(3):
        buf.add(np.array([k]), 0, 0.0, np.array([k + 1]), False, False)
    batch = buf.sample(3)
    assert_refused(lambda: buf.update_priorities(batch, np.zeros(3)), buf.state_dict, "priority 0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isfinite(buf.probabilities()).all()
    buf.sample(2)


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(list(SAMPLERS)),
    indices=hnp.arrays(
        dtype=st.sampled_from([np.int64, np.int32, np.uint64, np.float64, np.int8]),
        shape=hnp.array_shapes(min_dims=1, max_dims=2, max_side=4),
    ),
    magnitudes=hnp.arrays(
        dtype=np.float64, shape=st.integers(0, 4), elements=st.floats(allow_nan=True)
    ),
)
def test_sampler_update_accepts_or_refuses_cleanly(
    name: str, indices: np.ndarray, magnitudes: np.ndarray
) -> None:
    """Whatever arrays arrive: either the update succeeds or it raises ValueError, state intact."""
    sampler = SAMPLERS[name]()
    sampler.attach(CAPACITY)
    for slot in range(STORED):
        sampler.on_add(slot)
    before = sampler.state_dict()
    try:
        sampler.update_priorities(indices, magnitudes)
    except ValueError:
        _assert_same(sampler.state_dict(), before, "state")
        return
    valid = indices.reshape(-1)
    assert indices.ndim == 1 and indices.dtype.kind in "iu"
    assert ((valid >= 0) & (valid < STORED)).all()  # stored slots only
    assert np.isfinite(magnitudes).all() and (magnitudes >= 0).all()
