"""The `demo` preset (Home's Start demo) on CartPole-v1: does every seed solve it, and how fast?

Headless, one run at a time in this process, one torch thread, after a short warm-up run that
loads the compiled kernels (as the dashboard's zygote does before it forks a run); the clock
starts as the trainer begins to be built. (Not in `rdqn.sweeps.map_tasks` workers: those lower
their priority by 10, as the dashboard's runs do, which ``nice -n -10`` is meant to undo.) Three
variants, seeds 0-9 each, run seed by seed in turn so that a change in the shared machine's load
falls on all of them alike:

  demo                 the preset as Home starts it: proportional PER, stops at 475
  demo, uniform        the same settings with uniform replay
  demo, no stop        the preset without ``train.stop_at_return``: the whole budget, to show what
                       the stop spares the class (the same seed is identical up to the stop)

and, with ``--variants``, what the tuning changed, one thing at a time (`VARIANTS`).

Measured per run: whether and when (env steps, wall seconds) the mean return of 20 consecutive
episodes first reaches 475, the mean of the last 20 episodes when the run ends (its budget
spent or its goal reached), env steps per second. Goals: 10 of 10 seeds reach 475,
median time to it at most 15 s, the pole still balanced when the run ends. A run that stops at
475 ends with a 20-episode mean of at least 475 by the stop's rule, so the tables count a mean of
at least 400 at the end (`END_GOAL`) only for variants that run their whole budget (`no stop`).

Usage (the published figures ran at ``nice -n -10`` on the shared 2-core machine):
    nice -n -10 python -m benchmarks.bench_demo --out benchmarks/results/demo.json
    nice -n -10 python -m benchmarks.bench_demo --variants "demo, global IS normalisation" \
        "demo, per-notebook's learner" --out benchmarks/results/demo_tuning.json
    python -m benchmarks.bench_demo --table benchmarks/results/demo.json
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
from pathlib import Path
from typing import Any

from benchmarks.provenance import git_commit
from benchmarks.timed_runs import (
    measures,
    median_range,
    spread,
    summarise,
    train_timed,
    warm_up,
)

VARIANTS: dict[str, dict[str, Any]] = {
    "demo": {},
    "demo, uniform replay": {"replay.scheme": "uniform"},
    "demo, no stop": {"train.stop_at_return": None},
    # What the tuning changed, one thing at a time (--variants): the IS weights normalised by the
    # largest possible weight (the paper's, and per-notebook's) instead of the batch's largest;
    # per-notebook's learner (plain DQN, lr 1e-3, a hard target copy every 500 updates).
    "demo, global IS normalisation": {"replay.is_normalization": "global"},
    "demo, per-notebook's learner": {
        "agent.double_dqn": False,
        "agent.lr": 1e-3,
        "agent.target_update": "hard",
        "agent.target_sync_every": 500,
    },
}
DEFAULT_VARIANTS = ("demo", "demo, uniform replay", "demo, no stop")
END_GOAL = 400.0
"""The 20-episode mean a run that spends its whole budget should still have at its end (one that
stops at 475 has at least 475 when it stops, by the stop's rule)."""


def _config(seed: int, overrides: dict[str, Any]) -> dict[str, Any]:
    from rdqn.presets import preset

    return preset("demo").with_overrides({"seed": seed, **overrides}).to_dict()


def summary(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per variant: `summarise`, and the 20-episode mean when each run ended."""
    out = {}
    for variant, rows in runs.items():
        ends = [end for end in (measures(row)["end_mean20"] for row in rows) if end is not None]
        out[variant] = {
            **summarise(rows),
            "end_mean20": spread(ends),
            "end_mean20_at_least_400": f"{sum(e >= END_GOAL for e in ends)}/{len(rows)}",
        }
    return out


def summary_table(results: dict[str, Any]) -> str:
    """The summary table (Markdown) of a results file, per variant, with its note."""
    return table(results, seed_by_seed=False)


def _setting(results: dict[str, Any], variant: str, key: str) -> Any:
    """``variant``'s train setting ``key``: the preset's, or the variant's override."""
    overrides = results.get("variants", {}).get(variant, VARIANTS.get(variant, {}))
    return overrides.get(f"train.{key}", results["demo"]["train"][key])


def table(results: dict[str, Any], *, seed_by_seed: bool = True) -> str:
    """The docs' tables (Markdown) from a results file: the summary, then seed by seed.

    The count of runs whose 20-episode mean is at least 400 at the end is shown only for the
    variants that run their whole budget (no ``train.stop_at_return``), and its column only if
    there is one: a run that stops at 475 ends at 475 or more by construction."""
    rows_by_variant = summary(results["runs"])
    stops = {v: _setting(results, v, "stop_at_return") is not None for v in rows_by_variant}
    budgets = {_setting(results, v, "total_steps") for v, stop in stops.items() if not stop}
    end_column = (
        [f"≥ 400 at {budgets.pop():,} steps" if len(budgets) == 1 else "≥ 400 at the budget's end"]
        if budgets
        else []
    )
    rows = [
        "| variant | reached 475 | env steps to 475 | CPU s to 475 | wall s to 475 | "
        + " | ".join(["20-episode mean at the end", *end_column, "env steps per CPU s"])
        + " |",
        "|---|---:|---:|---:|---:|---:|" + "---:|" * len(end_column) + "---:|",
    ]
    for variant, row in rows_by_variant.items():
        end = ["–" if stops[variant] else row["end_mean20_at_least_400"]] if end_column else []
        cells = [
            variant,
            row["reached_475"],
            median_range(row["steps_to_475"], ",.0f"),
            median_range(row["cpu_seconds_to_475"], ".1f"),
            median_range(row["seconds_to_475"], ".1f"),
            median_range(row["end_mean20"], ".0f"),
            *end,
            median_range(row["env_steps_per_cpu_s"], ",.0f"),
        ]
        rows.append("| " + " | ".join(cells) + " |")
    load = results["load_average"]
    seeds = sorted({run["seed"] for runs in results["runs"].values() for run in runs})
    when = f"{results['date'][:10]}" + (
        f", commit {results['commit']}" if "commit" in results else ""
    )
    rows += [
        "",
        f"Median (min–max) over seeds {_seeds(seeds)}; {when}. Load average (1 minute) "
        f"at the start {load['start'][0]:.1f}, at the end {load.get('end', load['start'])[0]:.1f}.",
    ]
    if end_column and any(stops.values()):
        rows[-1] += (
            f" {end_column[0]}: seeds whose 20-episode mean was still at least 400 when the "
            "whole budget was spent, for the variants that run it; – for a variant that stops "
            "at 475, whose runs that get there end at 475 or more by the stop's rule."
        )
    if not seed_by_seed:
        return "\n".join(rows) + "\n"
    rows += [
        "",
        "Seed by seed: env steps to 475 (CPU seconds); 20-episode mean at the end.",
        "",
    ]
    variants = list(results["runs"])
    rows.append("| seed | " + " | ".join(variants) + " |")
    rows.append("|---:|" + "---|" * len(variants))
    by_seed: dict[int, list[str]] = {}
    for variant in variants:
        for run in results["runs"][variant]:
            m = measures(run)
            cell = (
                f"{m['steps_to_475']:,} ({m['cpu_seconds_to_475']:.1f} s)"
                if m["steps_to_475"] is not None
                else "not reached"
            )
            end = "–" if m["end_mean20"] is None else f"{m['end_mean20']:.0f}"
            by_seed.setdefault(run["seed"], []).append(f"{cell}; {end}")
    for seed, cells in sorted(by_seed.items()):
        rows.append(f"| {seed} | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def _seeds(seeds: list[int]) -> str:
    """``0-9`` for a run of consecutive seeds, else the list."""
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(map(str, seeds))


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for package in ("torch", "numpy", "numba", "gymnasium"):
        out[package] = importlib.metadata.version(package)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(10)))
    parser.add_argument(
        "--variants", nargs="+", choices=list(VARIANTS), default=list(DEFAULT_VARIANTS)
    )
    parser.add_argument("--out", type=Path, help="write the results JSON here")
    parser.add_argument("--table", type=Path, help="print the tables of a results file and exit")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(args.table.read_text())), end="")
        return
    from rdqn.presets import preset

    results: dict[str, Any] = {
        "command": "nice -n -10 python -m benchmarks.bench_demo",
        "commit": git_commit(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "versions": _versions(),
        "demo": preset("demo").to_dict(),
        "variants": {name: VARIANTS[name] for name in args.variants},
        "load_average": {"start": os.getloadavg()},
        "runs": {name: [] for name in args.variants},
    }
    warm_up()
    for seed in args.seeds:
        for name in args.variants:
            outcome = train_timed(_config(seed, VARIANTS[name]))
            results["runs"][name].append(outcome)
            m = measures(outcome)
            print(
                f"seed {seed} {name}: 475 at {m['steps_to_475']} steps / {m['seconds_to_475']} s, "
                f"end mean {m['end_mean20']}, {m['env_steps_per_s']:,.0f} steps/s",
                flush=True,
            )
            if args.out:
                results["load_average"]["end"] = os.getloadavg()
                results["summary"] = summary(results["runs"])
                args.out.parent.mkdir(parents=True, exist_ok=True)
                args.out.write_text(json.dumps(results, indent=1))
    print(table(results), end="")


if __name__ == "__main__":
    main()
