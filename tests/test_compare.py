"""Tests for rdqn.compare: comparison configs, rolling means, curves, aggregation, thresholds."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest

from rdqn.compare import (
    LESSON_PRESET,
    Curve,
    aggregate,
    comparison_configs,
    comparison_threshold,
    episodes_to_threshold,
    learning_curve,
    return_decimals,
    rolling_mean,
    run_label,
    scheme_label,
    shown_intervals,
    summary_decimals,
    summary_table,
)
from rdqn.presets import PAPER_RANK_ALPHA, preset
from rdqn.training.trainer import Trainer

NAN = float("nan")


def curve(end_steps: list[int], returns: list[float]) -> Curve:
    return Curve(np.array(end_steps, dtype=np.int64), np.array(returns, dtype=np.float64))


def assert_same(actual: Any, expected: list[float]) -> None:
    """Element-wise equality with NaN == NaN (and the same length)."""
    np.testing.assert_allclose(np.asarray(actual, dtype=np.float64), expected, rtol=1e-12)


# Curves used across tests; rolling means (window 2) worked out by hand in comments.
A = curve([10, 25, 40], [1.0, 3.0, 5.0])  # smooth: [1, 2, 4]
B = curve([5, 30], [10.0, 0.0])  # smooth: [10, 5]
EMPTY = curve([], [])


def test_curve_from_stored_episodes_skips_incomplete_rows() -> None:
    frame = pd.DataFrame(
        {"env_steps": pd.array([10, None, 40], dtype="Int64"), "return": [1.0, 2.0, 3.0]}
    )
    curve = Curve.from_episodes(frame)
    assert curve.end_steps.tolist() == [10, 40]
    assert curve.returns.tolist() == [1.0, 3.0]
    assert curve.end_steps.dtype == np.int64


# --------------------------------------------------------------------------- rolling_mean
def test_rolling_mean_by_hand() -> None:
    assert_same(rolling_mean(np.array([1.0, 2.0, 3.0, 4.0]), 2), [1.0, 1.5, 2.5, 3.5])
    assert_same(rolling_mean(np.array([1.0, 2.0, 3.0, 4.0]), 3), [1.0, 1.5, 2.0, 3.0])


def test_rolling_mean_edge_windows() -> None:
    values = np.array([4.0, -2.0, 7.0])
    assert_same(rolling_mean(values, 1), [4.0, -2.0, 7.0])
    # A window longer than the data averages everything seen so far.
    assert_same(rolling_mean(values, 10), [4.0, 1.0, 3.0])
    assert rolling_mean(np.array([], dtype=np.float64), 5).size == 0


def test_rolling_mean_accepts_lists_and_returns_float() -> None:
    out = rolling_mean([1, 2, 3, 4], 2)  # type: ignore[arg-type]
    assert out.dtype == np.float64
    assert_same(out, [1.0, 1.5, 2.5, 3.5])


# ------------------------------------------------------------------------- learning_curve
def test_learning_curve_is_a_step_function_of_env_steps() -> None:
    grid = np.array([0, 9, 10, 11, 24, 25, 39, 40, 1000], dtype=np.int64)
    # NaN before the first episode ends (step 10); at an episode's end step its value counts;
    # between ends the last finished episode's rolling mean holds; after the last it stays.
    expected = [NAN, NAN, 1.0, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0]
    assert_same(learning_curve(A, grid, window=2), expected)


def test_learning_curve_window_and_empty_curve() -> None:
    grid = np.array([10, 25, 40], dtype=np.int64)
    assert_same(learning_curve(A, grid, window=1), [1.0, 3.0, 5.0])
    assert_same(learning_curve(A, grid, window=3), [1.0, 2.0, 3.0])
    out = learning_curve(EMPTY, grid, window=2)
    assert out.shape == grid.shape
    assert np.isnan(out).all()


# ------------------------------------------------------------------------------ aggregate
def test_aggregate_mean_min_max_by_hand() -> None:
    grid = np.array([0, 5, 10, 30, 40], dtype=np.int64)
    # A on grid: [nan, nan, 1, 2, 4]; B on grid: [nan, 10, 10, 5, 5]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NaN-aware: no "mean of empty slice" warnings
        stats = aggregate([A, B], grid, window=2)
    assert set(stats) == {"mean", "low", "high"}
    assert_same(stats["mean"], [NAN, 10.0, 5.5, 3.5, 4.5])
    assert_same(stats["low"], [NAN, 10.0, 1.0, 2.0, 4.0])
    assert_same(stats["high"], [NAN, 10.0, 10.0, 5.0, 5.0])


def test_aggregate_of_one_curve_is_that_curve() -> None:
    grid = np.array([0, 10, 25, 40], dtype=np.int64)
    stats = aggregate([A], grid, window=2)
    for key in ("mean", "low", "high"):
        assert_same(stats[key], [NAN, 1.0, 2.0, 4.0])


def test_aggregate_of_no_curves_is_all_nan() -> None:
    grid = np.array([0, 10, 20], dtype=np.int64)
    stats = aggregate([], grid, window=2)
    for key in ("mean", "low", "high"):
        assert stats[key].shape == grid.shape
        assert np.isnan(stats[key]).all()


# ------------------------------------------------------------------ episodes_to_threshold
def test_episodes_to_threshold_requires_a_full_window() -> None:
    c = curve([10, 20, 30, 40, 50, 60], [5.0, 1.0, 1.0, 3.0, 3.0, 6.0])
    # window 2 -> smooth [5, 3, 1, 2, 3, 4.5]; episode 1 alone (5) does not count.
    assert episodes_to_threshold(c, 2.0, window=2) == (2, 20)
    assert episodes_to_threshold(c, 4.0, window=2) == (6, 60)
    assert episodes_to_threshold(c, 5.0, window=2) == (None, None)
    # window 3 -> smooth [5, 3, 7/3, 5/3, 7/3, 4]; the first full window is episode 3.
    assert episodes_to_threshold(c, 2.2, window=3) == (3, 30)
    assert episodes_to_threshold(c, 2.4, window=3) == (6, 60)
    # window 1: the first episode is a full window.
    assert episodes_to_threshold(c, 5.0, window=1) == (1, 10)


def test_episodes_to_threshold_returns_python_ints() -> None:
    c = curve([7, 19], [2.0, 2.0])
    episodes, steps = episodes_to_threshold(c, 2.0, window=2)
    assert (episodes, steps) == (2, 19)
    assert type(episodes) is int and type(steps) is int


def test_episodes_to_threshold_too_few_episodes_or_none() -> None:
    c = curve([10, 20], [100.0, 100.0])
    assert episodes_to_threshold(c, 1.0, window=3) == (None, None)
    assert episodes_to_threshold(EMPTY, 0.0, window=1) == (None, None)


# -------------------------------------------------------------------------- summary_table
SUMMARY_COLUMNS = [
    "scheme",
    "seeds",
    "final return (mean)",
    "final return (min)",
    "final return (IQM)",
    "final return (IQM) low",
    "final return (IQM) high",
    "P(final return > uniform)",
    "P(final return > uniform) low",
    "P(final return > uniform) high",
    "reached threshold",
    "episodes to threshold",
    "steps to threshold",
    "steps to threshold (IQM)",
    "steps to threshold (IQM) low",
    "steps to threshold (IQM) high",
]
WITHOUT_THRESHOLD = SUMMARY_COLUMNS[:10]


def summary_runs() -> dict[str, list[Curve]]:
    u1 = curve([10, 20, 30, 40], [0.0, 4.0, 6.0, 2.0])  # smooth [0, 2, 5, 4]; final 4; hit (3, 30)
    u2 = curve([5, 15, 25], [1.0, 1.0, 3.0])  # smooth [1, 1, 2]; final 2; no hit
    r1 = curve([50, 100], [10.0, 8.0])  # smooth [10, 9]; final 9; hit (2, 100)
    return {"uniform": [u1, u2], "rank": [r1, u1], "proportional": [EMPTY]}


def cells(row: dict, name: str) -> tuple[float, float, float]:
    """An estimate of a summary row with its interval's ends."""
    return row[name], row[f"{name} low"], row[f"{name} high"]


