"""The docs' learning tables from results files, and the blocks they fill in Markdown."""

from rdqn.experiments.tables import (
    cartpole_sweep_table,
    chain_lesson_table,
    check_blocks,
    cliffwalk_random_memory_table,
    cliffwalk_table,
    e14_lesson_table,
    memory_table,
    per_notebook_table,
    rewrite_blocks,
)


def test_cliffwalk_table() -> None:
    report = {
        "threshold": 1e-3,
        "max_updates": 5000,
        "summary": [
            {"scheme": "uniform", "n": 2, "memory_size": 6, "seeds": [0, 1, 2], "learned": 3,
             "median": 30, "min": 25, "max": 1200},
            {"scheme": "uniform", "n": 3, "memory_size": 14, "seeds": [0, 1, 2], "learned": 2,
             "median": 4000, "min": 70, "max": None},
            {"scheme": "oracle", "n": 2, "memory_size": 6, "seeds": [0, 1, 2], "learned": 3,
             "median": 14, "min": 14, "max": 14},
        ],
    }  # fmt: skip
    assert cliffwalk_table(report) == (
        "| n | memory N | uniform | oracle |\n"
        "|---:|---:|---:|---:|\n"
        "| 2 | 6 | 30 (25-1,200) | 14 |\n"
        "| 3 | 14 | 4,000 (70-) [2/3] |  |\n"
        "\n"
        "Learner updates until the MSE of the Q-values to Q* is below 0.001, median (min-max) "
        "over seeds 0-2; [k/m]: k of m seeds learned within 5,000 updates.\n"
    )


def test_per_notebook_table() -> None:
    row = {
        "scheme": "proportional", "alpha": 0.6, "beta0": 0.4, "seeds": [0, 1], "reached": 1,
        "steps_to_threshold": [61000, None], "steps_median": 61000, "steps_min": 61000,
        "steps_max": 61000, "best_mean20": [480.5, 300.0], "best_mean20_median": 390.25,
        "best_mean20_min": 300.0, "best_mean20_max": 480.5, "final_mean20": [200.0, 100.0],
        "final_mean20_median": 150.0, "final_mean20_min": 100.0, "final_mean20_max": 200.0,
        "sampled_over_buffer_td_median": 2.5, "sampled_over_buffer_td_min": 1.25,
        "sampled_over_buffer_td_max": 4.0,
    }  # fmt: skip
    report = {"threshold": 475.0, "summary": [row], "config": {"train": {"total_steps": 100000}}}
    lines = per_notebook_table(report).splitlines()
    # IQM [95% CI]: one seed reached (its steps, no width); two seeds are their mean, and a
    # resample of two is both or either twice (1/4 each), so the interval is [lower-higher]
    assert lines[2] == (
        "| proportional (α 0.6, β₀ 0.4) | 1/2 | 61,000 | 61,000 [61,000–61,000] | 61,000, - "
        "| 390 (300-480) | 390 [300–480] | 480, 300 | 150 (100-200) | 150 [100–200] | 200, 100 "
        "| 2.50 (1.25-4.00) |"
    )
    assert lines[3] == ""  # a blank line ends the table before its note
    assert lines[4].startswith(
        "100,000 env steps per run, seeds 0, 1; '-': not reached within the budget; IQM [95% CI]"
    )


def test_benchmark_tables() -> None:
    sweep = [
        {"variant": "preset", "seed": s, "steps_to_threshold": t, "best_mean20": b}
        for s, t, b in ((0, 60000, 500.0), (1, None, 400.0), (2, 80000, 490.0))
    ]
    # three seeds: the IQM is their mean, (500 + 400 + 490) / 3 = 463; a resample of three
    # is all 400 (or all 500) once in 27 times, more than the 2.5 % tail: [400-500]
    assert cartpole_sweep_table(sweep).splitlines()[2] == (
        "| preset | 2/3 | 70,000 (60,000-80,000) | 70,000 [60,000–80,000] | 490 (400-500) "
        "| 463 [400–500] | 500, 400, 490 |"
    )
    memory = [
        {"preset": "e14", "seed": 0, "best_mean20": 137.0, "final_mean20": 117.0},
        {"preset": "e14", "seed": 1, "best_mean20": 180.0, "final_mean20": 126.0},
    ]
    assert (
        "| 158 (137-180) | 158 [137–180] | 137, 180 | 122 (117-126) | 122 [117–126] | 117, 126 |"
    ) in memory_table(memory)
    lesson = {
        "seeds": [0, 1],
        "runs": [
            {"label": "recurrent", "seed": 1, "final_mean20": 80.0, "best_mean20": 150.0,
             "cpu_seconds": 120.0},
            {"label": "recurrent", "seed": 0, "final_mean20": 60.0, "best_mean20": 130.0,
             "cpu_seconds": 180.0},
        ],
    }  # fmt: skip
    assert e14_lesson_table(lesson).splitlines()[2] == (
        "| `e14-lesson` (recurrent) | 70 (60-80) | 70 [60–80] | 60, 80 | 140 (130-150) "
        "| 140 [130–150] | 130, 150 | 2.5 |"
    )
    chain = {
        "summary": [
            {"variant": "v", "scheme": "rank", "alpha": 0.7, "reached": "2/3", "seeds": [0, 1, 2],
             "steps_to_threshold": [1900, None, 2100]},
        ]
    }  # fmt: skip
    assert chain_lesson_table(chain).splitlines()[2] == (
        "| v | rank, α 0.7 | 2/3 | 2,000 (1,900-2,100) |"
    )


def test_blocks_are_rewritten_and_checked() -> None:
    text = (
        "intro\n<!-- table: a -->\nold\n<!-- /table -->\n"
        "middle\n<!-- table: z -->\nz\n<!-- /table -->\n"
    )
    tables = {"a": "| new |\n"}
    assert check_blocks(text, tables) == ["a", "z"]
    rewritten = rewrite_blocks(text, tables)
    assert rewritten == text.replace("old\n", "| new |\n")
    assert check_blocks(rewritten, tables) == ["z"]


def test_cliffwalk_random_memory_table() -> None:
    results = [
        {"n": 8, "scheme": "uniform", "seed": s, "rewarded": r, "updates_to_solve": u,
         "max_updates": 30000}
        for s, r, u in ((0, 5, 4400), (1, 1, 15550), (2, 5, None))
    ]  # fmt: skip
    lines = cliffwalk_random_memory_table(results).splitlines()
    assert lines[2] == "| 8 | uniform | 5, 1, 5 | 2/3 within 30,000 | - | 4,400, 15,550, - |"
    results[2]["updates_to_solve"] = 4000
    # IQM of three: their mean, 7,983; all 4,000 or all 15,550 once in 27 resamples
    assert cliffwalk_random_memory_table(results).splitlines()[2] == (
        "| 8 | uniform | 5, 1, 5 | 4,400 (4,000-15,550) | 7,983 [4,000–15,550] "
        "| 4,400, 15,550, 4,000 |"
    )
