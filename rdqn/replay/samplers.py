"""Samplers: which stored transitions a batch contains, with what probability and IS weight.

All samplers share one small protocol, so the replay buffer and the agent never branch on the
scheme. Vocabulary, one name per quantity (the formulas: `rdqn.replay.priorities`):

- priority  p_i = |delta_i| + eps            (raw domain; what the learner reports)
- mass      m_i = p_i ** alpha                (what the sum tree stores; alpha applied exactly once)
- probability P(i) = m_i / sum_k m_k
- weight    w_i = (N * P(i)) ** -beta / max_j w_j   (importance-sampling correction)

alpha = 0 gives m_i = 1, i.e. exactly uniform replay; alpha = 1 is fully proportional. beta = 0
leaves the prioritized distribution uncorrected (all w_i = 1); beta = 1 fully corrects the bias.

IS-weight normalisation (`is_normalization`):
- "global" (default; Schaul et al. 2015 and OpenAI baselines): divide by the largest weight any
  stored item could get, the one of the smallest probability P_min:
  w_i = (N P(i))^-beta / (N P_min)^-beta = (P(i) / P_min)^-beta, so N cancels and w_i <= 1.
- "batch" (the E14 notebook): divide by the largest weight in the batch.
- "none": the raw (N P(i))^-beta.
`max_weight`, when set, clips the final weights from above.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple, NoReturn, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from rdqn.replay import priorities
from rdqn.replay.checks import (
    check_draw,
    check_magnitudes,
    check_slot,
    check_slots,
    check_update,
    well_typed,
)
from rdqn.replay.holes import Holes
from rdqn.replay.sampling_kernels import (
    BAD_MAGNITUDE,
    BAD_SLOT,
    ZERO_TOTAL,
    check_normalization,
    priority_update_kernel,
    stratified_sample_kernel,
)
from rdqn.replay.state_checks import entry, integer_field, mapping, real_field, refuse
from rdqn.replay.sumtree import SumTree, update_tree_kernel
from rdqn.validation import check_integer, check_real, is_real, shown

__all__ = [
    "Draw",
    "ProportionalSampler",
    "Sampler",
    "UniformSampler",
]

Normalization = Literal["global", "batch", "none"]


class Draw(NamedTuple):
    """What a sampler returns: slots, their sampling probabilities P(i) and IS weights w_i (a
    named tuple: immutable, and cheaper to build than a frozen dataclass, which counts at the
    rate training draws)."""

    indices: NDArray[np.int64]
    probabilities: NDArray[np.float64]
    weights: NDArray[np.float64]


tuple_new = tuple.__new__
"""`tuple_new(Draw, (indices, probabilities, weights))` builds a `Draw` without the named
tuple's Python-level `__new__`, a cost paid at every sample."""


