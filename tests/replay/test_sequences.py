"""The sequence index (`rdqn.replay.sequences`): how episodes are cut, drawn by hand; property
tests against a naive cut of the whole history (no sequence crosses an episode, overlaps as
configured, invalidation after the ring wraps, the ring of sequences); its state checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rdqn.replay import ProportionalSampler, RankBasedSampler, SequenceReplay, UniformSampler
from rdqn.replay.sequences import SequenceIndex
from rdqn.replay.state_checks import ReplayStateError

OBS = np.zeros(1, np.float32)


def play(replay: SequenceReplay, episodes: list[tuple[int, str]]) -> None:
    """Episodes of the given lengths, each ended by "terminated", "truncated", "reset"
    (`new_episode`, no flag) or "open" (left under way: the last one only)."""
    for length, end in episodes:
        for t in range(length):
            last = t == length - 1
            replay.add(
                np.array([replay.storage.writes], np.float32),
                0,
                0.0,
                OBS,
                last and end == "terminated",
                last and end == "truncated",
                state=np.array([replay.storage.writes], np.float32),
            )
        if end == "reset":
            replay.new_episode()


def live(replay: SequenceReplay) -> list[tuple[int, int]]:
    """(first write, length) of the live sequences, oldest first."""
    index = replay.index
    slots = index.live_slots()
    return list(zip(index.start[slots].tolist(), index.lengths[slots].tolist(), strict=True))


def naive(
    episodes: list[tuple[int, str]], m: int, o: int, capacity: int, sequences: int
) -> list[tuple[int, int]]:
    """The live sequences by the definition: each episode of L steps cut at k s (s = m - o),
    sequence k of min(m, L - k s) steps, kept for k = 0 or L - k s > o; an episode under way
    keeps only its full sequences. Of those, the last `sequences` entered, whose first step is
    still among the last `capacity` writes."""
    s, start, cut = m - o, 0, []
    for length, end in episodes:
        for k in range(0, length, s):
            steps = min(m, length - k)
            if end == "open" and steps < m:
                break
            if k == 0 or length - k > o:
                cut.append((start + k, steps))
        start += length
    entered = sorted(cut, key=lambda seq: seq[0] + seq[1])  # in the order they closed
    return [seq for seq in entered[-sequences:] if seq[0] >= start - capacity]


def test_an_episode_cut_by_hand() -> None:
    """m = 4, o = 2 (s = 2), an episode of 9 steps: sequences at 0, 2, 4 (full) and 6 (3 steps,
    the episode ends); one at 8 would lie in 6's overlap. Overlaps: 2 steps each."""
    replay = SequenceReplay(50, 1, sequence_length=4, overlap=2, state_size=1)
    play(replay, [(9, "terminated")])
    assert live(replay) == [(0, 4), (2, 4), (4, 4), (6, 3)]
    np.testing.assert_array_equal(replay.index.states[:4, 0], [0, 2, 4, 6])  # their first steps'


def test_a_short_episode_is_one_short_sequence_and_an_open_one_waits() -> None:
    """An episode shorter than m: one sequence of all its steps (it begins the episode, so it is
    kept even within the overlap); the episode under way: only its full sequences so far."""
    replay = SequenceReplay(50, 1, sequence_length=5, overlap=3)
    play(replay, [(2, "truncated"), (3, "reset"), (7, "open")])
    assert live(replay) == [(0, 2), (2, 3), (5, 5), (7, 5)]
    assert replay.index.open_count == 2  # at episode steps 4 and 6: 3 and 1 steps so far


def test_sequences_whose_first_step_is_overwritten_leave() -> None:
    """Capacity 10 steps, m = 4, o = 0: after 14 writes the oldest stored write is 4, so
    sequence (0, 4) left, and the sampler no longer holds its slot."""
    replay = SequenceReplay(10, 1, sequence_length=4, sampler=ProportionalSampler())
    play(replay, [(14, "open")])
    assert live(replay) == [(4, 4), (8, 4)]
    probabilities = replay.probabilities()
    assert probabilities[0] == 0 and (probabilities[1:3] > 0).all()


