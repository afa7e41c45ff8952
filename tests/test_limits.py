"""Resource limits (`rdqn.limits`): read from RDQN_LIMIT_* variables, checked before anything is
allocated, refusals naming the setting, its value, the limit and the variable."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rdqn.envs import CsvLimits
from rdqn.limits import (
    STATE_VALUES,
    LimitError,
    Limits,
    check_comparison_runs,
    check_limits,
    check_threads,
    describe,
    memory_estimate,
    variable,
)
from rdqn.presets import PRESETS, configure, preset
from rdqn.replay import ProportionalSampler, RankBasedSampler, ReplayBuffer, UniformSampler
from rdqn.training.trainer import Trainer

SMALL = Limits(
    capacity=1000,
    total_steps=5000,
    window=4,
    batch_size=64,
    env_size=20,
    episode_steps=100,
    threads=2,
    comparison_runs=6,
    memory_bytes=2 << 20,
    csv_bytes=1000,
    csv_rows=50,
    csv_columns=3,
)


def test_defaults_and_variables() -> None:
    limits = Limits()
    assert (limits.capacity, limits.total_steps, limits.window, limits.batch_size) == (
        2_000_000,
        10_000_000,
        64,
        4096,
    )
    assert limits.memory_bytes == 4 << 30
    assert limits.threads >= 1
    assert variable("memory_bytes") == "RDQN_LIMIT_MEMORY_BYTES"
    assert set(describe(limits)) == {
        f"RDQN_LIMIT_{f.name.upper()}" for f in dataclasses.fields(Limits)
    }


def test_every_preset_is_within_the_default_limits() -> None:
    for name in PRESETS:
        check_limits(preset(name), Limits())


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, {}),
        ({"RDQN_LIMIT_CAPACITY": "1000"}, {"capacity": 1000}),
        ({"RDQN_LIMIT_CAPACITY": " 2_000_000 "}, {"capacity": 2_000_000}),
        ({"RDQN_LIMIT_MEMORY_BYTES": "8GiB"}, {"memory_bytes": 8 << 30}),
        ({"RDQN_LIMIT_MEMORY_BYTES": "512M"}, {"memory_bytes": 512 << 20}),
        ({"RDQN_LIMIT_CSV_BYTES": "64kib"}, {"csv_bytes": 64 << 10}),
        ({"RDQN_LIMIT_THREADS": "3", "PATH": "/bin", "RDQN_HOME": "/x"}, {"threads": 3}),
    ],
)
def test_from_env(environ: dict[str, str], expected: dict[str, int]) -> None:
    assert Limits.from_env(environ) == dataclasses.replace(Limits(), **expected)


@pytest.mark.parametrize(
    ("environ", "match"),
    [
        ({"RDQN_LIMIT_CAPACITY": "x"}, r"RDQN_LIMIT_CAPACITY must be a positive integer, got 'x'"),
        ({"RDQN_LIMIT_CAPACITY": "0"}, r"RDQN_LIMIT_CAPACITY .* got '0'"),
        ({"RDQN_LIMIT_CAPACITY": "-5"}, r"RDQN_LIMIT_CAPACITY .* got '-5'"),
        ({"RDQN_LIMIT_CAPACITY": "1.5"}, r"RDQN_LIMIT_CAPACITY .* got '1.5'"),
        ({"RDQN_LIMIT_CAPACITY": "1G"}, r"RDQN_LIMIT_CAPACITY .* got '1G'"),  # not a byte limit
        ({"RDQN_LIMIT_CAPACITY": ""}, r"RDQN_LIMIT_CAPACITY .* got ''"),
        ({"RDQN_LIMIT_MEMORY_BYTES": "4 GB of RAM"}, r"RDQN_LIMIT_MEMORY_BYTES .* 4GiB"),
        ({"RDQN_LIMIT_CAPACTY": "5"}, r"RDQN_LIMIT_CAPACTY is not a limit; the limits are "),
    ],
)
def test_bad_variables_name_the_variable(environ: dict[str, str], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Limits.from_env(environ)


def test_the_csv_limits_are_the_envs_own() -> None:
    """The market reads its CSV limits itself (a lower layer); the server's Limits agree."""
    for environ in ({}, {"RDQN_LIMIT_CSV_ROWS": "7", "RDQN_LIMIT_CSV_BYTES": "1MiB"}):
        server, csv = Limits.from_env(environ), CsvLimits.from_env(environ)
        assert (csv.csv_bytes, csv.csv_rows, csv.csv_columns) == (
            server.csv_bytes,
            server.csv_rows,
            server.csv_columns,
        )
    assert CsvLimits.from_env({"RDQN_LIMIT_CSV_BYTES": "1MiB"}).csv_bytes == 1 << 20