@runtime_checkable
class Sampler(Protocol):
    """The contract between a `ReplayBuffer` and its sampling scheme.

    `sample` and `probabilities` only read the sampler's state (the randomness comes from the
    caller's generator), so a diagnostic draw never changes what training draws next.
    """

    name: str

    def attach(self, capacity: int) -> None:
        """Allocate per-slot state for a buffer of `capacity` slots (called once by the buffer)."""

    def on_add(self, slot: int) -> None:
        """A new transition was written to `slot`. A ring buffer fills its slots in order, so
        the slots below the highest one added hold transitions: they are the stored slots."""

    def on_remove(self, slot: int) -> None:
        """The item in `slot` (a stored slot that holds one) is gone: it is never drawn, its
        P(i) is 0 and an update of its priority is refused, until `on_add` writes the slot
        again (`rdqn.replay.holes`). A memory of transitions never removes; a memory of
        sequences removes those whose steps the ring overwrote."""

    def sample(self, size: int, batch_size: int, beta: float, rng: np.random.Generator) -> Draw:
        """Draw `batch_size` slots among the first `size` (all ``stored`` of them once any slot
        was removed: `Holes.whole`)."""

    def update_priorities(
        self, indices: NDArray[np.int64], magnitudes: NDArray[np.float64]
    ) -> None:
        """Record |delta_i| for the sampled `indices`.

        ``ValueError``, the state unchanged, for indices that are not stored slots (integers in
        [0, stored), `on_add`) or magnitudes that are not finite and >= 0 (one per index).
        """

    def probabilities(self, size: int) -> NDArray[np.float64]:
        """P(i) for every slot i < size under the current priorities."""

    @property
    def nbytes(self) -> int: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Load a `state_dict`, or raise ``ValueError`` (`ReplayStateError`) with the state
        unchanged. A ``"stored"`` entry, the number of stored slots, is the buffer's size: the
        buffer adds it where an older state lacks it."""


def check_attached(capacity: int | None, name: str) -> int:
    if capacity is None:
        raise RuntimeError(f"{name} is not attached to a buffer; call attach(capacity) first")
    return capacity


def check_sampler_name(state: Mapping[str, Any], name: str) -> None:
    """`ReplayStateError` unless ``state`` is a sampler state dict of sampler ``name``."""
    state = mapping(state, "sampler state")
    if state.get("name") != name:
        refuse(f"state_dict is for sampler {shown(state.get('name'))}, not {name!r}")


def check_same(state: Mapping[str, Any], key: str, mine: float) -> None:
    """`ReplayStateError` unless ``state[key]`` is the real number ``mine``."""
    theirs = entry(state, key)
    if not (is_real(theirs) and theirs == mine):
        refuse(f"state_dict was saved with {key}={shown(theirs)}, this sampler has {key}={mine}")


def stored_field(state: Mapping[str, Any], capacity: int) -> int | None:
    """``state["stored"]`` (an integer in [0, capacity]), or None where there is none."""
    return integer_field(state, "stored", 0, capacity) if "stored" in state else None


class UniformSampler:
    """Uniform replay: P(i) = 1/N with replacement, all IS weights 1 (N: the items held; with
    removed slots, the others).

    `update_priorities` is a documented no-op, so an agent can report TD errors without knowing
    which scheme the buffer uses.
    """

    name = "uniform"

    def __init__(self) -> None:
        self._capacity: int | None = None
        self.stored = 0
        """Slots that hold transitions: one past the highest slot added (`Sampler.on_add`)."""
        self._holes = Holes(0)

    def attach(self, capacity: int) -> None:
        self._capacity = check_integer("capacity", capacity, minimum=1)
        self.stored = 0
        self._holes = Holes(self._capacity)

    def on_add(self, slot: int) -> None:
        slot = check_slot(slot, check_attached(self._capacity, "UniformSampler"))
        if slot >= self.stored:
            self.stored = slot + 1
        self._holes.fill(slot)

    def on_remove(self, slot: int) -> None:
        check_attached(self._capacity, "UniformSampler")
        self._holes.remove(slot, self.stored)

    def sample(self, size: int, batch_size: int, beta: float, rng: np.random.Generator) -> Draw:
        check_attached(self._capacity, "UniformSampler")
        check_draw(size, batch_size, self.stored)
        if self._holes.count:
            return self._sample_held(size, batch_size, rng)
        indices = rng.integers(0, size, batch_size, dtype=np.int64)
        return Draw(indices, np.full(batch_size, 1.0 / size), np.ones(batch_size))

    def _sample_held(self, size: int, batch_size: int, rng: np.random.Generator) -> Draw:
        """A draw among the n slots that hold items, P = 1/n each (O(size), only once a slot
        was removed)."""
        held = self._holes.whole(size, self.stored)
        if held == 0:
            raise ValueError("cannot sample: every stored item was removed")
        indices = self._holes.live(size)[rng.integers(0, held, batch_size, dtype=np.int64)]
        return Draw(indices, np.full(batch_size, 1.0 / held), np.ones(batch_size))

    def update_priorities(
        self, indices: NDArray[np.int64], magnitudes: NDArray[np.float64]
    ) -> None:
        """No-op: uniform replay ignores priorities (bad input is still a ``ValueError``, a
        removed slot too)."""
        check_attached(self._capacity, "UniformSampler")
        indices, _ = check_update(indices, magnitudes, self.stored)
        self._holes.check_update(indices)

    def probabilities(self, size: int) -> NDArray[np.float64]:
        if not size:
            return np.empty(0)
        if not self._holes.count:
            return np.full(size, 1.0 / size)
        out = np.zeros(size)
        held = self._holes.live(size)
        out[held] = 1.0 / held.shape[0] if held.shape[0] else 0.0
        return out

    @property
    def nbytes(self) -> int:
        return self._holes.nbytes

    def state_dict(self) -> dict[str, Any]:
        return {"name": self.name, "stored": self.stored, **self._holes.state()}

    def check_state(self, state: Mapping[str, Any]) -> tuple[int, NDArray[np.int64]]:
        """The stored slots of a `state_dict` this sampler can load (a state saved before they
        were kept: all of them) and its removed slots; `ReplayStateError` otherwise."""
        capacity = check_attached(self._capacity, "UniformSampler")
        check_sampler_name(state, self.name)
        stored = stored_field(state, capacity)
        stored = capacity if stored is None else stored
        return stored, self._holes.check_state(state, stored)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.stored, removed = self.check_state(state)
        self._holes.load(removed)


class ProportionalSampler:
    """Proportional prioritization, P(i) = p_i^alpha / sum_k p_k^alpha, drawn stratified.

    New transitions get the largest priority seen so far (1.0 at start), kept in the raw domain
    and raised to alpha once when written: storing max *mass* and raising it again was the
    "double alpha" bug of several public implementations. A removed slot (`on_remove`) gets mass
    0, which is never drawn, and N in the IS weights counts the items left.

    Args:
        alpha: prioritization exponent (0 = uniform, 1 = fully proportional).
        eps: added to |delta| so that no transition gets zero probability.
        is_normalization: "global" (paper), "batch" (E14 notebook) or "none"; see module doc.
        max_weight: optional upper clip of the final IS weights.
    """

    name = "proportional"

    def __init__(
        self,
        alpha: float = 0.6,
        eps: float = 1e-6,
        is_normalization: Normalization = "global",
        max_weight: float | None = None,
    ) -> None:
        self.alpha = check_real("alpha", alpha, minimum=0.0)
        self.eps = check_real("eps", eps, minimum=0.0)
        self.is_normalization = is_normalization
        self.max_weight = max_weight
        self._mode, self._max_weight = check_normalization(is_normalization, max_weight)
        self.max_priority = 1.0
        self.stored = 0
        """Slots that hold transitions: one past the highest slot added (`Sampler.on_add`)."""
        self.tree: SumTree | None = None
        self._holes = Holes(0)
        self._slot = np.zeros(1, np.int64)
        self._mass = np.zeros(1, np.float64)
        self._scratch = np.empty(2 * 128, np.float64)  # `priority_update_kernel`'s, grown

    def attach(self, capacity: int) -> None:
        self.tree = SumTree(capacity, track_min=True)
        self.stored = 0
        self._holes = Holes(capacity)

    def _tree(self) -> SumTree:
        if self.tree is None:
            raise RuntimeError("ProportionalSampler is not attached; call attach(capacity) first")
        return self.tree

    def on_add(self, slot: int) -> None:
        tree = self._tree()
        slot = check_slot(slot, tree.capacity)
        self._slot[0] = slot
        self._mass[0] = priorities.mass(self.max_priority, self.alpha)
        update_tree_kernel(tree.nodes, tree.offset, self._slot, self._mass)
        if slot >= self.stored:
            self.stored = slot + 1
        self._holes.fill(slot)

    def on_remove(self, slot: int) -> None:
        tree = self._tree()
        self._slot[0] = self._holes.remove(slot, self.stored)
        self._mass[0] = 0.0
        update_tree_kernel(tree.nodes, tree.offset, self._slot, self._mass)

    def sample(self, size: int, batch_size: int, beta: float, rng: np.random.Generator) -> Draw:
        tree = self.tree if self.tree is not None else self._tree()
        check_draw(size, batch_size, self.stored)
        held = self._holes.whole(size, self.stored) if self._holes.count else size
        indices = np.empty(batch_size, np.int64)
        probabilities = rng.random(out=np.empty(batch_size, np.float64))  # the u_k
        weights = np.empty(batch_size, np.float64)
        total = stratified_sample_kernel(
            tree.nodes,
            tree.offset,
            held,
            beta,
            self._mode,
            self._max_weight,
            indices,
            probabilities,
            weights,
        )
        # A plain comparison: np.isfinite on a scalar costs more than the rest of this check.
        if not 0.0 < total < math.inf:
            raise ValueError(f"cannot sample: the total priority mass is {total}")
        return tuple_new(Draw, (indices, probabilities, weights))

    def update_priorities(
        self, indices: NDArray[np.int64], magnitudes: NDArray[np.float64]
    ) -> None:
        """p_i = |delta_i| + eps, mass p_i^alpha; duplicates in one call: the last one wins.

        ``ValueError`` (the tree unchanged) for indices that are not stored slots (a slot past
        them would get a mass, and be drawn), magnitudes that are not finite and >= 0,
        a mass or total that overflows, or an update that would leave no positive mass (eps = 0
        and every stored |delta| = 0): sampling would then be impossible; also for a removed
        slot (`on_remove`), which a mass would make drawable again.
        """
        tree = self.tree if self.tree is not None else self._tree()
        # Fast path: well-typed arrays go straight to the kernel, which checks their values.
        if not well_typed(indices, magnitudes):
            indices, magnitudes = check_update(indices, magnitudes, self.stored)
        if indices.shape[0] == 0:
            return
        if self._holes.count:
            check_update(indices, magnitudes, self.stored)
            self._holes.check_update(indices)
        if 2 * indices.shape[0] > self._scratch.shape[0]:
            self._scratch = np.empty(2 * indices.shape[0], np.float64)
        largest = priority_update_kernel(
            tree.nodes,
            tree.offset,
            self.stored,
            indices,
            magnitudes,
            self.eps,
            self.alpha,
            self._scratch,
        )
        if largest < 0:
            self._refuse(largest, indices, magnitudes)
        self.max_priority = max(self.max_priority, largest)

    def _refuse(
        self, code: float, indices: NDArray[np.int64], magnitudes: NDArray[np.float64]
    ) -> NoReturn:
        if code == BAD_SLOT:
            check_slots("indices", indices, self.stored)
        if code == BAD_MAGNITUDE:
            check_magnitudes("magnitudes", magnitudes, indices.shape[0])
        if code == ZERO_TOTAL:
            raise ValueError(
                f"magnitudes would leave every transition with priority 0 (eps={self.eps}, "
                "|delta| = 0 for all stored ones), so nothing could be sampled; use eps > 0"
            )
        raise ValueError(
            f"priority^alpha or the total priority overflows float64: max |delta| "
            f"{magnitudes.max()} with alpha {self.alpha}"
        )

    def probabilities(self, size: int) -> NDArray[np.float64]:
        tree = self._tree()
        if not size:
            return np.empty(0)
        total = tree.total
        if not (total > 0.0 and np.isfinite(total)):
            raise ValueError(f"no probabilities: the total priority mass is {total}")
        return tree.leaves(size) / total

    @property
    def nbytes(self) -> int:
        return 0 if self.tree is None else self.tree.nbytes + self._holes.nbytes

    def state_dict(self) -> dict[str, Any]:
        tree = self._tree()
        return {
            "name": self.name,
            "alpha": self.alpha,
            "eps": self.eps,
            "max_priority": self.max_priority,
            "stored": self.stored,
            "sum_nodes": tree.sum_nodes.copy(),
            "min_nodes": tree.min_nodes.copy(),
            **self._holes.state(),
        }

    def check_state(self, state: Mapping[str, Any]) -> tuple[int, NDArray[np.int64]]:
        """The stored slots and the removed ones of a `state_dict` this sampler can load;
        `ReplayStateError` otherwise, naming the field: the sampler and its alpha and eps; a
        largest priority >= 1 (where it starts) whose mass is finite; a tree
        `SumTree.check_nodes` accepts; no mass past the stored slots nor at a removed one, and a
        positive total if an item is held. A state saved before the stored slots were kept: one
        past the last positive leaf."""
        tree = self._tree()
        check_sampler_name(state, self.name)
        check_same(state, "alpha", self.alpha)
        check_same(state, "eps", self.eps)
        max_priority = real_field(state, "max_priority", 1.0)
        try:
            new_mass = priorities.mass(max_priority, self.alpha)
        except OverflowError:
            new_mass = math.inf
        if not math.isfinite(new_mass):
            refuse(f"max_priority {max_priority} overflows float64 as a mass (alpha {self.alpha})")
        sum_nodes, min_nodes = entry(state, "sum_nodes"), entry(state, "min_nodes")
        tree.check_nodes(sum_nodes, min_nodes)
        leaves = sum_nodes[tree.offset : tree.offset + tree.capacity]
        stored = stored_field(state, tree.capacity)
        if stored is None:
            positive = np.flatnonzero(leaves > 0.0)
            stored = int(positive[-1]) + 1 if positive.size else 0
        if (leaves[stored:] != 0.0).any():
            k = stored + int(np.argmax(leaves[stored:] != 0.0))
            refuse(
                f"sum_nodes gives slot {k} the mass {leaves[k]}, but only slots below "
                f"stored={stored} hold transitions"
            )
        removed = self._holes.check_state(state, stored)
        if (leaves[removed] != 0.0).any():
            k = int(removed[int(np.argmax(leaves[removed] != 0.0))])
            refuse(f"sum_nodes gives slot {k} the mass {leaves[k]}, but slot {k} was removed")
        if stored > removed.size and not sum_nodes[1] > 0.0:
            refuse(f"no stored slot has a positive mass (total {sum_nodes[1]}): none can be drawn")
        return stored, removed

    def load_state_dict(self, state: dict[str, Any]) -> None:
        stored, removed = self.check_state(state)
        tree = self._tree()
        tree.nodes[1:, 0] = state["sum_nodes"][1:]
        tree.nodes[1:, 1] = state["min_nodes"][1:]
        self.max_priority = float(state["max_priority"])
        self.stored = stored
        self._holes.load(removed)
