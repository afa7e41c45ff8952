"""A fresh server, as a teacher meets it: how soon Home's *Start demo* is on screen, how much
memory the server holds before any run, and how soon the demo's run shows its first counters.

Each repeat starts ``streamlit run app.py`` (a new RDQN_HOME, numba's kernel cache warm: the
script runs ``python -m rdqn warm-up`` first); a Chromium page, launched before the server, opens
the address the server prints (as a teacher does, or Streamlit itself when it opens the
browser) the moment it prints it, and waits until the *Start demo* button is visible:

  home      seconds from starting the server to *Start demo* on screen
  rss       the server process's resident memory (VmRSS) then, before any run; its children
            (the zygote that forks the workers) apart
  run start seconds from the click on *Start demo* (right when it shows) until the run
            trains: the run store says "running" (its worker, forked from the zygote, has
            opened the run), read from the store every 10 ms
  first run seconds from the click on *Start demo* to the first frame the page draws with
            the run's counters (its first snapshot; the page redraws every second), and to the
            first with its charts. Timed in the page (`PAINT_MARKS`), from the click event to
            the frame; so are all the other times to counters
  solved    with ``--solve``: seconds from the click until the live page, open all along, shows
            a mean return of the last 20 episodes of at least 475 (CartPole-v1 solved)
  again     then, back on Home, seconds from a second click on *Start demo* to the new run's
            first counters: the server warm (the zygote's warm-up done), the browser too
  new browser  that run paused, a second browser (a new context: no cache, no cookie) opens
            Home and clicks *Start demo*: seconds from the click to its run's first counters, as
            in a class whose teacher started the server before the lesson. This browser loads
            the live page's chart code (Plotly, 4.7 MB of JavaScript) with that first page,
            unless Home had the time to load it first (`rdqn.dashboard.chart_code`)
  new browser, Home read
            the same, its run paused, in a third new browser that shows Home for `READ_S`
            seconds before the click: a teacher who explains Home first
  returning browser
            then, on another fresh server at the same address each time, a browser that has
            opened the dashboard before (one context kept over the repeats: its HTTP cache holds
            Streamlit's front end and Plotly's chart code, as the teacher's own browser does):
            seconds from starting the server to *Start demo* on screen, and from the click on
            it until the run trains and to the run's first counters

Python's bytecode caches are written as ``pip install`` writes them (``PYTHONDONTWRITEBYTECODE``
is dropped from the server's environment, and a first start that writes them is not counted):
a machine that set it would compile every module of Streamlit, pandas and rdqn at each start.

Everything is on 127.0.0.1; the server is stopped with SIGINT (Ctrl-C) after each repeat.
Results: ``--out`` (JSON); ``--table`` prints the docs' table from it.

Usage: python -m benchmarks.bench_server_start [--repeats 5] [--solve] [--out FILE] [--nice -10]
       python -m benchmarks.bench_server_start --table [--out FILE]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

from benchmarks.provenance import git_commit
from tests.harness.chromium import CHROMIUM, CHROMIUM_ARGS
from tests.harness.dashboard_server import ROOT, free_port
from tests.harness.live_page import run_on_screen

OUT = ROOT / "benchmarks" / "results" / "server_start.json"
SOLVED = 475.0
READ_S = 3.0
"""How long the last new browser shows Home before its click."""


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children = (task / "children").read_text().split()
        found += [int(child) for child in children]
    return found


def _watch_for_address(server: subprocess.Popen[str], url: str, printed: threading.Event) -> None:
    """Set ``printed`` once the server prints ``url`` ("URL: http://…"); read on to the end."""
    assert server.stdout is not None
    for line in server.stdout:
        if url.rstrip("/") in line:
            printed.set()


def _environment() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def _mean_return(page: Any) -> float | None:
    """The live page's "Return (last 20)" counter, None while it shows none."""
    metric = page.get_by_test_id("stMetric").filter(has_text="Return (last")
    if metric.count() == 0:
        return None
    text = metric.first.get_by_test_id("stMetricValue").inner_text().replace(",", "")
    try:
        return float(text)
    except ValueError:
        return None


def _wait_solved(page: Any, timeout: float) -> float:
    """Seconds until the page shows a 20-episode mean return of at least `SOLVED`."""
    start = time.monotonic()
    while (_mean_return(page) or 0.0) < SOLVED:
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"the page showed no mean return of {SOLVED} in {timeout:.0f} s")
        page.wait_for_timeout(100)
    return time.monotonic() - start


