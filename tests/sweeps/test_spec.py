"""Sweep specs: the grid from --grid items and TOML files, every bad entry one clear error, and
trials with stable keys and a stable sweep id."""

from __future__ import annotations

from pathlib import Path

import pytest

from rdqn.presets import configure
from rdqn.sweeps import MAX_TRIALS, GridError, SweepSpec, Trial, grid_from_items
from rdqn.sweeps.spec import parse_grid_item, trial_key

PRESET = "chain-lesson"


def spec(grid: dict, seeds=2, steps: int | None = 300, **kwargs) -> SweepSpec:  # noqa: ANN001
    return SweepSpec.from_grid(PRESET, grid, seeds, steps, **kwargs)


# ------------------------------------------------------------------------------ --grid items
@pytest.mark.parametrize(
    ("item", "key", "values"),
    [
        ("replay.alpha=0,0.4,1", "replay.alpha", [0, 0.4, 1]),
        ("replay.scheme=proportional,rank", "replay.scheme", ["proportional", "rank"]),
        ('replay.scheme="uniform",rank', "replay.scheme", ["uniform", "rank"]),
        ('env.kwargs={"n": 4},{"n": 8}', "env.kwargs", [{"n": 4}, {"n": 8}]),
        ("replay.max_weight=null,10", "replay.max_weight", [None, 10]),
        ("agent.double_dqn=true,false", "agent.double_dqn", [True, False]),
        (" replay.alpha = 0.5", "replay.alpha", [0.5]),
    ],
)
def test_a_grid_item_reads_json_values_or_bare_words(item: str, key: str, values: list) -> None:
    assert parse_grid_item(item) == (key, values)


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (["replay.alpha"], r"--grid expects KEY=V1,V2,..., got 'replay.alpha'"),
        (["=1,2"], r"--grid expects KEY=V1,V2"),
        (["replay.alpha=0,,1"], r"--grid replay.alpha=0,,1: an empty value between commas"),
        (["replay.alpha=0,1", "replay.alpha=2"], r"--grid replay.alpha: given twice"),
    ],
)
def test_a_malformed_grid_item_is_one_error_naming_it(items: list[str], message: str) -> None:
    with pytest.raises(GridError, match=message):
        grid_from_items(items)


# ----------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    ("grid", "message"),
    [
        (
            {"replay.alpah": [0, 1]},
            r"grid entry replay.alpah: unknown config field .*'replay.alpha'",
        ),
        ({"replay.alpha": [0, 2]}, r"grid entry replay.alpha=2: replay.alpha must be in \[0, 1\]"),
        ({"replay.alpha": []}, r"grid entry replay.alpha: an empty list"),
        ({"replay.alpha": 0.5}, r"grid entry replay.alpha: expected a list of values, got 0.5"),
        ({"replay.alpha": "0.5"}, r"grid entry replay.alpha: expected a list of values"),
        ({"replay.alpha": [1, 1.0]}, r"grid entry replay.alpha: the value 1.0 is given twice"),
        ({"replay.scheme": ["rank", "bogus"]}, r'grid entry replay.scheme="bogus": .*one of'),
        ({"replay.capacity": [-5]}, r"grid entry replay.capacity=-5: replay.capacity must be"),
        ({"replay": [1]}, r"grid entry replay: 'replay' is a group of fields"),
        ({"seed": [1, 2]}, r"grid entry seed: not a grid field: the seeds are set with seeds"),
        ({"preset": ["paper"]}, r"grid entry preset: not a grid field"),
        (
            {"replay.batch_size": [16, 64], "replay.capacity": [32]},
            r"grid cell replay.batch_size=64 replay.capacity=32: replay.batch_size must be <= "
            r"capacity \(32\), got 64",
        ),
        (
            {"replay.capacity": [10**12]},
            r"grid cell replay.capacity=1000000000000: .*above this server's limit",
        ),
        ({"env.kwargs": [{"n": 8}, {"bogus": 1}]}, r'grid cell env.kwargs=\{"bogus":1\}: '),
        ({"train.total_steps": [100, 200]}, r"grid entry train.total_steps: the budget is also"),
    ],
)
def test_a_bad_grid_is_one_error_naming_the_entry(grid: dict, message: str) -> None:
    with pytest.raises(GridError, match=message):
        spec(grid)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"seeds": 0}, r"seeds must be a count from 1 to 10,000, got 0"),
        ({"seeds": []}, r"seeds must name at least one seed"),
        ({"seeds": [0, 0]}, r"seeds must not repeat a seed"),
        ({"seeds": [-1]}, r"every seed must be an integer from 0"),
        ({"seeds": [1.5]}, r"every seed must be an integer"),
        ({"seeds": True}, r"seeds must be a count or a list"),
        ({"steps": 0}, r"steps must be a whole number of env steps >= 1, got 0"),
        ({"steps": 2.5}, r"steps must be a whole number"),
        ({"overrides": {"replay.alpha": 0.5}}, r"grid entry replay.alpha: also set as a fixed"),
        ({"overrides": {"replay.alpah": 0.5}}, r"override replay.alpah: unknown config field"),
    ],
)
def test_bad_seeds_steps_and_overrides_are_named(kwargs: dict, message: str) -> None:
    values = {"seeds": 2, "steps": 300, **kwargs}
    with pytest.raises(GridError, match=message):
        SweepSpec.from_grid(PRESET, {"replay.alpha": [0, 1]}, **values)


