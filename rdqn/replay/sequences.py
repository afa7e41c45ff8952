"""The sequence index of R2D2's replay (Kapturowski et al. 2019, "Recurrent Experience Replay in
Distributed Reinforcement Learning", ICLR): sequences of m steps over the stored transitions.

Cutting an episode. Adjacent sequences overlap by o steps (0 <= o < m), so they start every
s = m - o steps: sequence k covers the episode steps [k s, min(k s + m, L)) of an episode of L
steps. The last is the first that reaches the episode's end (k s + m >= L), shorter than m where
the episode ends inside it (the learner pads it, with a mask); a sequence whose steps all lie in
the previous one's overlap (k > 0 and L - k s <= o) adds nothing and is not kept. m = 4, o = 2,
L = 9::

    episode step  0 1 2 3 4 5 6 7 8
    sequence 0    [-----]
    sequence 1        [-----]
    sequence 2            [-----]
    sequence 3                [---]      3 steps: the episode ends
                                  [8]    would lie in sequence 3's overlap: not kept

So a sequence never crosses an episode: the index opens one at each step whose episode step t
has t % s == 0 (`on_write`), and closes it when it holds m steps or its episode ends (a
terminated or truncated step, or `end_episode`). Every step of an episode lies in one to
ceil(m / s) sequences.

The ring of sequences. A sequence enters the index when it closes, so every sequence drawn is
complete; sequences open in step order and close in the order they opened, so the index is a
FIFO: sequence number n (counting from 0) lives in slot n % S of a ring of S sequence slots, the
items a sampler draws. A sequence leaves (a) when its slot takes sequence n + S (the ring of
sequences is full) or (b) once the ring of steps overwrites its first step (its steps are
consecutive writes, so the first is overwritten first: a sequence is valid only while all of its
steps are stored). Both take the oldest first, so the live sequences are the numbers
[head, count); `on_write` and `end_episode` return the slots that left by (b) (the sampler
removes them, `Sampler.on_remove`) and the slots that took a new sequence (`Sampler.on_add`).

Recorded state. Each sequence keeps a state vector of ``state_size`` float32 values that the
actor gives with its first step: the recurrent network's state just before it read that step's
observation (R2D2's "stored state"). The learner starts the sequence's unroll from it (or from
zeros), after a burn-in.

Stored per sequence slot: the write number (storage generation) of its first step, its length,
its sequence number (the stamp a priority update checks, as `RingStorage.generation` does for a
transition) and its state; and the sequences still open, at most ceil(m / s).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rdqn.replay.sizes import check_nbytes
from rdqn.replay.state_checks import (
    array_field,
    integer_field,
    mapping,
    refuse,
    require_finite,
)
from rdqn.validation import check_integer

__all__ = ["COUNT_MAX", "SequenceIndex"]

COUNT_MAX = 1 << 62
"""The most sequences a loaded state may count (beyond any run)."""


class SequenceIndex:
    """Sequences of ``length`` m steps, ``overlap`` o, in a ring of ``capacity`` S slots, over a
    ring of ``step_capacity`` C >= m stored steps; each with ``state_size`` recorded values
    (module docstring)."""

    def __init__(
        self, step_capacity: int, length: int, overlap: int, capacity: int, state_size: int
    ) -> None:
        self.step_capacity = check_integer("step capacity", step_capacity, minimum=1)
        self.length = check_integer("sequence_length", length, minimum=1)
        if self.length > self.step_capacity:
            raise ValueError(
                f"sequence_length must be at most the capacity ({self.step_capacity:,} steps), "
                f"got {length}: a whole sequence must fit in the ring of steps"
            )
        self.overlap = check_integer("sequence_overlap", overlap, minimum=0, maximum=length - 1)
        self.capacity = check_integer("sequence capacity", capacity, minimum=1)
        self.state_size = check_integer("state_size", state_size, minimum=0)
        self.stride = self.length - self.overlap
        self.max_open = -(-self.length // self.stride)
        check_nbytes(
            f"sequence index of {self.capacity:,} sequences with states of {state_size:,} values",
            self.capacity * (8 + 4 + 8 + 4 * self.state_size),
            advice="choose a smaller capacity or state",
        )
        self.start = np.full(self.capacity, -1, np.int64)
        """The write number (storage generation) of each slot's first step."""
        self.lengths = np.zeros(self.capacity, np.int32)
        self.number = np.full(self.capacity, -1, np.int64)
        """Each slot's sequence number (-1: none yet)."""
        self.states = np.zeros((self.capacity, self.state_size), np.float32)
        self.open_start = np.zeros(self.max_open, np.int64)
        self.open_first = np.zeros(self.max_open, np.bool_)
        """Whether an open sequence starts its episode."""
        self.open_states = np.zeros((self.max_open, self.state_size), np.float32)
        self.open_count = 0
        self.count = 0
        """Sequences that entered the index."""
        self.head = 0
        """The oldest live sequence's number: the live ones are [head, count)."""

    # ------------------------------------------------------------------ reading
    @property
    def live(self) -> int:
        """Sequences that may be drawn."""
        return self.count - self.head

    @property
    def used(self) -> int:
        """Sequence slots that ever held a sequence (the sampler's stored slots)."""
        return min(self.count, self.capacity)

    def live_slots(self) -> NDArray[np.int64]:
        """The live sequences' slots, oldest first."""
        return np.arange(self.head, self.count, dtype=np.int64) % self.capacity

    def opens(self, episode_step: int) -> bool:
        """Whether a step at this episode step opens a sequence."""
        return episode_step % self.stride == 0

    @property
    def nbytes(self) -> int:
        arrays = (self.start, self.lengths, self.number, self.states)
        return int(sum(a.nbytes for a in arrays))

    # ------------------------------------------------------------------ writing
    def on_write(
        self, generation: int, episode_step: int, ended: bool, state: ArrayLike | None
    ) -> tuple[list[int], list[int]]:
        """Step ``generation`` (the write number) of episode step ``episode_step`` was stored;
        ``ended``: it terminated or truncated its episode; ``state``: the recorded state, read
        only if the step opens a sequence (required then, unless ``state_size`` is 0). Returns
        (the slots whose sequences lost a step to the ring, the slots that took a sequence)."""
        assert not (self.opens(episode_step) and self.open_count == self.max_open)
        removed = self._invalidate(generation + 1 - self.step_capacity)
        if self.opens(episode_step):
            self._open(generation, episode_step == 0, state)
        added = []
        if self.open_count and generation + 1 - self.open_start[0] == self.length:
            added.append(self._close(self.length))
        if ended:
            added += self.end_episode(generation + 1)
        return removed, added

    def end_episode(self, writes: int) -> list[int]:
        """The episode under way ended after write ``writes`` - 1: close its open sequences,
        keeping each that starts the episode or holds more than the overlap; returns the slots
        that took them."""
        added = []
        while self.open_count:
            steps = writes - int(self.open_start[0])
            if steps > self.overlap or self.open_first[0]:
                added.append(self._close(steps))
            else:
                self._pop()
        return added

    def _invalidate(self, oldest: int) -> list[int]:
        """Remove the live sequences whose first step is older than write ``oldest``."""
        removed = []
        while self.head < self.count and self.start[self.head % self.capacity] < oldest:
            removed.append(self.head % self.capacity)
            self.head += 1
        return removed

    def _open(self, generation: int, first: bool, state: ArrayLike | None) -> None:
        k = self.open_count
        self.open_start[k] = generation
        self.open_first[k] = first
        if self.state_size:
            self.open_states[k] = self.checked_state(state)
        self.open_count += 1

    def checked_state(self, state: ArrayLike | None) -> NDArray[np.float32]:
        """A recorded state as ``state_size`` float32 values; ``ValueError`` unless it is
        given, of that size and finite."""
        if state is None:
            raise ValueError(
                f"state must be given at a sequence's first step: {self.state_size} values"
            )
        values = np.asarray(state, dtype=np.float32).reshape(-1)
        if values.shape != (self.state_size,) or not np.isfinite(values).all():
            raise ValueError(
                f"state must be {self.state_size} finite values, got shape "
                f"{np.shape(state)}" + ("" if values.size != self.state_size else " not finite")
            )
        return values

    def _close(self, steps: int) -> int:
        """The oldest open sequence, of ``steps`` steps, enters the ring; returns its slot."""
        slot = self.count % self.capacity
        if self.count - self.head == self.capacity:
            self.head += 1  # the ring of sequences is full: the oldest leaves, its slot reused
        self.start[slot] = self.open_start[0]
        self.lengths[slot] = steps
        self.number[slot] = self.count
        self.states[slot] = self.open_states[0]
        self.count += 1
        self._pop()
        return slot

    def _pop(self) -> None:
        n = self.open_count
        self.open_start[: n - 1] = self.open_start[1:n]
        self.open_first[: n - 1] = self.open_first[1:n]
        self.open_states[: n - 1] = self.open_states[1:n]
        self.open_count -= 1

    def is_live(self, slots: NDArray[np.int64], numbers: NDArray[np.int64]) -> NDArray[np.bool_]:
        """Whether sequence ``numbers[k]`` (drawn from ``slots[k]``) is still live: its slot
        holds it still and its steps are all stored."""
        return (self.number[slots] == numbers) & (numbers >= self.head)

    # ------------------------------------------------------------------ persistence
    def state_dict(self) -> dict[str, Any]:
        return {
            "start": self.start.copy(),
            "lengths": self.lengths.copy(),
            "number": self.number.copy(),
            "states": self.states.copy(),
            "open_start": self.open_start.copy(),
            "open_first": self.open_first.copy(),
            "open_states": self.open_states.copy(),
            "open_count": self.open_count,
            "count": self.count,
            "head": self.head,
        }

    def check_state(self, state: Mapping[str, Any], storage: Mapping[str, Any]) -> None:
        """`ReplayStateError` naming the field unless ``state`` is a `state_dict` this index
        could have saved over the checked storage state ``storage`` (`RingStorage.state_dict`):
        arrays of the right shapes and dtypes, finite states; counters in range; each slot's
        sequence number the latest n < count with n = slot mod S (-1 where none); each live
        sequence of 1 to m consecutive stored steps of one episode, starting at an episode step
        that is a multiple of s, in order; the open sequences exactly those the episode under
        way leaves open. Nothing is changed."""
        state = mapping(state, "sequence index state")
        capacity, width = self.capacity, self.state_size
        for name, shape, dtype in (
            ("start", (capacity,), np.int64),
            ("lengths", (capacity,), np.int32),
            ("number", (capacity,), np.int64),
            ("states", (capacity, width), np.float32),
            ("open_start", (self.max_open,), np.int64),
            ("open_first", (self.max_open,), np.bool_),
            ("open_states", (self.max_open, width), np.float32),
        ):
            array_field(state, name, shape, np.dtype(dtype))
        require_finite("states", state["states"])
        require_finite("open_states", state["open_states"])
        count = integer_field(state, "count", 0, COUNT_MAX)
        head = integer_field(state, "head", max(0, count - capacity), count)
        open_count = integer_field(state, "open_count", 0, self.max_open)
        used = min(count, capacity)
        slots = np.arange(capacity, dtype=np.int64)
        expected = np.where(slots < used, count - 1 - (count - 1 - slots) % capacity, -1)
        number = state["number"]
        if not np.array_equal(number, expected):
            s = int(np.argmax(number != expected))
            refuse(
                f"number[{s}] is {number[s]}, but after {count:,} sequences in {capacity:,} "
                f"slots slot {s} holds " + ("none (-1)" if s >= used else f"{expected[s]}")
            )
        steps = _Steps(storage, self.step_capacity)
        numbers = np.arange(head, count, dtype=np.int64)
        starts = state["start"][numbers % capacity]
        if starts.size > 1 and not (starts[1:] > starts[:-1]).all():
            k = int(np.argmax(starts[1:] <= starts[:-1])) + 1
            refuse(f"sequence {head + k:,} starts at write {starts[k]}, not after the one before")
        for chunk in range(0, numbers.size, _CHUNK):  # (chunk, m) arrays: bounded memory
            self._check_live(state, steps, numbers[chunk : chunk + _CHUNK])
        self._check_open(state, steps, open_count)

    def _check_live(self, state: Mapping[str, Any], steps: _Steps, numbers: NDArray) -> None:
        """Each live sequence holds 1 to m stored, consecutive steps of one episode from an
        episode step that is a multiple of s; one of fewer than m steps ends its episode (a
        terminal step, or the next write begins an episode) and, unless it begins its episode,
        holds more than the overlap."""
        m, slots = self.length, numbers % self.capacity
        starts, lengths = state["start"][slots], state["lengths"][slots].astype(np.int64)

        def first(bad: NDArray[np.bool_], why: Callable[[int], str]) -> None:
            """Refuse the first sequence ``bad`` marks, saying ``why(k)``."""
            if bad.any():
                k = int(np.argmax(bad))
                refuse(f"sequence {numbers[k]:,} (slot {slots[k]}) {why(k)}")

        first(
            (lengths < 1) | (lengths > m),
            lambda k: f"has length {lengths[k]}; a sequence holds 1 to {m} steps",
        )
        first(
            (starts < steps.oldest) | (starts > steps.writes - lengths),
            lambda k: (
                f"holds writes {starts[k]:,} to {starts[k] + lengths[k] - 1:,}, but the "
                f"storage holds writes {steps.oldest:,} to {steps.writes - 1:,}"
            ),
        )
        offsets = np.arange(m)
        writes = starts[:, None] + offsets
        inside = offsets < lengths[:, None]
        episode_steps = steps.episode_steps(writes)
        t0 = episode_steps[:, 0]
        first(t0 % self.stride != 0, lambda k: f"starts at episode step {t0[k]}, not a "
              f"multiple of {self.stride}")  # fmt: skip
        crossing = inside[:, 1:] & (
            (episode_steps[:, 1:] != t0[:, None] + offsets[1:]) | steps.ended(writes[:, :-1])
        )
        first(crossing.any(axis=1), lambda k: "crosses an episode boundary")
        last = starts + lengths - 1
        short = lengths < m
        first(
            short & ~(steps.ended(last) | steps.next_starts_episode(last)),
            lambda k: f"holds {lengths[k]} steps, but its episode goes on after it",
        )
        first(
            short & (t0 != 0) & (lengths <= self.overlap),
            lambda k: f"holds {lengths[k]} steps, all in the overlap of the one before",
        )

    def _check_open(self, state: Mapping[str, Any], steps: _Steps, open_count: int) -> None:
        """The open sequences are those of the episode under way that started m - 1 or fewer
        steps ago, at multiples of s, oldest first."""
        step = steps.next_episode_step  # the episode under way has steps 0 .. step - 1
        writes = steps.writes
        earliest = max(0, -(-(step - self.length + 1) // self.stride) * self.stride)
        expected = list(range(earliest, step, self.stride))
        if open_count != len(expected):
            refuse(
                f"open_count is {open_count}, but the episode under way ({step} steps so far) "
                f"has {len(expected)} open sequences"
            )
        for k, t in enumerate(expected):
            generation = writes - step + t
            if state["open_start"][k] != generation or state["open_first"][k] != (t == 0):
                refuse(
                    f"open sequence {k} starts at write {state['open_start'][k]}, but the one "
                    f"that starts at episode step {t} starts at write {generation}"
                )

    def load_checked(self, state: Mapping[str, Any]) -> None:
        """Load a state `check_state` accepted."""
        for name in ("start", "lengths", "number", "states"):
            getattr(self, name)[...] = state[name]
        for name in ("open_start", "open_first", "open_states"):
            getattr(self, name)[...] = state[name]
        self.open_count = int(state["open_count"])
        self.count = int(state["count"])
        self.head = int(state["head"])


_CHUNK = 4096
"""Live sequences checked at a time."""


class _Steps:
    """A checked storage state read by write number (for `SequenceIndex.check_state`)."""

    def __init__(self, storage: Mapping[str, Any], capacity: int) -> None:
        self.writes = int(storage["writes"])
        self.capacity = capacity
        self.oldest = max(0, self.writes - capacity)
        self.next_episode_step = int(storage["next_episode_step"])
        self._steps = storage["episode_step"]
        self._ended = storage["terminated"] | storage["truncated"]

    def episode_steps(self, generations: NDArray[np.int64]) -> NDArray[np.int64]:
        return self._steps[generations % self.capacity].astype(np.int64)

    def ended(self, generations: NDArray[np.int64]) -> NDArray[np.bool_]:
        return self._ended[generations % self.capacity]

    def next_starts_episode(self, generations: NDArray[np.int64]) -> NDArray[np.bool_]:
        """Whether the write after each of ``generations`` begins an episode (written or not
        yet)."""
        following = generations + 1
        written = following < self.writes
        begins = self.episode_steps(np.where(written, following, 0)) == 0
        return np.where(written, begins, self.next_episode_step == 0)
