"""Reference PER cycles in plain NumPy / Python, measured beside rdqn in the main environment.

Each performs exactly the protocol's cycle (`benchmarks.peers.protocol`): 128 sorted stratified
masses, leaf index and P(i) of each, one write of 128 masses. `draw(u, deltas)` runs one cycle
with given uniforms and returns (indices, P); `cycle(deltas)` draws its own uniforms (timed path).

- `CumsumSearch`: the original notebooks' O(N) approach (np.random.choice(p=...) is a cumsum and a
  binary search): prefix sums of all N masses every cycle, 128 binary searches;
- `PythonSumTree`: the PER notebook's sum tree, one interpreted descent per item;
- `NumpySumTree`: the same tree, the 128 descents and the write vectorized level by level.
"""

from __future__ import annotations

import numpy as np

from .protocol import BATCH, initial_magnitudes, leaf_mass, stratified_masses


class CumsumSearch:
    """Masses in a flat array; each cycle c = cumsum(q), i_k = searchsorted(c, m_k, 'right')."""

    slow = True

    def __init__(self, n: int) -> None:
        self.leaves = leaf_mass(initial_magnitudes(n))
        self.rng = np.random.default_rng(2)

    def draw(self, u: np.ndarray, deltas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        cumulative = np.cumsum(self.leaves)
        total = cumulative[-1]
        indices = np.searchsorted(cumulative, stratified_masses(u, total), side="right")
        np.minimum(indices, len(self.leaves) - 1, out=indices)
        probabilities = self.leaves[indices] / total
        self.leaves[indices] = leaf_mass(deltas)
        return indices, probabilities

    def cycle(self, deltas: np.ndarray) -> None:
        self.draw(self.rng.random(BATCH), deltas)


class PythonSumTree:
    """Heap of 2N - 1 nodes (leaves at N - 1 ..), one Python descent and one climb per item."""

    slow = True

    def __init__(self, n: int) -> None:
        self.n = n
        self.tree = np.zeros(2 * n - 1)
        self.tree[n - 1 :] = leaf_mass(initial_magnitudes(n))
        for i in range(n - 2, -1, -1):
            self.tree[i] = self.tree[2 * i + 1] + self.tree[2 * i + 2]
        self.rng = np.random.default_rng(2)

    def _set(self, node: int, value: float) -> None:
        tree = self.tree
        tree[node] = value
        while node != 0:
            node = (node - 1) // 2
            tree[node] = tree[2 * node + 1] + tree[2 * node + 2]

    def _find(self, mass: float) -> int:
        tree, node = self.tree, 0
        while node < self.n - 1:
            left = 2 * node + 1
            if mass < tree[left]:
                node = left
            else:
                mass -= tree[left]
                node = left + 1
        return node

    def draw(self, u: np.ndarray, deltas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        total = self.tree[0]
        nodes = [self._find(m) for m in stratified_masses(u, total).tolist()]
        indices = np.array(nodes) - (self.n - 1)
        probabilities = self.tree[nodes] / total
        for node, value in zip(nodes, leaf_mass(deltas).tolist(), strict=True):
            self._set(node, value)
        return indices, probabilities

    def cycle(self, deltas: np.ndarray) -> None:
        self.draw(self.rng.random(BATCH), deltas)


class NumpySumTree:
    """Heap of 2N nodes (root 1, leaves N..2N-1, N a power of two), descents level by level."""

    slow = False

    def __init__(self, n: int) -> None:
        if n & (n - 1):
            raise ValueError(f"n must be a power of two, got {n}")
        self.n = n
        self.tree = np.zeros(2 * n)
        self.tree[n:] = leaf_mass(initial_magnitudes(n))
        level = n // 2
        while level >= 1:
            nodes = np.arange(level, 2 * level)
            self.tree[nodes] = self.tree[2 * nodes] + self.tree[2 * nodes + 1]
            level //= 2
        self.rng = np.random.default_rng(2)

    def draw(self, u: np.ndarray, deltas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        tree = self.tree
        total = tree[1]
        masses = stratified_masses(u, total)
        nodes = np.ones(len(u), np.int64)
        while nodes[0] < self.n:
            left = tree[2 * nodes]
            go_right = masses >= left
            masses = np.where(go_right, masses - left, masses)
            nodes = 2 * nodes + go_right
        probabilities = tree[nodes] / total
        tree[nodes] = leaf_mass(deltas)
        parents = np.unique(nodes // 2)
        while parents[0] >= 1:
            tree[parents] = tree[2 * parents] + tree[2 * parents + 1]
            parents = np.unique(parents // 2)
        return nodes - self.n, probabilities

    def cycle(self, deltas: np.ndarray) -> None:
        self.draw(self.rng.random(BATCH), deltas)


REFERENCES: dict[str, type] = {
    "batched NumPy sum tree": NumpySumTree,
    "per-item Python sum tree": PythonSumTree,
    "O(N) cumsum + searchsorted (seed-style)": CumsumSearch,
}