def test_the_process_environment_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RDQN_LIMIT_CAPACITY", "123")
    assert Limits.from_env().capacity == 123
    with pytest.raises(LimitError, match="RDQN_LIMIT_CAPACITY"):
        check_limits(configure("per-notebook", {"replay.capacity": 124}))


def test_limits_themselves_are_validated() -> None:
    with pytest.raises(ValueError, match="Limits.window must be an integer >= 1, got 0"):
        Limits(window=0)


TINY = {
    "train.total_steps": 2000,
    "train.learning_starts": 32,
    "replay.batch_size": 16,
    "replay.capacity": 500,
}


@pytest.mark.parametrize(
    ("preset_name", "overrides", "needles"),
    [
        (
            "per-notebook",
            {"replay.capacity": 1001},
            ["replay.capacity = 1,001", "1,000", "RDQN_LIMIT_CAPACITY"],
        ),
        (
            "per-notebook",
            {"train.total_steps": 5001},
            ["train.total_steps = 5,001", "5,000", "RDQN_LIMIT_TOTAL_STEPS"],
        ),
        (
            "e14-lesson",
            {"replay.window": 5},
            ["replay.window = 5", "limit of 4", "RDQN_LIMIT_WINDOW"],
        ),
        (
            "per-notebook",
            {"replay.batch_size": 65, "train.learning_starts": 100},
            ["replay.batch_size = 65", "64", "RDQN_LIMIT_BATCH_SIZE"],
        ),
        ("paper", {"env.kwargs": {"n": 21}}, ["env.kwargs.n = 21", "20", "RDQN_LIMIT_ENV_SIZE"]),
        (
            "chain-lesson",
            {"env.kwargs": {"n": 8, "max_steps": 101}},
            ["env.kwargs.max_steps = 101", "RDQN_LIMIT_EPISODE_STEPS"],
        ),
        (
            "e15",
            {"replay.window": 4, "env.kwargs": {"episode_length": 101}},
            ["env.kwargs.episode_length = 101", "RDQN_LIMIT_EPISODE_STEPS"],
        ),
        (
            "e15",
            {"replay.window": 4, "env.kwargs": {"n_returns": 21}},
            ["env.kwargs.n_returns = 21", "RDQN_LIMIT_ENV_SIZE"],
        ),
        (
            "per-notebook",
            {"env.kwargs": {"max_episode_steps": 101}},
            ["env.kwargs.max_episode_steps = 101", "RDQN_LIMIT_EPISODE_STEPS"],
        ),
        (
            "e15",
            {"replay.window": 4, "env.kwargs": {"prices": [100.0] * 51}},
            ["env.kwargs.prices", "51", "RDQN_LIMIT_CSV_ROWS"],
        ),
        (
            "e14",
            {
                "replay.capacity": 1000,
                "replay.window": 4,
                "replay.batch_size": 64,
                "train.learning_starts": 64,
            },
            ["memory", "replay.capacity", "RDQN_LIMIT_MEMORY_BYTES"],
        ),
    ],
)
def test_each_limit_refuses_with_setting_value_limit_and_variable(
    preset_name: str, overrides: dict, needles: list[str]
) -> None:
    config = configure(preset_name, {**TINY, **overrides})
    with pytest.raises(LimitError) as refused:
        check_limits(config, SMALL)
    for needle in needles:
        assert needle in str(refused.value)


def test_a_config_at_every_limit_passes() -> None:
    config = configure(
        "per-notebook",
        {
            "replay.capacity": 1000,
            "train.total_steps": 5000,
            "replay.batch_size": 64,
            "train.learning_starts": 64,
            "env.kwargs": {"max_episode_steps": 100},
        },
    )
    check_limits(config, SMALL)