def test_an_unknown_preset_is_named() -> None:
    with pytest.raises(GridError, match=r"preset must be one of .*got 'nope'"):
        SweepSpec.from_grid("nope", {}, 1)


def test_too_many_trials_are_refused() -> None:
    with pytest.raises(GridError, match=r"the sweep has 10,002 trials .*more than 10,000"):
        spec({"replay.alpha": [0, 1]}, seeds=MAX_TRIALS // 2 + 1)


# --------------------------------------------------------------------------------- trials
def test_trials_are_every_cell_on_every_seed_seed_major_with_their_configs() -> None:
    sweep = spec({"replay.alpha": [0, 0.6], "replay.scheme": ["proportional", "rank"]}, seeds=2)
    trials = sweep.trials()
    assert [
        (t.overrides["replay.alpha"], t.overrides["replay.scheme"], t.seed) for t in trials
    ] == [
        (0.0, "proportional", 0),
        (0.0, "rank", 0),
        (0.6, "proportional", 0),
        (0.6, "rank", 0),
        (0.0, "proportional", 1),
        (0.0, "rank", 1),
        (0.6, "proportional", 1),
        (0.6, "rank", 1),
    ]
    assert trials[3] == Trial(
        'replay.alpha=0.6 replay.scheme="rank" seed=0', trials[3].overrides, 0
    )
    assert trials[3].cell == 'replay.alpha=0.6 replay.scheme="rank"'
    config = sweep.config(trials[3])
    assert config == configure(
        PRESET,
        {"replay.alpha": 0.6, "replay.scheme": "rank", "seed": 0, "train.total_steps": 300},
    )
    assert config.train.learning_starts == 32  # --steps caps the warm-up: max(batch, 300 // 10)
    assert [sweep.key_of(sweep.config(t)) for t in trials] == [t.key for t in trials]


def test_values_are_held_as_the_config_holds_them() -> None:
    sweep = spec({"replay.alpha": [0, 1]})
    assert sweep.grid == {"replay.alpha": (0.0, 1.0)}
    assert spec({"replay.alpha": [0.0, 1.0]}).id == sweep.id


def test_the_sweep_id_is_the_trials_set_whatever_the_order() -> None:
    a = spec({"replay.alpha": [0, 0.6], "replay.scheme": ["proportional", "rank"]}, seeds=[0, 1])
    b = spec({"replay.scheme": ["rank", "proportional"], "replay.alpha": [0.6, 0]}, seeds=[1, 0])
    assert a.id == b.id and len(a.id) == 12
    assert {t.key for t in a.trials()} == {t.key for t in b.trials()}
    others = [
        spec({"replay.alpha": [0, 0.6]}, seeds=[0, 1]),
        spec({"replay.alpha": [0, 0.6], "replay.scheme": ["proportional", "rank"]}, seeds=3),
        spec({"replay.alpha": [0, 0.6], "replay.scheme": ["proportional", "rank"]}, steps=400),
        SweepSpec.from_grid("paper", {"replay.alpha": [0, 0.6]}, 2, 300),
        spec({"replay.alpha": [0, 0.6]}, seeds=[0, 1], overrides={"agent.lr": 0.05}),
    ]
    assert len({a.id, *(other.id for other in others)}) == 6


def test_a_spec_round_trips_through_its_dict() -> None:
    sweep = spec({"replay.alpha": [0, 0.6]}, overrides={"agent.lr": 0.05})
    assert SweepSpec.from_dict(sweep.to_dict()) == sweep
    assert SweepSpec.from_dict(sweep.to_dict()).id == sweep.id


def test_a_sweep_without_a_grid_is_its_seeds() -> None:
    sweep = spec({}, seeds=[3, 5])
    assert [(t.key, t.overrides, t.seed) for t in sweep.trials()] == [
        ("seed=3", {}, 3),
        ("seed=5", {}, 5),
    ]
    assert trial_key({}, 3) == "seed=3"


# ----------------------------------------------------------------------------------- TOML
def test_a_toml_file_gives_the_same_sweep(tmp_path: Path) -> None:
    path = tmp_path / "sweep.toml"
    path.write_text(
        """
preset = "chain-lesson"
seeds = [0, 1]
steps = 300
[grid]
"replay.alpha" = [0, 0.6]
replay.scheme = ["proportional", "rank"]
[overrides]
"agent.lr" = 0.05
"env.kwargs" = {n = 8, max_steps = 32}
""",
        encoding="utf-8",
    )
    from_file = SweepSpec.from_toml(path)
    direct = spec(
        {"replay.alpha": [0, 0.6], "replay.scheme": ["proportional", "rank"]},
        seeds=[0, 1],
        overrides={"agent.lr": 0.05, "env.kwargs": {"n": 8, "max_steps": 32}},
    )
    assert from_file == direct and from_file.id == direct.id


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'preset = "chain-lesson"\nseeds = 2\n[grid]\n"replay.alpha" = [0, 2]\n',
            r"replay.alpha=2",
        ),
        ('preset = "chain-lesson"\nseeds = 2\n[grid]\n"replay.alpha" = []\n', r"an empty list"),
        (
            'preset = "chain-lesson"\nseeds = 2\nsteps = 300\ncolour = 1\n',
            r"unknown key\(s\) colour",
        ),
        ('preset = "chain-lesson"\n[grid]\n"replay.alpha" = [0]\n', r"no seeds = \.\.\."),
        ('seeds = 2\n[grid]\n"replay.alpha" = [0]\n', r"no preset = \.\.\."),
        ('preset = "chain-lesson"\nseeds = 2\n[grid\n', r"is not valid TOML: .*line 3"),
        ('preset = "chain-lesson"\nseeds = 2\ngrid = 5\n', r"\[grid\] must be a table"),
        (
            'preset = "chain-lesson"\nseeds = 2\n[grid]\n"replay.alpha" = [0]\n'
            "[grid.replay]\nalpha = [1]\n",
            r"\[grid\] replay.alpha: given twice",
        ),
    ],
)
def test_a_bad_toml_file_is_one_error_naming_the_file_and_entry(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(GridError, match=rf"sweep file {path}.*{message}"):
        SweepSpec.from_toml(path)


def test_a_missing_toml_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(GridError, match=r"sweep file .*nope.toml cannot be read: No such file"):
        SweepSpec.from_toml(tmp_path / "nope.toml")


def test_an_endless_or_huge_sweep_file_is_refused_after_its_first_megabyte(tmp_path: Path) -> None:
    """``--file /dev/zero`` grew the process to 4 GB: what is read is capped."""
    with pytest.raises(GridError, match=r"sweep file /dev/zero is larger than 1024 kB"):
        SweepSpec.from_toml("/dev/zero")
    big = tmp_path / "big.toml"
    big.write_text("# " + "x" * (1024 * 1024) + "\n", encoding="utf-8")
    with pytest.raises(GridError, match="larger than 1024 kB: not a sweep file"):
        SweepSpec.from_toml(big)
