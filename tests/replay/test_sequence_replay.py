"""SequenceReplay: a batch of sequences by hand; sampled sequences follow P over the live
sequences (chi-square, each scheme, after the ring wrapped); IS weights by hand; the eta-mixed
priority update and its stale rows; a resume that continues exactly."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from scipy.stats import chisquare

from rdqn.replay import (
    ProportionalSampler,
    RankBasedSampler,
    Sampler,
    SequenceBatch,
    SequenceReplay,
    UniformSampler,
)

P_ACCEPT = 1e-3
P_REJECT = 1e-6

SCHEMES: dict[str, Callable[[], Sampler]] = {
    "uniform": UniformSampler,
    "proportional": lambda: ProportionalSampler(alpha=0.6, eps=0.01),
    "rank": lambda: RankBasedSampler(alpha=0.7),
}


def step(replay: SequenceReplay, terminated: bool = False, truncated: bool = False) -> None:
    """One step whose values say which write it is: o_t = (w, -w), o_{t+1} = (w + 1, -w - 1),
    a_t = w mod 3, r_t = w / 2, state = (w, 2 w)."""
    w = float(replay.storage.writes)
    replay.add(
        np.array([w, -w]),
        int(w) % 3,
        w / 2,
        np.array([w + 1, -w - 1]),
        terminated,
        truncated,
        state=np.array([w, 2 * w]),
    )


def episode(replay: SequenceReplay, length: int, end: str = "terminated") -> None:
    for t in range(length):
        last = t == length - 1
        step(replay, last and end == "terminated", last and end == "truncated")


def test_a_batch_by_hand(assert_same_state: Callable) -> None:
    """m = 4, o = 2; an episode of 9 steps (writes 0-8, terminated) then one of 5 (writes 9-13,
    truncated): sequences (0, 4) (2, 4) (4, 4) (6, 3) and (9, 4) (11, 3) in slots 0-5. Slot 3:
    o = writes 6, 7, 8 then o_9 = next obs of write 8 = (9, -9) at position 3, zeros at 4;
    terminated at its last step; it does not begin its episode, its state is (6, 12)."""
    replay = SequenceReplay(30, 2, sequence_length=4, overlap=2, state_size=2)
    episode(replay, 9)
    episode(replay, 5, "truncated")
    batch = replay.sequences(np.array([3, 4, 5, 0]))
    np.testing.assert_array_equal(
        batch.obs[0, :, 0], [6, 7, 8, 9, 0]
    )  # o_6 o_7 o_8, then o_9, then padding
    np.testing.assert_array_equal(batch.obs[0, :, 1], [-6, -7, -8, -9, 0])
    np.testing.assert_array_equal(batch.obs_mask[0], [True, True, True, True, False])
    np.testing.assert_array_equal(batch.step_mask[0], [True, True, True, False])
    np.testing.assert_array_equal(batch.actions[0], [0, 1, 2, 0])
    np.testing.assert_array_equal(batch.rewards[0], [3.0, 3.5, 4.0, 0.0])
    np.testing.assert_array_equal(batch.terminated[0], [False, False, True, False])
    np.testing.assert_array_equal(batch.truncated[0], [False] * 4)
    np.testing.assert_array_equal(batch.obs[1, :, 0], [9, 10, 11, 12, 13])  # full: o_13 last
    np.testing.assert_array_equal(batch.obs[2, :, 0], [11, 12, 13, 14, 0])
    np.testing.assert_array_equal(batch.truncated[2], [False, False, True, False])
    np.testing.assert_array_equal(batch.lengths, [3, 4, 3, 4])
    np.testing.assert_array_equal(batch.starts_episode, [False, True, False, True])
    np.testing.assert_array_equal(batch.states, [[6, 12], [9, 18], [11, 22], [0, 0]])
    np.testing.assert_array_equal(batch.generations, [3, 4, 5, 0])
    np.testing.assert_array_equal(batch.probabilities, np.full(4, 1 / 6))
    np.testing.assert_array_equal(batch.weights, np.ones(4))
    assert batch.obs.shape == (4, 5, 2) and len(batch) == 4
    assert replay.sample_counts.sum() == 0  # looking is not replaying
    drawn = replay.sample(64)
    counts = np.zeros(14, np.int64)
    for start, length in zip(replay.index.start[drawn.indices], drawn.lengths, strict=True):
        counts[start : start + length] += 1
    np.testing.assert_array_equal(replay.sample_counts, counts)


def live_batch(replay: SequenceReplay) -> SequenceBatch:
    return replay.sequences(replay.index.live_slots())


def filled(make: Callable[[], Sampler], seed: int) -> tuple[SequenceReplay, np.ndarray]:
    """40 steps kept, m = 4, o = 2, episodes of 3 to 12 steps for 150 writes: the ring wrapped,
    so the first sequences left. Every live sequence gets per-step |delta| and the priority
    p = .9 max + .1 mean (computed here); returns the replay and p per slot (0: none)."""
    replay = SequenceReplay(40, 2, sequence_length=4, overlap=2, state_size=2, sampler=make())
    rng = np.random.default_rng(seed)
    while replay.storage.writes < 150:
        episode(replay, int(rng.integers(3, 13)))
    assert replay.index.head > 0 and replay.sampler.stored == replay.index.used
    batch = live_batch(replay)
    td = rng.exponential(1.0, batch.actions.shape)
    replay.update_priorities(batch, td, batch.step_mask)
    p = np.zeros(replay.index.used)
    for row, slot in enumerate(batch.indices):
        steps = td[row, : batch.lengths[row]]
        p[slot] = 0.9 * steps.max() + 0.1 * steps.mean()
    return replay, p


def expected_p(scheme: str, p: np.ndarray, held: np.ndarray) -> np.ndarray:
    """P(i) over the live sequences by the scheme's definition."""
    out = np.zeros(p.shape)
    if scheme == "uniform":
        out[held] = 1.0 / held.size
    elif scheme == "proportional":
        out[held] = (p[held] + 0.01) ** 0.6
    else:
        ranks = np.empty(held.size)
        ranks[np.argsort(-p[held], kind="stable")] = np.arange(1, held.size + 1)
        out[held] = ranks**-0.7
    return out / out.sum()


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_sampled_sequences_follow_p_over_the_live_sequences(scheme: str) -> None:
    """Counts of 1,000 batches of 16 against P over the live sequences (sequences that left
    never drawn); the same counts reject P with the left sequences kept at their old share."""
    replay, p = filled(SCHEMES[scheme], seed=1)
    held = replay.index.live_slots()
    expected = expected_p(scheme, p, held)
    np.testing.assert_allclose(replay.probabilities(), expected, rtol=1e-12)
    counts = np.zeros(p.size, np.int64)
    for _ in range(1000):
        drawn = replay.sample(16, beta=0.5)
        np.testing.assert_allclose(drawn.probabilities, expected[drawn.indices], rtol=1e-12)
        counts += np.bincount(drawn.indices, minlength=p.size)
    dead = np.setdiff1d(np.arange(p.size), held)
    assert dead.size and counts[dead].sum() == 0
    observed = counts[held]
    assert chisquare(observed, expected[held] * observed.sum()).pvalue > P_ACCEPT
    if scheme != "uniform":
        flat = np.full(held.size, 1.0 / held.size)
        assert chisquare(observed, flat * observed.sum()).pvalue < P_REJECT


