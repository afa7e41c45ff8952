"""ReplayBuffer: batches, acting == replay windows (property test), stale updates, persistence,
memory and input validation."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rdqn.replay import (
    Batch,
    ProportionalSampler,
    RankBasedSampler,
    ReplayBuffer,
    Sampler,
    UniformSampler,
    WindowBuilder,
    replay_nbytes,
)

SAMPLERS: dict[str, Callable[[], Sampler]] = {
    "uniform": UniformSampler,
    "proportional": lambda: ProportionalSampler(alpha=0.6, eps=1e-3),
    "rank": lambda: RankBasedSampler(alpha=0.7),
}


def add_steps(buf: ReplayBuffer, first: int, count: int, *, end_every: int = 0) -> None:
    """Deterministic transitions: o_k = [k, k/3, ...] (float64, rounded to float32 on storage).
    Every `end_every`-th step ends its episode, alternately terminated and truncated."""
    size = int(np.prod(buf.obs_shape))
    for k in range(first, first + count):
        obs = (np.arange(size) + k / 3.0 + k).reshape(buf.obs_shape)
        nxt = (np.arange(size) + (k + 1) / 3.0 + k + 1).reshape(buf.obs_shape)
        ends = end_every > 0 and (k + 1) % end_every == 0
        terminated = ends and (k // end_every) % 2 == 0
        truncated = ends and not terminated
        buf.add(obs, k % 3, float(np.sin(k)), nxt, terminated, truncated)


# ---------------------------------------------------------------- batch fields


def test_batch_fields_and_shapes() -> None:
    """obs_shape (2, 3), T = 4, B = 5: windows (5, 4, 2, 3); W_{t+1} = W_t shifted by one with
    o_{t+1} last; scalars and bookkeeping per row match what was added for that generation."""
    buf = ReplayBuffer(16, (2, 3), window=4, sampler=ProportionalSampler(), seed=0)
    add_steps(buf, 0, 12, end_every=5)
    assert len(buf) == 12 and buf.cursor == 12 and buf.storage.writes == 12
    batch = buf.sample(5, beta=0.4)
    assert isinstance(batch, Batch) and len(batch) == 5
    assert batch.obs.shape == batch.next_obs.shape == (5, 4, 2, 3)
    assert batch.obs.dtype == batch.next_obs.dtype == np.float32
    assert batch.obs_mask.shape == batch.next_obs_mask.shape == (5, 4)
    assert batch.obs_mask.dtype == batch.next_obs_mask.dtype == np.bool_
    for name, dtype in [
        ("actions", np.int64),
        ("rewards", np.float32),
        ("terminated", np.bool_),
        ("truncated", np.bool_),
        ("indices", np.int64),
        ("probabilities", np.float64),
        ("weights", np.float64),
        ("generations", np.int64),
    ]:
        value = getattr(batch, name)
        assert value.shape == (5,) and value.dtype == dtype, name
    for b, k in enumerate(batch.generations):  # no wrap: generation k is step k
        assert batch.indices[b] == k
        np.testing.assert_array_equal(
            batch.obs[b, -1], (np.arange(6) + k / 3.0 + k).reshape(2, 3).astype(np.float32)
        )
        np.testing.assert_array_equal(
            batch.next_obs[b, -1],
            (np.arange(6) + (k + 1) / 3.0 + k + 1).reshape(2, 3).astype(np.float32),
        )
        assert batch.actions[b] == k % 3
        assert batch.rewards[b] == np.float32(np.sin(k))
        assert batch.terminated[b] == (k in (4,))
        assert batch.truncated[b] == (k in (9,))
    np.testing.assert_array_equal(batch.next_obs[:, :-1], batch.obs[:, 1:])
    np.testing.assert_array_equal(batch.next_obs_mask[:, :-1], batch.obs_mask[:, 1:])
    assert batch.next_obs_mask[:, -1].all() and batch.obs_mask[:, -1].all()
    with pytest.raises(dataclasses.FrozenInstanceError):
        batch.weights = np.ones(5)  # type: ignore[misc]


def test_sample_counts_and_ages() -> None:
    buf = ReplayBuffer(4, (1,), sampler=UniformSampler(), seed=3)
    add_steps(buf, 0, 3)
    np.testing.assert_array_equal(buf.sample_counts, [0, 0, 0])
    batch = buf.sample(3)
    np.testing.assert_array_equal(buf.sample_counts, np.bincount(batch.indices, minlength=3))
    before = buf.sample_counts
    add_steps(buf, 3, 2)  # slot 3 is new, slot 0 is overwritten: its count restarts at 0
    counts = buf.sample_counts
    assert counts.shape == (4,)
    assert counts[0] == 0 and counts[3] == 0
    np.testing.assert_array_equal(counts[1:3], before[1:3])
    # writes = 5, slots hold generations [4, 1, 2, 3]
    np.testing.assert_array_equal(buf.ages([0, 1, 2, 3]), [0, 3, 2, 1])


def test_new_episode_starts_a_fresh_window() -> None:
    """Three steps without an end flag, then new_episode(): the fourth step's window (T = 3) is
    [pad, pad, o3], not [o1, o2, o3]."""
    buf = ReplayBuffer(8, (2,), window=3, seed=0)
    add_steps(buf, 0, 3)
    buf.new_episode()
    add_steps(buf, 3, 1)
    obs, _, mask, _ = buf.storage.windows(np.array([3, 2]), 3)
    assert mask.tolist() == [[False, False, True], [True, True, True]]
    np.testing.assert_array_equal(obs[0, :2], np.zeros((2, 2)))


def test_new_transition_mass_uses_raw_max_priority() -> None:
    """Through the buffer: |delta| = 3, alpha 0.5, eps 0 -> the next added slot's mass is 3^0.5."""
    sampler = ProportionalSampler(alpha=0.5, eps=0.0)
    buf = ReplayBuffer(4, (1,), sampler=sampler, seed=0)
    add_steps(buf, 0, 2)
    batch = buf.sample(2)
    buf.update_priorities(batch, np.full(2, 3.0))
    add_steps(buf, 2, 1)
    assert sampler.tree is not None
    assert sampler.tree[2] == pytest.approx(3.0**0.5, rel=1e-15)


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_sample_indices_within_filled_size(name: str) -> None:
    buf = ReplayBuffer(64, (2,), window=2, sampler=SAMPLERS[name](), seed=4)
    rng = np.random.default_rng(4)
    for k in range(20):
        add_steps(buf, k, 1, end_every=6)
        batch = buf.sample(len(buf), beta=0.5)
        assert batch.indices.min() >= 0 and batch.indices.max() < len(buf)
        assert ((batch.weights > 0) & (batch.weights <= 1)).all()
        buf.update_priorities(batch, rng.exponential(1.0, len(batch)))
        probabilities = buf.probabilities()
        assert probabilities.shape == (len(buf),)
        assert probabilities.sum() == pytest.approx(1.0, abs=1e-12)


