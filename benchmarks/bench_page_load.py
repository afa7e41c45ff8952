"""Is the server still serving while runs train? New sessions and open pages, in a real browser.

Starts the dashboard (`streamlit run app.py`) once per executor, with runs training in the
server's own threads (``thread``: how runs trained before worker processes) or in worker
processes (``process``: the default). With 0, 1, 2, 3 runs already training, each started by a
browser session that stays open on the live page, it measures:

  load   seconds for a new browser session to open the live page, press Start and see its run
         running (its first counters on screen); a session that sees nothing within the
         timeout counts as the timeout
  refresh  the intervals between updates of the Env steps counter on that open page (the page
         refreshes every second), median and 95th percentile

Runs train with a 10^6-step budget so none ends during the measures; every session's run is
paused before the next measure. Traffic stays on 127.0.0.1; the script stops everything it starts.

Usage: python -m benchmarks.bench_page_load [--executors thread process] [--runs 0 1 2 3]
       [--repeats 3] [--timeout 60] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, Page, sync_playwright

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
LIVE = "/live?steps=1000000"
RUNNING = '[data-testid="stProgress"]'


def start_server(executor: str) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {
        **os.environ,
        "RDQN_EXECUTOR": executor,
        "RDQN_MAX_RUNS": "8",
        "RDQN_HOME": tempfile.mkdtemp(prefix="rdqn-page-load-"),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port)]
        + ["--server.address", "127.0.0.1", "--server.headless", "true"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                return process, url
        except OSError:
            time.sleep(0.3)
    process.kill()
    raise RuntimeError("the server did not start")


def env_steps(page: Page) -> int | None:
    metric = page.locator('[data-testid="stMetric"]', has_text="Env steps").first
    if not metric.count():
        return None
    text = metric.locator('[data-testid="stMetricValue"]').inner_text(timeout=2_000)
    return int(text.replace(",", ""))


def open_and_start(browser: Browser, url: str, timeout: float) -> tuple[Page, float]:
    """A new session: open the live page, press Start, wait until its run shows counters."""
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.set_default_timeout(timeout * 1000)
    begin = time.perf_counter()
    try:
        page.goto(url + LIVE)
        page.get_by_role("button", name="Start", exact=True).click()
        page.locator(RUNNING, has_text="running").first.wait_for()
        while not env_steps(page):
            time.sleep(0.05)
    except Exception:  # noqa: BLE001 - a session that sees nothing in time counts as the timeout
        return page, timeout
    return page, time.perf_counter() - begin


def refresh_intervals(page: Page, seconds: float) -> list[float]:
    """Seconds between successive changes of the Env steps counter while ``page`` is open."""
    changes, last, end = [], env_steps(page), time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.05)
        value = env_steps(page)
        if value != last:
            changes.append(time.monotonic())
            last = value
    return [b - a for a, b in zip(changes, changes[1:], strict=False)]


def pause(page: Page) -> None:
    page.get_by_role("button", name="Pause").click(timeout=30_000)


def measure_executor(executor: str, runs: list[int], repeats: int, timeout: float) -> dict:
    server, url = start_server(executor)
    results: dict[str, Any] = {}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS
            )
            # Warm the server (imports, compiled kernels, first run) before anything is timed.
            page, _ = open_and_start(browser, url, 180)
            pause(page)
            page.context.close()
            background: list[Page] = []
            for count in runs:
                while len(background) < count:
                    page, _ = open_and_start(browser, url, timeout)
                    background.append(page)
                loads, intervals = [], []
                for _ in range(repeats):
                    page, seconds = open_and_start(browser, url, timeout)
                    loads.append(seconds)
                    if seconds < timeout:
                        intervals += refresh_intervals(page, 8.0)
                        pause(page)
                    page.context.close()
                results[str(count)] = {"loads": loads, "refresh_intervals": intervals}
                print(
                    f"{executor:8s} {count} training: load median {statistics.median(loads):5.1f} s"
                    f" (max {max(loads):5.1f}), refresh median "
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--executors", nargs="+", default=["thread", "process"])
    parser.add_argument("--runs", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--json")
    args = parser.parse_args()
    results = {
        executor: measure_executor(executor, args.runs, args.repeats, args.timeout)
        for executor in args.executors
    }
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