def test_is_weights_and_p_by_hand() -> None:
    """Proportional, alpha 1, eps 0, eta .5; m = 2, o = 0; four episodes of 2 steps (8 steps
    kept): sequences 0-3 with |delta| rows (1, 1), (2, 2), (3, 3), (0, 4): p = .5 max + .5 mean
    = 1, 2, 3, .5 * 4 + .5 * 2 = 3; P = (1, 2, 3, 3) / 9, N = 4. beta = 1: global w =
    (P / P_min)^-1 = 1, 1/2, 1/3, 1/3; "none" w = (N P)^-1 = 9/4, 9/8, 3/4, 3/4. Then one more
    episode overwrites sequence 0's steps: it leaves; sequence 4 joins in its slot with the
    largest priority seen, 3: P = (3, 2, 3, 3) / 11 by slot, and with beta = .5 global
    w = (P / P_min)^-.5 = (3/2)^-.5, 1, (3/2)^-.5, (3/2)^-.5."""
    replays = {
        mode: SequenceReplay(
            8,
            2,
            sequence_length=2,
            sequence_capacity=4,
            state_size=2,
            priority_eta=0.5,
            sampler=ProportionalSampler(alpha=1.0, eps=0.0, is_normalization=mode),
        )
        for mode in ("global", "none")
    }
    for replay in replays.values():
        for _ in range(4):
            episode(replay, 2)
        batch = live_batch(replay)
        td = np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [0.0, 4.0]])
        replay.update_priorities(batch, td, batch.step_mask)
        np.testing.assert_allclose(replay.probabilities(), np.array([1, 2, 3, 3]) / 9)
    slots = np.arange(4)
    np.testing.assert_allclose(
        replays["global"].importance_weights(slots, 1.0), [1, 1 / 2, 1 / 3, 1 / 3]
    )
    np.testing.assert_allclose(
        replays["none"].importance_weights(slots, 1.0), [9 / 4, 9 / 8, 3 / 4, 3 / 4]
    )
    replay = replays["global"]
    episode(replay, 2)
    np.testing.assert_array_equal(replay.index.number, [4, 1, 2, 3])
    np.testing.assert_allclose(replay.probabilities(), np.array([3, 2, 3, 3]) / 11)
    root = (3 / 2) ** -0.5
    np.testing.assert_allclose(replay.importance_weights(slots, 0.5), [root, 1, root, root])
    drawn = replay.sample(40, beta=0.5)
    np.testing.assert_allclose(drawn.weights, np.array([root, 1, root, root])[drawn.indices])