@contextmanager
def _fresh_server(port: int, timeout: float) -> Iterator[tuple[str, float, int, Path]]:
    """Start ``streamlit run app.py`` on ``port`` with a new RDQN_HOME; yield its address, once
    printed, the `time.monotonic()` of the start, the server's pid and its RDQN_HOME. Stopped
    with SIGINT (Ctrl-C) at the end."""
    url = f"http://127.0.0.1:{port}/"
    with tempfile.TemporaryDirectory(prefix="rdqn-start-") as home:
        env = {**_environment(), "RDQN_HOME": home}
        start = time.monotonic()
        server = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port)]
            + ["--server.address", "127.0.0.1", "--server.headless", "true"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        printed = threading.Event()
        watch = threading.Thread(target=_watch_for_address, args=(server, url, printed))
        watch.start()
        try:
            if not printed.wait(timeout):
                raise TimeoutError(f"the server printed no address {url} in {timeout:.0f} s")
            yield url, start, server.pid, Path(home)
        finally:
            os.killpg(server.pid, signal.SIGINT)
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait(10)
            watch.join(10)
            _wait_until_gone(server.pid)


def _wait_until_gone(group: int, timeout: float = 30.0) -> None:
    """Wait until no process of the server's process group (its zygote, its workers) is left,
    so that the next measurement starts on a quiet machine."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.killpg(group, signal.SIGKILL)


class _RunStart:
    """Watches a fresh server's run store from a thread: `seconds` from `clicked` until its
    first run is no longer "created" (its worker has opened it and trains)."""

    def __init__(self, home: Path, timeout: float) -> None:
        self.db = home / "rdqn.db"
        self.timeout = timeout
        self.clicked = 0.0
        self._started: float | None = None
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> _RunStart:
        self.clicked = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._thread.join(self.timeout)

    def _status(self) -> str | None:
        try:
            with sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=0.1) as db:
                row = db.execute("SELECT status FROM runs ORDER BY created_at LIMIT 1").fetchone()
        except sqlite3.Error:  # no store yet, or a write holds it
            return None
        return row[0] if row else None

    def _watch(self) -> None:
        deadline = self.clicked + self.timeout
        while time.monotonic() < deadline:
            if self._status() not in (None, "created"):
                self._started = time.monotonic()
                return
            time.sleep(0.01)

    @property
    def seconds(self) -> float:
        if self._started is None:
            raise TimeoutError(f"the run did not start in {self.timeout:.0f} s")
        return self._started - self.clicked


PAINT_MARKS = """
(() => {
  const marks = (window.__rdqn = { clicks: [], counters: {}, charts: {} });
  document.addEventListener("click", (event) => marks.clicks.push(event.timeStamp), true);
  const painted = (seen, id) => {
    seen[id] = null;
    requestAnimationFrame(() => setTimeout(() => (seen[id] = performance.now()), 0));
  };
  new MutationObserver(() => {
    const line = document.querySelector('[data-testid="stProgress"]');
    const id = ((line && line.textContent.match(/run ([0-9a-f]{12})/)) || [])[1];
    if (!id) return;
    const metrics = [...document.querySelectorAll('[data-testid="stMetric"]')];
    if (!(id in marks.counters) && metrics.some((m) => m.textContent.includes("Env steps")))
      painted(marks.counters, id);
    if (!(id in marks.charts) && document.querySelector(".js-plotly-plot .main-svg"))
      painted(marks.charts, id);
  }).observe(document, { subtree: true, childList: true, characterData: true });
})();
"""
"""Run in every page the benchmark opens: the time of each click, and of the first frame drawn
with each run's counters (and with a chart) on the live page. Timed in the page: a wait from
Playwright polls the page, and the page answers late while it compiles Plotly's code, which it
does right after it has drawn the counters."""


def _first_counters(page: Any, timeout: float) -> None:
    """Wait for the run's counters, not the sidebar's "Env steps budget" field drawn before."""
    counters = page.get_by_test_id("stMetric").filter(has_text="Env steps").first
    counters.wait_for(state="visible", timeout=timeout * 1000)


def _painted_after_click(page: Any, timeout: float, what: str = "counters") -> float:
    """Seconds from the page's last click to the first frame it drew with the counters (or
    ``what="charts"``: a chart) of the run its live page shows (`PAINT_MARKS`)."""
    run_id = run_on_screen(page)
    page.wait_for_function(
        "([what, id]) => window.__rdqn[what][id]", arg=[what, run_id], timeout=timeout * 1000
    )
    return page.evaluate(
        "([what, id]) => (window.__rdqn[what][id] - window.__rdqn.clicks.at(-1)) / 1000",
        [what, run_id],
    )


def one_repeat(browser: Any, timeout: float, solve: bool = False) -> dict[str, Any]:
    # A page opened before the server starts, as a browser waiting for the address.
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.add_init_script(PAINT_MARKS)
    try:
        with _fresh_server(free_port(), timeout) as (url, start, pid, home):
            page.goto(url, timeout=timeout * 1000)
            demo = page.get_by_role("button", name="Start demo")
            demo.wait_for(state="visible", timeout=timeout * 1000)
            home_s = time.monotonic() - start
            rss = _rss_mb(pid)
            children = [_rss_mb(child) for child in _children(pid)]
            with _RunStart(home, timeout) as run_start:
                demo.click()
                _first_counters(page, timeout)
            first_run_s = _painted_after_click(page, timeout)
            first_charts_s = _painted_after_click(page, timeout, "charts")
            solved_s = None
            if solve:
                _wait_solved(page, timeout)
                solved_s = time.monotonic() - run_start.clicked
            first_run = run_on_screen(page)
            page.get_by_role("link", name="Home").first.click()
            demo.wait_for(state="visible", timeout=timeout * 1000)
            demo.click()
            page.wait_for_function(
                """first => [...document.querySelectorAll('[data-testid="stMetric"]')]
                             .some(m => m.innerText.includes('Env steps'))
                           && !document.body.innerText.includes('run ' + first)""",
                arg=first_run,
                timeout=timeout * 1000,
            )
            warm_run_s = _painted_after_click(page, timeout)
            _pause(page, timeout)  # its training slot frees
            new_browser_run_s = _first_run_in_a_new_browser(browser, url, timeout)
            home_read_run_s = _first_run_in_a_new_browser(browser, url, timeout, read_s=READ_S)
    finally:
        page.close()
    return {
        "home_s": round(home_s, 3),
        "server_rss_mb": round(rss, 1),
        "children_rss_mb": [round(value, 1) for value in children],
        "run_start_s": round(run_start.seconds, 3),
        "first_run_s": round(first_run_s, 3),
        "first_charts_s": round(first_charts_s, 3),
        **({"solved_s": round(solved_s, 2)} if solved_s is not None else {}),
        "warm_run_s": round(warm_run_s, 3),
        "new_browser_run_s": round(new_browser_run_s, 3),
        "home_read_run_s": round(home_read_run_s, 3),
    }


def returning_browser(returning: Any, port: int, timeout: float) -> dict[str, float]:
    """A fresh server on ``port``, met by the ``returning`` browser context (it has opened the
    dashboard at this address before): seconds to *Start demo* on screen, and from its click
    to the run's first counters."""
    page = returning.new_page()
    page.add_init_script(PAINT_MARKS)
    try:
        with _fresh_server(port, timeout) as (url, start, _, home):
            page.goto(url, timeout=timeout * 1000)
            demo = page.get_by_role("button", name="Start demo")
            demo.wait_for(state="visible", timeout=timeout * 1000)
            home_s = time.monotonic() - start
            with _RunStart(home, timeout) as run_start:
                demo.click()
                _first_counters(page, timeout)
            first_run_s = _painted_after_click(page, timeout)
            _pause(page, timeout)
    finally:
        page.close()
    return {
        "returning_home_s": round(home_s, 3),
        "returning_run_start_s": round(run_start.seconds, 3),
        "returning_first_run_s": round(first_run_s, 3),
    }


