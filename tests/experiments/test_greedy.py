"""rdqn.experiments.greedy: the training curve's bins and the summary, by hand."""

from __future__ import annotations

import numpy as np

from rdqn.experiments.greedy import CURVE_BIN, _binned, greedy_summary


def test_the_training_curve_is_the_mean_return_of_the_episodes_ending_in_each_bin() -> None:
    """Episodes ending at steps 5 and 10,000 (returns 1, 3) fall in the first bin of 10,000
    steps, 10,001 (10) in the second; none ends in the third or fourth of 35,000 steps."""
    assert CURVE_BIN == 10_000
    ends = np.array([5, 10_000, 10_001, 25_000])
    returns = np.array([1.0, 3.0, 10.0, 7.0])
    assert _binned(ends, returns, 25_000) == [2.0, 10.0, 7.0]
    assert _binned(ends[:3], returns[:3], 35_000) == [2.0, 10.0, None, None]


def test_the_summary_orders_arms_as_given_and_skips_missing_values() -> None:
    def run(arm: str, seed: int, final: float | None) -> dict:
        return {"game": "g", "arm": arm, "seed": seed, "alpha": 0.6, "beta0": 0.4,
                "env_steps": 100, "final_eval": final, "eval_auc": 1.0,
                "steps_per_second": 10.0 * (seed + 1)}  # fmt: skip

    rows = greedy_summary(
        [run("b", 1, 4.0), run("a", 0, 1.0), run("b", 0, None), run("a", 2, 3.0)],
        group="game",
        arm="arm",
        arms=("a", "b", "c"),
    )
    assert [(r["arm"], r["seeds"]) for r in rows] == [("a", [0, 2]), ("b", [0, 1])]
    assert rows[0]["final_eval_median"] == 2.0 and rows[0]["steps_per_second_median"] == 20.0
    assert rows[1]["final_eval"] == [None, 4.0] and rows[1]["final_eval_median"] == 4.0