# ---------------------------------------------------------------- acting window == replay window

END_KINDS = ("terminated", "truncated", "reset")


@settings(deadline=None, max_examples=200, derandomize=True)
@given(
    capacity=st.integers(1, 30),
    window=st.integers(1, 6),
    episodes=st.lists(
        st.tuples(st.integers(1, 12), st.sampled_from(END_KINDS)), min_size=1, max_size=8
    ),
    last_open=st.booleans(),
    sampler=st.sampled_from(list(SAMPLERS)),
    seed=st.integers(0, 2**32 - 1),
)
def test_replay_windows_equal_acting_windows(
    capacity: int,
    window: int,
    episodes: list[tuple[int, str]],
    last_open: bool,
    sampler: str,
    seed: int,
) -> None:
    """Drive a WindowBuilder exactly as an agent does and record, per generation, the window the
    agent acted on (W_t) and the one it saw next (W_{t+1}). Replay must return them bit for bit
    while the history is stored; a frame that the ring overwrote must be zero with mask False,
    never another episode's frame or a newer occupant's."""
    buf = ReplayBuffer(capacity, (2,), window=window, sampler=SAMPLERS[sampler](), seed=seed)
    builder = WindowBuilder(window, (2,))
    rng = np.random.default_rng(seed)
    records: dict[int, dict[str, Any]] = {}
    generation = 0
    for e, (length, end) in enumerate(episodes):
        open_end = last_open and e == len(episodes) - 1
        obs = rng.standard_normal((length + 1, 2))  # float64: rounded to float32 on both sides
        builder.reset(obs[0])
        for t in range(length):
            acted, acted_mask = builder.window_and_mask()
            last = t == length - 1 and not open_end
            terminated, truncated = last and end == "terminated", last and end == "truncated"
            action, reward = int(rng.integers(0, 5)), float(rng.standard_normal())
            slot = buf.add(obs[t], action, reward, obs[t + 1], terminated, truncated)
            assert slot == generation % capacity
            builder.append(obs[t + 1])
            seen, seen_mask = builder.window_and_mask()
            records[generation] = {
                "w": acted,
                "m": acted_mask,
                "w_next": seen,
                "m_next": seen_mask,
                "action": action,
                "reward": np.float32(reward),
                "terminated": terminated,
                "truncated": truncated,
            }
            generation += 1
        if end == "reset" and not open_end:
            buf.new_episode()

    size = len(buf)
    assert size == min(generation, capacity)
    oldest = generation - size
    back = window - 1 - np.arange(window)  # steps before o_t read by window position p

    def expected(g: int) -> tuple[np.ndarray, ...]:
        rec = records[g]
        stored = g - oldest  # earlier frames of this transition that are still in the ring
        keep = back <= stored
        keep_next = back - 1 <= stored  # W_{t+1} reads o_{t+1-back}; back 0 is next_obs
        return (
            np.where(keep[:, None], rec["w"], np.float32(0)),
            rec["m"] & keep,
            np.where(keep_next[:, None], rec["w_next"], np.float32(0)),
            rec["m_next"] & keep_next,
        )

    slots = np.arange(size, dtype=np.int64)
    w, w_next, mask, next_mask = buf.storage.windows(slots, window)
    for s in slots:
        g = int(buf.storage.generation[s])
        assert oldest <= g < generation and g % capacity == s
        exp_w, exp_m, exp_next, exp_next_m = expected(g)
        assert exp_w.dtype == w.dtype == np.float32
        assert np.array_equal(w[s], exp_w), (s, g)
        assert np.array_equal(mask[s], exp_m), (s, g)
        assert np.array_equal(w_next[s], exp_next), (s, g)
        assert np.array_equal(next_mask[s], exp_next_m), (s, g)
        if g - oldest >= window - 1:  # whole history stored: exactly the acting window
            assert np.array_equal(w[s], records[g]["w"])
            assert np.array_equal(w_next[s], records[g]["w_next"])

    batch = buf.sample(size, beta=1.0)
    for b in range(size):
        g = int(batch.generations[b])
        rec = records[g]
        exp_w, exp_m, exp_next, exp_next_m = expected(g)
        assert np.array_equal(batch.obs[b], exp_w)
        assert np.array_equal(batch.obs_mask[b], exp_m)
        assert np.array_equal(batch.next_obs[b], exp_next)
        assert np.array_equal(batch.next_obs_mask[b], exp_next_m)
        assert batch.actions[b] == rec["action"] and batch.rewards[b] == rec["reward"]
        assert batch.terminated[b] == rec["terminated"]
        assert batch.truncated[b] == rec["truncated"]


