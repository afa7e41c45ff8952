"""Dotted paths over any tree of dataclasses, not only RunConfig."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from rdqn import config_paths


@dataclass(frozen=True)
class Leaf:
    rate: float = field(default=0.5, metadata={"doc": "A rate."})


@dataclass(frozen=True)
class Root:
    name: str = field(default="x", metadata={"doc": "A name."})
    leaf: Leaf = field(default_factory=Leaf)


def test_a_tree_flattens_to_paths_and_builds_back() -> None:
    flat = config_paths.flatten({"name": "y", "leaf": {"rate": 1}})
    assert flat == {"name": "y", "leaf.rate": 1}
    built = config_paths.build(Root, {"name": "y", "leaf": {"rate": 1}})
    assert built == Root("y", Leaf(1.0))
    assert isinstance(built.leaf.rate, float)  # JSON's 1 for a float field


def test_retired_paths_are_dropped_and_unknown_ones_named() -> None:
    data = {"leaf": {"rate": 0.2, "old": 3}}
    assert config_paths.build(Root, data, retired={"leaf.old"}) == Root(leaf=Leaf(0.2))
    with pytest.raises(ValueError, match="unknown config field\\(s\\) in leaf: old"):
        config_paths.build(Root, data)


def test_a_leaf_is_found_by_its_path_and_a_typo_gets_the_closest_name() -> None:
    assert config_paths.field_at(Root, "leaf.rate").metadata["doc"] == "A rate."
    assert config_paths.leaf_docs(Root) == {"name": "A name.", "leaf.rate": "A rate."}
    with pytest.raises(ValueError, match="did you mean 'leaf.rate'"):
        config_paths.field_at(Root, "leaf.rat")
    with pytest.raises(ValueError, match="is a group of fields"):
        config_paths.field_at(Root, "leaf")
