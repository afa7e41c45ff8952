"""The recurrent replay study: its arms' configs, the table's numbers by hand, a few hundred steps
of every arm through the whole command (worker processes, greedy evaluations, results file,
table, figure, --resume)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rdqn.cli import main
from rdqn.experiments.recurrent import RECURRENT_ARMS, recurrent_summary, recurrent_trials
from rdqn.experiments.tables import recurrent_table
from rdqn.figures.experiments import RECURRENT_COLORS, recurrent_figures


def test_the_arms_differ_only_in_their_replay_and_cost_the_same_lstm_steps() -> None:
    trials = recurrent_trials(list(RECURRENT_ARMS), [2, 0])
    assert [(t.seed, t.arm) for t in trials[:5]] == [
        (2, "windows"),
        (2, "stored-state"),
        (2, "zero-state"),
        (2, "zero-state-no-burn-in"),
        (0, "windows"),
    ]
    replay = {t.arm: t.config["replay"] for t in trials[:4]}
    windows, stored = replay["windows"], replay["stored-state"]
    assert windows["mode"] == "windows" and stored["mode"] == "sequences"
    # 32 windows of 4 observations and 8 sequences of 16 steps: 128 LSTM steps per batch each.
    assert windows["batch_size"] * windows["window"] == 32 * 4
    assert stored["batch_size"] * stored["sequence_length"] == 8 * 16
    assert (stored["sequence_overlap"], stored["burn_in"], stored["stored_state"]) == (8, 8, True)
    assert (replay["zero-state"]["burn_in"], replay["zero-state"]["stored_state"]) == (8, False)
    assert replay["zero-state-no-burn-in"]["burn_in"] == 0
    for trial in trials[:4]:
        rest = {k: v for k, v in trial.config.items() if k != "replay"}
        assert rest == {k: v for k, v in trials[0].config.items() if k != "replay"}
        assert trial.config["env"]["id"] == "rdqn/MaskedCartPole-v0"
        assert trial.config["agent"]["network"] == "recurrent"
        train = trial.config["train"]
        assert (train["total_steps"], train["eval_every"], train["eval_episodes"]) == (
            20_000,
            2_000,
            5,
        )


@pytest.mark.parametrize(
    ("arms", "steps", "said"),
    [(["sequences"], None, "arm must be one of"), (["windows"], 5, "steps"), ([], None, "least")],
)
def test_bad_trials_are_refused(arms: list, steps: int | None, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        recurrent_trials(arms, [0], steps=steps)


def _result(arm: str, seed: int, final: float, auc: float) -> dict:
    return {"env": "rdqn/MaskedCartPole-v0", "arm": arm, "seed": seed, "alpha": 0.6,
            "beta0": 0.4, "env_steps": 2000, "final_eval": final, "eval_auc": auc,
            "steps_per_second": 100.0 * (seed + 1)}  # fmt: skip


def test_the_table_s_numbers_by_hand() -> None:
    """Windows finals 10 and 40, stored state 30 and 50: medians 25 and 40; P(stored state >
    windows) over the four pairs (30>10, 30<40, 50>10, 50>40) = 3/4; the curve means 20 and 20
    against 10 and 10: every pair, 1."""
    results = [
        _result("stored-state", 0, 30.0, 20.0),
        _result("windows", 0, 10.0, 10.0),
        _result("stored-state", 1, 50.0, 20.0),
        _result("windows", 1, 40.0, 10.0),
    ]
    rows = recurrent_summary(results)
    assert [r["arm"] for r in rows] == ["windows", "stored-state"]
    table = recurrent_table({"summary": rows})
    lines = table.splitlines()
    assert len({line.count("|") for line in lines[:4]}) == 1  # every row has the header's cells
    windows, stored = lines[2:4]
    assert windows.startswith("| MaskedCartPole | windows | 25.0 (10.0-40.0) |")
    assert "| - | - | 150 |" in windows
    assert "| stored-state | 40.0 (30.0-50.0) |" in stored
    assert "| 0.75 [" in stored and "| 1.00 [1.00–1.00] |" in stored
    assert "P(> windows)" in table.splitlines()[0]
    assert "Seeds 0, 1, 2,000 env steps each" in table


@pytest.mark.slow  # trains four recurrent runs on worker processes
def test_a_few_hundred_steps_of_every_arm_through_the_whole_command(tmp_path: Path) -> None:
    out = tmp_path / "recurrent.json"
    args = ["experiment", "recurrent", "--seeds", "0", "--steps", "400",
            "--set", "train.learning_starts=100", "--out", str(out), "--workers", "2",
            "--quiet"]  # fmt: skip
    assert main(args) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["experiment"] == "recurrent" and not report["failed"]
    trials = {t["arm"]: t for t in report["trials"]}
    assert sorted(trials) == sorted(RECURRENT_ARMS)
    for trial in trials.values():
        assert trial["env_steps"] == 400 and trial["updates"] == (400 - 100) // 2
        evaluations = trial["evaluations"]
        assert evaluations["env_steps"] == list(range(40, 401, 40))
        assert all(len(episodes) == 5 for episodes in evaluations["returns"])
    assert [row["arm"] for row in report["summary"]] == list(RECURRENT_ARMS)
    figures = recurrent_figures(report)
    names = [trace.name for trace in figures["recurrent"].data if trace.showlegend is not False]
    assert [name.split(" (")[0] for name in names] == list(RECURRENT_ARMS)
    colors = [t.line.color for t in figures["recurrent"].data if t.showlegend is not False]
    assert colors == [RECURRENT_COLORS[arm] for arm in RECURRENT_ARMS]
    assert "Masked CartPole: greedy return" in out.with_suffix(".html").read_text("utf-8")
    assert main([*args, "--resume"]) == 0  # every trial finished: nothing runs again
    assert json.loads(out.read_text(encoding="utf-8"))["trials"] == report["trials"]
