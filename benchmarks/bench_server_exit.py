"""How long does the dashboard's server take to exit on Ctrl-C, with a run training?

Starts the dashboard (`streamlit run app.py`) in its own process group, opens the live page in
Chromium, starts a run and waits until it trains, then sends SIGINT to the process group (what
Ctrl-C in the server's terminal does) and times the server's exit. It also checks what a class
relies on: the run was recorded `stopped` with the reason "stopped: the server shut down"
(resumable), and no worker process outlived the server. Repeated ``--repeats`` times, each with
a fresh run folder; traffic stays on 127.0.0.1 and the script stops everything it starts.

Usage: python -m benchmarks.bench_server_exit [--repeats 5] [--json OUT.json]
       python -m benchmarks.bench_server_exit --table benchmarks/results/server_exit.json
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

from benchmarks.provenance import git_commit
from tests.harness.chromium import CHROMIUM, CHROMIUM_ARGS
from tests.harness.dashboard_server import start_dashboard


def _children(pid: int) -> set[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.add(int(entry.name))
    return found


def one_exit(browser: Any) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="rdqn-server-exit-"))
    process, url = start_dashboard({**os.environ, "RDQN_HOME": str(home)})
    try:
        tab = browser.new_page()
        tab.set_default_timeout(120_000)
        tab.goto(f"{url}/live?steps=1000000")
        tab.get_by_role("button", name="Start", exact=True).click()
        tab.locator('[data-testid="stProgress"]', has_text="running").first.wait_for()
        tab.wait_for_function(  # past the first counters: the run trains in its worker
            """() => /[1-9][\\d,]* of [\\d,]+ steps/.test(
                   document.querySelector('[data-testid="stProgress"]')?.innerText || '')"""
        )
        workers = _children(process.pid)
        sent = time.monotonic()
        os.killpg(process.pid, signal.SIGINT)
        code = process.wait(timeout=60)
        seconds = time.monotonic() - sent
        tab.close()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    outlived = sorted(pid for pid in workers if Path(f"/proc/{pid}").exists())
    with sqlite3.connect(home / "rdqn.db") as store:
        rows = store.execute("SELECT status, error FROM runs").fetchall()
    return {"seconds": seconds, "exit_code": code, "runs": rows, "workers_outlived": outlived}


def table(results: dict[str, Any]) -> str:
    """The docs' table (Markdown) from a results file."""
    trials = results["trials"]
    stopped = sum(
        [list(run) for run in t["runs"]] == [["stopped", "stopped: the server shut down"]]
        for t in trials
    )
    outlived = sum(len(t["workers_outlived"]) for t in trials)
    return (
        "| repeats | seconds to exit, median (range) | runs recorded `stopped: the server shut "
        "down` | workers outliving the server |\n"
        "|---:|---:|---:|---:|\n"
        f"| {len(trials)} | {results['median_s']:.2f} ({results['min_s']:.2f}-"
        f"{results['max_s']:.2f}) | {stopped} of {len(trials)} | {outlived} |\n\n"
        f"Commit {results['commit']}, {results['date']}, load average "
        f"{results['load_average'][0]:.1f} at the end.\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", default="benchmarks/results/server_exit.json")
    parser.add_argument("--table", type=Path, help="print the table of a results file and exit")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(args.table.read_text(encoding="utf-8"))), end="")
        return
    trials = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for repeat in range(args.repeats):
            trial = one_exit(browser)
            trials.append(trial)
            print(
                f"repeat {repeat}: exit {trial['exit_code']} after {trial['seconds']:.2f} s, "
                f"runs {trial['runs']}, workers outlived: {trial['workers_outlived']}"
            )
        browser.close()
    seconds = [t["seconds"] for t in trials]
    results = {
        "what": "seconds from SIGINT to the server's exit, one run training",
        "commit": git_commit(),
        "date": time.strftime("%Y-%m-%d"),
        "load_average": os.getloadavg(),
        "median_s": statistics.median(seconds),
        "min_s": min(seconds),
        "max_s": max(seconds),
        "all_stopped_by_shutdown": all(
            t["runs"] == [("stopped", "stopped: the server shut down")] for t in trials
        ),
        "trials": trials,
    }
    Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    print(
        f"median {results['median_s']:.2f} s (min {results['min_s']:.2f}, max "
        f"{results['max_s']:.2f}); written to {args.json}"
    )


if __name__ == "__main__":
    main()
