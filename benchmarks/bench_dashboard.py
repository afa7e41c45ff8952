"""Does watching a run slow it down? Training speed headless vs with the live pages polling.

A dashboard page costs the training thread what the Streamlit server does for it in the same
process: at each refresh of an open page, read the latest snapshot and build and serialise the
page's figures (the live page's reward and loss curves; with the replay-internals page also
open, its nine figures). This script runs the same `RunHandle` (per-notebook on CartPole, one
torch thread) three ways, interleaved round by round, and compares env steps per second:

  headless        nobody polls
  live page       one poller thread builds the live page's figures every second
  live+internals  two pollers: the live page, and the replay-internals page every 2 s (as the
                  pages' fragments refresh)

Usage: python -m benchmarks.bench_dashboard [--seconds 20] [--rounds 3] [--json OUT.json]
       python -m benchmarks.bench_dashboard --table benchmarks/results/dashboard.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

import rdqn.figures as figures
from benchmarks.provenance import git_commit
from rdqn.presets import preset
from rdqn.serve.handle import RunHandle
from rdqn.training.telemetry import (
    RELATIVE_PROBABILITY_EDGES,
    Histogram,
    Telemetry,
    weight_histogram,
)


def live_page(snap: Telemetry) -> None:
    figures.reward_curve(snap.episode_end_steps, snap.episode_returns, scheme=snap.scheme).to_json()
    figures.loss_curve(snap.log_updates, snap.losses, snap.td_abs_mean).to_json()


def internals_page(snap: Telemetry) -> None:
    batch = snap.last_batch
    figs = [
        figures.histogram_figure(snap.priorities, title="p", x_title="x", log_x_labels=True),
        figures.heatmap_over_time(snap.priority_history, title="h", y_title="y"),
        figures.heatmap_over_time(snap.weight_history, title="w", y_title="y"),
        figures.td_stages_figure(snap.td_stages),
        figures.fit_figure(snap.fit),
        figures.age_figure(snap.age_counts),
        figures.weights_scatter(batch),
    ]
    if batch is not None:
        with np.errstate(divide="ignore"):
            relative = np.log10(batch.probabilities * snap.buffer_size)
        figs.append(
            figures.histogram_figure(
                Histogram.of(relative, RELATIVE_PROBABILITY_EDGES), title="b", x_title="x"
            )
        )
        figs.append(
            figures.histogram_figure(
                weight_histogram(batch.weights), title="w", x_title="x", log_x_labels=True
            )
        )
    for fig in figs:
        fig.to_json()


LIVE_REFRESH_S = 1.0
"""`pages/live.py` refreshes its fragment every second ..."""
INTERNALS_REFRESH_S = 2.0
"""... and `pages/internals.py` every two seconds."""


def measure(pages: list, seconds: float) -> float:
    """Env steps/s of a run while `pages` [(build_page, refresh seconds)] poll it."""
    config = preset("per-notebook").with_overrides({"train.total_steps": 10_000_000})
    handle = RunHandle(config, snapshot_interval=0.5).start()
    while handle.snapshot() is None or handle.snapshot().env_steps < 1_500:
        time.sleep(0.1)
    stop = threading.Event()

    def poll(page, every: float) -> None:  # noqa: ANN001
        while not stop.is_set():
            snap = handle.snapshot()
            if snap is not None:
                page(snap)
            stop.wait(every)

    pollers = [threading.Thread(target=poll, args=page, daemon=True) for page in pages]
    for poller in pollers:
        poller.start()
    time.sleep(1.0)
    start_steps, start = handle.snapshot().env_steps, time.perf_counter()
    time.sleep(seconds)
    end_steps, end = handle.snapshot().env_steps, time.perf_counter()
    stop.set()
    handle.stop()
    return (end_steps - start_steps) / (end - start)


def table(results: dict[str, Any]) -> str:
    """The docs' table (Markdown) from a results file: env steps/s, median (range) over the
    rounds, and the median against headless."""
    labels = {
        "live page": "live training page open",
        "live+internals": "live page and replay-internals page open (nine more figures)",
    }
    medians = results["medians"]
    lines = ["| | env steps/s, median (range) | of headless |", "|---|---:|---:|"]
    for name, values in results["rates"].items():
        span = f"{medians[name]:,.0f} ({min(values):,.0f}-{max(values):,.0f})"
        share = medians[name] / medians["headless"]
        lines.append(f"| {labels.get(name, name)} | {span} | {share:.1%} |")
    note = f"Medians of {len(results['rates']['headless'])} interleaved rounds."
    if "commit" in results:
        note += f" Commit {results['commit']}, {results['date']}."
    return "\n".join([*lines, "", note]) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json")
    parser.add_argument("--table", type=Path, help="print the table of a results file and exit")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(args.table.read_text(encoding="utf-8"))), end="")
        return
    torch.set_num_threads(1)
    variants = {
        "headless": [],
        "live page": [(live_page, LIVE_REFRESH_S)],
        "live+internals": [(live_page, LIVE_REFRESH_S), (internals_page, INTERNALS_REFRESH_S)],
    }
    rates: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, pages in variants.items():
            rates[name].append(measure(pages, args.seconds))
    medians = {name: statistics.median(values) for name, values in rates.items()}
    for name, rate in medians.items():
        print(f"{name:15s} {rate:7.0f} env steps/s  {rate / medians['headless']:6.1%} of headless")
    if args.json:
        results = {
            "commit": git_commit(),
            "date": datetime.date.today().isoformat(),
            "rates": rates,
            "medians": medians,
        }
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
