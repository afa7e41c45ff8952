"""Tests for rdqn.config: validation names the field, JSON round trip, presets, overrides."""

from __future__ import annotations

import dataclasses

import pytest

from rdqn.config import (
    AgentConfig,
    EnvConfig,
    ReplayConfig,
    RunConfig,
    TrainConfig,
    config_field,
    field_docs,
)
from rdqn.presets import configure, preset
from rdqn.validation import Integer, Real


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


@pytest.mark.parametrize(
    ("factory", "kwargs", "match"),
    [
        (ReplayConfig, {"alpha": -0.1}, r"alpha must be in \[0, 1\], got -0.1"),
        (ReplayConfig, {"alpha": 1.5}, r"alpha must be in \[0, 1\], got 1.5"),
        (RunConfig, {"preset": "foo"}, r"preset must be one of \(None, 'e14'.*got 'foo'"),
        (RunConfig, {"seed": 2**31}, r"seed must be an integer from 0 to 2,147,483,647"),
        (EnvConfig, {"kwargs": [1]}, r"kwargs must be a JSON object"),
        (ReplayConfig, {"beta0": 1.5}, r"beta0 must be in \[0, 1\], got 1.5"),
        (ReplayConfig, {"eps": 0.0}, r"eps must be a finite number > 0, got 0.0"),
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
    with pytest.raises(ValueError, match=r"replay.window must be at most replay.capacity \(64\)"):
        RunConfig(replay=ReplayConfig(capacity=64, batch_size=32, window=2**40))


def test_from_dict_rejects_unknown_keys_with_their_path() -> None:
    data = RunConfig().to_dict()
    data["replay"]["alpah"] = 0.7
    with pytest.raises(ValueError, match=r"unknown config field\(s\) in replay: alpah"):
        RunConfig.from_dict(data)
    with pytest.raises(ValueError, match=r"unknown config field\(s\): colour"):
        RunConfig.from_dict({"colour": "red"})


def test_a_stored_config_with_the_retired_rank_sort_period_loads() -> None:
    """Runs stored before the rank order became exact hold replay.rank_sort_every; it is
    dropped (RETIRED_FIELDS), and only there: at the top level it is still unknown."""
    data = RunConfig().to_dict()
    data["replay"]["rank_sort_every"] = 64
    assert RunConfig.from_dict(data) == RunConfig()
    with pytest.raises(ValueError, match=r"unknown config field\(s\): rank_sort_every"):
        RunConfig.from_dict({**RunConfig().to_dict(), "rank_sort_every": 64})


def test_from_dict_prefixes_nested_errors_with_the_section() -> None:
    data = RunConfig().to_dict()
    data["replay"]["alpha"] = -1
    with pytest.raises(ValueError, match=r"replay.alpha must be"):
        RunConfig.from_dict(data)


def test_from_dict_accepts_integral_floats_and_rejects_non_mappings() -> None:
    data = RunConfig().to_dict()
    data["replay"]["alpha"] = 1  # JSON writers drop ".0"
    assert RunConfig.from_dict(data).replay.alpha == 1.0
    with pytest.raises(ValueError, match="config must be a mapping"):
        RunConfig.from_dict([1, 2])  # type: ignore[arg-type]
    data["replay"] = [1]
    with pytest.raises(ValueError, match="replay must be a mapping, got \\[1\\]"):
        RunConfig.from_dict(data)


def test_with_overrides_replaces_dotted_fields_and_validates() -> None:
    config = preset("e14").with_overrides({"replay.alpha": 0.7, "seed": 3})
    assert config.replay.alpha == 0.7 and config.seed == 3
    assert config.agent == preset("e14").agent
    with pytest.raises(ValueError, match=r"unknown config field 'replay.alfa'"):
        config.with_overrides({"replay.alfa": 1.0})
    with pytest.raises(ValueError, match=r"replay.alpha must be"):
        config.with_overrides({"replay.alpha": -2.0})


def test_with_overrides_names_a_group_and_suggests_a_field_for_a_typo() -> None:
    """Regression: ``replay=3`` reported "unknown config field 'replay.capacity'"."""
    config = preset("per-notebook")
    with pytest.raises(ValueError, match=r"^'replay' is a group of fields, not one field; set "):
        config.with_overrides({"replay": 3})
    with pytest.raises(ValueError, match=r"unknown config field 'replay.alfa'; did you mean "):
        config.with_overrides({"replay.alfa": 1.0})
    with pytest.raises(ValueError, match=r"unknown config field 'zzz'$"):
        config.with_overrides({"zzz": 1.0})


def test_an_integer_too_large_for_a_float_is_refused_by_the_rule() -> None:
    """Regression: a 400-digit learning rate raised OverflowError converting to float."""
    with pytest.raises(ValueError, match=r"agent.lr must be .* got 1{60}\.\.\. \(400 characters\)"):
        preset("per-notebook").with_overrides({"agent.lr": int("1" * 400)})


def test_configs_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        RunConfig().seed = 4  # type: ignore[misc]


def test_every_leaf_field_has_a_doc() -> None:
    docs = field_docs()
    assert docs["replay.alpha"].startswith("Priority exponent")
    assert "agent.gamma" in docs and "train.total_steps" in docs
    assert all(docs.values()), [k for k, v in docs.items() if not v]


def test_every_leaf_field_states_its_rule_and_label() -> None:
    for path in field_docs():
        metadata = config_field(path).metadata
        assert metadata["rule"] is not None, path
        assert metadata["label"], path


def test_config_field_finds_leaves_and_rejects_groups_and_typos() -> None:
    assert config_field("replay.alpha").metadata["rule"] == Real(minimum=0.0, maximum=1.0)
    assert config_field("seed").metadata["rule"] == Integer(minimum=0, maximum=2**31 - 1)
    with pytest.raises(ValueError, match="'replay' is a group of fields"):
        config_field("replay")
    for bad in ("replay.alfa", "nope", "seed.x", "replay.alpha.x"):
        with pytest.raises(ValueError, match="unknown config field"):
            config_field(bad)


def test_get_reads_dotted_fields() -> None:
    config = preset("e14")
    assert config.get("replay.window") == 8
    assert config.get("agent.tau") == 0.005
    assert config.get("preset") == "e14"


def test_with_env_drops_env_options_only_on_another_env() -> None:
    paper = preset("paper")
    assert paper.with_env("rdqn/BlindCliffwalk-v0") is paper
    moved = paper.with_env("CartPole-v1")
    assert (moved.env.id, moved.env.kwargs) == ("CartPole-v1", {})
    with pytest.raises(ValueError, match="env.id must be one of"):
        paper.with_env("Pong-v5")


def test_with_budget_caps_the_warm_up_at_a_tenth_but_one_batch() -> None:
    per = preset("per-notebook")  # learning_starts 1,000, batch 32
    assert per.with_budget(300).train.learning_starts == 32  # a tenth (30) is below one batch
    assert per.with_budget(5_000).train.learning_starts == 500
    assert per.with_budget(50_000).train.learning_starts == 1_000  # the preset's own
    assert per.with_budget(5_000).train.total_steps == 5_000
    with pytest.raises(ValueError, match="train.total_steps must be an integer >= 1, got 0"):
        per.with_budget(0)


@pytest.mark.parametrize(
    ("overrides", "first"),
    [
        ({"train.learning_starts": 1180591620717411303424}, "1180591620717411303425"),
        ({"train.train_every": 1180591620717411303424}, "1180591620717411303424"),
        ({"train.learning_starts": 5_000}, "5001"),  # the budget is 5,000 steps
        ({"train.train_every": 5_001}, "5001"),
        ({"train.learning_starts": 4_000, "train.train_every": 2_000}, "6000"),
    ],
)
def test_a_config_that_can_never_learn_is_refused(overrides: dict[str, int], first: str) -> None:
    """Regression: such configs ran to 'finished, 0 updates'. The error names the fields, their
    values and the budget."""
    base = preset("per-notebook").with_overrides({"train.total_steps": 5_000})
    with pytest.raises(ValueError, match=r"leave no learner update") as caught:
        base.with_overrides(overrides)
    message = str(caught.value)
    train = {**dataclasses.asdict(base.train), **{k[6:]: v for k, v in overrides.items()}}
    assert f"train.learning_starts = {train['learning_starts']}" in message
    assert f"train.train_every = {train['train_every']}" in message
    assert "train.total_steps = 5,000" in message
    assert f"env step {first}" in message


def test_one_update_within_the_budget_is_enough() -> None:
    base = preset("per-notebook")
    assert base.with_overrides({"train.total_steps": 33, "train.learning_starts": 32})
    assert base.with_overrides({"train.total_steps": 4_000, "train.train_every": 4_000})
    assert base.with_budget(33).train.planned_updates == 1
    with pytest.raises(ValueError, match="within train.total_steps = 32 "):
        base.with_budget(32)  # the warm-up holds one batch (32 steps): nothing is left


def test_with_budget_applies_its_overrides_with_the_new_budget() -> None:
    """The preset's budget (100,000 steps) does not judge overrides meant for another budget."""
    per = preset("per-notebook")
    config = per.with_budget(200, {"train.train_every": 50, "replay.batch_size": 16})
    assert (config.train.total_steps, config.train.learning_starts) == (200, 20)
    assert config.train.planned_updates == 4
    with pytest.raises(ValueError, match="train.total_steps = 200 "):
        per.with_budget(200, {"train.train_every": 1000})


def test_leaves_and_overrides_from_round_trip() -> None:
    base = preset("per-notebook")
    changed = base.with_overrides({"replay.alpha": 0.8, "seed": 3, "env.kwargs": {"a": 1}})
    overrides = changed.overrides_from(base)
    assert overrides == {"replay.alpha": 0.8, "seed": 3, "env.kwargs": {"a": 1}}
    assert base.with_overrides(overrides) == changed
    assert len(base.leaves()) == len(field_docs())
    assert base.overrides_from(base) == {}


def test_stop_at_return_is_none_or_a_finite_number() -> None:
    def goal(value: object) -> float | None:
        return (
            preset("per-notebook")
            .with_overrides({"train.stop_at_return": value})
            .train.stop_at_return
        )

    assert preset("per-notebook").train.stop_at_return is None
    assert (goal(475), goal(-20.5), goal(None)) == (475.0, -20.5, None)
    for bad in (float("nan"), float("inf"), "475"):
        with pytest.raises(ValueError, match=r"train.stop_at_return must be None or a finite"):
            goal(bad)


def test_a_finished_run_says_whether_it_reached_its_goal_or_spent_its_budget() -> None:
    demo = preset("demo").train  # a goal of 475 within 100,000 steps
    assert demo.reached_goal(29_403)
    assert demo.finished_how(29_403) == (
        "it reached its goal, a mean return of 475 over 20 episodes"
    )
    assert not demo.reached_goal(demo.total_steps)
    assert demo.finished_how(demo.total_steps) == "its budget of steps is spent"
    plain = preset("per-notebook").train  # no goal
    assert not plain.reached_goal(10)
    assert plain.finished_how(10) == "its budget of steps is spent"


def test_the_conv_network_needs_a_minatar_env() -> None:
    with pytest.raises(ValueError, match=r"agent.network=conv reads MinAtar's 10x10 frames, which "
                                         r"CartPole-v1 does not give"):  # fmt: skip
        configure("minatar", {"env.id": "CartPole-v1"})
    assert configure("minatar", {"env.id": "rdqn/MinAtar-Freeway-v0"}).agent.network == "conv"


SEQUENCE_MODE = {"replay.mode": "sequences"}


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"replay.sequence_overlap": 40}, r"sequence_overlap must be below sequence_length \(40\)"),
        ({"replay.burn_in": 21}, r"burn_in must be at most sequence_overlap \(20\), got 21"),
        ({"replay.capacity": 79, "replay.batch_size": 8}, "capacity must hold two sequences, 2 x"),
        ({"agent.network": "mlp", "replay.window": 1}, "needs agent.network 'recurrent'"),
        ({"train.learning_starts": 39, "replay.sequence_length": 40}, "learning_starts must be >="),
    ],
)
def test_sequence_mode_settings_are_checked_with_their_reason(
    overrides: dict[str, object], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        preset("e14").with_overrides({**SEQUENCE_MODE, **overrides, "replay.batch_size": 8})


def test_sequence_settings_are_read_only_in_sequence_mode() -> None:
    """Windows mode ignores them (a windows run is unchanged by them); the default mode is
    windows, so every stored config without the fields loads as before."""
    config = preset("e14").with_overrides({"replay.sequence_overlap": 99, "replay.burn_in": 500})
    assert config.replay.mode == "windows"
    stored = preset("e14").to_dict()
    for name in ("mode", "sequence_length", "sequence_overlap", "burn_in", "priority_eta"):
        del stored["replay"][name]
    del stored["replay"]["stored_state"]
    assert RunConfig.from_dict(stored) == preset("e14")
    sequences = preset("e14").with_overrides({**SEQUENCE_MODE, "replay.burn_in": 0})
    assert (sequences.replay.sequence_length, sequences.replay.sequence_overlap) == (40, 20)


def test_with_budget_keeps_a_warm_up_of_one_sequence_in_sequence_mode() -> None:
    """A tenth of 200 steps is 20: more than a batch of 8, but less than the sequence of 40
    steps the first update needs, so the warm-up is 40; a tenth of 5,000 is 500."""
    config = preset("e14").with_overrides(
        {**SEQUENCE_MODE, "replay.batch_size": 8, "train.learning_starts": 1000}
    )
    assert config.with_budget(200).train.learning_starts == 40
    assert config.with_budget(5000).train.learning_starts == 500