def test_threads_and_comparison_runs() -> None:
    check_threads(2, SMALL)
    with pytest.raises(
        LimitError,
        match=r"--threads = 3 is above this server's limit of 2 \(cores\).*RDQN_LIMIT_THREADS",
    ):
        check_threads(3, SMALL)
    with pytest.raises(LimitError, match=r"--parallel = 9 .*RDQN_LIMIT_THREADS"):
        check_threads(9, SMALL, "--parallel")
    check_comparison_runs(6, SMALL)
    with pytest.raises(LimitError, match=r"= 7 .*limit of 6.*RDQN_LIMIT_COMPARISON_RUNS"):
        check_comparison_runs(7, SMALL)


SAMPLERS = {
    "uniform": UniformSampler,
    "proportional": ProportionalSampler,
    "rank": RankBasedSampler,
}


@pytest.mark.parametrize("scheme", list(SAMPLERS))
@pytest.mark.parametrize(
    ("preset_name", "env"),
    [
        ("per-notebook", None),
        ("paper", None),
        ("e15", None),
        ("e14-lesson", "rdqn/SparseChain-v0"),
        ("minatar", None),  # frames stored as flags: a byte a value, not float32's four
    ],
)
def test_memory_estimate_covers_the_replay_memory_a_trainer_builds(
    scheme: str, preset_name: str, env: str | None
) -> None:
    overrides = {**TINY, "replay.scheme": scheme}
    if env is not None:
        overrides["env.id"] = env
    config = configure(preset_name, overrides)
    trainer = Trainer(config)
    try:
        buffer: ReplayBuffer = trainer.buffer
        obs = np.zeros(trainer.obs_shape, buffer.storage.obs_dtype)
        for _ in range(config.replay.capacity):
            buffer.add(obs, 0, 0.0, obs, False, False)
        estimate = memory_estimate(config)
        assert buffer.nbytes <= estimate
        assert estimate <= buffer.nbytes + (8 << 20)  # plus a batch and a small net
    finally:
        trainer.close()


@pytest.mark.parametrize("stored_state", [True, False])
@pytest.mark.parametrize("scheme", list(SAMPLERS))
def test_memory_estimate_covers_a_full_sequence_replay(scheme: str, stored_state: bool) -> None:
    """Sequence replay: the steps, every sequence slot with its state, the sampler over them
    and its removed-slot flags (episodes of 1 and 2 steps fill every slot, and the ring wraps)."""
    config = configure(
        "e14",
        {
            **TINY,
            "replay.scheme": scheme,
            "replay.mode": "sequences",
            "replay.sequence_length": 4,
            "replay.sequence_overlap": 2,
            "replay.burn_in": 2,
            "replay.stored_state": stored_state,
        },
    )
    trainer = Trainer(config)
    try:
        buffer = trainer.buffer
        shape, state = trainer.obs_shape, np.zeros(STATE_VALUES, np.float32)
        for k in range(2 * config.replay.capacity):
            buffer.add(np.zeros(shape), 0, 0.0, np.zeros(shape), k % 4 != 0, False, state=state)
        assert buffer.index.used == buffer.index.capacity and buffer.index.head > 0
        estimate = memory_estimate(config)
        assert buffer.nbytes <= estimate <= buffer.nbytes + (8 << 20)
    finally:
        trainer.close()


def test_the_state_a_server_counts_is_the_recurrent_nets() -> None:
    from rdqn.learn.nets import STATE_SIZE

    assert STATE_VALUES == STATE_SIZE


def test_memory_estimate_grows_with_the_observation() -> None:
    small = configure("paper", {"env.kwargs": {"n": 8}})
    large = configure("paper", {"env.kwargs": {"n": 800}})
    assert memory_estimate(large) > memory_estimate(small) + 2 * 792 * 4 * 10_000


def test_wrong_types_are_left_to_the_config_and_the_env() -> None:
    """A size of the wrong type is not compared (the env names what it allows when built)."""
    config = configure("chain-lesson", {"env.kwargs": {"n": 8, "max_steps": "many"}})
    check_limits(config, Limits())
    with pytest.raises(ValueError, match="max_steps must be an integer >= 1, got 'many'"):
        Trainer(config)


def test_minatar_frames_are_estimated_at_a_byte_a_value() -> None:
    """The minatar preset's memory of 100,000 Breakout frames (400 flags each, o_t and o_t+1)
    holds 80 MB of observations, not float32's 320 MB."""
    config = configure("minatar", {"env.id": "rdqn/MinAtar-Breakout-v0"})
    assert config.replay.capacity == 100_000
    assert 2 * 400 * 100_000 < memory_estimate(config) < 2 * 400 * 4 * 100_000
