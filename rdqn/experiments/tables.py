"""The docs' learning tables, generated from the results files that the experiments and the
learning benchmarks write, never typed by hand.

Each table function takes the parsed results file and returns Markdown (ending in a newline).
`all_tables` reads every results file present in a folder; `rewrite_blocks` puts the tables into
a Markdown document between its markers, and `check_blocks` names the blocks that differ from
what the files say (``python -m rdqn experiment tables --write | --check docs/experiments.md``;
a test checks docs/experiments.md)::

    <!-- table: cliffwalk -->
    | n | ... |
    <!-- /table -->

Numbers: medians with the range over the seeds in parentheses, "-" where there is none; beside
them, under "IQM [95% CI]", the interquartile mean over the same seeds (the mean of their middle
half) with its 95 % stratified bootstrap interval, 2,000 resamples of the seeds (`rdqn.stats`;
Agarwal et al. 2021). The Blind Cliffwalk's table, one cell per size and scheme, keeps medians
alone.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rdqn.stats import iqm_interval

__all__ = [
    "IQM_NOTE",
    "RESULTS_FILES",
    "all_tables",
    "cartpole_sweep_table",
    "chain_lesson_table",
    "check_blocks",
    "cliffwalk_random_memory_table",
    "cliffwalk_table",
    "e14_lesson_table",
    "iqm_cell",
    "memory_table",
    "minatar_table",
    "recurrent_table",
    "per_notebook_table",
    "rewrite_blocks",
]


def _count(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _span(median: float | None, low: float | None, high: float | None, fmt=_count) -> str:
    """``median (low-high)``; ``median (low-)`` for an open top; ``-`` without a median."""
    if median is None:
        return "-"
    if low is None:
        return fmt(median)
    top = "" if high is None else fmt(high)
    return f"{fmt(median)} ({fmt(low)}-{top})" if low != high else fmt(median)


def _row_span(row: Mapping[str, Any], key: str, fmt=_count) -> str:
    """`_span` of a summary row's ``<key>_median``, ``<key>_min`` and ``<key>_max``."""
    return _span(row[f"{key}_median"], row[f"{key}_min"], row[f"{key}_max"], fmt)


def _stats(values: Sequence[float | None]) -> tuple[float | None, float | None, float | None]:
    done = [v for v in values if v is not None]
    if not done:
        return None, None, None
    return statistics.median(done), min(done), max(done)


def iqm_cell(values: Sequence[float | None], fmt: Callable[[float], str] = _count) -> str:
    """The IQM of the ``values`` there are (None: a seed that did not get there) with its 95 %
    interval, each by ``fmt``: ``'3 [2–4]'``; ``'-'`` for none."""
    return iqm_interval([v for v in values if v is not None]).text(fmt)


IQM_NOTE = (
    "IQM [95% CI]: the interquartile mean over the seeds (the mean of their middle half) with "
    "its 95 % stratified bootstrap interval, 2,000 resamples of the seeds (Agarwal et al. 2021, "
    "Deep RL at the Edge of the Statistical Precipice)"
)
"""What the tables' "IQM [95% CI]" columns are, for their notes."""


def _seeds(seeds: Sequence[int]) -> str:
    ordered = sorted(seeds)
    if ordered == list(range(ordered[0], ordered[-1] + 1)) and len(ordered) > 2:
        return f"{ordered[0]}-{ordered[-1]}"
    return ", ".join(str(s) for s in ordered)


def _per_seed(values: Sequence[float | None], fmt=_count) -> str:
    return ", ".join(fmt(v) for v in values)


# ---------------------------------------------------------------------------- experiments


def cliffwalk_table(report: Mapping[str, Any]) -> str:
    """Updates until the MSE to Q* falls below the threshold: one row per n, one column per
    scheme, median (min-max) over the seeds ("-" top: a seed did not learn within the cap)."""
    rows = report["summary"]
    schemes = list(dict.fromkeys(r["scheme"] for r in rows))
    by_key = {(r["scheme"], r["n"]): r for r in rows}
    sizes = sorted({r["n"] for r in rows})
    seeds = _seeds(rows[0]["seeds"]) if rows else ""
    lines = [
        f"| n | memory N | {' | '.join(schemes)} |",
        "|---:|---:|" + "---:|" * len(schemes),
    ]
    for n in sizes:
        cells = []
        for scheme in schemes:
            row = by_key.get((scheme, n))
            if row is None:
                cells.append("")
                continue
            cell = _span(row["median"], row["min"], row["max"])
            if row["learned"] < len(row["seeds"]):
                cell += f" [{row['learned']}/{len(row['seeds'])}]"
            cells.append(cell)
        memory = next(r["memory_size"] for r in rows if r["n"] == n)
        lines.append(f"| {n} | {memory:,} | {' | '.join(cells)} |")
    note = (
        f"\nLearner updates until the MSE of the Q-values to Q* is below "
        f"{report['threshold']:g}, median (min-max) over seeds {seeds}"
    )
    if any(r["learned"] < len(r["seeds"]) for r in rows):
        note += f"; [k/m]: k of m seeds learned within {report['max_updates']:,} updates"
    return "\n".join(lines) + "\n\n" + note.lstrip("\n") + ".\n"


