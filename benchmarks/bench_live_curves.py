"""What the live page's two charts cost at every refresh (each open tab, every second).

Builds the live page's reward and loss figures from a run's telemetry and serialises them as
Streamlit does (`Figure.to_json`), for runs of growing length: E finished episodes and the loss
log's 20,000 points (`TelemetryRecorder`'s cap). Two ways, interleaved, same data:

  whole    every sample sent, a marker per episode, the EMA one value at a time (as before)
  thinned  at most `CURVE_POINTS` samples per trace (`rdqn.figures.thin`), markers only
           up to `MAX_MARKERS` episodes, the EMA as one linear filter (the dashboard now)

The bytes are what each watching browser receives and Plotly redraws every second.

Then the thinned figures are serialised as `st.plotly_chart` does (`plotly.io.to_json(figure,
validate=False)`) with each of Plotly's JSON engines, interleaved: the standard library's `json`
and `orjson` (the default whenever it is installed; requirements.txt names it).

Last, what each watching session pays per redraw for the two charts once they are built, as
``st.plotly_chart`` turns a figure into its message (`Figure.to_dict`, then the JSON):
``session_plain`` for figures each session builds itself, ``session_shared`` for the frozen
figures every session shares (`rdqn.dashboard.shared_figures`: the dict is made once per snapshot).

Usage: python -m benchmarks.bench_live_curves [--rounds 5] [--json OUT.json]
       python -m benchmarks.bench_live_curves --table benchmarks/results/live_curves.json
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from plotly.tools import return_figure_from_figure_or_data

import rdqn.figures as figures
from benchmarks.provenance import git_commit
from rdqn.dashboard.shared_figures import FrozenFigure
from rdqn.figures import _base, curves

EPISODES = (500, 5_000, 50_000)
LOSS_POINTS = 20_000


def ema_one_at_a_time(values: np.ndarray, smoothing: float) -> np.ndarray:
    """The EMA's definition (`rdqn.figures.ema`), one value at a time."""
    out = np.empty(len(values))
    last, count = 0.0, 0
    for i, value in enumerate(values):
        if not math.isfinite(value):
            out[i] = value
            continue
        last = last * smoothing + (1.0 - smoothing) * value
        count += 1
        out[i] = last / (1.0 - smoothing**count)
    return out


@contextlib.contextmanager
def whole() -> Iterator[None]:
    """The figures as they were: no thinning, markers always, the per-value EMA."""
    with (
        mock.patch.object(curves, "thin", lambda x, y: np.arange(y.size)),
        mock.patch.object(curves, "MAX_MARKERS", math.inf),
        mock.patch.object(curves, "ema", ema_one_at_a_time),
    ):
        yield


def live_figures(run: dict[str, np.ndarray]) -> tuple[go.Figure, go.Figure]:
    """The live page's two figures as it draws them after a restart (EMA 0.9, the previous run's
    curves beside the run's own: here the same data)."""
    previous = "previous: uniform · seed 0"
    reward = figures.reward_curve(
        run["end_steps"],
        run["returns"],
        overlay=(run["end_steps"], run["returns"]),
        overlay_label=previous,
        scheme="proportional",
    )
    loss = figures.loss_curve(
        run["updates"],
        run["losses"],
        run["td"],
        smoothing=0.9,
        overlay=(run["updates"], run["td"]),
        overlay_label=previous,
        scheme="proportional",
    )
    return reward, loss


def live_charts(run: dict[str, np.ndarray]) -> int:
    """Build and serialise the live page's two figures; the bytes sent."""
    return sum(len(figure.to_json()) for figure in live_figures(run))


def engine_seconds(run: dict[str, np.ndarray], rounds: int) -> dict[str, float]:
    """Median seconds to serialise the two (thinned) live figures as `st.plotly_chart` does,
    per JSON engine, the engines interleaved."""
    charts = live_figures(run)
    seconds: dict[str, list[float]] = {"json": [], "orjson": []}
    for _ in range(rounds):
        for engine in seconds:
            start = time.perf_counter()
            for figure in charts:
                pio.to_json(figure, validate=False, engine=engine)
            seconds[engine].append(time.perf_counter() - start)
    return {engine: statistics.median(times) for engine, times in seconds.items()}


