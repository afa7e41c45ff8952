"""Loading replay state (`ReplayBuffer.load_state_dict`, a checkpoint's replay memory) checks
every field before anything is written (`rdqn.replay.state_checks`).

Regression: a checkpoint with flipped bits made ``python -m rdqn resume`` die with a
segmentation fault. Loading copied the arrays in as they came, so a sum tree whose internal
nodes no longer matched their leaves sent the compiled descent into padding leaves (slots past
the storage), a generation stamp far off made a window read before the ring's first row, and a
missing key, a string or a NaN went as far as a kernel or a ``KeyError``. Each corruption below
of a real saved state is now a ``ReplayStateError`` (a ``ValueError``) naming the field, with
the buffer unchanged; an untouched state loads and continues identically.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rdqn.replay import (
    ProportionalSampler,
    RankBasedSampler,
    ReplayBuffer,
    ReplayStateError,
    Sampler,
    UniformSampler,
)
from tests.replay.conftest import _assert_same

CAPACITY = 12  # a sum tree of 16 leaves: 4 padding leaves
OFFSET = 16
SAMPLERS: dict[str, Callable[[], Sampler]] = {
    "uniform": UniformSampler,
    "proportional": lambda: ProportionalSampler(alpha=0.6, eps=1e-3),
    "rank": lambda: RankBasedSampler(alpha=0.7),
}
FILLS = {"partial": 7, "wrapped": 30}


def filled(name: str, steps: int, seed: int = 1) -> ReplayBuffer:
    """A buffer driven like a learner's: add, sample 4, report |delta|."""
    buf = ReplayBuffer(CAPACITY, (3,), window=4, sampler=SAMPLERS[name](), seed=seed)
    rng = np.random.default_rng(2)
    for k in range(steps):
        obs, nxt = rng.normal(size=3), rng.normal(size=3)
        buf.add(obs, k % 3, float(rng.normal()), nxt, k % 5 == 4, k % 7 == 6)
        if len(buf) >= 4:
            batch = buf.sample(4, beta=0.5)
            buf.update_priorities(batch, rng.exponential(size=4))
    return buf


def fresh(name: str) -> ReplayBuffer:
    return ReplayBuffer(CAPACITY, (3,), window=4, sampler=SAMPLERS[name](), seed=99)


STATES = {(name, fill): filled(name, steps).state_dict() for name in SAMPLERS
          for fill, steps in FILLS.items()}  # fmt: skip


def arrays(state: Any, path: tuple = ()) -> Iterator[tuple[tuple, np.ndarray]]:
    """Every array in a state, with its path of keys."""
    if isinstance(state, dict):
        for key, value in state.items():
            yield from arrays(value, (*path, key))
    elif isinstance(state, np.ndarray):
        yield path, state


def edited(state: dict, path: tuple, edit: Callable[[Any], Any]) -> dict:
    """A deep copy of ``state`` whose entry at ``path`` is ``edit(entry)``; `DELETE` removes
    the entry."""
    state = copy.deepcopy(state)
    parent = state
    for key in path[:-1]:
        parent = parent[key]
    value = edit(parent[path[-1]])
    if value is DELETE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return state


DELETE = object()


def assert_refused(name: str, state: dict, match: str) -> None:
    """Loading ``state`` raises ReplayStateError matching ``match``; the buffer is unchanged and
    still loads a good state afterwards."""
    buf = fresh(name)
    before = buf.state_dict()
    with pytest.raises(ReplayStateError, match=match):
        buf.load_state_dict(state)
    _assert_same(buf.state_dict(), before, "state")
    buf.load_state_dict(STATES[name, "wrapped"])