def test_the_ring_of_sequences_drops_the_oldest_when_full() -> None:
    replay = SequenceReplay(100, 1, sequence_length=2, sequence_capacity=3)
    play(replay, [(10, "terminated")])
    assert live(replay) == [(4, 2), (6, 2), (8, 2)]
    np.testing.assert_array_equal(replay.index.number, [3, 4, 2])  # slot = number mod 3


@settings(deadline=None, max_examples=150, derandomize=True)
@given(
    m=st.integers(1, 6),
    overlap=st.integers(0, 5),
    extra=st.integers(0, 25),
    sequences=st.integers(1, 30),
    scheme=st.sampled_from(["uniform", "proportional", "rank"]),
    episodes=st.lists(
        st.tuples(st.integers(1, 15), st.sampled_from(["terminated", "truncated", "reset"])),
        max_size=12,
    ),
    tail=st.integers(0, 15),
)
def test_the_index_is_the_naive_cut(
    m: int,
    overlap: int,
    extra: int,
    sequences: int,
    scheme: str,
    episodes: list[tuple[int, str]],
    tail: int,
) -> None:
    """Against `naive`, after every episode: the live sequences, in order; none crosses an
    episode; adjacent ones of an episode overlap by o (or all of the shorter's steps past
    its start); every live one is wholly stored; the sampler holds exactly the live slots;
    the state round-trips through its checks."""
    o = overlap % m
    capacity = m + extra
    sampler = {"uniform": UniformSampler, "proportional": ProportionalSampler}.get(
        scheme, RankBasedSampler
    )()
    replay = SequenceReplay(
        capacity, 1, sequence_length=m, overlap=o, sequence_capacity=sequences, sampler=sampler
    )
    history: list[tuple[int, str]] = []
    for episode in [*episodes, (tail, "open")]:
        play(replay, [episode])
        history.append(episode)
        assert live(replay) == naive(history, m, o, capacity, sequences)
    writes = replay.storage.writes
    steps, ended = replay.storage.episode_step, replay.storage.terminated | replay.storage.truncated
    seen = live(replay)
    for start, length in seen:
        assert start >= writes - capacity and start + length <= writes
        slots = np.arange(start, start + length) % capacity
        assert (np.diff(steps[slots]) == 1).all() and not ended[slots[:-1]].any()
        assert steps[slots[0]] % (m - o) == 0
    for (a, la), (b, _) in zip(seen, seen[1:], strict=False):
        if steps[b % capacity] != 0:  # the same episode: b starts s steps after a
            assert b - a == m - o and a + la - b == min(o, la - (m - o))
    probabilities = replay.probabilities()
    held = np.zeros(replay.index.used, bool)
    held[replay.index.live_slots()] = True
    assert ((probabilities > 0) == held).all()
    copy = SequenceReplay(
        capacity,
        1,
        sequence_length=m,
        overlap=o,
        sequence_capacity=sequences,
        sampler=type(sampler)(),
    )
    copy.load_state_dict(replay.state_dict())
    assert live(copy) == seen


def test_bad_index_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="sequence_overlap must be an integer from 0 to 3"):
        SequenceIndex(10, 4, 4, 10, 0)
    with pytest.raises(ValueError, match=r"sequence_length must be at most the capacity \(3"):
        SequenceIndex(3, 4, 0, 10, 0)
    with pytest.raises(ValueError, match="sequence capacity"):
        SequenceIndex(10, 4, 0, 0, 0)