def test_summary_table_by_hand() -> None:
    """Two seeds: the IQM is their mean; a bootstrap resample of two is both, either twice,
    so the mean's 95 % interval is [lower, higher]. P(rank > uniform), rank's 9, 4 against
    uniform's 4, 2: (1 + 1 + 1/2 + 1) / 4; its resamples run from 1/2 (rank 4, 4 against
    uniform 4, 4: 1/16 of them, more than the 2.5 % tail) to 1."""
    table = summary_table(summary_runs(), threshold=4.5, window=2)
    assert isinstance(table, pd.DataFrame)
    assert list(table.columns) == SUMMARY_COLUMNS
    rows = {row["scheme"]: row for row in table.to_dict("records")}
    assert list(table["scheme"]) == ["uniform", "rank", "proportional"]

    u = rows["uniform"]
    assert u["seeds"] == 2
    assert u["final return (mean)"] == pytest.approx(3.0)
    assert u["final return (min)"] == pytest.approx(2.0)
    assert u["reached threshold"] == "1/2"
    assert u["episodes to threshold"] == pytest.approx(3.0)
    assert u["steps to threshold"] == pytest.approx(30.0)
    assert cells(u, "final return (IQM)") == pytest.approx((3.0, 2.0, 4.0))
    assert all(math.isnan(v) for v in cells(u, "P(final return > uniform)"))  # the baseline
    assert cells(u, "steps to threshold (IQM)") == pytest.approx((30.0, 30.0, 30.0))

    r = rows["rank"]
    assert r["seeds"] == 2
    assert r["final return (mean)"] == pytest.approx(6.5)
    assert r["final return (min)"] == pytest.approx(4.0)
    assert r["reached threshold"] == "2/2"
    assert r["episodes to threshold"] == pytest.approx(2.5)
    assert r["steps to threshold"] == pytest.approx(65.0)
    assert cells(r, "final return (IQM)") == pytest.approx((6.5, 4.0, 9.0))
    assert cells(r, "P(final return > uniform)") == pytest.approx((0.875, 0.5, 1.0))
    assert cells(r, "steps to threshold (IQM)") == pytest.approx((65.0, 30.0, 100.0))

    p = rows["proportional"]  # one seed without a single finished episode
    assert p["seeds"] == 1
    assert math.isnan(p["final return (mean)"])
    assert math.isnan(p["final return (min)"])
    assert p["reached threshold"] == "0/1"
    assert math.isnan(p["episodes to threshold"])
    assert math.isnan(p["steps to threshold"])
    for name in ("final return (IQM)", "P(final return > uniform)", "steps to threshold (IQM)"):
        assert all(math.isnan(v) for v in cells(p, name))


