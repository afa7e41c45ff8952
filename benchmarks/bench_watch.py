"""What seeing the experience costs: a run's training speed with its watched episodes against
without, and the memory explorer's time for a 100,000-transition memory.

1. **Training with Watch it play.** A run's worker plays greedy episodes for its watchers at the
   `rdqn.training.watcher.EpisodeWatcher` cadence (the first at once, then after every 5 training
   episodes at most once every 5 s; the same loop whether anyone watches or not). Each seed trains
   the same config twice in this process, once stepping the trainer alone and once stepping it
   with the watcher as `rdqn.runs.control.drive` does, in alternating order; measured: the share
   of the watched run's wall time inside the watcher's calls (what watching costs the training,
   exactly), and each run's env steps per CPU second of the process (a one-thread run's CPU time
   is what it takes on a core of its own). The `demo` and `per-notebook` presets, their goal
   turned off so that both variants do the same steps.
2. **The memory explorer at 100,000 transitions.** A `per-notebook` run with a 100,000-slot memory
   trained until it is full; then, repeated: the worker's `rdqn.training.memories.memories` (the
   thinned set, the three lists with their TD terms, the expectation line), the bytes it sends,
   the server's two figures and table (`rdqn.figures.memories`, `rdqn.dashboard.memories_view`)
   as Plotly JSON, and Chromium drawing both figures with plotly.js (`Plotly.newPlot` until the
   next animation frame).

Usage:
    python -m benchmarks.bench_watch --out benchmarks/results/watch.json
    python -m benchmarks.bench_watch --table benchmarks/results/watch.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pickle
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.provenance import git_commit

ROOT = Path(__file__).resolve().parent.parent
PRESETS = ("demo", "per-notebook")
GOAL = 0.95
"""Training speed with watching, as a share of without."""
DRAW_GOAL_S = 1.0


def _config(name: str, seed: int, steps: int):  # noqa: ANN202 - a RunConfig
    from rdqn.presets import preset

    return preset(name).with_overrides(
        {"seed": seed, "train.total_steps": steps, "train.stop_at_return": None}
    )


def _train(config: Any, *, watched: bool) -> dict[str, float]:  # noqa: ANN401
    from rdqn.training.trainer import Trainer
    from rdqn.training.watcher import EpisodeWatcher

    trainer = Trainer(config)
    watcher = EpisodeWatcher(trainer) if watched else None
    watching = 0.0  # seconds inside the watcher's calls
    wall, cpu = time.perf_counter(), time.process_time()
    if watcher is not None:
        watcher.maybe_play()
    while not trainer.done:
        trainer.step()
        if watcher is not None:
            start = time.perf_counter()
            watcher.maybe_play()
            watching += time.perf_counter() - start
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    played = watcher.played if watcher is not None else 0
    trainer.close()
    steps = config.train.total_steps
    return {
        "steps_per_cpu_s": steps / cpu,
        "steps_per_s": steps / wall,
        "played": played,
        "watching_share": watching / wall,
    }


def training(seeds: list[int], steps: int) -> dict[str, Any]:
    import torch

    torch.set_num_threads(1)
    _train(_config("demo", 0, 2_000), watched=True)  # kernels and lazy imports loaded
    runs: dict[str, list[dict[str, Any]]] = {}
    for name in PRESETS:
        for seed in seeds:
            order = (False, True) if seed % 2 == 0 else (True, False)
            pair = {
                watched: _train(_config(name, seed, steps), watched=watched) for watched in order
            }
            runs.setdefault(name, []).append(
                {
                    "seed": seed,
                    "plain": pair[False],
                    "watched": pair[True],
                    "cpu_ratio": pair[True]["steps_per_cpu_s"] / pair[False]["steps_per_cpu_s"],
                    "wall_ratio": pair[True]["steps_per_s"] / pair[False]["steps_per_s"],
                }
            )
            print(name, runs[name][-1], flush=True)
    return {"steps": steps, "runs": runs}


def _draw_seconds(figures: list[dict[str, Any]], repeats: int) -> list[float]:
    """Chromium's time to draw the figures with plotly.js, from `newPlot` to the next frame."""
    from playwright.sync_api import sync_playwright

    from tests.harness.chromium import CHROMIUM, CHROMIUM_ARGS

    plotly_js = Path(__import__("plotly").__file__).parent / "package_data" / "plotly.min.js"
    page_html = (
        "<html><body><div id='a' style='width:800px;height:380px'></div>"
        "<div id='b' style='width:800px;height:380px'></div>"
        f"<script>{plotly_js.read_text(encoding='utf-8')}</script></body></html>"
    )
    script = """async (figs) => {
        const start = performance.now();
        await Plotly.newPlot('a', figs[0].data, figs[0].layout);
        await Plotly.newPlot('b', figs[1].data, figs[1].layout);
        await new Promise(requestAnimationFrame);
        const took = performance.now() - start;
        Plotly.purge('a'); Plotly.purge('b');
        return took / 1000;
    }"""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.set_content(page_html)
        seconds = [page.evaluate(script, figures) for _ in range(repeats)]
        browser.close()
    return seconds