# ---------------------------------------------------------------- stale priority updates


def test_stale_updates_are_skipped_and_counted() -> None:
    """Capacity 8, alpha 0.5, eps 0, all slots at |delta| 5 (mass sqrt 5, equal, so a stratified
    batch of 8 is slots 0..7 once each). Three adds overwrite slots 0, 1, 2 after the batch was
    drawn: their rows (|delta| 100) are stale and skipped; the new occupants keep mass sqrt 5;
    slots 3..7 get sqrt(i). The max priority for new items is 7, not the stale 100."""
    sampler = ProportionalSampler(alpha=0.5, eps=0.0)
    buf = ReplayBuffer(8, (1,), sampler=sampler, seed=5)
    assert sampler.tree is not None
    add_steps(buf, 0, 8)
    assert buf.update_priorities(buf.sample(8), np.full(8, 5.0)) == 0
    batch = buf.sample(8)
    np.testing.assert_array_equal(np.sort(batch.indices), np.arange(8))
    add_steps(buf, 8, 3)
    td = np.where(batch.indices < 3, 100.0, batch.indices.astype(np.float64))
    assert buf.update_priorities(batch, td) == 3
    assert buf.stale_updates == 3
    expected = np.sqrt([5.0, 5.0, 5.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    np.testing.assert_allclose(sampler.tree.leaves(), expected, rtol=1e-15)
    np.testing.assert_allclose(buf.probabilities(), expected / expected.sum(), rtol=1e-12)
    add_steps(buf, 11, 1)  # overwrites slot 3 with the max priority 7
    assert sampler.tree[3] == pytest.approx(np.sqrt(7.0), rel=1e-15)
    # the same batch again: slots 0..3 are stale now
    assert buf.update_priorities(batch, td) == 4
    assert buf.stale_updates == 7
    assert sampler.tree[3] == pytest.approx(np.sqrt(7.0), rel=1e-15)


def test_all_stale_update_changes_no_priority() -> None:
    sampler = ProportionalSampler(alpha=1.0, eps=0.0)
    buf = ReplayBuffer(4, (1,), sampler=sampler, seed=6)
    add_steps(buf, 0, 4)
    batch = buf.sample(4)
    add_steps(buf, 4, 4)  # every slot has a new occupant
    assert sampler.tree is not None
    before = sampler.tree.leaves()
    assert buf.update_priorities(batch, np.full(4, 9.0)) == 4
    np.testing.assert_array_equal(sampler.tree.leaves(), before)
    assert sampler.max_priority == 1.0


def test_failed_update_with_stale_rows_leaves_buffer_unchanged(
    assert_same_state: Callable,
) -> None:
    """A batch with one stale row whose live rows overflow p^alpha: the ValueError must leave the
    whole buffer unchanged, including the `stale_updates` counter."""
    buf = ReplayBuffer(4, (1,), sampler=ProportionalSampler(alpha=2.0, eps=0.0), seed=7)
    add_steps(buf, 0, 4)
    batch = buf.sample(4)
    add_steps(buf, 4, 1)  # slot 0 is stale now
    before = buf.state_dict()
    with pytest.raises(ValueError, match="overflow"):
        buf.update_priorities(batch, np.full(4, 1e200))
    assert_same_state(buf.state_dict(), before)


# ---------------------------------------------------------------- persistence


def drive(buf: ReplayBuffer, first: int, steps: int) -> list[Batch]:
    """Add one step at a time; from 8 stored steps on, sample and report |delta| every 2nd step."""
    batches = []
    for k in range(first, first + steps):
        add_steps(buf, k, 1, end_every=7)
        if len(buf) >= 8 and k % 2 == 0:
            batch = buf.sample(8, beta=0.5)
            buf.update_priorities(batch, np.abs(np.sin(k + np.arange(8))) * 3)
            batches.append(batch)
    return batches


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_state_dict_round_trip_continues_identically(
    name: str, assert_same_state: Callable
) -> None:
    """Buffers A and B share a seed; C (another seed) loads A's state at step 40. From there all
    three must produce identical batches (indices, weights, windows ...) over a ring wrap."""

    def make(seed: int) -> ReplayBuffer:
        return ReplayBuffer(32, (3,), window=4, sampler=SAMPLERS[name](), seed=seed)

    a, b = make(5), make(5)
    drive(a, 0, 40)
    drive(b, 0, 40)
    state = a.state_dict()
    c = make(999)
    c.load_state_dict(state)
    assert_same_state(c.state_dict(), a.state_dict())
    runs = [drive(buf, 40, 40) for buf in (a, b, c)]
    assert len(runs[0]) == 20
    for x, y, z in zip(*runs, strict=True):
        for field in dataclasses.fields(Batch):
            vx, vy, vz = (getattr(v, field.name) for v in (x, y, z))
            assert np.array_equal(vx, vy) and np.array_equal(vx, vz), field.name
    assert_same_state(a.state_dict(), c.state_dict())
    assert_same_state(a.state_dict(), b.state_dict())


def test_state_dict_is_a_snapshot(assert_same_state: Callable) -> None:
    buf = ReplayBuffer(16, (2,), window=2, sampler=ProportionalSampler(), seed=8)
    drive(buf, 0, 12)
    state = buf.state_dict()
    snapshot = buf.state_dict()
    drive(buf, 12, 12)
    assert_same_state(state, snapshot)


@pytest.mark.parametrize(
    ("other", "match"),
    [
        (lambda: ReplayBuffer(16, (2,), window=2, sampler=UniformSampler()), "sampler"),
        (lambda: ReplayBuffer(8, (2,), window=2, sampler=ProportionalSampler()), "capacity"),
        (lambda: ReplayBuffer(16, (3,), window=2, sampler=ProportionalSampler()), "obs_shape"),
        (lambda: ReplayBuffer(16, (2,), window=3, sampler=ProportionalSampler()), "window"),
    ],
)
def test_load_state_dict_mismatch_is_rejected(
    other: Callable[[], ReplayBuffer], match: str, assert_same_state: Callable
) -> None:
    buf = ReplayBuffer(16, (2,), window=2, sampler=ProportionalSampler(), seed=9)
    drive(buf, 0, 10)
    before = buf.state_dict()
    source = other()
    add_steps(source, 0, 3)
    with pytest.raises(ValueError, match=match):
        buf.load_state_dict(source.state_dict())
    assert_same_state(buf.state_dict(), before)


# ---------------------------------------------------------------- memory


def full_buffer(capacity: int, window: int, name: str) -> ReplayBuffer:
    """A full buffer of CartPole-sized observations: (4,) float32, 16 bytes."""
    buf = ReplayBuffer(capacity, (4,), window=window, sampler=SAMPLERS[name](), seed=0)
    add_steps(buf, 0, capacity, end_every=50)
    buf.sample(16)
    return buf


def nbytes_bound(capacity: int, obs_bytes: int = 16) -> float:
    return 2.2 * capacity * obs_bytes + 96 * capacity


@pytest.mark.parametrize("name", list(SAMPLERS))
@pytest.mark.parametrize("capacity", [1000, 1024, 10_000])
def test_nbytes_bound_and_independent_of_window(capacity: int, name: str) -> None:
    """Observations are stored per step: nbytes <= 2.2 N obs_bytes + 96 N, the same for T = 1 and
    T = 32, and sampling windows allocates nothing that stays in the buffer."""
    flat = full_buffer(capacity, 1, name)
    deep = full_buffer(capacity, 32, name)
    assert flat.nbytes == deep.nbytes
    assert flat.nbytes <= nbytes_bound(capacity)
    deep.sample(64)
    assert deep.nbytes == flat.nbytes


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_nbytes_bound_at_worst_case_capacity(name: str) -> None:
    """N = 2^k + 1 is the worst case for a power-of-two tree layout (2^(k+1) leaves). For
    (4,) float32 observations the bound is 2.2 * 16 + 96 = 131.2 bytes per slot."""
    capacity = 1025
    buf = full_buffer(capacity, 1, name)
    assert buf.nbytes <= nbytes_bound(capacity)


@pytest.mark.parametrize("name", list(SAMPLERS))
@pytest.mark.parametrize("capacity", [1, 7, 1024, 1025])
def test_replay_nbytes_predicts_a_full_buffer_without_allocating(capacity: int, name: str) -> None:
    """`replay_nbytes` is what a server checks against its memory limit before building a run:
    it must equal the nbytes of the buffer it describes, full."""
    sampler = RankBasedSampler() if name == "rank" else SAMPLERS[name]()
    buf = ReplayBuffer(capacity, (4,), sampler=sampler, seed=0)
    add_steps(buf, 0, capacity)
    assert replay_nbytes(capacity, 4, name) == buf.nbytes
    sampler = RankBasedSampler() if name == "rank" else SAMPLERS[name]()
    wide = ReplayBuffer(capacity, (3, 5), sampler=sampler, obs_dtype=np.uint8, seed=0)
    for _ in range(capacity):
        wide.add(np.zeros((3, 5), np.uint8), 0, 0.0, np.zeros((3, 5), np.uint8), False, False)
    assert replay_nbytes(capacity, 15, name, obs_itemsize=1) == wide.nbytes


def test_replay_nbytes_rejects_an_unknown_scheme() -> None:
    with pytest.raises(ValueError, match="scheme"):
        replay_nbytes(8, 4, "prioritised")


# ---------------------------------------------------------------- input validation


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"capacity": 0}, "capacity"),
        ({"capacity": -1}, "capacity"),
        ({"capacity": 1.5}, "capacity"),
        ({"capacity": True}, "capacity"),
        ({"window": 0}, "window"),
        ({"window": 2.0}, "window"),
        ({"obs_shape": (0,)}, "obs_shape"),
        ({"obs_shape": ()}, "obs_shape"),
        ({"obs_dtype": np.complex64}, "obs_dtype"),
        ({"obs_dtype": np.float16}, "obs_dtype must be float32"),  # the kernels cannot read it
        ({"obs_dtype": ">f4"}, "native byte order"),
        ({"sampler": object()}, "sampler"),
    ],
)
def test_bad_construction(kwargs: dict[str, Any], match: str) -> None:
    args: dict[str, Any] = {"capacity": 8, "obs_shape": (2,)} | kwargs
    with pytest.raises(ValueError, match=match):
        ReplayBuffer(args.pop("capacity"), args.pop("obs_shape"), **args)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: ProportionalSampler(alpha=-0.5), "alpha"),
        (lambda: RankBasedSampler(alpha=-0.5), "alpha"),
    ],
)
def test_negative_alpha(make: Callable[[], Sampler], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ReplayBuffer(8, (2,), sampler=make())


Z2 = np.zeros(2)
F2 = np.zeros(2, np.float32)  # the storage dtype: `add`'s fast path checks it

BAD_CALLS: list[tuple[str, Callable[[ReplayBuffer, Batch], object], str]] = [
    ("obs shape", lambda b, _: b.add(np.zeros(3), 0, 0.0, Z2, False, False), "obs"),
    ("obs 2-d", lambda b, _: b.add(np.zeros((1, 2)), 0, 0.0, Z2, False, False), "obs"),
    ("next_obs shape", lambda b, _: b.add(Z2, 0, 0.0, np.zeros(3), False, False), "next_obs"),
    ("obs complex", lambda b, _: b.add(Z2 + 1j, 0, 0.0, Z2, False, False), "obs.*complex"),
    ("obs strings", lambda b, _: b.add(np.array(["a", "b"]), 0, 0.0, Z2, False, False), "obs"),
    ("obs nan", lambda b, _: b.add(np.array([0.0, np.nan]), 0, 0.0, Z2, False, False), "obs"),
    ("next_obs inf", lambda b, _: b.add(Z2, 0, 0.0, Z2 + np.inf, False, False), "next_obs"),
    ("obs float32 nan", lambda b, _: b.add(F2 + np.nan, 0, 0.0, F2, False, False), "obs"),
    ("next_obs float32 inf", lambda b, _: b.add(F2, 0, 0.0, F2 - np.inf, False, False), "next"),
    ("action float", lambda b, _: b.add(Z2, 1.5, 0.0, Z2, False, False), "action"),
    ("action negative", lambda b, _: b.add(Z2, -1, 0.0, Z2, False, False), "action"),
    ("action bool", lambda b, _: b.add(Z2, True, 0.0, Z2, False, False), "action"),
    ("action str", lambda b, _: b.add(Z2, "1", 0.0, Z2, False, False), "action"),
    ("reward nan", lambda b, _: b.add(Z2, 0, float("nan"), Z2, False, False), "reward"),
    ("reward inf", lambda b, _: b.add(Z2, 0, np.inf, Z2, False, False), "reward"),
    ("reward str", lambda b, _: b.add(Z2, 0, "1", Z2, False, False), "reward"),
    ("reward None", lambda b, _: b.add(Z2, 0, None, Z2, False, False), "reward"),
    ("terminated int", lambda b, _: b.add(Z2, 0, 0.0, Z2, 1, False), "terminated"),
    ("terminated None", lambda b, _: b.add(Z2, 0, 0.0, Z2, None, False), "terminated"),
    ("terminated str", lambda b, _: b.add(Z2, 0, 0.0, Z2, "yes", False), "terminated"),
    ("truncated int", lambda b, _: b.add(Z2, 0, 0.0, Z2, False, 0), "truncated"),
    ("batch too large", lambda b, _: b.sample(len(b) + 1), "batch_size"),
    ("batch zero", lambda b, _: b.sample(0), "batch_size"),
    ("batch float", lambda b, _: b.sample(2.0), "batch_size"),
    ("beta negative", lambda b, _: b.sample(2, beta=-0.1), "beta"),
    ("beta above one", lambda b, _: b.sample(2, beta=1.5), "beta"),
    ("beta nan", lambda b, _: b.sample(2, beta=float("nan")), "beta"),
    ("td nan", lambda b, x: b.update_priorities(x, [0.5, np.nan, 0.1]), "td_errors"),
    ("td inf", lambda b, x: b.update_priorities(x, [0.5, np.inf, 0.1]), "td_errors"),
    ("td negative", lambda b, x: b.update_priorities(x, [0.5, -0.2, 0.1]), "td_errors"),
    ("td short", lambda b, x: b.update_priorities(x, [0.5, 0.1]), "td_errors"),
    ("td 2-d", lambda b, x: b.update_priorities(x, np.ones((3, 1))), "td_errors"),
]


@pytest.mark.parametrize("name", list(SAMPLERS))
@pytest.mark.parametrize(("case", "call", "match"), BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
def test_bad_input_raises_and_leaves_buffer_unchanged(
    name: str,
    case: str,
    call: Callable[[ReplayBuffer, Batch], object],
    match: str,
    assert_same_state: Callable,
) -> None:
    buf = ReplayBuffer(8, (2,), window=2, sampler=SAMPLERS[name](), seed=10)
    add_steps(buf, 0, 5)
    batch = buf.sample(3)
    before = buf.state_dict()
    with pytest.raises(ValueError, match=match):
        call(buf, batch)
    assert_same_state(buf.state_dict(), before)


def test_float_obs_into_uint8_storage_is_rejected(assert_same_state: Callable) -> None:
    buf = ReplayBuffer(4, (2,), obs_dtype=np.uint8, seed=0)
    buf.add(np.array([1, 2], np.uint8), 0, 0.0, np.array([3, 4], np.uint8), False, False)
    before = buf.state_dict()
    with pytest.raises(ValueError, match="obs"):
        buf.add(np.array([1.0, 2.0]), 0, 0.0, np.array([3, 4], np.uint8), False, False)
    with pytest.raises(ValueError, match="next_obs"):
        buf.add(np.array([1, 2], np.uint8), 0, 0.0, np.array([3.5, 4.0]), False, False)
    assert_same_state(buf.state_dict(), before)


def test_zero_total_priority_is_rejected_where_it_is_caused(assert_same_state: Callable) -> None:
    """Regression: with eps = 0, all-zero TD errors were accepted by
    `update_priorities`, `probabilities()` returned NaN and only the next `sample` failed. The
    update that would zero the total is refused, the buffer unchanged, and sampling still works."""
    buf = ReplayBuffer(4, (1,), sampler=ProportionalSampler(alpha=0.6, eps=0.0), seed=11)
    add_steps(buf, 0, 3)
    batch = buf.sample(3)
    assert sorted(batch.indices.tolist()) == [0, 1, 2]  # one draw in each third of equal masses
    before = buf.state_dict()
    with pytest.raises(ValueError, match="priority 0.*eps > 0"):
        buf.update_priorities(batch, np.zeros(3))
    assert_same_state(buf.state_dict(), before)
    np.testing.assert_allclose(buf.probabilities(), [1 / 3] * 3)
    buf.update_priorities(batch, np.array([0.0, 0.0, 2.0]))  # one positive mass is enough
    assert np.all(buf.sample(2).indices == batch.indices[2])


@pytest.mark.parametrize(
    ("case", "obs", "reward", "match"),
    [
        ("obs overflows float32", np.array([1e39, 0.0]), 0.0, "obs"),
        ("reward overflows float32", np.zeros(2), 1e39, "reward"),
    ],
)
def test_finite_input_that_overflows_storage_dtype_is_rejected(
    case: str, obs: np.ndarray, reward: float, match: str, assert_same_state: Callable
) -> None:
    """1e39 is finite as float64 but becomes inf in float32 storage: it must be rejected like a
    non-finite value, not stored as inf."""
    buf = ReplayBuffer(4, (2,), seed=0)
    add_steps(buf, 0, 4)
    before = buf.state_dict()
    with pytest.raises(ValueError, match=match):
        buf.add(obs, 0, reward, np.zeros(2), False, False)
    assert_same_state(buf.state_dict(), before)


def test_action_too_large_for_int64_is_rejected(assert_same_state: Callable) -> None:
    """2**63 passes the 'non-negative integer' check but cannot be stored as int64: it must be a
    ValueError before anything is written (a full buffer's oldest slot must stay intact)."""
    buf = ReplayBuffer(4, (2,), seed=0)
    add_steps(buf, 0, 4)
    before = buf.state_dict()
    with pytest.raises(ValueError, match="action"):
        buf.add(np.ones(2), 2**63, 0.0, np.ones(2), False, False)
    assert_same_state(buf.state_dict(), before)


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int16, np.float32, np.float64])
def test_observations_in_the_storage_dtype_are_stored_exactly_and_checked(
    dtype: type, assert_same_state: Callable
) -> None:
    """An environment's own array (the storage dtype, contiguous or not) goes in unchanged and
    comes back in a batch; a non-finite float is refused."""
    buf = ReplayBuffer(4, (2, 3), obs_dtype=dtype, seed=0)
    frames = (np.arange(12) % 7).astype(dtype).reshape(2, 2, 3)
    strided = (np.arange(24) % 5).astype(dtype).reshape(2, 4, 3)[:, ::2]  # not contiguous
    buf.add(frames[0], 0, 1.0, frames[1], False, False)
    buf.add(strided[0], 1, 2.0, strided[1], False, False)
    np.testing.assert_array_equal(buf.storage.obs[:2], [frames[0].ravel(), strided[0].ravel()])
    np.testing.assert_array_equal(buf.storage.next_obs[:2], [frames[1].ravel(), strided[1].ravel()])
    batch, stored = buf.sample(2), np.stack([frames[0], strided[0]])
    np.testing.assert_array_equal(batch.obs[:, -1], stored[batch.indices])
    if np.dtype(dtype).kind == "f":
        before = buf.state_dict()
        bad = frames[0].copy()
        bad[1, 2] = np.nan
        with pytest.raises(ValueError, match="next_obs must be finite"):
            buf.add(frames[0], 0, 1.0, bad, False, False)
        assert_same_state(buf.state_dict(), before)