def test_summary_table_final_return_uses_the_window() -> None:
    runs = {"uniform": [curve([1, 2, 3, 4], [0.0, 0.0, 6.0, 9.0])]}
    assert summary_table(runs, None, window=3)["final return (mean)"][0] == pytest.approx(5.0)
    assert summary_table(runs, None, window=1)["final return (mean)"][0] == pytest.approx(9.0)


def test_summary_table_without_threshold_has_no_threshold_columns() -> None:
    table = summary_table(summary_runs(), threshold=None, window=2)
    assert list(table.columns) == WITHOUT_THRESHOLD
    assert len(table) == 3


def test_summary_table_compares_with_uniform_only_when_it_is_there() -> None:
    runs = summary_runs()
    alone = summary_table({"uniform": runs["uniform"]}, threshold=None, window=2)
    assert "P(final return > uniform)" not in alone.columns
    without = summary_table({"rank": runs["rank"]}, threshold=None, window=2)
    assert "P(final return > uniform)" not in without.columns


def test_shown_intervals_put_each_interval_in_one_cell() -> None:
    table = summary_table(summary_runs(), threshold=4.5, window=2)
    shown = shown_intervals(table)
    assert list(shown.columns) == [
        "scheme",
        "seeds",
        "final return (mean)",
        "final return (min)",
        "final return (IQM) [95% CI]",
        "P(final return > uniform) [95% CI]",
        "reached threshold",
        "episodes to threshold",
        "steps to threshold",
        "steps to threshold (IQM) [95% CI]",
    ]
    assert shown["final return (IQM) [95% CI]"].tolist() == [
        "3.00 [2.00–4.00]",
        "6.50 [4.00–9.00]",
        "-",
    ]
    assert shown["P(final return > uniform) [95% CI]"].tolist() == ["-", "0.88 [0.50–1.00]", "-"]
    assert shown["steps to threshold (IQM) [95% CI]"].tolist() == [
        "30 [30–30]",
        "65 [30–100]",
        "-",
    ]
    assert shown["final return (mean)"].tolist()[:2] == [3.0, 6.5]  # numbers stay numbers


# --------------------------------------------------------------------- comparison_configs
def test_comparison_configs_share_seeds_across_schemes_seed_major() -> None:
    """Seed-major: with one run at a time, the first lap already shows every scheme."""
    base = preset("per-notebook").with_budget(300)
    configs = comparison_configs(base, ["uniform", "rank"], [0, 1])
    assert [(c.replay.scheme, c.seed) for c in configs] == [
        ("uniform", 0),
        ("rank", 0),
        ("uniform", 1),
        ("rank", 1),
    ]
    assert {c.train.total_steps for c in configs} == {300}
    assert {c.train.learning_starts for c in configs} == {32}
    assert {c.replay.alpha for c in configs} == {0.6}


def test_paper_preset_gives_rank_based_alpha_0_7() -> None:
    configs = comparison_configs(preset("paper"), ["proportional", "rank"], [0])
    assert [c.replay.alpha for c in configs] == [0.6, PAPER_RANK_ALPHA] == [0.6, 0.7]
    assert configs[0].env.kwargs == {"n": 8}