def per_notebook_table(report: Mapping[str, Any]) -> str:
    """Per scheme: seeds reaching the threshold, env steps to it, best and final 20-episode
    means (median (range), IQM [95% CI], then per seed), and sampled over buffer mean |TD
    error|."""
    threshold = f"{report['threshold']:g}"
    lines = [
        f"| scheme | reached {threshold} | env steps to {threshold}, median (range) "
        "| IQM [95% CI] | per seed | best 20-episode mean | IQM [95% CI] | per seed "
        "| final 20-episode mean | IQM [95% CI] | per seed | sampled / buffer mean abs TD error |",
        "|---|---:|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in report["summary"]:
        label = row["scheme"]
        if label != "uniform":
            label += f" (α {row['alpha']:g}, β₀ {row['beta0']:g})"
        ratio = _row_span(row, "sampled_over_buffer_td", fmt=lambda v: f"{v:.2f}")
        cells = []
        for key, seeds in (
            ("steps", "steps_to_threshold"),
            ("best_mean20", "best_mean20"),
            ("final_mean20", "final_mean20"),
        ):
            values = row[seeds]
            cells.append(f"{_row_span(row, key)} | {iqm_cell(values)} | {_per_seed(values)}")
        lines.append(
            f"| {label} | {row['reached']}/{len(row['seeds'])} | {' | '.join(cells)} | {ratio} |"
        )
    seeds = _seeds(report["summary"][0]["seeds"]) if report["summary"] else ""
    steps = report["config"]["train"]["total_steps"]
    return (
        "\n".join(lines)
        + f"\n\n{steps:,} env steps per run, seeds {seeds}; '-': not reached within the budget; "
        f"{IQM_NOTE}, over the seeds that reached {threshold} for the env steps.\n"
    )


# ----------------------------------------------------------------------------- benchmarks


def cliffwalk_random_memory_table(results: Sequence[Mapping[str, Any]]) -> str:
    """``bench_learning cliffwalk``: per n and scheme, the rewarded transitions in each seed's
    random-episode memory and the updates until max |Q - Q*| < 0.05 ("-": not within the cap)."""
    lines = [
        "| n | scheme | rewarded transitions in memory, per seed | updates, median (range) "
        "| IQM [95% CI] | per seed |",
        "|---:|---|---|---|---|---|",
    ]
    for n in sorted({r["n"] for r in results}):
        for scheme in ("proportional", "uniform"):
            runs = sorted(
                (r for r in results if r["n"] == n and r["scheme"] == scheme),
                key=lambda r: r["seed"],
            )
            if not runs:
                continue
            counts = [r["updates_to_solve"] for r in runs]
            reached = sum(c is not None for c in counts)
            everyone = reached == len(counts)
            middle = (
                f"{_span(*_stats(counts))} | {iqm_cell(counts)}"
                if everyone
                else f"{reached}/{len(counts)} within {runs[0]['max_updates']:,} | -"
            )
            lines.append(
                f"| {n} | {scheme} | {_per_seed([r['rewarded'] for r in runs])} | {middle} "
                f"| {_per_seed(counts)} |"
            )
    seeds = _seeds(sorted({r["seed"] for r in results}))
    return (
        "\n".join(lines)
        + f"\n\nSeeds {seeds}; the memory held fixed while it is replayed; {IQM_NOTE}.\n"
    )


def cartpole_sweep_table(results: Sequence[Mapping[str, Any]]) -> str:
    """``bench_learning cartpole-sweep``: per variant, seeds reaching 475 and the env steps
    to it, median (range) and IQM [95% CI], and the best 20-episode mean, median (range), IQM
    [95% CI] and per seed."""
    variants = list(dict.fromkeys(r["variant"] for r in results))
    lines = [
        "| variant | reached 475 | env steps to 475, median (range) | IQM [95% CI] "
        "| best 20-episode mean, median (range) | IQM [95% CI] | per seed |",
        "|---|---:|---|---|---|---|---|",
    ]
    for variant in variants:
        runs = sorted((r for r in results if r["variant"] == variant), key=lambda r: r["seed"])
        steps = [r["steps_to_threshold"] for r in runs]
        best = [r["best_mean20"] for r in runs]
        reached = sum(s is not None for s in steps)
        lines.append(
            f"| {variant} | {reached}/{len(runs)} | {_span(*_stats(steps))} | {iqm_cell(steps)} "
            f"| {_span(*_stats(best))} | {iqm_cell(best)} | {_per_seed(best)} |"
        )
    seeds = _seeds([r["seed"] for r in results if r["variant"] == variants[0]])
    return (
        "\n".join(lines)
        + f"\n\nProportional replay, seeds {seeds}; {IQM_NOTE}, over the seeds that reached "
        "475 for the env steps.\n"
    )


def memory_table(results: Sequence[Mapping[str, Any]]) -> str:
    """``bench_learning memory``: per agent, best and final 20-episode means, median (range),
    IQM [95% CI] and per seed."""
    names = {
        "e14": "`e14`: two-LSTM recurrent net, windows of T = 8, PER, soft target",
        "per-notebook": "`per-notebook`'s MLP (sees one observation)",
    }
    lines = [
        "| agent | best 20-episode mean, median (range) | IQM [95% CI] | per seed "
        "| final 20-episode mean, median (range) | IQM [95% CI] | per seed |",
        "|---|---|---|---|---|---|---|",
    ]
    for preset in dict.fromkeys(r["preset"] for r in results):
        runs = sorted((r for r in results if r["preset"] == preset), key=lambda r: r["seed"])
        best = [r["best_mean20"] for r in runs]
        final = [r["final_mean20"] for r in runs]
        lines.append(
            f"| {names.get(preset, preset)} | {_span(*_stats(best))} | {iqm_cell(best)} "
            f"| {_per_seed(best)} | {_span(*_stats(final))} | {iqm_cell(final)} "
            f"| {_per_seed(final)} |"
        )
    seeds = _seeds(sorted({r["seed"] for r in results}))
    return "\n".join(lines) + f"\n\nSeeds {seeds}; {IQM_NOTE}.\n"


def e14_lesson_table(report: Mapping[str, Any]) -> str:
    """``benchmarks/recurrent_lesson.py``: recurrent against feed-forward, final and best
    20-episode means, median (range), IQM [95% CI] and per seed, and CPU minutes per run."""
    names = {
        "recurrent": "`e14-lesson` (recurrent)",
        "feed-forward": "same budget, feed-forward",
    }
    lines = [
        "| agent | final 20-episode mean, median (range) | IQM [95% CI] | per seed "
        "| best 20-episode mean, median (range) | IQM [95% CI] | per seed "
        "| CPU minutes per run, median |",
        "|---|---|---|---|---|---|---|---:|",
    ]
    for label in ("recurrent", "feed-forward"):
        runs = sorted((r for r in report["runs"] if r["label"] == label), key=lambda r: r["seed"])
        if not runs:
            continue
        final = [r["final_mean20"] for r in runs]
        best = [r["best_mean20"] for r in runs]
        cpu = statistics.median(r["cpu_seconds"] for r in runs) / 60
        lines.append(
            f"| {names[label]} | {_span(*_stats(final))} | {iqm_cell(final)} | {_per_seed(final)} "
            f"| {_span(*_stats(best))} | {iqm_cell(best)} | {_per_seed(best)} | {cpu:.1f} |"
        )
    return "\n".join(lines) + f"\n\nSeeds {_seeds(report['seeds'])}; {IQM_NOTE}.\n"


def chain_lesson_table(report: Mapping[str, Any]) -> str:
    """``benchmarks/compare_default.py``: per variant and scheme, seeds reaching 0.8 and env
    steps to it, median (range)."""
    lines = [
        "| variant | scheme | reached 0.8 | env steps to 0.8, median (range) |",
        "|---|---|---:|---|",
    ]
    for row in report["summary"]:
        scheme = row["scheme"]
        if scheme != "uniform":
            scheme += f", α {row['alpha']:g}"
        lines.append(
            f"| {row['variant']} | {scheme} | {row['reached']} "
            f"| {_span(*_stats(row['steps_to_threshold']))} |"
        )
    seeds = _seeds(report["summary"][0]["seeds"]) if report["summary"] else ""
    return "\n".join(lines) + f"\n\nSeeds {seeds}; the range is over the seeds that got there.\n"


def _one_decimal(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def greedy_table(
    report: Mapping[str, Any],
    *,
    group: str,
    arm: str,
    baseline: str,
    label: Callable[[Mapping[str, Any]], tuple[str, str]],
) -> str:
    """Per ``group`` and ``arm`` (`rdqn.experiments.greedy`): the final greedy return and the
    greedy curve's mean (median (range), IQM [95% CI], per seed), P(this arm's run beats a run
    of the ``baseline`` arm) on each with its interval, and env steps per second; ``label``
    gives a summary row's first two cells."""
    from rdqn.stats import improvement_interval

    lines = [
        f"| {group} | {arm} | final greedy return | IQM [95% CI] | per seed | greedy curve mean "
        f"| IQM [95% CI] | per seed | P(> {baseline}), final | P(> {baseline}), curve "
        "| env steps/s |",
        "|---|---|---|---|---|---|---|---|---|---|---:|",
    ]
    rows = report["summary"]
    for row in rows:
        against_row = next((r for r in rows if r[group] == row[group] and r[arm] == baseline), None)
        against = []
        for key in ("final_eval", "eval_auc"):
            if against_row is None or row[arm] == baseline:
                against.append("-")
                continue
            ours = [v for v in row[key] if v is not None]
            theirs = [v for v in against_row[key] if v is not None]
            against.append(improvement_interval(ours, theirs).text(lambda v: f"{v:.2f}"))
        cells = [
            f"{_row_span(row, key, _one_decimal)} | {iqm_cell(row[key], _one_decimal)} "
            f"| {_per_seed(row[key], _one_decimal)}"
            for key in ("final_eval", "eval_auc")
        ]
        lines.append(
            f"| {' | '.join(label(row))} | {' | '.join(cells)} | {' | '.join(against)} "
            f"| {row['steps_per_second_median']:,.0f} |"
        )
    seeds = _seeds(rows[0]["seeds"]) if rows else ""
    steps = rows[0]["env_steps"] if rows else 0
    return (
        "\n".join(lines)
        + f"\n\nSeeds {seeds}, {steps:,} env steps each; greedy returns are means over the "
        f"held-out env seeds' episodes; P(> {baseline}): the probability that a run of the "
        f"row's {arm} scores above a {baseline} one, with its 95 % interval; {IQM_NOTE}.\n"
    )


def minatar_table(report: Mapping[str, Any]) -> str:
    """`greedy_table` per game and scheme, against uniform replay."""

    def label(row: Mapping[str, Any]) -> tuple[str, str]:
        scheme = row["scheme"]
        if scheme != "uniform":
            scheme += f", α {row['alpha']:g}, β {row['beta0']:g}"
        return row["game"].removeprefix("rdqn/MinAtar-").removesuffix("-v0"), scheme

    return greedy_table(report, group="game", arm="scheme", baseline="uniform", label=label)


def recurrent_table(report: Mapping[str, Any]) -> str:
    """`greedy_table` per replay arm on masked CartPole, against E14's windows."""

    def label(row: Mapping[str, Any]) -> tuple[str, str]:
        return row["env"].removeprefix("rdqn/").removesuffix("-v0"), row["arm"]

    return greedy_table(report, group="env", arm="arm", baseline="windows", label=label)


RESULTS_FILES: dict[str, tuple[str, Callable[[Any], str]]] = {
    "cliffwalk": ("cliffwalk.json", cliffwalk_table),
    "cliffwalk-oracle-td": ("cliffwalk_oracle_td.json", cliffwalk_table),
    "per-notebook": ("per_notebook.json", per_notebook_table),
    "cliffwalk-random-memory": ("cliffwalk_random_memory.json", cliffwalk_random_memory_table),
    "cartpole-sweep": ("cartpole_sweep.json", cartpole_sweep_table),
    "memory": ("memory.json", memory_table),
    "e14-lesson": ("recurrent_lesson.json", e14_lesson_table),
    "chain-lesson": ("compare_default.json", chain_lesson_table),
    "minatar": ("minatar.json", minatar_table),
    "recurrent": ("recurrent.json", recurrent_table),
}
"""Table name -> (results file in the results folder, its table function)."""


def all_tables(folder: Path) -> dict[str, str]:
    """Every table whose results file is in ``folder``, by name (`RESULTS_FILES` order)."""
    tables = {}
    for name, (file, table) in RESULTS_FILES.items():
        path = folder / file
        if path.exists():
            tables[name] = table(json.loads(path.read_text(encoding="utf-8")))
    return tables


_BLOCK = re.compile(r"(<!-- table: ([\w-]+) -->\n)(.*?)(<!-- /table -->)", re.DOTALL)


def rewrite_blocks(text: str, tables: Mapping[str, str]) -> str:
    """``text`` with each table block's body replaced by its table (unknown names kept)."""

    def body(match: re.Match[str]) -> str:
        name = match.group(2)
        new = tables.get(name, match.group(3))
        return f"{match.group(1)}{new}{match.group(4)}"

    return _BLOCK.sub(body, text)


def check_blocks(text: str, tables: Mapping[str, str]) -> list[str]:
    """Names of the table blocks in ``text`` whose body is not their table (or has none)."""
    return [m.group(2) for m in _BLOCK.finditer(text) if tables.get(m.group(2)) != m.group(3)]