def _first_run_in_a_new_browser(
    browser: Any, url: str, timeout: float, read_s: float = 0.0
) -> float:
    """Seconds from a click on *Start demo* in a new browser context, on Home (shown for
    ``read_s`` seconds first), to its run's first counters; the run is then paused (its
    training slot frees)."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.add_init_script(PAINT_MARKS)
        page.goto(url, timeout=timeout * 1000)
        demo = page.get_by_role("button", name="Start demo")
        demo.wait_for(state="visible", timeout=timeout * 1000)
        page.wait_for_timeout(read_s * 1000)
        demo.click()
        _first_counters(page, timeout)
        seconds = _painted_after_click(page, timeout)
        _pause(page, timeout)
        return seconds
    finally:
        context.close()


def _pause(page: Any, timeout: float) -> None:
    """Pause the live page's run and wait until the page says it is paused."""
    page.get_by_role("button", name="Pause").click()
    page.wait_for_function(
        """() => document.querySelector('[data-testid="stProgress"]')
                   ?.innerText.startsWith('paused')""",
        timeout=timeout * 1000,
    )


def _summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def measure(repeats: int, timeout: float, solve: bool) -> dict[str, Any]:
    subprocess.run(
        [sys.executable, "-m", "rdqn", "warm-up"], cwd=ROOT, check=True, env=_environment()
    )
    rows = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        returning = browser.new_context(viewport={"width": 1280, "height": 800})
        port = free_port()  # the returning browser's address, the same at every start
        try:
            first = {**one_repeat(browser, timeout), **returning_browser(returning, port, timeout)}
            print(f"a first start, not counted (the returning browser's first visit): {first}")
            for index in range(repeats):
                rows.append(
                    {
                        **one_repeat(browser, timeout, solve),
                        **returning_browser(returning, port, timeout),
                    }
                )
                print(f"repeat {index + 1}/{repeats}: {rows[-1]}", flush=True)
        finally:
            browser.close()
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "loadavg": list(os.getloadavg()),
        "command": "python -m benchmarks.bench_server_start " + " ".join(sys.argv[1:]),
        "repeats": rows,
        "home_s": _summary([row["home_s"] for row in rows]),
        "server_rss_mb": _summary([row["server_rss_mb"] for row in rows]),
        "run_start_s": _summary([row["run_start_s"] for row in rows]),
        "first_run_s": _summary([row["first_run_s"] for row in rows]),
        "first_charts_s": _summary([row["first_charts_s"] for row in rows]),
        **({"solved_s": _summary([row["solved_s"] for row in rows])} if solve else {}),
        "warm_run_s": _summary([row["warm_run_s"] for row in rows]),
        "new_browser_run_s": _summary([row["new_browser_run_s"] for row in rows]),
        "home_read_run_s": _summary([row["home_read_run_s"] for row in rows]),
        "returning_home_s": _summary([row["returning_home_s"] for row in rows]),
        "returning_run_start_s": _summary([row["returning_run_start_s"] for row in rows]),
        "returning_first_run_s": _summary([row["returning_first_run_s"] for row in rows]),
    }