def session_seconds(run: dict[str, np.ndarray], rounds: int) -> dict[str, float]:
    """Median seconds a session spends turning the two built figures into chart messages, as
    `st.plotly_chart` does, for plain and for shared (frozen) figures, interleaved."""
    plain = live_figures(run)
    shared = tuple(FrozenFigure(figure) for figure in plain)
    seconds: dict[str, list[float]] = {"plain": [], "shared": []}
    for _ in range(rounds):
        for way, charts in (("plain", plain), ("shared", shared)):
            start = time.perf_counter()
            for figure in charts:
                pio.to_json(return_figure_from_figure_or_data(figure, True), validate=False)
            seconds[way].append(time.perf_counter() - start)
    return {way: statistics.median(times) for way, times in seconds.items()}


def synthetic_run(episodes: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(10, 200, size=episodes)
    updates = np.arange(1, LOSS_POINTS + 1) * 10
    return {
        "end_steps": np.cumsum(lengths).astype(np.float64),
        "returns": lengths.astype(np.float64),
        "updates": updates,
        "losses": rng.gamma(2.0, 0.05, size=updates.size),
        "td": rng.gamma(2.0, 0.5, size=updates.size),
    }


def table(results: dict[str, Any] | list[dict[str, Any]]) -> str:
    """The docs' table (Markdown) from a results file (older files: the list of rows alone)."""
    rows = results["rows"] if isinstance(results, dict) else results
    lines = [
        "| episodes | build + serialise, whole | thinned | bytes per refresh, whole | thinned "
        "| `to_json`, json | orjson | per session, own figures | shared figures |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['episodes']:,} | {row['whole_ms']:.1f} ms "
            f"| {row['thinned_ms']:.1f} ms ({row['whole_ms'] / row['thinned_ms']:.1f}×) "
            f"| {row['whole_kb']:,.0f} kB "
            f"| {row['thinned_kb']:,.0f} kB ({row['whole_kb'] / row['thinned_kb']:.0f}×) "
            f"| {row['to_json_json_ms']:.1f} ms | {row['to_json_orjson_ms']:.1f} ms "
            f"| {row['session_plain_ms']:.1f} ms | {row['session_shared_ms']:.2f} ms |"
        )
    loss = {row["loss_points"] for row in rows}
    note = f"Medians over the rounds; the loss log at {', '.join(f'{n:,}' for n in loss)} points."
    if isinstance(results, dict):
        note += f" {results['rounds']} rounds; commit {results['commit']}, {results['date']}."
    return "\n".join([*lines, "", note]) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--table", type=Path, help="print the table of a results file and exit")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(args.table.read_text(encoding="utf-8"))), end="")
        return
    rows = []
    for episodes in EPISODES:
        run = synthetic_run(episodes)
        seconds: dict[str, list[float]] = {"whole": [], "thinned": []}
        sent: dict[str, int] = {}
        for _ in range(args.rounds):  # interleaved: drift hits both alike
            for way in ("whole", "thinned"):
                with whole() if way == "whole" else contextlib.nullcontext():
                    start = time.perf_counter()
                    sent[way] = live_charts(run)
                    seconds[way].append(time.perf_counter() - start)
        engines = engine_seconds(run, 5 * args.rounds)
        sessions = session_seconds(run, 5 * args.rounds)
        row = {
            "episodes": episodes,
            "loss_points": LOSS_POINTS,
            **{f"{way}_ms": 1e3 * statistics.median(seconds[way]) for way in seconds},
            **{f"{way}_kb": sent[way] / 1e3 for way in sent},
            **{f"to_json_{engine}_ms": 1e3 * engines[engine] for engine in engines},
            **{f"session_{way}_ms": 1e3 * sessions[way] for way in sessions},
        }
        rows.append(row)
        print(
            f"{episodes:>7,} episodes: whole {row['whole_ms']:7.1f} ms {row['whole_kb']:8,.0f} kB"
            f" | thinned {row['thinned_ms']:6.1f} ms {row['thinned_kb']:6,.0f} kB"
            f" | x{row['whole_ms'] / row['thinned_ms']:.1f} time, "
            f"x{row['whole_kb'] / row['thinned_kb']:.1f} bytes"
            f" | to_json: json {row['to_json_json_ms']:.2f} ms,"
            f" orjson {row['to_json_orjson_ms']:.2f} ms"
            f" (x{engines['json'] / engines['orjson']:.1f})"
            f" | per session: plain {row['session_plain_ms']:.2f} ms,"
            f" shared {row['session_shared_ms']:.2f} ms"
        )
    print(f"(at most {_base.CURVE_POINTS} samples per trace, markers up to {curves.MAX_MARKERS})")
    if args.json:
        results = {
            "commit": git_commit(),
            "date": datetime.date.today().isoformat(),
            "rounds": args.rounds,
            "rows": rows,
        }
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
