"""The replay schemes, one entry each: the sampler class, the replay settings it is built with,
the bytes it keeps beside the storage, and how it lays out a batch's draws.

    scheme        sampler              settings        keeps       a batch's draws
    uniform       UniformSampler       -               nothing     independent
    proportional  ProportionalSampler  alpha, eps, IS  sum tree    stratified, in slot order
    rank          RankBasedSampler     alpha, IS       rank order  stratified, in rank order

(IS: the weights' ``is_normalization`` and ``max_weight``; stratified: one draw per equal segment
of the total mass.)

Whatever depends on the scheme asks here: a run's sampler (`rdqn.training.trainer.build_sampler`),
the replay memory's bytes (`rdqn.replay.sizes.replay_nbytes`, which a server checks against its
limits, and `ReplayBuffer`'s own check), and the sampler check's null law
(`rdqn.training.sampler_check`). The names are `rdqn.schemes.SCHEMES`, in the same order.

Naming a scheme or counting its bytes loads no kernel: the sampler class is loaded on first use
(`Scheme.sampler_class`), through `rdqn.replay`'s lazy names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import rdqn.replay
from rdqn.replay.rank.shape import rank_sampler_nbytes
from rdqn.replay.tree_shape import sum_tree_nbytes
from rdqn.schemes import SCHEMES

if TYPE_CHECKING:
    from rdqn.replay import Sampler

__all__ = ["REGISTRY", "Scheme", "scheme", "scheme_of"]


@dataclass(frozen=True, kw_only=True)
class Scheme:
    """One replay scheme (module docstring)."""

    name: str
    """The scheme's name, as in `rdqn.schemes.SCHEMES` and its sampler's ``name``."""
    sampler: str
    """The sampler class's name in `rdqn.replay` (loaded on first use)."""
    settings: tuple[str, ...]
    """The replay config's fields the sampler takes, as keyword arguments of the same names."""
    keeps: str
    """What the sampler keeps per slot beside the storage, as a size refusal names it ("":
    nothing)."""
    nbytes: Callable[[int], int]
    """The bytes the sampler keeps for a capacity, computed without allocating."""
    stratified_over: str | None
    """None: a batch is drawn independently; else one draw per equal segment of the mass laid
    out in this order: "buffer slot" (the sum tree) or "rank"."""

    def sampler_class(self) -> type[Sampler]:
        return getattr(rdqn.replay, self.sampler)  # type: ignore[no-any-return]

    def build(self, replay: Any) -> Sampler:  # noqa: ANN401 (a ReplayConfig: a layer above)
        """A fresh sampler of this scheme with its `settings` read off ``replay``."""
        return self.sampler_class()(**{name: getattr(replay, name) for name in self.settings})


REGISTRY: Mapping[str, Scheme] = MappingProxyType(
    {
        "uniform": Scheme(
            name="uniform",
            sampler="UniformSampler",
            settings=(),
            keeps="",
            nbytes=lambda capacity: 0,
            stratified_over=None,
        ),
        "proportional": Scheme(
            name="proportional",
            sampler="ProportionalSampler",
            settings=("alpha", "eps", "is_normalization", "max_weight"),
            keeps="sum tree",
            nbytes=sum_tree_nbytes,
            stratified_over="buffer slot",
        ),
        "rank": Scheme(
            name="rank",
            sampler="RankBasedSampler",
            settings=("alpha", "is_normalization", "max_weight"),
            keeps="rank order",
            nbytes=rank_sampler_nbytes,
            stratified_over="rank",
        ),
    }
)
"""Every scheme by name, in `SCHEMES` order."""
assert tuple(REGISTRY) == SCHEMES, "the registry and rdqn.schemes name the same schemes"


def scheme(name: str) -> Scheme:
    """The scheme called ``name``; ``ValueError`` naming the schemes for any other."""
    found = REGISTRY.get(name) if isinstance(name, str) else None
    if found is None:
        raise ValueError(f"scheme must be one of {SCHEMES}, got {name!r}")
    return found


def scheme_of(sampler: object) -> Scheme | None:
    """The scheme whose sampler class ``sampler`` is an instance of (None: a sampler of no
    registered scheme, which sizes and checks itself)."""
    for entry in REGISTRY.values():
        if isinstance(sampler, entry.sampler_class()):
            return entry
    return None