def table(results: dict[str, Any]) -> str:
    def cell(name: str, unit: str, digits: int) -> str:
        s = results[name]
        return (
            f"{s['median']:.{digits}f} {unit} ({s['min']:.{digits}f}-{s['max']:.{digits}f} {unit})"
        )

    return "\n".join(
        [
            "| fresh server, warm kernel cache; a new browser (no cache) unless said "
            "| median (range) |",
            "|---|---|",
            f"| `streamlit run` to Home's *Start demo* on screen | {cell('home_s', 's', 2)} |",
            f"| server memory (RSS) before any run | {cell('server_rss_mb', 'MB', 0)} |",
            *(
                [
                    "| *Start demo* clicked (the moment it shows) until the run trains "
                    f"| {cell('run_start_s', 's', 2)} |"
                ]
                if "run_start_s" in results
                else []
            ),
            f"| *Start demo* clicked to the run's first counters | {cell('first_run_s', 's', 2)} |",
            *(
                [
                    "| *Start demo* clicked to the run's charts drawn "
                    f"| {cell('first_charts_s', 's', 2)} |"
                ]
                if "first_charts_s" in results
                else []
            ),
            *(
                [
                    f"| *Start demo* clicked to a mean return of 475 on the live page "
                    f"| {cell('solved_s', 's', 1)} |"
                ]
                if "solved_s" in results
                else []
            ),
            "| *Start demo* clicked again, server warm, to the new run's first counters "
            f"| {cell('warm_run_s', 's', 2)} |",
            "| a new browser opens Home, server warm: *Start demo* clicked to the run's first "
            f"counters | {cell('new_browser_run_s', 's', 2)} |",
            *(
                [
                    f"| the same, Home read for {READ_S:g} s before the click "
                    f"| {cell('home_read_run_s', 's', 2)} |"
                ]
                if "home_read_run_s" in results
                else []
            ),
            *(
                [
                    "| a browser that has opened the dashboard before (its cache), fresh server: "
                    "`streamlit run` to Home's *Start demo* on screen "
                    f"| {cell('returning_home_s', 's', 2)} |",
                    *(
                        [
                            "| the same browser: *Start demo* clicked until the run trains "
                            f"| {cell('returning_run_start_s', 's', 2)} |"
                        ]
                        if "returning_run_start_s" in results
                        else []
                    ),
                    "| the same browser: *Start demo* clicked to the run's first counters "
                    f"| {cell('returning_first_run_s', 's', 2)} |",
                ]
                if "returning_home_s" in results
                else []
            ),
            "",
            f"{len(results['repeats'])} repeats, {results['date'][:10]}, commit "
            f"{results['commit']}"
            + (f" ({results['variant']})" if "variant" in results else "")
            + f", load average {results['loadavg'][0]:.1f} (`{results['command']}`).",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=120.0, help="per wait, seconds")
    parser.add_argument("--solve", action="store_true", help="also wait for 475 on the page")
    parser.add_argument("--nice", type=int, default=0, help="this script's niceness change")
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--table", action="store_true", help="print the table of --out")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(Path(args.out).read_text())))
        return
    if args.nice:
        os.nice(args.nice)
    results = measure(args.repeats, args.timeout, args.solve)
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    print(table(results))


if __name__ == "__main__":
    main()
