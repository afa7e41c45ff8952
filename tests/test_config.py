"""Tests for rdqn.config: validation names the field, JSON round trip, presets, overrides."""

from __future__ import annotations

import dataclasses

import pytest

from rdqn.config import AgentConfig, EnvConfig, ReplayConfig, RunConfig, TrainConfig, field_docs
from rdqn.presets import PRESETS, preset


def test_default_run_config_is_the_per_notebook_setup() -> None:
    config = RunConfig()
    assert config.env.id == "CartPole-v1"
    assert (config.replay.capacity, config.replay.batch_size, config.replay.window) == (
        10_000,
        32,
        1,
    )
    assert config.agent.network == "mlp"
    assert config.agent.target_update == "hard"


@pytest.mark.parametrize("name", list(PRESETS))
def test_presets_round_trip_through_json(name: str) -> None:
    config = preset(name)
    assert config.preset == name
    assert RunConfig.from_json(config.to_json()) == config
    assert RunConfig.from_dict(config.to_dict()) == config


def test_preset_table_matches_the_design() -> None:
    e14, e15, per, paper = (preset(n) for n in ("e14", "e15", "per-notebook", "paper"))
    assert (e14.agent.network, e14.replay.scheme, e14.agent.target_update) == (
        "recurrent",
        "proportional",
        "soft",
    )
    assert (e14.replay.alpha, e14.replay.beta0, e14.agent.tau) == (0.6, 0.4, 0.005)
    assert (e14.agent.lr, e14.agent.gamma, e14.replay.capacity, e14.replay.batch_size) == (
        1e-3,
        0.99,
        50_000,
        128,
    )
    assert (e15.agent.network, e15.replay.scheme, e15.agent.target_update) == (
        "recurrent",
        "uniform",
        "hard",
    )
    assert (per.agent.network, per.replay.capacity, per.replay.batch_size) == ("mlp", 10_000, 32)
    assert (paper.agent.network, paper.replay.beta0, paper.env.id) == (
        "linear",
        0.5,
        "rdqn/BlindCliffwalk-v0",
    )


def test_unknown_preset_lists_the_allowed_ones() -> None:
    with pytest.raises(ValueError, match=r"preset must be one of .*'e14'.*got 'e16'"):
        preset("e16")


@pytest.mark.parametrize(
    ("factory", "kwargs", "match"),
    [
        (ReplayConfig, {"alpha": -0.1}, r"alpha must be a finite number >= 0, got -0.1"),
        (ReplayConfig, {"beta0": 1.5}, r"beta0 must be in \[0, 1\], got 1.5"),
        (ReplayConfig, {"capacity": 0}, r"capacity must be an integer >= 1, got 0"),
        (ReplayConfig, {"scheme": "prio"}, r"scheme must be one of .*got 'prio'"),
        (ReplayConfig, {"batch_size": 64, "capacity": 32}, r"batch_size must be <= capacity"),
        (ReplayConfig, {"window": 1.5}, r"window must be an integer"),
        (TrainConfig, {"total_steps": -5}, r"total_steps must be an integer >= 1, got -5"),
        (TrainConfig, {"epsilon_end": 2.0}, r"epsilon_end must be in \[0, 1\]"),
        (EnvConfig, {"id": "Pong-v5"}, r"id must be one of .*got 'Pong-v5'"),
        (AgentConfig, {"gamma": 1.5}, r"gamma must be in \[0, 1\], got 1.5"),
    ],
)
def test_out_of_range_values_name_the_field(factory, kwargs, match) -> None:  # noqa: ANN001
    with pytest.raises(ValueError, match=match):
        factory(**kwargs)


def test_cross_field_rules() -> None:
    with pytest.raises(ValueError, match=r"learning_starts must be >= replay.batch_size"):
        RunConfig(train=TrainConfig(learning_starts=8))
    with pytest.raises(ValueError, match=r"replay.window must be 1 for the mlp network"):
        RunConfig(replay=ReplayConfig(capacity=10_000, batch_size=32, window=4))


def test_from_dict_rejects_unknown_keys_with_their_path() -> None:
    data = RunConfig().to_dict()
    data["replay"]["alpah"] = 0.7
    with pytest.raises(ValueError, match=r"unknown config field\(s\) in replay: alpah"):
        RunConfig.from_dict(data)
    with pytest.raises(ValueError, match=r"unknown config field\(s\): colour"):
        RunConfig.from_dict({"colour": "red"})


def test_from_dict_prefixes_nested_errors_with_the_section() -> None:
    data = RunConfig().to_dict()
    data["replay"]["alpha"] = -1
    with pytest.raises(ValueError, match=r"replay.alpha must be"):
        RunConfig.from_dict(data)


def test_from_json_accepts_integral_floats_and_rejects_garbage() -> None:
    data = RunConfig().to_dict()
    data["replay"]["alpha"] = 1  # JSON writers drop ".0"
    assert RunConfig.from_dict(data).replay.alpha == 1.0
    with pytest.raises(ValueError, match="not valid JSON"):
        RunConfig.from_json("{nope")
    with pytest.raises(ValueError, match="must be an object"):
        RunConfig.from_json("[1, 2]")


def test_with_overrides_replaces_dotted_fields_and_validates() -> None:
    config = preset("e14").with_overrides({"replay.alpha": 0.7, "seed": 3})
    assert config.replay.alpha == 0.7 and config.seed == 3
    assert config.agent == preset("e14").agent
    with pytest.raises(ValueError, match=r"unknown config field 'replay.alfa'"):
        config.with_overrides({"replay.alfa": 1.0})
    with pytest.raises(ValueError, match=r"replay.alpha must be"):
        config.with_overrides({"replay.alpha": -2.0})


def test_configs_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        RunConfig().seed = 4  # type: ignore[misc]


def test_every_leaf_field_has_a_doc() -> None:
    docs = field_docs()
    assert docs["replay.alpha"].startswith("Priority exponent")
    assert "agent.gamma" in docs and "train.total_steps" in docs
    assert all(docs.values()), [k for k, v in docs.items() if not v]