def test_chain_lesson_gives_rank_based_alpha_0_7_too() -> None:
    configs = comparison_configs(preset(LESSON_PRESET), ["uniform", "proportional", "rank"], [0])
    assert [c.replay.alpha for c in configs] == [0.6, 0.6, PAPER_RANK_ALPHA]
    assert {c.replay.beta0 for c in configs} == {0.0}


def test_other_presets_keep_their_alpha_for_rank() -> None:
    (config,) = comparison_configs(preset("e14"), ["rank"], [0])
    assert config.replay.alpha == 0.6


@pytest.mark.parametrize(
    ("schemes", "seeds", "match"), [([], [0], "schemes"), (["uniform"], [], "seeds")]
)
def test_comparison_configs_need_schemes_and_seeds(
    schemes: list[str], seeds: list[int], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        comparison_configs(preset("per-notebook"), schemes, seeds)


@pytest.mark.parametrize(
    ("env_id", "threshold"),
    [
        ("CartPole-v1", 475.0),  # registered with gymnasium
        ("rdqn/SparseChain-v0", 0.8),  # the goal pays 1: reached four times in five
        ("rdqn/BlindCliffwalk-v0", 0.8),
        ("rdqn/SyntheticMarket-v0", None),
    ],
)
def test_comparison_threshold(env_id: str, threshold: float | None) -> None:
    assert comparison_threshold(env_id) == threshold


@pytest.mark.slow  # trains or starts a process for seconds
def test_the_lesson_comparison_is_valid_and_trains() -> None:
    """The Compare page's default builds for every scheme and a short budget of it trains (the
    "prioritization wins" measurement is benchmarks/compare_default.py, minutes long)."""
    configs = comparison_configs(preset(LESSON_PRESET), ["uniform", "proportional", "rank"], [0])
    assert {(c.preset, c.env.id, c.train.total_steps) for c in configs} == {
        (LESSON_PRESET, "rdqn/SparseChain-v0", 4_000)
    }
    for config in configs:
        trainer = Trainer(config.with_budget(400)).run()
        assert trainer.status == "finished"
        assert trainer.updates > 0
        assert trainer.episodes > 0


def test_run_label_names_scheme_alpha_beta_seed_and_short_id() -> None:
    rank = preset("paper").with_overrides({"replay.scheme": "rank", "replay.alpha": 0.7, "seed": 1})
    assert run_label(rank, "077847aa11bb") == "rank · α 0.7 · β₀ 0.5 · seed 1 · 077847"
    assert run_label(rank.to_dict(), "077847aa11bb") == run_label(rank, "077847aa11bb")
    assert run_label(rank) == "rank · α 0.7 · β₀ 0.5 · seed 1"  # a run not created yet
    uniform = rank.with_overrides({"replay.scheme": "uniform"})
    assert run_label(uniform, "077847aa11bb") == "uniform · seed 1 · 077847"


def test_scheme_label_says_beta_when_it_stays_put() -> None:
    lesson = preset("chain-lesson")
    assert (lesson.replay.beta0, lesson.replay.beta_end) == (0.0, 0.0)
    assert scheme_label(lesson) == "proportional · α 0.6 · β 0"
    assert scheme_label(preset("per-notebook")) == "proportional · α 0.6 · β₀ 0.4"
    assert scheme_label({"replay": {"scheme": "uniform"}, "seed": 3}) == "uniform"


def test_return_decimals_follow_the_scale_of_the_returns() -> None:
    assert return_decimals([0.8, 1.0, 0.03]) == 2  # a goal worth 1
    assert return_decimals([9.99, math.nan]) == 2
    assert return_decimals([475.0, 12.5]) == 1  # CartPole
    assert return_decimals([math.nan]) == 1


def test_summary_decimals_are_one_per_column() -> None:
    curves = {"uniform": [Curve(np.array([5, 9]), np.array([0.25, 1.0]))]}
    table = summary_table(curves, 0.5, window=2)
    returns = ["final return (mean)", "final return (min)", "final return (IQM)"]
    returns += ["final return (IQM) low", "final return (IQM) high"]
    steps = ["steps to threshold", "steps to threshold (IQM)"]
    steps += ["steps to threshold (IQM) low", "steps to threshold (IQM) high"]
    assert summary_decimals(table) == {
        **dict.fromkeys(returns, 2),
        "seeds": 0,
        "episodes to threshold": 0,
        **dict.fromkeys(steps, 0),
    }
    cartpole = summary_table(
        {"uniform": [Curve(np.array([500]), np.array([500.0]))], "rank": []}, None
    )
    chances = ["P(final return > uniform)", "P(final return > uniform) low"]
    chances += ["P(final return > uniform) high"]
    assert summary_decimals(cartpole) == {
        **dict.fromkeys(returns, 1),
        "seeds": 0,
        **dict.fromkeys(chances, 2),
    }