def explorer(capacity: int, repeats: int) -> dict[str, Any]:
    import torch

    from rdqn.dashboard.memories_view import memory_table
    from rdqn.figures.memories import replays_by_age_figure, surprise_figure
    from rdqn.presets import preset
    from rdqn.training.memories import memories
    from rdqn.training.trainer import Trainer

    torch.set_num_threads(1)
    config = preset("per-notebook").with_overrides(
        {"replay.capacity": capacity, "train.total_steps": capacity, "train.stop_at_return": None}
    )
    trainer = Trainer(config)
    while not trainer.done:
        trainer.step()
    worker, server, sizes = [], [], []
    figures: list[dict[str, Any]] = []
    for _ in range(repeats):
        start = time.perf_counter()
        view = memories(trainer)
        worker.append(time.perf_counter() - start)
        sent = pickle.dumps(view, protocol=pickle.HIGHEST_PROTOCOL)
        sizes.append(len(sent))
        start = time.perf_counter()
        view = pickle.loads(sent)
        figs = [surprise_figure(view), replays_by_age_figure(view)]
        figures = [json.loads(fig.to_json()) for fig in figs]
        for name in view.lists:
            memory_table(view, name).to_json()
        server.append(time.perf_counter() - start)
    draw = _draw_seconds(figures, repeats)
    trainer.close()
    return {
        "capacity": capacity,
        "drawn_points": len(view.drawn),
        "worker_seconds": worker,
        "server_seconds": server,
        "bytes_sent": sizes,
        "browser_draw_seconds": draw,
    }


def _median_range(values: list[float], fmt: str) -> str:
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}–{max(values):{fmt}})"


def table(results: dict[str, Any]) -> str:
    train = results["training"]
    rows = [
        "| preset | episodes played | time in Watch it play | training speed kept "
        "(goal ≥ 95 %) | env steps per CPU s, alone | with Watch it play | A/B ratio |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, runs in train["runs"].items():
        shares = [100 * r["watched"]["watching_share"] for r in runs]
        rows.append(
            f"| `{name}` | {_median_range([r['watched']['played'] for r in runs], '.0f')} "
            f"| {_median_range(shares, '.2f')} % "
            f"| {_median_range([100 - s for s in shares], '.2f')} % "
            f"| {_median_range([r['plain']['steps_per_cpu_s'] for r in runs], ',.0f')} "
            f"| {_median_range([r['watched']['steps_per_cpu_s'] for r in runs], ',.0f')} "
            f"| {_median_range([100 * r['cpu_ratio'] for r in runs], '.0f')} % |"
        )
    seeds = sorted({r["seed"] for runs in train["runs"].values() for r in runs})
    ex = results["explorer"]
    rows += [
        "",
        f"Median (min–max) over seeds {', '.join(map(str, seeds))}, {train['steps']:,} env steps "
        "each, one torch thread. *Time in Watch it play*: the share of the watched run's wall "
        "time spent in the watcher's calls (its episodes and its checks); the speed kept is the "
        "rest. The A/B ratio compares two separate runs' speeds (CPU s) and mostly shows how "
        "much two runs of the same work differ on this shared machine.",
        "",
        f"| memory explorer, {ex['capacity']:,} transitions | median (min–max) | goal |",
        "|---|---:|---:|",
        f"| the worker builds the view | {_median_range(ex['worker_seconds'], '.3f')} s | |",
        f"| bytes it sends | {_median_range([b / 1e3 for b in ex['bytes_sent']], ',.0f')} kB | |",
        f"| the server builds the figures and tables | "
        f"{_median_range(ex['server_seconds'], '.3f')} s | |",
        f"| Chromium draws both figures ({ex['drawn_points']:,} points each) | "
        f"{_median_range(ex['browser_draw_seconds'], '.3f')} s | ≤ {DRAW_GOAL_S:g} s |",
        "",
        f"{results['date'][:10]}, commit {results['commit']}; load average (1 minute) at the "
        f"start {results['load_average'][0]:.1f}.",
    ]
    return "\n".join(rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="results file to write")
    parser.add_argument("--table", type=Path, help="print the table of a results file")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--steps", type=int, default=60_000)
    parser.add_argument("--capacity", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(args.table.read_text(encoding="utf-8"))), end="")
        return
    results = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(),
        "commit": git_commit(),
        "load_average": os.getloadavg(),
        "training": training(args.seeds, args.steps),
        "explorer": explorer(args.capacity, args.repeats),
    }
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(table(results), end="")


if __name__ == "__main__":
    main()
