"""SequenceReplay = ring storage of steps + an index of sequences over them + a pluggable sampler
of sequences: R2D2's replay (Kapturowski et al. 2019, ICLR), beside `ReplayBuffer`'s windows.

The steps are stored as `ReplayBuffer` stores them (`RingStorage`: o_t, a_t, r_t, o_{t+1},
terminated_t, truncated_t per step, once); `SequenceIndex` cuts each episode into sequences of m
steps overlapping by o (`rdqn.replay.sequences`), and the sampler (`UniformSampler`,
`ProportionalSampler` or `RankBasedSampler`, the same classes) draws *sequence slots* as its
items, so P(i), the IS weights and the priorities are those of sequences:

    P(i) = p_i^alpha / sum_k p_k^alpha  over the live sequences (or by rank, or 1/n)
    w_i  = (n P(i))^-beta / max_j w_j     as for transitions (`rdqn.replay.samplers`)
    p_i  = eta * max_t |delta_t| + (1 - eta) * mean_t |delta_t| + eps   (`sequence_priority`)

A sequence whose steps the ring overwrote is removed from the sampler at once
(`Sampler.on_remove`), and a priority computed for a sequence that left since it was drawn is
skipped and counted (`stale_updates`), never given to the slot's next sequence.

A draw hands the learner a `SequenceBatch` (`rdqn.replay.sequence_batch`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

from rdqn.replay.buffer import check_obs, check_obs_dtype, check_obs_shape, check_step
from rdqn.replay.checks import check_slots
from rdqn.replay.priorities import sequence_priority
from rdqn.replay.samplers import Sampler, UniformSampler
from rdqn.replay.sampling_kernels import check_normalization, importance_weights_kernel
from rdqn.replay.scheme_registry import scheme_of
from rdqn.replay.sequence_batch import SequenceBatch, gather_sequences
from rdqn.replay.sequences import SequenceIndex
from rdqn.replay.sizes import check_nbytes, format_bytes, sequence_slots, storage_nbytes
from rdqn.replay.state_checks import ReplayStateError, entry, integer_field, mapping, refuse
from rdqn.replay.storage import EPISODE_STEP_MAX, RingStorage
from rdqn.validation import (
    check_integer,
    check_probability,
    check_real,
    is_integer,
    is_real,
    shown,
)

__all__ = ["SequenceBatch", "SequenceReplay"]

_HEADER = ("capacity", "sequence_length", "overlap", "sequence_capacity", "state_size")
"""The integers a state must share with the replay that loads it (and obs_shape)."""


class SequenceReplay:
    """Fixed-capacity replay memory of sequences of steps (module docstring).

    Args:
        capacity: steps kept (FIFO: the oldest is overwritten when full); at least m.
        obs_shape: shape of one observation.
        sequence_length: m, the steps of a sequence (an episode's last may be shorter).
        overlap: o, the steps adjacent sequences share (0 <= o < m); they start every m - o.
        sequence_capacity: S, the sequences kept (the oldest leaves when a new one needs its
            slot); default `rdqn.replay.sizes.sequence_slots` (enough for every sequence of
            episodes of at least m - o steps; ``capacity`` would be enough for any).
        state_size: values of the recurrent state recorded at each sequence's first step
            (0: none).
        sampler: `UniformSampler()` (default), `ProportionalSampler(...)` or
            `RankBasedSampler(...)`, over sequences.
        priority_eta: eta of `sequence_priority` (R2D2: 0.9).
        seed: seed of the replay's own `np.random.Generator`.
        obs_dtype: storage dtype of observations (float32 by default).

    Episodes: a step that is `terminated` or `truncated` ends its episode; call `new_episode()`
    when one ends any other way.
    """

    def __init__(
        self,
        capacity: int,
        obs_shape: tuple[int, ...] | int,
        *,
        sequence_length: int,
        overlap: int = 0,
        sequence_capacity: int | None = None,
        state_size: int = 0,
        sampler: Sampler | None = None,
        priority_eta: float = 0.9,
        seed: int | None = None,
        obs_dtype: DTypeLike = np.float32,
    ) -> None:
        capacity = check_integer("capacity", capacity, minimum=1)
        self.obs_shape = check_obs_shape(obs_shape)
        dtype = check_obs_dtype(obs_dtype)
        self.priority_eta = check_real("priority_eta", priority_eta, minimum=0.0, maximum=1.0)
        self.sampler: Sampler = UniformSampler() if sampler is None else sampler
        if not isinstance(self.sampler, Sampler):
            raise ValueError(f"sampler must implement the Sampler protocol, got {sampler!r}")
        if sequence_capacity is None:
            sequence_length = check_integer("sequence_length", sequence_length, minimum=1)
            overlap = check_integer("overlap", overlap, minimum=0, maximum=sequence_length - 1)
            sequence_capacity = sequence_slots(capacity, sequence_length, overlap)
        self.index = SequenceIndex(
            capacity, sequence_length, overlap, sequence_capacity, state_size
        )
        self._check_size(capacity, dtype)
        self.storage = RingStorage(capacity, self.obs_shape, dtype)
        self.sampler.attach(self.index.capacity)
        self.rng = np.random.default_rng(seed)
        self.stale_updates = 0

    def _check_size(self, capacity: int, dtype: np.dtype) -> None:
        """`ReplaySizeError` when the steps, the index and the sampler would not fit in this
        machine's memory, before any of them is allocated."""
        index = self.index
        steps = storage_nbytes(capacity, math.prod(self.obs_shape), dtype.itemsize)
        scheme = scheme_of(self.sampler)
        sampled = scheme.nbytes(index.capacity) if scheme is not None else 0
        check_nbytes(
            f"SequenceReplay of {capacity:,} steps × obs_shape {self.obs_shape} of {dtype} and "
            f"{index.capacity:,} sequences",
            steps + index.nbytes + sampled,
            f"steps {format_bytes(steps)}, sequences {format_bytes(index.nbytes)}, sampler "
            f"{format_bytes(sampled)}",
            "choose a smaller capacity, sequence capacity or state",
        )

    # ------------------------------------------------------------------ properties
    @property
    def capacity(self) -> int:
        """Steps kept."""
        return self.storage.capacity

    @property
    def sequence_length(self) -> int:
        return self.index.length

    @property
    def overlap(self) -> int:
        return self.index.overlap

    def __len__(self) -> int:
        """Live sequences: those a batch draws from."""
        return self.index.live

    @property
    def steps(self) -> int:
        """Steps stored."""
        return self.storage.size

    @property
    def opens_sequence(self) -> bool:
        """Whether the next `add` begins a sequence (and so needs the actor's state)."""
        return self.index.opens(self.storage.next_episode_step)

    @property
    def nbytes(self) -> int:
        return self.storage.nbytes + self.index.nbytes + self.sampler.nbytes

    @property
    def sample_counts(self) -> NDArray[np.int64]:
        """How often each stored step was replayed in a sampled sequence (copy)."""
        return self.storage.sample_counts[: self.storage.size].copy()

    def ages(self, indices: ArrayLike) -> NDArray[np.int64]:
        """Writes since the last step of the sequences in slots ``indices`` (0: its last step
        is the newest stored)."""
        slots = check_slots("indices", indices, self.index.used)
        ends = self.index.start[slots] + self.index.lengths[slots]
        return self.storage.writes - ends

    def probabilities(self) -> NDArray[np.float64]:
        """P(i) of every sequence slot ever used (0 where it holds no live sequence)."""
        return self.sampler.probabilities(self.index.used)

    def importance_weights(self, indices: ArrayLike, beta: float) -> NDArray[np.float64]:
        """The IS weights the live sequences in ``indices`` would get in a batch drawn now (as
        `ReplayBuffer.importance_weights`)."""
        slots = check_slots("indices", indices, self.index.used)
        beta = float(check_probability("beta", beta))
        dead = ~self.index.is_live(slots, self.index.number[slots])
        if dead.any():
            raise ValueError(f"indices must be live sequences; slot {slots[dead][0]} holds none")
        sampler = self.sampler
        if not hasattr(sampler, "is_normalization"):
            return np.ones(slots.shape[0])
        probabilities = self.probabilities()
        held = probabilities[self.index.live_slots()]
        mode, clip = check_normalization(sampler.is_normalization, sampler.max_weight)
        out = np.empty(slots.shape[0])
        importance_weights_kernel(
            probabilities[slots], held.min(), held.shape[0], beta, mode, clip, out
        )
        return out

    # ------------------------------------------------------------------ writing
    def add(
        self,
        obs: ArrayLike,
        action: int,
        reward: float,
        next_obs: ArrayLike,
        terminated: bool,
        truncated: bool,
        state: ArrayLike | None = None,
    ) -> int:
        """Store step (o_t, a_t, r_t, o_{t+1}, terminated_t, truncated_t); returns its ring slot.

        ``state``: the recurrent state the actor had before reading o_t, kept if the step begins
        a sequence (`opens_sequence`; required then, unless ``state_size`` is 0). The sequences
        whose steps this write overwrites leave the sampler; those it completes join it with
        the largest priority seen so far."""
        shape, dtype = self.obs_shape, self.storage.obs_dtype
        o = check_obs("obs", obs, shape, dtype)
        o_next = check_obs("next_obs", next_obs, shape, dtype)
        check_step(action, reward, terminated, truncated)
        episode_step = self.storage.next_episode_step
        if episode_step >= EPISODE_STEP_MAX:  # its steps would stop counting on
            raise ValueError(f"an episode holds at most {EPISODE_STEP_MAX:,} steps here")
        if self.index.state_size and self.index.opens(episode_step):
            state = self.index.checked_state(state)  # before anything is written
        generation = self.storage.writes
        slot = self.storage.write(o, int(action), float(reward), o_next, terminated, truncated)
        removed, added = self.index.on_write(
            generation, episode_step, bool(terminated or truncated), state
        )
        self._apply(removed, added)
        return slot

    def new_episode(self) -> None:
        """Mark that the next `add` starts a new episode (closing the sequences under way)."""
        self.storage.new_episode()
        self._apply([], self.index.end_episode(self.storage.writes))

    def _apply(self, removed: list[int], added: list[int]) -> None:
        for slot in removed:
            self.sampler.on_remove(slot)
        for slot in added:
            self.sampler.on_add(slot)

    # ------------------------------------------------------------------ sampling
    def sample(self, batch_size: int, *, beta: float = 1.0) -> SequenceBatch:
        """Draw ``batch_size`` sequences (with replacement, so more than are live is allowed)
        with their steps, states and IS weights."""
        if self.index.live == 0:
            raise ValueError("cannot sample: no sequence is complete yet; add more steps first")
        batch_size = check_integer("batch_size", batch_size, minimum=1)
        beta = float(check_probability("beta", beta))
        m, width = self.index.length, math.prod(self.obs_shape)
        check_nbytes(
            f"a batch of {batch_size:,} sequences of {m + 1:,} observations",
            batch_size * (m + 1) * (width * self.storage.obs_dtype.itemsize + 1),
            advice="choose a smaller batch or sequence length",
        )
        indices, probabilities, weights = self.sampler.sample(
            self.index.used, batch_size, beta, self.rng
        )
        return gather_sequences(
            self.storage, self.index, indices, probabilities, weights, count=True
        )

    def sequences(self, indices: ArrayLike, beta: float = 1.0) -> SequenceBatch:
        """The live sequences in slots ``indices`` as a batch, with the P(i) and IS weights a
        draw of them would get now (`importance_weights`); not counted as replayed."""
        slots = check_slots("indices", indices, self.index.used)
        weights = self.importance_weights(slots, beta)
        probabilities = self.probabilities()[slots]
        return gather_sequences(
            self.storage, self.index, slots, probabilities, weights, count=False
        )

    def update_priorities(self, batch: SequenceBatch, td_errors: ArrayLike, mask: ArrayLike) -> int:
        """Give each sequence of ``batch`` the priority `sequence_priority` mixes from the
        |delta_t| of the steps ``mask`` marks (B, m): those the learner computed a TD error for
        (a subset of ``batch.step_mask``, at least one per row); other entries of ``td_errors``
        are ignored. Returns how many rows were stale (their sequence left since the draw),
        which are skipped and counted in `stale_updates`. Duplicated sequences: the last row
        wins. ``ValueError``, nothing changed, for arrays of other shapes, a marked |delta| that
        is not finite and >= 0, or a row that marks no step or a padded one."""
        if not isinstance(batch, SequenceBatch):
            raise ValueError(
                f"batch must be a SequenceBatch from sample(), got {type(batch).__name__}"
            )
        shape = batch.actions.shape
        td = np.asarray(td_errors, dtype=np.float64)
        marked = np.asarray(mask)
        if td.shape != shape or marked.shape != shape or marked.dtype != np.bool_:
            raise ValueError(
                f"td_errors and mask must have the batch's shape {shape} (mask of bools), got "
                f"{td.shape} and {marked.shape} {marked.dtype}"
            )
        if (marked & ~batch.step_mask).any():
            row = int(np.argmax((marked & ~batch.step_mask).any(axis=1)))
            raise ValueError(f"mask marks padding in row {row}: a step past its sequence's end")
        if not marked.any(axis=1).all():
            row = int(np.argmax(~marked.any(axis=1)))
            raise ValueError(f"mask marks no step of row {row}: a sequence needs one TD error")
        bad = marked & ~((td >= 0.0) & np.isfinite(td))
        if bad.any():
            row, step = np.argwhere(bad)[0]
            raise ValueError(
                f"td_errors must be finite and >= 0 where mask is True; row {row} step {step} "
                f"is {td[row, step]} (pass np.abs(delta); a non-finite value means training "
                "diverged)"
            )
        live = self.index.is_live(batch.indices, batch.generations)
        priorities = sequence_priority(td, marked, self.priority_eta)
        stale = int((~live).sum())
        self.sampler.update_priorities(batch.indices[live], priorities[live])
        self.stale_updates += stale
        return stale

    # ------------------------------------------------------------------ persistence
    def _header(self) -> dict[str, int]:
        index = self.index
        return {
            "capacity": self.capacity,
            "sequence_length": index.length,
            "overlap": index.overlap,
            "sequence_capacity": index.capacity,
            "state_size": index.state_size,
        }

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue identically: steps, sequences, priorities, RNG."""
        return {
            **self._header(),
            "obs_shape": self.obs_shape,
            "priority_eta": self.priority_eta,
            "storage": self.storage.state_dict(),
            "index": self.index.state_dict(),
            "sampler": self.sampler.state_dict(),
            "rng": self.rng.bit_generator.state,
            "stale_updates": self.stale_updates,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from a `state_dict` of a replay of the same sizes, checked whole before
        anything changes: `ReplayStateError` naming the field for a state that `state_dict`
        could not have written (`RingStorage.check_state`, `SequenceIndex.check_state`, the
        sampler's), and for a sampler whose stored and removed slots are not the index's."""
        state = mapping(state, "replay state")
        for key, mine in self._header().items():
            theirs = entry(state, key)
            if not (is_integer(theirs) and theirs == mine):
                refuse(f"state_dict has {key}={shown(theirs)}, this replay has {key}={mine}")
        theirs = entry(state, "obs_shape")
        if not (
            isinstance(theirs, tuple | list)
            and all(is_integer(n) for n in theirs)
            and tuple(theirs) == self.obs_shape
        ):
            refuse(f"state_dict has obs_shape={shown(theirs)}, this replay has {self.obs_shape}")
        eta = entry(state, "priority_eta")
        if not (is_real(eta) and eta == self.priority_eta):
            refuse(f"state_dict has priority_eta={shown(eta)}, this replay has {self.priority_eta}")
        storage = entry(state, "storage")
        try:
            self.storage.check_state(storage)
        except ReplayStateError as err:
            raise ReplayStateError(f"replay state, storage: {err}") from None
        try:
            self.index.check_state(entry(state, "index"), storage)
        except ReplayStateError as err:
            raise ReplayStateError(f"replay state, sequences: {err}") from None
        sampler_state = mapping(entry(state, "sampler"), "sampler state")
        self._check_sampler_slots(sampler_state, state["index"])
        rng = type(self.rng.bit_generator)()
        try:
            rng.state = entry(state, "rng")
        except (KeyError, TypeError, ValueError, OverflowError) as err:
            refuse(f"replay state: rng is not a {type(rng).__name__} state ({err})")
        stale_updates = integer_field(state, "stale_updates", 0, 1 << 62)
        try:
            self.sampler.load_state_dict(dict(sampler_state))
        except ReplayStateError as err:
            raise ReplayStateError(f"replay state, sampler: {err}") from None
        self.storage.load_checked(storage)
        self.index.load_checked(state["index"])
        self.rng.bit_generator.state = rng.state
        self.stale_updates = stale_updates

    def _check_sampler_slots(self, sampler: Any, index: Any) -> None:  # noqa: ANN401
        """The sampler holds the index's sequence slots: ``stored`` the slots ever used, and
        ``removed`` exactly those of them that hold no live sequence."""
        count, head, capacity = int(index["count"]), int(index["head"]), self.index.capacity
        used = min(count, capacity)
        stored = entry(sampler, "stored")
        if not (is_integer(stored) and stored == used):
            refuse(
                f"replay state, sampler: stored is {shown(stored)}, but the index has used "
                f"{used:,} sequence slots"
            )
        holds = np.zeros(used, np.bool_)
        holds[np.arange(head, count, dtype=np.int64) % capacity] = True
        expected = np.flatnonzero(~holds)
        removed = sampler.get("removed", np.empty(0, np.int64))
        if not (
            isinstance(removed, np.ndarray)
            and removed.shape == expected.shape
            and np.array_equal(removed, expected)
        ):
            refuse(
                f"replay state, sampler: removed is {shown(removed)}, but the sequence slots "
                f"without a live sequence are {shown(expected)}"
            )