def test_the_state_is_required_at_a_sequence_start_only() -> None:
    replay = SequenceReplay(20, 1, sequence_length=4, overlap=2, state_size=2)
    with pytest.raises(ValueError, match="state must be given at a sequence's first step"):
        replay.add(OBS, 0, 0.0, OBS, False, False)
    with pytest.raises(ValueError, match="state must be 2 finite values"):
        replay.add(OBS, 0, 0.0, OBS, False, False, state=np.array([1.0, np.nan]))
    assert replay.storage.writes == 0  # refused before anything was written
    assert replay.opens_sequence
    replay.add(OBS, 0, 0.0, OBS, False, False, state=np.ones(2))
    assert not replay.opens_sequence
    replay.add(OBS, 0, 0.0, OBS, False, False)  # episode step 1: no sequence begins


def good_state() -> tuple[SequenceReplay, dict]:
    replay = SequenceReplay(12, 1, sequence_length=4, overlap=2, state_size=1)
    play(replay, [(9, "terminated"), (6, "open")])
    return replay, replay.state_dict()


def fresh() -> SequenceReplay:
    return SequenceReplay(12, 1, sequence_length=4, overlap=2, state_size=1)


def test_a_good_state_loads() -> None:
    """15 writes into 12 slots (writes 3 to 14 stored): of the first episode's (0, 4), (2, 4),
    (4, 4), (6, 3) the last two are live; the second episode's (9, 4), (11, 4) closed, the one
    at its step 4 (write 13) is open. Sequences 0 and 1 left: slots 0 and 1 are removed."""
    replay, state = good_state()
    copy = fresh()
    copy.load_state_dict(state)
    assert live(copy) == live(replay) == [(4, 4), (6, 3), (9, 4), (11, 4)]
    assert copy.index.open_count == 1 and copy.index.open_start[0] == 13
    np.testing.assert_array_equal(state["sampler"]["removed"], [0, 1])


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda s: s["index"].update(count=-1), "count must be an integer"),
        (lambda s: s["index"].update(head=s["index"]["count"] + 1), "head must be"),
        (lambda s: s["index"]["number"].__setitem__(0, 99), r"number\[0\] is 99"),
        (lambda s: s["index"]["lengths"].__setitem__(4, 9), "has length 9"),
        (lambda s: s["index"]["lengths"].__setitem__(4, 2), "crosses|goes on after it"),
        (lambda s: s["index"]["start"].__setitem__(3, 8), "crosses an episode boundary"),
        (lambda s: s["index"]["start"].__setitem__(2, 1), "storage holds writes 3 to 14"),
        (lambda s: s["index"]["start"].__setitem__(4, 10), "not a multiple of 2"),
        (lambda s: s["index"]["start"].__setitem__(4, 5), "not after the one before"),
        (lambda s: s["index"]["states"].__setitem__(0, np.nan), "states"),
        (lambda s: s["index"].update(open_count=0), "open_count is 0, but the episode"),
        (lambda s: s["index"]["open_start"].__setitem__(0, 12), "open sequence 0 starts"),
        (lambda s: s["index"].update(start=s["index"]["start"][:3]), "start must be"),
        (lambda s: s["sampler"].update(stored=3), "stored is 3, but the index has used"),
        (lambda s: s["sampler"].update(removed=np.array([1])), "removed is"),
        (lambda s: s.update(sequence_length=5), "sequence_length=5, this replay has"),
        (lambda s: s.update(priority_eta=0.5), "priority_eta=0.5"),
    ],
)
def test_a_state_that_could_not_have_been_saved_is_refused(edit: object, match: str) -> None:
    replay, state = good_state()
    edit(state)  # type: ignore[operator]
    copy = fresh()
    before = copy.state_dict()
    with pytest.raises(ReplayStateError, match=match):
        copy.load_state_dict(state)
    assert copy.index.count == before["index"]["count"] == 0
    assert copy.storage.writes == 0


def test_the_live_sequences_need_ceil_m_over_s_open_at_most() -> None:
    index = SequenceIndex(100, 7, 5, 100, 0)
    assert index.stride == 2 and index.max_open == math.ceil(7 / 2)