def flip(value: np.ndarray, index: int, bit: int) -> None:
    """Flip one bit of element ``index`` of a 1-D array, in place (bits of its little-endian
    bytes)."""
    raw = value[index : index + 1].view(np.uint8)
    raw[bit // 8] ^= np.uint8(1 << (bit % 8))


# ---------------------------------------------------------------- untouched states


@pytest.mark.parametrize("fill", list(FILLS))
@pytest.mark.parametrize("name", list(SAMPLERS))
def test_an_untouched_state_restores_identically(name: str, fill: str) -> None:
    original = filled(name, FILLS[fill])
    copy_ = fresh(name)
    copy_.load_state_dict(original.state_dict())
    _assert_same(copy_.state_dict(), original.state_dict(), "state")
    for k in range(20):
        a, b = original.sample(4, beta=0.5), copy_.sample(4, beta=0.5)
        for field in ("indices", "weights", "obs", "next_obs", "rewards", "obs_mask"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
        td = np.full(4, 0.25 * k)
        original.update_priorities(a, td)
        copy_.update_priorities(b, td)
    _assert_same(copy_.state_dict(), original.state_dict(), "state")


def test_an_empty_buffer_state_restores() -> None:
    for name in SAMPLERS:
        buf = fresh(name)
        buf.load_state_dict(fresh(name).state_dict())
        assert len(buf) == 0


# ---------------------------------------------------------------- every array: shape and dtype

OTHER_DTYPE = {"f": np.float32, "i": np.int64, "u": np.int64, "b": np.uint8}


def array_cases() -> Iterator[Any]:
    for (name, fill), state in STATES.items():
        if fill != "wrapped":
            continue
        for path, value in arrays(state):
            if path[0] == "rng":
                continue
            dotted = ".".join(path)
            other = np.float64 if value.dtype == np.float32 else OTHER_DTYPE[value.dtype.kind]
            if value.dtype == np.int64:
                other = np.int32
            yield pytest.param(name, path, lambda a: a[:-1], id=f"{name}-{dotted}-short")
            yield pytest.param(name, path, lambda a: a[None], id=f"{name}-{dotted}-extra-axis")
            yield pytest.param(
                name, path, lambda a, t=other: a.astype(t), id=f"{name}-{dotted}-{np.dtype(other)}"
            )
            yield pytest.param(name, path, lambda a: a.tolist(), id=f"{name}-{dotted}-list")
            yield pytest.param(name, path, lambda a: a.astype(object), id=f"{name}-{dotted}-object")
            yield pytest.param(name, path, lambda a: DELETE, id=f"{name}-{dotted}-missing")


@pytest.mark.parametrize(("name", "path", "edit"), list(array_cases()))
def test_every_array_of_the_wrong_shape_dtype_or_type_is_refused(
    name: str, path: tuple, edit: Callable
) -> None:
    assert_refused(name, edited(STATES[name, "wrapped"], path, edit), path[-1])


# ---------------------------------------------------------------- values out of range


def at(index: Any, value: Any) -> Callable[[np.ndarray], np.ndarray]:
    """The edit that sets one element."""
    return in_place(lambda array: array.__setitem__(index, value))


def in_place(change: Callable[[np.ndarray], None]) -> Callable[[np.ndarray], np.ndarray]:
    """The edit that changes an array in place."""

    def edit(array: np.ndarray) -> np.ndarray:
        change(array)
        return array

    return edit


def const(value: Any) -> Callable[[Any], Any]:
    return lambda _: value


STORAGE_CASES = [
    ("writes", const(-1), "writes"),
    ("writes", const(2**63), "writes"),
    ("writes", const(1.5), "writes"),
    ("writes", const("30"), "writes"),
    ("writes", lambda w: w + 1, "generation"),
    ("writes", lambda w: w - 1, "generation"),
    ("next_episode_step", const(-1), "next_episode_step"),
    ("next_episode_step", const(2**31), "next_episode_step"),
    ("generation", at(3, 10**12), "generation"),
    ("generation", at(3, -5), "generation"),
    ("generation", at(3, -1), "generation"),
    ("generation", at(11, 0), "generation"),
    ("actions", at(2, -1), "actions"),
    ("rewards", at(2, np.nan), "rewards"),
    ("rewards", at(2, -np.inf), "rewards"),
    ("obs", at((1, 0), np.nan), "obs"),
    ("next_obs", at((5, 2), np.inf), "next_obs"),
    ("episode_step", at(2, -3), "episode_step"),
    ("sample_counts", at(2, -1), "sample_counts"),
    ("terminated", in_place(lambda a: a.view(np.uint8).__setitem__(2, 2)), "terminated"),
    ("truncated", in_place(lambda a: a.view(np.uint8).__setitem__(0, 255)), "truncated"),
]


@pytest.mark.parametrize("fill", list(FILLS))
@pytest.mark.parametrize("name", list(SAMPLERS))
@pytest.mark.parametrize(("key", "edit", "match"), STORAGE_CASES)
def test_storage_values_out_of_range_are_refused(
    name: str, fill: str, key: str, edit: Callable, match: str
) -> None:
    assert_refused(name, edited(STATES[name, fill], ("storage", key), edit), match)


BUFFER_CASES = [
    ((), const([1, 2]), "state"),
    (("storage",), const("storage"), "storage"),
    (("sampler",), const(None), "sampler"),
    (("capacity",), const("12"), "capacity"),
    (("capacity",), const(16), "capacity"),
    (("obs_shape",), const(3), "obs_shape"),
    (("obs_shape",), const((3, "a")), "obs_shape"),
    (("window",), const(None), "window"),
    (("window",), const(DELETE), "window"),
    (("rng",), const(DELETE), "rng"),
    (("rng",), const("PCG64"), "rng"),
    (("rng",), lambda r: {**r, "bit_generator": "MT19937"}, "rng"),
    (("rng", "state", "state"), const(-1), "rng"),
    (("rng", "state", "inc"), const("x"), "rng"),
    (("stale_updates",), const(-1), "stale_updates"),
    (("stale_updates",), const(0.5), "stale_updates"),
    (("sampler", "stored"), lambda n: n + 1, "stored"),
    (("sampler", "stored"), const(-1), "stored"),
    (("sampler", "name"), const("other"), "sampler"),
]


@pytest.mark.parametrize("name", list(SAMPLERS))
@pytest.mark.parametrize(("path", "edit", "match"), BUFFER_CASES)
def test_buffer_fields_out_of_range_are_refused(
    name: str, path: tuple, edit: Callable, match: str
) -> None:
    state = STATES[name, "partial"]
    bad = edit(copy.deepcopy(state)) if path == () else edited(state, path, edit)
    assert_refused(name, bad, match)


PADDING = OFFSET + CAPACITY
PROPORTIONAL_CASES = [
    ("sum_nodes", at(OFFSET + 1, np.nan), "sum_nodes"),
    ("sum_nodes", at(OFFSET + 1, -1.0), "sum_nodes"),
    ("sum_nodes", at(OFFSET + 1, np.inf), "sum_nodes"),
    ("sum_nodes", at(PADDING, 1.0), "sum_nodes"),  # a padding leaf
    ("sum_nodes", at(OFFSET + 2, 1e300), "sum_nodes"),  # a leaf: its parent's sum is off
    ("sum_nodes", at(5, 0.0), "sum_nodes"),  # an internal node
    ("min_nodes", at(OFFSET + 1, 123.0), "min_nodes"),
    ("min_nodes", at(PADDING, 1.0), "min_nodes"),
    ("min_nodes", at(1, 0.0), "min_nodes"),
    ("min_nodes", at(1, np.nan), "min_nodes"),
    ("max_priority", const(np.nan), "max_priority"),
    ("max_priority", const(0.5), "max_priority"),
    ("max_priority", const(np.inf), "max_priority"),
    ("max_priority", const("1"), "max_priority"),
    ("alpha", const(0.5), "alpha"),
    ("alpha", const(np.array([0.6])), "alpha"),
    ("eps", const(np.nan), "eps"),
    ("stored", const(13), "stored"),
    ("stored", const(True), "stored"),
]


@pytest.mark.parametrize("fill", list(FILLS))
@pytest.mark.parametrize(("key", "edit", "match"), PROPORTIONAL_CASES)
def test_proportional_sampler_values_out_of_range_are_refused(
    fill: str, key: str, edit: Callable, match: str
) -> None:
    state = edited(STATES["proportional", fill], ("sampler", key), edit)
    assert_refused("proportional", state, match)


def with_leaves(state: dict, leaves: dict[int, float]) -> dict:
    """A copy of a proportional buffer's state whose tree has these leaf masses, its internal
    nodes and min tree recomputed from them: a consistent tree."""
    state = copy.deepcopy(state)
    sums, mins = state["sampler"]["sum_nodes"], state["sampler"]["min_nodes"]
    for leaf, mass in leaves.items():
        sums[OFFSET + leaf] = mass
        mins[OFFSET + leaf] = mass if mass > 0 else np.inf
    with np.errstate(over="ignore"):
        for j in range(OFFSET - 1, 0, -1):
            sums[j] = sums[2 * j] + sums[2 * j + 1]
            mins[j] = min(mins[2 * j], mins[2 * j + 1])
    return state


def test_a_consistent_tree_loads() -> None:
    """(The helper below builds trees the check accepts.)"""
    fresh("proportional").load_state_dict(with_leaves(STATES["proportional", "partial"], {2: 5.0}))


def test_a_positive_leaf_past_the_stored_slots_is_refused() -> None:
    """Slot 8 of a buffer holding 7, its sums and minima consistent: the descent could draw it."""
    state = with_leaves(STATES["proportional", "partial"], {8: 1.0})
    assert_refused("proportional", state, "slot 8")


def test_a_total_that_overflows_is_refused() -> None:
    state = with_leaves(STATES["proportional", "partial"], {0: 1e308, 1: 1e308})
    assert_refused("proportional", state, "the total, is inf")


def test_no_positive_mass_among_stored_slots_is_refused() -> None:
    state = with_leaves(STATES["proportional", "partial"], dict.fromkeys(range(7), 0.0))
    assert_refused("proportional", state, "no stored slot has a positive mass")


def test_a_tree_that_leads_into_the_padding_is_refused_not_a_crash() -> None:
    """A damaged checkpoint's crash: nodes 7 and 3 (over padding leaves 12..15 and empty
    slots) and the root raised by 10^6. Loaded unchecked, the descent went down to leaf 15 of a
    12-slot buffer and the gather counted the sample past the end of its arrays: "double free
    or corruption", the process aborted."""
    state = copy.deepcopy(STATES["proportional", "partial"])
    sums = state["sampler"]["sum_nodes"]
    sums[[7, 3]] = 1e6
    sums[1] += 1e6
    assert_refused("proportional", state, r"sum_nodes\[7\] is 1000000.0, but its children 14")


@pytest.mark.parametrize("fill", list(FILLS))
@pytest.mark.parametrize("key", ["sum_nodes", "min_nodes"])
@pytest.mark.parametrize("node", [1, 2, 4, 5, OFFSET, OFFSET + 3])
@pytest.mark.parametrize("bit", [0, 17, 51, 52, 62, 63])
def test_a_flipped_bit_in_a_tree_node_is_refused(fill: str, key: str, node: int, bit: int) -> None:
    """Internal nodes hold exactly the sums (and minima) of their children: the update kernel
    recomputes each from its children, never adding a difference, so a saved tree satisfies
    them bit for bit and any flipped bit of an internal node shows; a leaf's is its mass twice
    (sum and min), so a flipped bit of either leaf shows as well."""
    state = copy.deepcopy(STATES["proportional", fill])
    flip(state["sampler"][key], node, bit)
    assert_refused("proportional", state, key)


RANK_CASES = [
    ("priorities", at(2, np.nan), "priorities"),
    ("priorities", at(2, -1.0), "priorities"),
    ("priorities", at(2, np.inf), "priorities"),
    ("priorities", at(11, 1.0), "priorities"),  # slot 11 holds nothing in the partial state
    ("stamps", in_place(lambda s: s.__setitem__(1, s[0])), "stamps"),
    ("stamps", in_place(lambda s: s.__setitem__(1, s.max() + 5)), "stamps"),
    ("stamps", at(1, -2), "stamps"),
    ("stamps", at(1, 0), "stamps"),
    ("stamps", at(11, 10**6), "stamps|stored"),
    ("clock", const(-1), "clock"),
    ("clock", const(2**63), "clock"),
    ("clock", const("x"), "clock"),
    ("clock", lambda c: c - 100, "stamps|clock"),
    ("max_priority", const(np.nan), "max_priority"),
    ("max_priority", const(0.0), "max_priority"),
    ("alpha", const(0.5), "alpha"),
    ("stored", const(13), "stored"),
]


@pytest.mark.parametrize(("key", "edit", "match"), RANK_CASES)
def test_rank_sampler_values_out_of_range_are_refused(key: str, edit: Callable, match: str) -> None:
    assert_refused("rank", edited(STATES["rank", "partial"], ("sampler", key), edit), match)


def test_a_legacy_rank_state_with_out_of_range_stored_is_refused() -> None:
    """The periodic-sort sampler's keys ("stored", no "stamps"): stored is checked too."""
    sampler = RankBasedSampler(alpha=0.7)
    sampler.attach(6)
    legacy = {
        "name": "rank",
        "alpha": 0.7,
        "max_priority": 3.0,
        "priorities": np.array([1.0, 3.0, 1.0, 2.0, 0.0, 0.0]),
        "order": np.array([1, 3, 0, 2]),
        "stored": 4,
        "changes": 2,
    }
    for bad in (7, -1, 2.0):
        with pytest.raises(ReplayStateError, match="stored"):
            sampler.load_state_dict({**legacy, "stored": bad})
    sampler.load_state_dict(legacy)
    assert sampler.order.tolist() == [1, 3, 0, 2]


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_a_sampler_alone_refuses_a_corrupt_state_and_keeps_its_own(name: str) -> None:
    buf = filled(name, 20)
    sampler = buf.sampler
    before = sampler.state_dict()
    with pytest.raises(ReplayStateError, match="stored"):
        sampler.load_state_dict({**before, "stored": CAPACITY + 1})
    with pytest.raises(ReplayStateError, match="state"):
        sampler.load_state_dict(None)  # type: ignore[arg-type]
    _assert_same(sampler.state_dict(), before, "state")


# ---------------------------------------------------------------- any flipped bit


@settings(max_examples=150, deadline=None, derandomize=True)
@given(data=st.data())
def test_any_flipped_bit_is_refused_or_harmless(data: st.DataObject) -> None:
    """A bit flipped anywhere in a saved state's arrays: either the load is refused, the buffer
    unchanged, or the buffer loads and keeps working (draws within the stored slots, updates,
    the rank order's invariants), never a crash."""
    name = data.draw(st.sampled_from(list(SAMPLERS)), "sampler")
    fill = data.draw(st.sampled_from(list(FILLS)), "fill")
    state = copy.deepcopy(STATES[name, fill])
    fields = [path for path, _ in arrays(state) if path[0] != "rng"]
    path = data.draw(st.sampled_from(fields), "field")
    value = state
    for key in path:
        value = value[key]
    flat = value.reshape(-1)
    index = data.draw(st.integers(0, flat.shape[0] - 1), "element")
    bit = data.draw(st.integers(0, 8 * flat.itemsize - 1), "bit")
    flip(flat, index, bit)
    buf = fresh(name)
    before = buf.state_dict()
    try:
        buf.load_state_dict(state)
    except ReplayStateError:
        _assert_same(buf.state_dict(), before, "state")
        return
    for _ in range(10):
        batch = buf.sample(4, beta=0.5)
        assert batch.indices.min() >= 0 and batch.indices.max() < len(buf)
        buf.update_priorities(batch, np.full(4, 0.5))
        buf.add(np.zeros(3), 0, 0.0, np.zeros(3), False, False)
    if isinstance(buf.sampler, RankBasedSampler):
        buf.sampler._ranks.check_invariants()
