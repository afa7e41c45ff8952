"""The MinAtar study: its trials, a few hundred steps of two through the whole command (worker
processes, greedy evaluations, results file, table, figure, --resume), the summary and the table's
numbers by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rdqn.cli import main
from rdqn.experiments.greedy import CURVE_BIN
from rdqn.experiments.minatar import minatar_summary, minatar_trials
from rdqn.experiments.tables import minatar_table

BREAKOUT = "rdqn/MinAtar-Breakout-v0"


def test_trials_are_seed_major_and_keep_the_preset_s_exploration_span() -> None:
    trials = minatar_trials([BREAKOUT, "rdqn/MinAtar-Freeway-v0"], ["uniform", "rank"], [3, 1],
                            steps=200_000)  # fmt: skip
    assert [(t.seed, t.game[13:-3], t.scheme) for t in trials[:5]] == [
        (3, "Breakout", "uniform"),
        (3, "Breakout", "rank"),
        (3, "Freeway", "uniform"),
        (3, "Freeway", "rank"),
        (1, "Breakout", "uniform"),
    ]
    train = trials[0].config["train"]
    assert train["total_steps"] == 200_000
    assert train["epsilon_fraction"] * 200_000 == 100_000  # the preset's 100,000 steps
    assert train["eval_every"] == 10_000  # 20 evaluations
    assert trials[0].config["agent"]["network"] == "conv"
    assert trials[0].config["env"]["id"] == BREAKOUT and trials[0].config["seed"] == 3


@pytest.mark.parametrize(
    ("games", "schemes", "steps", "said"),
    [
        (["CartPole-v1"], ["uniform"], None, "game must be one of"),
        ([BREAKOUT], ["prioritized"], None, "scheme must be one of"),
        ([BREAKOUT], ["uniform"], 10, "steps"),
        ([], ["uniform"], None, "at least one"),
    ],
)
def test_bad_trials_are_refused(games: list, schemes: list, steps: int | None, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        minatar_trials(games, schemes, [0], steps=steps)


def _result(scheme: str, seed: int, final: float, auc: float) -> dict:
    return {
        "game": BREAKOUT,
        "scheme": scheme,
        "seed": seed,
        "alpha": 0.5,
        "beta0": 0.5,
        "env_steps": 1000,
        "final_eval": final,
        "eval_auc": auc,
        "steps_per_second": 1000.0 + seed,
    }


def test_the_table_s_numbers_by_hand() -> None:
    """Uniform finals 1 and 4, proportional 3 and 5: medians 2.5 and 4; P(proportional >
    uniform) over the four pairs (3>1, 3<4, 5>1, 5>4) = 3/4."""
    results = [
        _result("proportional", 0, 3.0, 2.0),
        _result("uniform", 0, 1.0, 1.0),
        _result("proportional", 1, 5.0, 2.0),
        _result("uniform", 1, 4.0, 1.0),
    ]
    rows = minatar_summary(results)
    assert [r["scheme"] for r in rows] == ["uniform", "proportional"]
    assert rows[0]["final_eval"] == [1.0, 4.0] and rows[0]["final_eval_median"] == 2.5
    assert rows[1]["final_eval_median"] == 4.0 and rows[1]["steps_per_second_median"] == 1000.5
    table = minatar_table({"summary": rows})
    lines = table.splitlines()
    assert len({line.count("|") for line in lines[:4]}) == 1  # every row has the header's cells
    uniform, proportional = lines[2:4]
    assert uniform.startswith("| Breakout | uniform | 2.5 (1.0-4.0) | 2.5 [1.0–4.0] | 1.0, 4.0 |")
    assert "| proportional, α 0.5, β 0.5 | 4.0 (3.0-5.0) |" in proportional
    assert "| 0.75 [" in proportional  # final: 3 of 4 pairs
    assert "| 1.00 [1.00–1.00] |" in proportional  # curve mean: 2 > 1 in every pair
    assert "Seeds 0, 1, 1,000 env steps each" in table


@pytest.mark.slow  # trains two MinAtar runs on worker processes
def test_a_few_hundred_steps_through_the_whole_command(tmp_path: Path) -> None:
    out = tmp_path / "minatar.json"
    args = ["experiment", "minatar", "--games", BREAKOUT, "--seeds", "0", "--steps", "400",
            "--set", "train.learning_starts=100", "--set", "train.eval_episodes=2",
            "--out", str(out), "--workers", "2", "--quiet"]  # fmt: skip
    assert main(args) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["experiment"] == "minatar" and not report["failed"]
    trials = {t["scheme"]: t for t in report["trials"]}
    assert sorted(trials) == ["proportional", "uniform"]
    for trial in trials.values():
        assert trial["env_steps"] == 400 and trial["updates"] == (400 - 100) // 4
        evaluations = trial["evaluations"]
        assert evaluations["env_steps"] == list(range(20, 401, 20))
        assert all(len(episodes) == 2 for episodes in evaluations["returns"])
        assert trial["final_eval"] == sum(evaluations["returns"][-1]) / 2
        assert len(trial["train_curve"]) == -(-400 // CURVE_BIN)
    assert [row["scheme"] for row in report["summary"]] == ["uniform", "proportional"]
    figure = out.with_suffix(".html").read_text(encoding="utf-8")
    assert "MinAtar Breakout: greedy return" in figure
    assert main([*args, "--resume"]) == 0  # every trial finished: nothing runs again
    assert json.loads(out.read_text(encoding="utf-8"))["trials"] == report["trials"]
