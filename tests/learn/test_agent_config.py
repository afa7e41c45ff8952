"""Tests for rdqn.learn.agent_config: validation messages, defaults, field docs, device names."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from rdqn.learn.agent_config import AgentConfig, resolve_device


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"gamma": 1.5}, r"gamma must be in \[0, 1\], got 1.5"),
        ({"gamma": -0.1}, "gamma"),
        ({"lr": 0.0}, "lr must be"),
        ({"lr": float("nan")}, "lr"),
        ({"tau": 0.0}, r"tau must be in \(0, 1\]"),
        ({"tau": 1.1}, "tau"),
        ({"target_sync_every": 0}, "target_sync_every must be an integer >= 1, got 0"),
        ({"target_sync_every": 2.0}, "target_sync_every"),
        ({"grad_clip_norm": 0.0}, "grad_clip_norm"),
        ({"grad_clip_norm": -1.0}, "grad_clip_norm"),
        ({"network": "gru"}, r"network must be one of \('recurrent', 'mlp', 'conv', 'linear'\)"),
        ({"loss": "l1"}, "loss"),
        ({"target_update": "polyak"}, "target_update"),
        ({"device": "tpu"}, "device"),
        ({"double_dqn": "yes"}, "double_dqn"),
        ({"dueling": 1}, "dueling"),
        ({"fused_mlp": "no"}, "fused_mlp must be a bool"),
    ],
)
def test_config_validation(overrides: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        AgentConfig(**overrides)


def test_config_defaults_docs_and_frozen() -> None:
    config = AgentConfig()
    assert (config.network, config.lr, config.gamma, config.tau) == ("recurrent", 1e-3, 0.99, 0.005)
    assert config.grad_clip_norm == 10.0 and AgentConfig(grad_clip_norm=None).grad_clip_norm is None
    for item in dataclasses.fields(AgentConfig):
        assert item.metadata["doc"] and item.metadata["label"] and item.metadata["rule"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.gamma = 0.5  # type: ignore[misc]
    with pytest.raises(TypeError):
        AgentConfig("mlp")  # type: ignore[misc]


def test_resolve_device_names_and_rejects_unknown() -> None:
    assert resolve_device("cpu").type == "cpu"
    with pytest.raises(
        ValueError, match=r"device must be one of \('auto', 'cpu', 'cuda'\), got 'tpu'"
    ):
        resolve_device("tpu")
