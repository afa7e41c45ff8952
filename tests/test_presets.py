"""Tests for rdqn.presets: the named configs, the paper's rank alpha, presets with overrides."""

from __future__ import annotations

import dataclasses
import json

import pytest

from rdqn.config import PRESET_NAMES, RunConfig
from rdqn.presets import FEED_FORWARD_LESSON, PAPER_RANK_ALPHA, PRESETS, configure, preset
from rdqn.training.trainer import Trainer


def test_preset_names_are_listed_once() -> None:
    assert tuple(PRESETS) == PRESET_NAMES


@pytest.mark.parametrize("name", list(PRESETS))
def test_presets_round_trip_through_json(name: str) -> None:
    config = preset(name)
    assert config.preset == name
    assert RunConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config
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


def test_chain_lesson_is_the_paper_learner_on_the_sparse_chain() -> None:
    """The fields its docstring (and benchmarks/results/compare_default.md) describe."""
    lesson, paper = preset("chain-lesson"), preset("paper")
    assert (lesson.env.id, lesson.env.kwargs) == ("rdqn/SparseChain-v0", {"n": 8, "max_steps": 32})
    assert lesson.agent == dataclasses.replace(paper.agent, lr=0.1)
    assert (lesson.replay.alpha, lesson.replay.beta0, lesson.replay.beta_end) == (0.6, 0.0, 0.0)
    assert (lesson.replay.capacity, lesson.replay.batch_size) == (10_000, 32)
    train = lesson.train
    assert (train.total_steps, train.learning_starts, train.epsilon_fraction) == (4_000, 1_500, 0.5)


def test_unknown_preset_lists_the_allowed_ones() -> None:
    with pytest.raises(ValueError, match=r"preset must be one of .*'e14'.*got 'e16'"):
        preset("e16")


def test_paper_rank_alpha_is_table_3s() -> None:
    assert PAPER_RANK_ALPHA == 0.7


def test_configure_applies_overrides_to_the_preset() -> None:
    config = configure("e14", {"replay.alpha": 0.8, "seed": 2})
    assert config == preset("e14").with_overrides({"replay.alpha": 0.8, "seed": 2})
    assert configure("e14") == preset("e14")


def test_configure_moves_env_before_the_other_overrides() -> None:
    config = configure("paper", {"env.id": "rdqn/SparseChain-v0", "env.kwargs": {"n": 5}})
    assert (config.env.id, config.env.kwargs) == ("rdqn/SparseChain-v0", {"n": 5})
    assert configure("paper", {"env.id": "CartPole-v1"}).env.kwargs == {}
    with pytest.raises(ValueError, match="replay.window must be 1"):
        configure("per-notebook", {"replay.window": 4})


def test_configure_caps_the_warm_up_of_a_budget_unless_the_warm_up_is_set() -> None:
    assert configure("per-notebook", {"train.total_steps": 500}).train.learning_starts == 50
    short = configure("per-notebook", {"train.total_steps": 1000, "replay.batch_size": 256})
    assert (short.train.learning_starts, short.replay.batch_size) == (256, 256)
    chosen = configure("per-notebook", {"train.total_steps": 500, "train.learning_starts": 64})
    assert (chosen.train.total_steps, chosen.train.learning_starts) == (500, 64)
    assert configure("per-notebook", {"train.total_steps": 50_000}).train.learning_starts == 1000


def test_e14_lesson_is_e14_with_the_documented_four_fields_changed() -> None:
    lesson = preset("e14-lesson")
    assert lesson.overrides_from(preset("e14")) == {
        "preset": "e14-lesson",
        "replay.window": 4,
        "replay.batch_size": 32,
        "train.train_every": 2,
        "train.total_steps": 20_000,
    }
    assert (lesson.env.id, lesson.agent.network, lesson.replay.scheme) == (
        "rdqn/MaskedCartPole-v0",
        "recurrent",
        "proportional",
    )


def test_e14_lessons_feed_forward_partner_differs_only_in_memory() -> None:
    lesson = preset("e14-lesson")
    partner = configure("e14-lesson", FEED_FORWARD_LESSON)
    assert partner.overrides_from(lesson) == {"agent.network": "mlp", "replay.window": 1}


@pytest.mark.slow  # trains or starts a process for seconds
@pytest.mark.parametrize("overrides", [{}, FEED_FORWARD_LESSON], ids=["recurrent", "feed-forward"])
def test_e14_lesson_trains_a_few_hundred_steps(overrides: dict[str, object]) -> None:
    config = configure("e14-lesson", {**overrides, "train.total_steps": 200})
    trainer = Trainer(config).run()
    assert (trainer.status, trainer.env_steps) == ("finished", 200)
    assert trainer.updates == (200 - config.train.learning_starts) // 2
    assert trainer.episodes > 0
