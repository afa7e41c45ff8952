"""The protocol's PER cycle driven through each peer library the way that library drives itself.

Runs in the peer venv (`benchmarks/peers/setup.sh`); see `benchmarks.peers.protocol` for the
cycle. Each adapter: `draw(u, deltas) -> (indices, P)` runs one cycle with given uniforms (the
`--check` path), `cycle(deltas)` one with its own uniforms (the timed path).

- TorchRL (`torchrl._torchrl`, C++): the trees of `PrioritizedSampler`: `query(0, N)`,
  `scan_lower_bound(masses)`, `tree[index]`, `tree[index] = masses`. Two ways: the sum tree
  alone through its NumPy overloads (float64 and float32; the quickest way to drive it), and
  sum + min trees exactly as the sampler's CPU path calls them (torch tensors after the scan,
  IS weights, both trees written). Masses are the protocol's sorted strata (the sampler draws
  them unsorted).
- tianshou (`SegmentTree`, numba): `reduce()` once, `get_prefix_sum_idx` of the sorted masses,
  one read of the leaves, one `__setitem__` of the new masses.
- cpprb (`PrioritizedReplayBuffer`, C++): its segment tree is not exposed, so the buffer itself
  with one scalar field: `sample(128, beta)` (its C++ sampler draws the same sorted stratified
  masses, float32 sum and min trees, IS weights, gathers the field) and
  `update_priorities(indexes, |delta|)` ((p + eps)^alpha in C++). It draws its own uniforms, so
  it has no `draw(u, ...)`; `--check` tests it on a tree where each stratum holds one leaf.
"""

from __future__ import annotations

import numpy as np

from .protocol import ALPHA, BATCH, BETA, EPS, initial_magnitudes, leaf_mass