@pytest.mark.parametrize("normalization", ["global", "none"])
def test_importance_weights_of_stored_slots_are_those_a_draw_gives(normalization: str) -> None:
    """The weights the buffer reports for slots equal the weights its sampler gave them when it
    drew them, under the same priorities and beta; by hand for one slot."""
    for sampler in (
        ProportionalSampler(alpha=0.6, is_normalization=normalization),
        RankBasedSampler(alpha=0.7, is_normalization=normalization),
    ):
        buf = ReplayBuffer(16, (1,), sampler=sampler, seed=0)
        for t in range(16):
            buf.add(np.float32([t]), 0, 0.0, np.float32([t]), False, False)
        batch = buf.sample(16, beta=0.5)
        buf.update_priorities(batch, np.arange(16, dtype=np.float64) / 4)
        batch = buf.sample(8, beta=0.4)
        np.testing.assert_allclose(
            buf.importance_weights(batch.indices, 0.4), batch.weights, rtol=1e-12
        )
        p = buf.probabilities()
        slot = int(batch.indices[0])
        by_hand = (16 * p[slot]) ** -0.4
        if normalization == "global":
            by_hand /= (16 * p.min()) ** -0.4
        assert buf.importance_weights([slot], 0.4)[0] == pytest.approx(by_hand, rel=1e-12)


def test_uniform_replay_weighs_every_slot_one() -> None:
    buf = ReplayBuffer(4, (1,), seed=0)
    for t in range(3):
        buf.add(np.float32([t]), 0, 0.0, np.float32([t]), False, False)
    assert buf.importance_weights([0, 2], 0.4).tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="indices"):
        buf.importance_weights([3], 0.4)