def test_an_update_for_a_sequence_that_left_is_skipped_and_counted() -> None:
    replay = SequenceReplay(
        8, 2, sequence_length=2, state_size=2, sampler=ProportionalSampler(alpha=1.0, eps=0.0)
    )
    for _ in range(4):
        episode(replay, 2)
    batch = live_batch(replay)
    episode(replay, 2)  # sequence 0 leaves (its steps overwritten), 4 takes another slot
    before = replay.probabilities()
    td = np.full((4, 2), 5.0)
    assert replay.update_priorities(batch, td, batch.step_mask) == 1
    assert replay.stale_updates == 1
    after = replay.probabilities()
    assert after[0] == 0 and before[0] == 0  # slot 0 holds no live sequence
    assert replay.sampler.max_priority == 5.0  # the three live rows were applied


@pytest.mark.parametrize(
    ("td", "mask", "match"),
    [
        (np.ones((2, 4)), np.ones((2, 4), bool), "mask marks padding in row 1"),
        (np.ones((2, 4)), np.zeros((2, 4), bool), "mask marks no step of row 0"),
        (np.full((2, 4), np.nan), None, "finite and >= 0 where mask is True; row 0 step 0"),
        (-np.ones((2, 4)), None, "finite and >= 0"),
        (np.ones((2, 3)), None, r"batch's shape \(2, 4\)"),
        (np.ones((2, 4)), "ints", "mask of bools"),
    ],
)
def test_a_bad_update_is_refused_and_changes_nothing(
    td: np.ndarray, mask: object, match: str, assert_same_state: Callable
) -> None:
    replay = SequenceReplay(20, 2, sequence_length=4, state_size=2, sampler=ProportionalSampler())
    episode(replay, 7)
    batch = replay.sequences(np.array([0, 1]))  # lengths 4 and 3
    marks = batch.step_mask if mask is None else mask
    if isinstance(mask, str):
        marks = batch.step_mask.astype(np.int64)
    before = replay.state_dict()
    with pytest.raises(ValueError, match=match):
        replay.update_priorities(batch, td, marks)
    assert_same_state(replay.state_dict(), before)


def test_sampling_before_any_sequence_closes_is_refused() -> None:
    replay = SequenceReplay(20, 2, sequence_length=4, state_size=2)
    step(replay)
    with pytest.raises(ValueError, match="no sequence is complete yet"):
        replay.sample(4)


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_a_resumed_replay_goes_on_exactly(scheme: str, assert_same_state: Callable) -> None:
    """Saved after the ring wrapped (sequences removed, some open), loaded into a fresh
    replay: both then draw, update and store the same, batch for batch and state for state."""
    original, _ = filled(SCHEMES[scheme], seed=2)
    step(original)  # an episode under way
    state = original.state_dict()
    copy = SequenceReplay(
        40, 2, sequence_length=4, overlap=2, state_size=2, sampler=SCHEMES[scheme]()
    )
    copy.load_state_dict(state)
    assert_same_state(copy.state_dict(), state)
    rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
    for k in range(60):
        for replay, rng in ((original, rng_a), (copy, rng_b)):
            step(replay, terminated=bool(rng.random() < 0.15))
        if k % 3 == 0:
            a, b = original.sample(8, beta=0.6), copy.sample(8, beta=0.6)
            for field in SequenceBatch.__dataclass_fields__:
                np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
            td = rng_a.exponential(1.0, a.actions.shape)
            rng_b.exponential(1.0, b.actions.shape)
            original.update_priorities(a, td, a.step_mask)
            copy.update_priorities(b, td, b.step_mask)
    assert_same_state(original.state_dict(), copy.state_dict())
