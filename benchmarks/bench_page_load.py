"""Is the server still serving while runs train? New sessions and open pages, in a real browser.

Starts the dashboard (`streamlit run app.py`) once per executor, with runs training in the
server's own threads (``thread``: how runs trained before worker processes) or in worker
processes (``process``: the default). With 0, 1, 2, 3 runs already training, each started by a
browser session that stays open, it measures:

  served   seconds for a new browser session to get the live page (its Start button on screen)
  run seen seconds until, after pressing Start, its run shows its first counters; a session
           that sees nothing within the timeout counts as the timeout
  refresh  the intervals between updates of the Env steps counter on that open page (the page
         refreshes every second), median and 95th percentile

The browsers run on the server's machine (2 cores here), where a classroom's run on the
students' laptops. So by default the sessions that keep runs training move on to the Home page
(their runs keep training; nothing redraws), and what is measured is the server; with
``--watching`` they stay on the live page and this machine also draws their charts every
second. Runs train with a 10^6-step budget so none ends during the measures; each measured
session's run is paused before the next. Traffic stays on 127.0.0.1; the script stops everything
it starts.

Usage: python -m benchmarks.bench_page_load [--executors thread process] [--runs 0 1 2 3]
       [--repeats 3] [--timeout 60] [--watching] [--json OUT.json]
       python -m benchmarks.bench_page_load --table benchmarks/results/page_load.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, Page, sync_playwright
from playwright.sync_api import Error as PlaywrightError

from benchmarks.provenance import git_commit
from tests.harness.chromium import CHROMIUM, CHROMIUM_ARGS
from tests.harness.dashboard_server import start_dashboard

LIVE = "/live?steps=1000000"
RUNNING = '[data-testid="stProgress"]'


def start_server(executor: str) -> tuple[subprocess.Popen[bytes], str]:
    env = {
        **os.environ,
        "RDQN_EXECUTOR": executor,
        "RDQN_MAX_RUNS": "8",
        "RDQN_IDLE_TIMEOUT": "3600",  # the sessions that keep runs training do not watch them
        "RDQN_HOME": tempfile.mkdtemp(prefix="rdqn-page-load-"),
    }
    return start_dashboard(env)


def env_steps(page: Page) -> int | None:
    """The Env steps counter on screen (None while the page is redrawing it)."""
    metric = page.locator('[data-testid="stMetric"]', has_text="Env steps").first
    try:
        text = metric.locator('[data-testid="stMetricValue"]').inner_text(timeout=2_000)
        return int(text.replace(",", ""))
    except (PlaywrightError, ValueError):
        return None


def open_and_start(browser: Browser, url: str, timeout: float) -> tuple[Page, float, float]:
    """A new session: open the live page (served: its Start button is on screen), press Start,
    wait until its run shows counters; returns the page and both times."""
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.set_default_timeout(timeout * 1000)
    begin = time.perf_counter()
    served = timeout
    try:
        page.goto(url + LIVE)
        start = page.get_by_role("button", name="Start", exact=True)
        start.wait_for()
        served = time.perf_counter() - begin
        start.click()
        page.locator(RUNNING, has_text="running").first.wait_for()
        while not env_steps(page):
            time.sleep(0.05)
    except Exception:  # noqa: BLE001 - a session that sees nothing in time counts as the timeout
        return page, timeout, served
    return page, time.perf_counter() - begin, served


def refresh_intervals(page: Page, seconds: float) -> list[float]:
    """Seconds between successive changes of the Env steps counter while ``page`` is open."""
    changes, last, end = [], env_steps(page), time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.05)
        value = env_steps(page)
        if value is not None and value != last:
            changes.append(time.monotonic())
            last = value
    return [b - a for a, b in zip(changes, changes[1:], strict=False)]


def pause(page: Page) -> None:
    page.get_by_role("button", name="Pause").click(timeout=30_000)


def measure_executor(
    executor: str, runs: list[int], repeats: int, timeout: float, watching: bool
) -> dict:
    server, url = start_server(executor)
    results: dict[str, Any] = {}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            # Warm the server (imports, compiled kernels, first run) before anything is timed.
            page, _, _ = open_and_start(browser, url, 180)
            pause(page)
            page.context.close()
            background: list[Page] = []
            for count in runs:
                while len(background) < count:
                    page, _, _ = open_and_start(browser, url, timeout)
                    if not watching:
                        page.get_by_role("link", name="Home").first.click()
                    background.append(page)
                loads, served, intervals = [], [], []
                for _ in range(repeats):
                    page, seconds, shown = open_and_start(browser, url, timeout)
                    loads.append(seconds)
                    served.append(shown)
                    if seconds < timeout:
                        intervals += refresh_intervals(page, 8.0)
                        pause(page)
                    page.context.close()
                results[str(count)] = {
                    "loads": loads,
                    "served": served,
                    "refresh_intervals": intervals,
                }
                print(
                    f"{executor:8s} {count} training: served median "
                    f"{statistics.median(served):5.1f} s (max {max(served):5.1f}), run seen "
                    f"median {statistics.median(loads):5.1f} s (max {max(loads):5.1f}), refresh "
                    "median "
                    f"{statistics.median(intervals) if intervals else float('nan'):.2f} s, p95 "
                    f"{_p95(intervals):.2f} s",
                    flush=True,
                )
            browser.close()
    finally:
        server.terminate()
        server.wait(30)
    return results


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 2 else float("nan")


def table(results: dict[str, Any]) -> str:
    """The docs' table (Markdown) from a results file: per number of runs already training,
    medians over the sessions of *served* and *run seen* for each executor, and the open page's
    refresh intervals (median / p95) with worker processes."""
    executors = [e for e in ("thread", "process") if e in results] or list(results)
    executors = [e for e in executors if isinstance(results[e], dict)]
    names = {"thread": "threads", "process": "processes"}
    header = ["runs training"]
    header += [f"served, {names.get(e, e)}" for e in executors]
    header += [f"run seen, {names.get(e, e)}" for e in executors]
    last = executors[-1]
    header.append(f"refresh interval, {names.get(last, last)} (median / p95)")
    lines = ["| " + " | ".join(header) + " |", "|" + "---:|" * len(header)]
    for count in results[executors[0]]:
        rows = {e: results[e].get(count) for e in executors}
        cells = [count]
        for key in ("served", "loads"):
            cells += [
                "–" if rows[e] is None else f"{statistics.median(rows[e][key]):.1f} s"
                for e in executors
            ]
        intervals = (rows[last] or {}).get("refresh_intervals") or []
        cells.append(
            f"{statistics.median(intervals):.2f} / {_p95(intervals):.2f} s" if intervals else "–"
        )
        lines.append("| " + " | ".join(cells) + " |")
    sessions = len(results[executors[0]][next(iter(results[executors[0]]))]["loads"])
    note = f"Medians of {sessions} sessions."
    if "commit" in results:
        note += f" Commit {results['commit']}, {results['date']}."
    return "\n".join([*lines, "", note]) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--executors", nargs="+", default=["thread", "process"])
    parser.add_argument("--runs", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument(
        "--watching", action="store_true", help="keep the other sessions on the live page"
    )
    parser.add_argument("--json")
    parser.add_argument("--table", type=Path, help="print the table of a results file and exit")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(args.table.read_text(encoding="utf-8"))), end="")
        return
    results: dict[str, Any] = {
        executor: measure_executor(executor, args.runs, args.repeats, args.timeout, args.watching)
        for executor in args.executors
    }
    results["commit"] = git_commit()
    results["date"] = datetime.date.today().isoformat()
    print(table(results), end="")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