class TorchRLNumpyTree:
    """TorchRL's C++ SumSegmentTree alone, called with NumPy arrays (its pybind overloads).

    The quickest way to drive the tree from Python: no tensor conversions. `dtype` is the
    tree's: float64 as rdqn's, float32 as PrioritizedSampler's default.
    """

    def __init__(self, n: int, dtype: type = np.float64) -> None:
        from torchrl._torchrl import SumSegmentTreeFp32, SumSegmentTreeFp64

        self.dtype = np.dtype(dtype)
        fp64 = self.dtype == np.float64
        self.tree = (SumSegmentTreeFp64 if fp64 else SumSegmentTreeFp32)(n)
        self.tree[np.arange(n)] = leaf_mass(initial_magnitudes(n)).astype(self.dtype)
        self.n = n
        self.strata = np.arange(BATCH, dtype=self.dtype)
        self.rng = np.random.default_rng(2)

    def draw(self, u: np.ndarray, deltas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        tree = self.tree
        total = tree.query(0, self.n)
        masses = (self.strata + u.astype(self.dtype)) * self.dtype.type(total / BATCH)
        indices = tree.scan_lower_bound(masses)
        np.minimum(indices, self.n - 1, out=indices)
        probabilities = tree[indices] / total
        tree[indices] = (np.abs(deltas) + EPS) ** ALPHA
        return indices, probabilities

    def cycle(self, deltas: np.ndarray) -> None:
        self.draw(self.rng.random(BATCH, dtype=self.dtype), deltas)

    def prepare_deltas(self, deltas: list[np.ndarray]) -> list[np.ndarray]:
        return [d.astype(self.dtype) for d in deltas]


class TorchRLSamplerTrees:
    """TorchRL's C++ sum and min trees (float32) called as PrioritizedSampler's CPU path does.

    sample: `query` of both trees, NumPy masses into `scan_lower_bound`, `torch.as_tensor`,
    `clamp_max_`, `tree[index]`, the zero-weight guard, weights (p_i / p_min)^-beta;
    update_priority: max-priority tracking, `torch.pow(|delta| + eps, alpha)`, both trees'
    `__setitem__` with tensors. The TD errors arrive as tensors, as from a torch learner.
    """

    def __init__(self, n: int) -> None:
        import torch
        from torchrl._torchrl import MinSegmentTreeFp32, SumSegmentTreeFp32

        self.torch = torch
        self.sum_tree, self.min_tree = SumSegmentTreeFp32(n), MinSegmentTreeFp32(n)
        index = torch.arange(n)
        masses = torch.as_tensor(leaf_mass(initial_magnitudes(n)), dtype=torch.float32)
        self.sum_tree[index] = masses
        self.min_tree[index] = masses
        self.n = n
        self.max_priority = 1.0
        self.strata = np.arange(BATCH, dtype=np.float64)
        self.rng = np.random.default_rng(2)

    def draw(self, u: np.ndarray, deltas) -> tuple[np.ndarray, np.ndarray]:
        torch = self.torch
        p_sum = self.sum_tree.query(0, self.n)
        p_min = self.min_tree.query(0, self.n)
        mass = (self.strata + u) * (p_sum / BATCH)
        index = torch.as_tensor(self.sum_tree.scan_lower_bound(mass))
        index.clamp_max_(self.n - 1)
        weight = torch.as_tensor(self.sum_tree[index])
        if (weight == 0).any():
            raise RuntimeError("a sampled leaf has zero priority")
        probabilities = weight / p_sum
        torch.pow(weight / p_min, -BETA)  # the IS weights the sampler returns
        priority = torch.as_tensor(deltas, dtype=torch.float32).detach().abs()
        max_priority = priority.max()
        if max_priority > self.max_priority:
            self.max_priority = max_priority
        priority = torch.pow(priority + EPS, ALPHA)
        self.sum_tree[index] = priority
        self.min_tree[index] = priority
        return index.numpy(), probabilities.numpy()

    def cycle(self, deltas) -> None:
        self.draw(self.rng.random(BATCH), deltas)

    def prepare_deltas(self, deltas: list[np.ndarray]) -> list:
        return [self.torch.as_tensor(d, dtype=self.torch.float32) for d in deltas]


class TianshouTree:
    """tianshou's numba SegmentTree, driven as its PrioritizedReplayBuffer drives it."""

    def __init__(self, n: int) -> None:
        from tianshou.data import SegmentTree

        self.tree = SegmentTree(n)
        self.tree[np.arange(n)] = leaf_mass(initial_magnitudes(n))
        self.strata = np.arange(BATCH, dtype=np.float64)
        self.rng = np.random.default_rng(2)

    def draw(self, u: np.ndarray, deltas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        tree = self.tree
        total = tree.reduce()
        indices = tree.get_prefix_sum_idx((self.strata + u) * (total / BATCH))
        probabilities = tree[indices] / total
        tree[indices] = (np.abs(deltas) + EPS) ** ALPHA
        return indices, probabilities

    def cycle(self, deltas: np.ndarray) -> None:
        self.draw(self.rng.random(BATCH), deltas)


class CpprbBuffer:
    """cpprb's PrioritizedReplayBuffer holding one scalar per transition."""

    def __init__(self, n: int, magnitudes: np.ndarray | None = None) -> None:
        import cpprb

        if magnitudes is None:
            magnitudes = initial_magnitudes(n)
        self.buffer = cpprb.PrioritizedReplayBuffer(n, {"done": {}}, alpha=ALPHA, eps=EPS)
        self.buffer.add(done=np.zeros(n), priorities=magnitudes)

    def sample(self) -> dict:
        return self.buffer.sample(BATCH, beta=BETA)

    def cycle(self, deltas: np.ndarray) -> None:
        sample = self.buffer.sample(BATCH, beta=BETA)
        self.buffer.update_priorities(sample["indexes"], np.abs(deltas))


def peers() -> dict[str, object]:
    """Name -> factory(n) of every peer adapter (imports happen when a factory is called)."""
    return {
        "TorchRL SumSegmentTreeFp64 (C++), NumPy arrays": TorchRLNumpyTree,
        "TorchRL SumSegmentTreeFp32 (C++), NumPy arrays": lambda n: TorchRLNumpyTree(n, np.float32),
        "TorchRL sum + min trees as PrioritizedSampler (C++, fp32)": TorchRLSamplerTrees,
        "tianshou SegmentTree (numba)": TianshouTree,
        "cpprb PrioritizedReplayBuffer (C++)": CpprbBuffer,
    }
