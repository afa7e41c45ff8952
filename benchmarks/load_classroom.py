"""A classroom on one server: N browser sessions at once on the live page, with runs training
in worker processes. Does the server admit and queue the runs, keep serving, and give back
everything once the sessions close?

The script starts one dashboard (`streamlit run app.py` on a free port of 127.0.0.1) in a fresh
temporary RDQN_HOME with the worker-process executor, warms it up with one session (the first
deep link, the kernels, the zygote), and records its baseline. Then N Playwright contexts of one
headless Chromium arrive a little apart (a class coming in) and, concurrently, each does what a
student does: open /live, press Start, watch the run for ``--seconds``, reload the page once
(a reload is a new Streamlit session: if the page no longer shows their run, press Start again),
close the tab. Finally it waits (bounded) until the closed sessions' runs have stopped (the
session release grace is 10 s) and records the server again.

Measured:
  page load      navigation until the live page is on screen (its Start button); and until
                 the page's first WebSocket message (its scripts loaded and connected; after
                 it come the server's run of the page and the drawing)
  run shown      Start pressed until the page shows the run training, or its place in the queue
  reload         reload until the live page is on screen again
  update         intervals between the server's updates reaching an open page (its WebSocket
                 messages, grouped into bursts; the live view redraws every second), and the
                 kB/s the server sends a page whose run trains, and a queued one
  steps update   intervals between changes of the steps counter on pages whose run trains
  runs           admitted (training) vs queued, from the pages and from the run store
  server         RSS of the server and of its process tree (worker processes included), its
                 threads and child processes: at baseline, at peak, and after the sessions closed
  log            the server log's tracebacks, other lines naming an Exception or an Error, and
                 HTTP 5xx answers
  CPU            cores used during the class by the server, its workers and the browsers, and
                 the machine's load average: the browsers run here, on the server's machine

Traffic stays on 127.0.0.1 (Chromium resolves no other host), everything is bounded by
``--timeout`` (a hung browser call: two minutes past it), and the script stops what it
started: the server, the browser and the temporary home (kept with ``--keep``). Results go to
``--out`` (JSON) and a Markdown table beside it.

Usage: python -m benchmarks.load_classroom [--sessions 30] [--seconds 60] [--max-runs K]
       [--stagger 0.5] [--timeout 300] [--out benchmarks/results/load_classroom.json] [--keep]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from playwright.async_api import Browser, Locator, Page, async_playwright
from playwright.async_api import Error as PlaywrightError

from benchmarks.provenance import git_commit
from tests.harness.chromium import CHROMIUM, CHROMIUM_ARGS
from tests.harness.dashboard_server import start_dashboard

ROOT = Path(__file__).resolve().parents[1]
LIVE = "/live?steps=1000000"  # a budget no run finishes while the class watches
RELEASE_GRACE_S = 10.0  # rdqn.dashboard.state.RELEASE_GRACE_SECONDS
ACTIVE = ("created", "running", "paused")  # store statuses of runs not ended
THREAD_TOLERANCE = 2
"""Server threads 'back to baseline': at most this many above it (Streamlit and the executor
keep a few pooled threads whose count varies by a couple between samples)."""
HUNG_S = 120.0
"""The script ends at the latest this long after --timeout (a browser call that hangs)."""
POOL_IDLE_S = 10.0  # anyio's WorkerThread.MAX_IDLE_TIME
BURST_GAP_MS = 150.0
"""WebSocket messages less than this apart belong to one update of the page."""
STALL_S = 5.0
"""A run may wait this long for a slot that is free (a worker forks, a stopped one ends)."""
LOG_PATTERN = re.compile(r"Traceback|Exception|Error")
ACCESS_LINE = re.compile(r'^\S+ \S+ [\d.]+:\d+ - "(?P<request>[^"]*)"(?: (?P<status>\d{3}))?')
"""The server's access log: '<date> <time> 127.0.0.1:<port> - "GET /path HTTP/1.1" 200'."""
ZYGOTE = "rdqn.serve.zygote"

# Runs in every page before Streamlit's own scripts: stamps each WebSocket message, and each
# change of the steps counter in the live view's status line ("… 12,345 of 1,000,000 steps").
PROBE = """
(() => {
  const probe = (window.__load = {messages: [], bytes: [], steps: []});
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', (event) => {
        probe.messages.push(performance.now());
        probe.bytes.push(event.data.byteLength ?? event.data.size ?? event.data.length ?? 0);
      });
    }
  };
  let last = null;
  new MutationObserver(() => {
    const bar = document.querySelector('[data-testid="stProgress"]');
    const found = bar && bar.innerText.match(/([\\d,]+) of [\\d,]+ steps/);
    if (found && found[1] !== last) {
      last = found[1];
      probe.steps.push(performance.now());
    }
  }).observe(document, {subtree: true, childList: true, characterData: true});
})();
"""

# What the live page shows now: its state, and the run id in its status line or queue notice.
READ_STATE = """
() => {
  const text = (sel) => [...document.querySelectorAll(sel)].map(e => e.innerText).join('\\n');
  const bar = text('[data-testid="stProgress"]');
  const notes = text('[data-testid="stAlert"]');
  const errors = [...document.querySelectorAll('[data-testid="stException"]')]
                   .map(e => e.innerText.slice(0, 500));
  const run = (bar.match(/run ([0-9a-f]{12})/) || notes.match(/run ([0-9a-f]{12}) waits/)
               || [])[1] || null;
  let state = 'none';
  if (errors.length) state = 'exception';
  else if (/in the queue|training slot/i.test(notes)) state = 'queued';
  else if (/^running/m.test(bar)) state = 'running';
  else if (/^(paused|stopped|failed|finished)/m.test(bar)) state = bar.split(' ')[0];
  else if (/preparing to train|Preparing fast kernels/.test(notes + bar)) state = 'preparing';
  else if (/The run (failed|stopped)/.test(notes)) state = 'failed';
  return {state, run, errors};
}
"""

# The files a page fetched so far, and their size over the wire in MB.
RESOURCES = """
() => {
  const files = performance.getEntriesByType('resource');
  const nav = performance.getEntriesByType('navigation');
  const bytes = [...files, ...nav].reduce((sum, e) => sum + (e.transferSize || 0), 0);
  return [files.length + nav.length, bytes / 1e6];
}
"""

# What a page shows when a step did not happen in time.
SEEN = """
() => ({
  text: (document.body ? document.body.innerText : '').slice(0, 400),
  messages: window.__load ? window.__load.messages.length : null,
  first_message_ms: window.__load && window.__load.messages.length
    ? Math.round(window.__load.messages[0]) : null,
  last_message_ms: window.__load && window.__load.messages.length
    ? Math.round(window.__load.messages[window.__load.messages.length - 1]) : null,
  now_ms: Math.round(performance.now()),
  status_widget: (document.querySelector('[data-testid="stStatusWidget"]') || {}).innerText || null,
})
"""


# ------------------------------------------------------------------------- the server's processes
@dataclass
class ServerSample:
    """The server process and its process tree at one moment (sizes in MiB)."""

    server_rss_mb: float
    tree_rss_mb: float  # the sum over the tree: forked workers share pages, so it overcounts
    tree_pss_mb: float  # proportional set size: shared pages split between the processes
    server_threads: int
    children: int  # every process below the server (the zygote and the workers)
    workers: int  # the children but the zygote: processes running a run
    server_cpu_s: float  # CPU time the server process used so far (user + system)


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process (from /proc/<pid>/stat)."""
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _read(f"/proc/{entry}/stat")
            if stat:  # "pid (comm) state ppid ...": comm may hold spaces and parentheses
                table[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    return table


def descendants(pid: int, parents: dict[int, int] | None = None) -> list[int]:
    parents = _parents() if parents is None else parents
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        kids = [child for child, ppid in parents.items() if ppid == parent]
        found += kids
        frontier += kids
    return found


def _status_kb(pid: int, field_name: str) -> int:
    for line in _read(f"/proc/{pid}/status").splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1])
    return 0


def _pss_kb(pid: int) -> int:
    for line in _read(f"/proc/{pid}/smaps_rollup").splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    return _status_kb(pid, "VmRSS")  # no smaps_rollup: RSS, an upper bound


def _cpu_s(pid: int) -> float:
    stat = _read(f"/proc/{pid}/stat")
    if not stat:
        return 0.0
    fields = stat.rsplit(")", 1)[1].split()  # fields[11], [12]: utime, stime (clock ticks)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cmdline(pid: int) -> str:
    return _read(f"/proc/{pid}/cmdline").replace("\0", " ")


def sample_server(pid: int) -> ServerSample:
    parents = _parents()
    tree = descendants(pid, parents)
    # The zygote is the server's child; the workers it forks carry the same command line.
    zygotes = [p for p in tree if parents.get(p) == pid and ZYGOTE in _cmdline(p)]
    everyone = [pid, *tree]
    return ServerSample(
        server_rss_mb=_status_kb(pid, "VmRSS") / 1024,
        tree_rss_mb=sum(_status_kb(p, "VmRSS") for p in everyone) / 1024,
        tree_pss_mb=sum(_pss_kb(p) for p in everyone) / 1024,
        server_threads=_status_kb(pid, "Threads"),
        children=len(tree),
        workers=len(tree) - len(zygotes),
        server_cpu_s=_cpu_s(pid),
    )


class CpuMeter:
    """CPU seconds used since it was made by the server, the server's children (the zygote and
    the workers: training) and the browsers (this script's other children: Chromium and the
    Playwright driver), processes that came and went included (each read while it lives)."""

    def __init__(self, server: int) -> None:
        self.server = server
        self.start = self._now()
        self.top = dict(self.start)

    def _now(self) -> dict[tuple[str, int], float]:
        parents = _parents()
        children = set(descendants(self.server, parents))
        browsers = set(descendants(os.getpid(), parents)) - children - {self.server}
        groups = {"server": [self.server], "server_children": children, "browsers": browsers}
        return {(name, p): _cpu_s(p) for name, pids in groups.items() for p in pids}

    def read(self) -> None:
        for key, seconds in self._now().items():
            self.top[key] = max(self.top.get(key, 0.0), seconds)

    def used(self) -> dict[str, float]:
        totals = {"server": 0.0, "server_children": 0.0, "browsers": 0.0}
        for (name, pid), seconds in self.top.items():
            totals[name] += seconds - self.start.get((name, pid), 0.0)
        return {name: round(value, 1) for name, value in totals.items()}


def peak(samples: list[ServerSample]) -> dict[str, float]:
    """Each field's largest value over the samples."""
    return {
        name: max(getattr(s, name) for s in samples) for name in ServerSample.__dataclass_fields__
    }


# ------------------------------------------------------------------------------------ the store
def store_statuses(db: Path) -> dict[str, int]:
    """Runs per status in the run store, read-only ({} while the store does not exist)."""
    if not db.exists():
        return {}
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)) as conn:
            rows = conn.execute("SELECT status, COUNT(*) FROM runs GROUP BY status").fetchall()
    except sqlite3.Error as err:
        return {"<unreadable>": 1, str(err): 1}
    return {status: count for status, count in rows}


def store_runs(db: Path) -> dict[str, Any]:
    """The runs the class left in the store: how many ever trained, and why they ended."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)) as conn:
        rows = conn.execute("SELECT status, error, env_steps FROM runs").fetchall()
    ends: dict[str, int] = {}
    for status, error, _ in rows:
        key = f"{status} ({error})" if error else status
        ends[key] = ends.get(key, 0) + 1
    return {
        "runs": len(rows),
        "trained": sum(1 for *_, steps in rows if steps),
        "never_trained": sum(1 for *_, steps in rows if not steps),
        "ended": ends,
    }


def longest_stall(timeline: list[list[float]], cap: int) -> float:
    """The longest stretch (s) in which runs waited in the queue while fewer than ``cap``
    trained: a queue that should have moved."""
    longest, since = 0.0, None
    for t, running, queued, *_ in timeline:
        if queued and running < cap:
            since = t if since is None else since
            longest = max(longest, t - since)
        else:
            since = None
    return longest


def active_runs(statuses: dict[str, int]) -> int:
    return sum(statuses.get(status, 0) for status in ACTIVE)


# ----------------------------------------------------------------------------------- the server
def start_server(
    home: Path,
    log_path: Path,
    executor: str,
    max_runs: int | None,
    max_paused: int | None,
    idle_timeout: float | None,
    wait_s: float,
) -> tuple[subprocess.Popen[bytes], str]:
    """The dashboard's server with these settings (the caller's other RDQN_ variables dropped),
    its output in ``log_path``; returns once it answers its health check."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("RDQN_")}
    env.update({"RDQN_HOME": str(home), "RDQN_EXECUTOR": executor})
    for name, value in (
        ("RDQN_MAX_RUNS", max_runs),
        ("RDQN_MAX_PAUSED", max_paused),
        ("RDQN_IDLE_TIMEOUT", idle_timeout),
    ):
        if value is not None:
            env[name] = str(value)
    return start_dashboard(env, log_path, wait_s)


def stop_server(process: subprocess.Popen[bytes]) -> list[str]:
    """Terminate the server; return (and kill) the processes of its tree that outlived it."""
    tree = descendants(process.pid)
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
    time.sleep(1.0)  # its workers end when their links close
    leaked = []
    for pid in tree:
        if _read(f"/proc/{pid}/stat") and " Z " not in _read(f"/proc/{pid}/stat"):
            leaked.append(f"{pid} {_cmdline(pid)[:120]}")
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    return leaked


def read_log(log_path: Path) -> dict[str, Any]:
    """The server log's tracebacks (each whole, and counted by their last line), its other
    lines naming a Traceback, an Exception or an Error, and its HTTP 5xx answers; the access
    log's requests are not searched (a static file is named ErrorElement.js)."""
    text = log_path.read_text(encoding="utf-8", errors="replace") if log_path.exists() else ""
    tracebacks: list[list[str]] = []
    other: list[str] = []
    server_errors: list[str] = []
    inside = False  # within a traceback: it ends with its first unindented line
    for line in text.splitlines():
        if line.startswith("Traceback"):
            tracebacks.append([line])
            inside = True
        elif inside:
            tracebacks[-1].append(line)
            inside = line.startswith(" ")
        elif access := ACCESS_LINE.match(line):
            if (access["status"] or "").startswith("5"):
                server_errors.append(line)
        elif LOG_PATTERN.search(line):
            other.append(line)
    kinds: dict[str, int] = {}
    for block in tracebacks:
        kinds[block[-1]] = kinds.get(block[-1], 0) + 1
    return {
        "tracebacks": len(tracebacks),
        "traceback_kinds": kinds,
        "first_tracebacks": ["\n".join(block) for block in tracebacks[:3]],
        "other_lines": other[:100],
        "other_line_count": len(other),
        "http_5xx": server_errors[:20],
        "http_5xx_count": len(server_errors),
    }


def log_clean(log: dict[str, Any]) -> bool:
    return not (log["tracebacks"] or log["other_line_count"] or log["http_5xx_count"])


# ---------------------------------------------------------------------------------- the students
@dataclass
class Student:
    """What one browser session did and saw (times in seconds)."""

    index: int
    arrived_s: float = 0.0  # after the first student
    page_load_s: float | None = None
    first_message_s: float | None = None  # navigation until the server's first message
    first_load_files: int | None = None  # what the first load fetched from the server
    first_load_mb: float | None = None  # bytes over the wire (compressed, headers included)
    run_shown_s: float | None = None
    state: str = "not started"  # what the page showed after Start: running, queued, ...
    state_before_reload: str | None = None
    run_id: str | None = None
    reload_s: float | None = None
    state_after_reload: str | None = None
    run_kept_after_reload: bool | None = None
    state_after_restart: str | None = None  # Start pressed again after a reload lost the run
    update_intervals_ms: list[float] = field(default_factory=list)
    kb_per_s: float | None = None  # what the server sent the page while it was watched
    steps_intervals_ms: list[float] = field(default_factory=list)
    page_exceptions: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)  # uncaught JavaScript errors
    failure: str | None = None  # the step that did not happen in time, and why
    seen_at_failure: dict[str, Any] | None = None  # what the page showed then (`SEEN`)


def bursts(stamps: list[float]) -> list[float]:
    """Start times of the bursts of ``stamps`` (ms): a gap of `BURST_GAP_MS` starts a new one."""
    starts = []
    for index, stamp in enumerate(stamps):
        if index == 0 or stamp - stamps[index - 1] > BURST_GAP_MS:
            starts.append(stamp)
    return starts


def intervals(stamps: list[float], since: float) -> list[float]:
    kept = [stamp for stamp in stamps if stamp >= since]
    return [b - a for a, b in zip(kept, kept[1:], strict=False)]


async def read_state(page: Page) -> dict[str, Any]:
    return await page.evaluate(READ_STATE)


async def wait_state(page: Page, wanted: tuple[str, ...], timeout: float) -> dict[str, Any]:
    """Poll what the page shows until its state is one of ``wanted`` or ``timeout`` passes;
    returns the last reading."""
    deadline = time.monotonic() + timeout
    while True:
        seen = await read_state(page)
        if seen["state"] in wanted or time.monotonic() > deadline:
            return seen
        await asyncio.sleep(0.25)


async def shown(page: Page, target: Locator, timeout: float) -> None:
    """Wait up to ``timeout`` s until the live page is on screen (``target`` under its title);
    a page that shows an exception instead fails at once (`RuntimeError` with its first line)."""
    exception = page.locator('[data-testid="stException"]')
    deadline = time.monotonic() + timeout
    title = page.get_by_role("heading", name="Live training")
    await title.or_(exception).first.wait_for(timeout=timeout * 1000)
    left = max(0.001, deadline - time.monotonic())
    await target.or_(exception).first.wait_for(timeout=left * 1000)
    if await exception.count():
        text = (await exception.first.inner_text()).strip().splitlines()
        raise RuntimeError(f"the page shows an exception: {text[0] if text else '?'}")


async def probe_marks(page: Page) -> tuple[float, dict[str, list[float]]]:
    """The page's clock now and what the probe recorded (ms)."""
    return await page.evaluate("() => [performance.now(), window.__load]")


async def student(
    browser: Browser, url: str, record: Student, seconds: float, step_timeout: float
) -> None:
    """Open the live page, start a run, watch it for ``seconds``, reload once (and start again
    if the reloaded page lost the run), close."""
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        await context.add_init_script(PROBE)
        page = await context.new_page()
        page.set_default_timeout(step_timeout * 1000)
        page.on("pageerror", lambda err: record.page_errors.append(str(err)[:300]))
        start_button = page.get_by_role("button", name="Start", exact=True)

        record.failure = "page load"
        begin = time.perf_counter()
        await page.goto(url + LIVE, wait_until="commit")
        await shown(page, start_button, step_timeout - (time.perf_counter() - begin))
        record.page_load_s = time.perf_counter() - begin
        _, marks = await probe_marks(page)  # its clock starts with the navigation
        record.first_message_s = marks["messages"][0] / 1000 if marks["messages"] else None
        record.first_load_files, record.first_load_mb = await page.evaluate(RESOURCES)

        record.failure = "start"
        await start_button.click()
        begin = time.perf_counter()
        seen = await wait_state(
            page, ("running", "queued", "exception", "failed", "stopped"), step_timeout
        )
        record.state, record.run_id = seen["state"], seen["run"]
        record.page_exceptions += seen["errors"]
        if seen["state"] not in ("running", "queued"):
            raise RuntimeError(f"after Start the page shows {seen['state']!r}")
        record.run_shown_s = time.perf_counter() - begin

        record.failure = "watch"
        since, _ = await probe_marks(page)
        await asyncio.sleep(seconds)
        _, marks = await probe_marks(page)
        record.update_intervals_ms = intervals(bursts(marks["messages"]), since)
        watched = [n for t, n in zip(marks["messages"], marks["bytes"], strict=True) if t >= since]
        record.kb_per_s = sum(watched) / 1000 / seconds if seconds else None
        record.steps_intervals_ms = intervals(marks["steps"], since)
        seen = await read_state(page)
        record.state_before_reload = seen["state"]
        record.page_exceptions += seen["errors"]

        record.failure = "reload"
        begin = time.perf_counter()
        await page.reload(wait_until="commit")
        pause = page.get_by_role("button", name="Pause")
        await shown(page, pause.or_(start_button), step_timeout - (time.perf_counter() - begin))
        record.reload_s = time.perf_counter() - begin
        # The reloaded page is a new Streamlit session: does it still show the student's run?
        seen = await wait_state(page, ("running", "queued", "exception"), RELEASE_GRACE_S + 2)
        record.state_after_reload = seen["state"]
        record.run_kept_after_reload = seen["run"] is not None and seen["run"] == record.run_id
        record.page_exceptions += seen["errors"]
        if not record.run_kept_after_reload:
            # Their run is gone from the page: a student presses Start again, and then closes
            # the tab while this run trains or waits (what the release of a session stops).
            record.failure = "start after reload"
            await start_button.click()
            seen = await wait_state(
                page, ("running", "queued", "exception", "failed", "stopped"), step_timeout
            )
            record.state_after_restart = seen["state"]
            record.page_exceptions += seen["errors"]
        await asyncio.sleep(2.0)
        record.failure = None
    except (PlaywrightError, RuntimeError, TimeoutError) as err:
        record.failure = f"{record.failure}: {str(err).splitlines()[0][:200]}"
        with contextlib.suppress(PlaywrightError):
            record.seen_at_failure = await page.evaluate(SEEN)
            record.page_exceptions += (await read_state(page))["errors"]
    finally:
        with contextlib.suppress(PlaywrightError):
            await context.close()


async def warm_up(browser: Browser, url: str, timeout: float) -> Student:
    """One session through the first deep link, the zygote's kernel warm-up and a first run."""
    record = Student(index=-1)
    await student(browser, url, record, 2.0, timeout)
    if record.failure is not None:
        raise RuntimeError(f"the warm-up session failed at {record.failure}")
    return record


# ------------------------------------------------------------------------------------ the class
async def prune_file_threads(url: str, since: float) -> None:
    """Let the server's pool of file threads shrink, as its next request after a quiet spell
    would: Starlette serves static files from anyio's thread pool (up to 40 threads), whose
    threads idle for `POOL_IDLE_S` are ended only when a request next takes one. So wait until
    that long after ``since`` (monotonic), fetch one static file, and give it a second."""
    await asyncio.sleep(max(0.0, since + POOL_IDLE_S + 1.0 - time.monotonic()))

    def fetch() -> None:
        with contextlib.suppress(OSError):
            urllib.request.urlopen(f"{url}/favicon.png", timeout=10).close()

    await asyncio.to_thread(fetch)
    await asyncio.sleep(1.0)


def timeline_row(seconds: float, statuses: dict[str, int], now: ServerSample) -> list[float]:
    """[s, runs training, runs queued, worker processes, server threads, server CPU s, the
    machine's 1-minute load average]."""
    # A queued run is filed ('created') and starts when a slot frees.
    running, queued = statuses.get("running", 0), statuses.get("created", 0)
    return [
        round(seconds, 1),
        running,
        queued,
        now.workers,
        now.server_threads,
        round(now.server_cpu_s, 2),
        round(os.getloadavg()[0], 2),
    ]


async def wait_until(check, timeout: float) -> float | None:
    """Seconds until ``check()`` holds (polled each 0.5 s); None if not within ``timeout``."""
    begin = time.monotonic()
    while time.monotonic() - begin <= timeout:
        if check():
            return time.monotonic() - begin
        await asyncio.sleep(0.5)
    return None


async def measure(
    args: argparse.Namespace, server: subprocess.Popen[bytes], url: str, db: Path, deadline: float
) -> dict[str, Any]:
    """Warm up, take the baseline, run the class, wait for the server to settle; the class
    ends (its sessions cut) in time to settle before ``deadline`` (monotonic)."""
    pid = server.pid
    out: dict[str, Any] = {
        "server": {"cold": asdict(sample_server(pid))},
        "load_average_at_start": round(os.getloadavg()[0], 2),
    }
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            first = await warm_up(browser, url, max(10.0, deadline - time.monotonic() - 60))
            out["warm_up"] = {"page_load_s": first.page_load_s, "run_shown_s": first.run_shown_s}
            warmed = time.monotonic()
            await wait_until(lambda: active_runs(store_statuses(db)) == 0, 30)
            await wait_until(lambda: sample_server(pid).workers == 0, 30)
            await prune_file_threads(url, warmed)
            baseline = sample_server(pid)
            out["server"]["baseline"] = asdict(baseline)
            out["store_baseline"] = store_statuses(db)

            samples: list[ServerSample] = []
            store_peak: dict[str, int] = {}
            timeline: list[list[float]] = []
            sampling_over = asyncio.Event()
            begin = time.monotonic()
            cpu = CpuMeter(pid)

            async def sampler() -> None:
                while not sampling_over.is_set():
                    samples.append(now := sample_server(pid))
                    cpu.read()
                    statuses = store_statuses(db)
                    if active_runs(statuses) >= active_runs(store_peak):
                        store_peak.clear()
                        store_peak.update(statuses)
                    timeline.append(timeline_row(time.monotonic() - begin, statuses, now))
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(sampling_over.wait(), 1.0)

            records = [Student(index=i) for i in range(args.sessions)]

            async def arrive(record: Student) -> None:
                record.arrived_s = record.index * args.stagger
                await asyncio.sleep(record.arrived_s)
                await student(browser, url, record, args.seconds, args.step_timeout)

            watcher = asyncio.create_task(sampler())
            # What follows the class: settling, the pool's idle time, closing 30 pages.
            budget = deadline - time.monotonic() - args.settle_timeout - POOL_IDLE_S - 15
            tasks = [asyncio.create_task(arrive(record)) for record in records]
            done, pending = await asyncio.wait(tasks, timeout=budget)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            for record, task in zip(records, tasks, strict=True):
                if task in pending:
                    record.failure = f"{record.failure or 'not started'}: cut by --timeout"
            out["class_s"] = time.monotonic() - begin
            cpu.read()
            out["cpu_s"] = cpu.used()

            closed = time.monotonic()
            runs_end = await wait_until(
                lambda: active_runs(store_statuses(db)) == 0, args.settle_timeout
            )
            left = args.settle_timeout - (time.monotonic() - closed)
            workers_end = await wait_until(
                lambda: sample_server(pid).workers <= baseline.workers, max(left, 0)
            )
            threads_idle = sample_server(pid).server_threads
            await prune_file_threads(url, closed)
            left = args.settle_timeout - (time.monotonic() - closed)
            threads_end = await wait_until(
                lambda: (
                    sample_server(pid).server_threads <= baseline.server_threads + THREAD_TOLERANCE
                ),
                max(left, 0),
            )
            sampling_over.set()
            await watcher
            after = sample_server(pid)
            statuses = store_statuses(db)
            timeline.append(timeline_row(time.monotonic() - begin, statuses, after))
            out["timeline"] = timeline
            out["runs_final"] = store_runs(db)
            out["server"]["peak"] = peak(samples) if samples else None
            out["server"]["after"] = asdict(after)
            out["settle_s"] = {
                "runs_stopped": runs_end,
                "workers_back": workers_end,
                "threads_back": threads_end,
                "server_threads_before_pool_pruned": threads_idle,
                "all": time.monotonic() - closed,
            }
            out["store_peak"] = store_peak
            out["store_after"] = store_statuses(db)
            out["students"] = records
        finally:
            await browser.close()
    return out


# ------------------------------------------------------------------------------------- the report
def stats(values: list[float]) -> dict[str, float | int | None]:
    if not values:
        return {"n": 0, "p50": None, "p95": None, "max": None}
    array = np.asarray(values, dtype=float)
    return {
        "n": int(array.size),
        "p50": round(float(np.percentile(array, 50)), 3),
        "p95": round(float(np.percentile(array, 95)), 3),
        "max": round(float(array.max()), 3),
    }


def summarize(
    args: argparse.Namespace, raw: dict[str, Any], log: dict[str, Any], leaked: list[str]
) -> dict[str, Any]:
    records: list[Student] = raw["students"]
    loads = [row[-1] for row in raw["timeline"]]
    states = [r.state for r in records]
    baseline, after = raw["server"]["baseline"], raw["server"]["after"]
    cap = args.max_runs if args.max_runs is not None else max(1, _usable_cores() - 1)
    checks = {
        "every session got the page": all(r.page_load_s is not None for r in records),
        "every session's run was admitted or queued": all(
            s in ("running", "queued") for s in states
        ),
        "runs training at once within the cap": max((row[1] for row in raw["timeline"]), default=0)
        <= cap,
        "no exception on a page": not any(r.page_exceptions for r in records),
        "runs stopped after the sessions closed": active_runs(raw["store_after"]) == 0,
        "worker processes back to baseline": after["workers"] <= baseline["workers"],
        "child processes back to baseline": after["children"] <= baseline["children"],
        f"server threads back to baseline (+{THREAD_TOLERANCE})": after["server_threads"]
        <= baseline["server_threads"] + THREAD_TOLERANCE,
        "no Traceback/Exception/Error (or HTTP 5xx) in the server log": log_clean(log),
        "nothing outlived the server": not leaked,
        f"the queue never stalled (runs waiting, a slot free, > {STALL_S:g} s)": longest_stall(
            raw["timeline"], cap
        )
        <= STALL_S,
    }
    return {
        "machine": {
            "cpu_count": os.cpu_count(),
            "usable_cores": _usable_cores(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "load_average_at_start": raw["load_average_at_start"],
            "load_average_max_during": max(loads) if loads else None,
        },
        "settings": {
            "sessions": args.sessions,
            "seconds_watched": args.seconds,
            "stagger_s": args.stagger,
            "executor": args.executor,
            "max_runs": args.max_runs,
            "max_runs_effective": cap,
            "max_paused": args.max_paused,
            "idle_timeout_s": args.idle_timeout,
            "release_grace_s": RELEASE_GRACE_S,
            "timeout_s": args.timeout,
            "url": LIVE,
            "command": " ".join(["python", "-m", "benchmarks.load_classroom", *sys.argv[1:]]),
        },
        "sessions": {
            "opened": len(records),
            "got_page": sum(r.page_load_s is not None for r in records),
            "admitted": states.count("running"),
            "queued": states.count("queued"),
            "other_states": {s: states.count(s) for s in set(states) - {"running", "queued"}},
            "reloaded": sum(r.reload_s is not None for r in records),
            "run_kept_after_reload": sum(bool(r.run_kept_after_reload) for r in records),
            "states_after_restart": {
                state: sum(r.state_after_restart == state for r in records)
                for state in {r.state_after_restart for r in records} - {None}
            },
            "with_page_exception": sum(bool(r.page_exceptions) for r in records),
            "with_javascript_error": sum(bool(r.page_errors) for r in records),
            "failed": {str(r.index): r.failure for r in records if r.failure},
        },
        "latency_s": {
            "page_load": stats([r.page_load_s for r in records if r.page_load_s is not None]),
            "first_message": stats(
                [r.first_message_s for r in records if r.first_message_s is not None]
            ),
            "run_shown": stats([r.run_shown_s for r in records if r.run_shown_s is not None]),
            "reload": stats([r.reload_s for r in records if r.reload_s is not None]),
            "update_interval": stats([ms / 1000 for r in records for ms in r.update_intervals_ms]),
            "steps_update_interval": stats(
                [ms / 1000 for r in records for ms in r.steps_intervals_ms]
            ),
        },
        "cpu_during_class": {
            "class_s": round(raw["class_s"], 1),
            "cpu_s": raw["cpu_s"],
            "cores": {
                name: round(used / raw["class_s"], 2) if raw["class_s"] else None
                for name, used in raw["cpu_s"].items()
            },
        },
        "sent_kb_per_s": {
            state: stats([r.kb_per_s for r in records if r.state == state and r.kb_per_s])
            for state in ("running", "queued")
        },
        "first_load": {
            "files": stats([r.first_load_files for r in records if r.first_load_files]),
            "mb": stats([r.first_load_mb for r in records if r.first_load_mb]),
        },
        "runs_in_store": {
            "baseline": raw["store_baseline"],
            "peak": raw["store_peak"],
            "after": raw["store_after"],
        },
        "server": raw["server"],
        "warm_up": raw["warm_up"],
        "settle_s": raw["settle_s"],
        "queue_longest_stall_s": longest_stall(raw["timeline"], cap),
        "runs_final": raw["runs_final"],
        "timeline_columns": [
            "s",
            "running",
            "queued",
            "workers",
            "server_threads",
            "server_cpu_s",
            "load_average_1min",
        ],
        "timeline": raw["timeline"],
        "class_s": raw["class_s"],
        "server_log": log,
        "leaked_after_server_exit": leaked,
        "checks": checks,
        "per_session": [
            {k: v for k, v in asdict(r).items() if not k.endswith("_ms")}
            | {
                "update_intervals": len(r.update_intervals_ms),
                "steps_intervals": len(r.steps_intervals_ms),
            }
            for r in records
        ],
    }


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _fmt(value: float | None, unit: str = "s") -> str:
    return "–" if value is None else f"{value:.2f} {unit}"


def contention_note(result: dict[str, Any]) -> list[str]:
    """A warning when the machine was oversubscribed: then the latencies measure the machine
    (browsers and whatever else ran), not the server."""
    machine, cpu = result["machine"], result["cpu_during_class"]
    top = machine["load_average_max_during"]
    if top is None or top <= 2 * machine["cpu_count"]:
        return []
    return [
        f"**The machine was oversubscribed**: load average up to {top} on "
        f"{machine['cpu_count']} CPUs, the browsers alone {cpu['cores']['browsers']} cores, the "
        f"server {cpu['cores']['server']}. The latencies above and the sessions that did not "
        "get their page in time measure this machine, not the server; rerun on an idle machine "
        "with more cores, or with a larger --stagger.",
        "",
    ]


def markdown(result: dict[str, Any]) -> str:
    s, lat, server, log = (
        result["settings"],
        result["latency_s"],
        result["server"],
        result["server_log"],
    )
    sessions, machine = result["sessions"], result["machine"]
    base, top, after = server["baseline"], server["peak"] or {}, server["after"]
    cap = s["max_runs"] if s["max_runs"] is not None else f"{s['max_runs_effective']} (default)"
    lines = [
        f"# Classroom load: {s['sessions']} browser sessions on one server",
        "",
        f"`{s['command']}` · {machine['cpu_count']} CPUs ({machine['usable_cores']} "
        f"usable) · executor `{s['executor']}` · run cap {cap} · each session watches "
        f"{s['seconds_watched']:g} s, reloads once, closes; arrivals {s['stagger_s']:g} s apart",
        "",
        f"After a reload the page showed the session's run in {sessions['run_kept_after_reload']} "
        f"of {sessions['reloaded']} sessions; pressing Start again gave "
        f"{sessions['states_after_restart'] or 'nothing'}.",
        "",
        "| sessions | got the page | admitted at Start | queued | other | reloaded | kept its "
        "run after reload | page exceptions |",
        "|---|---|---|---|---|---|---|---|",
        f"| {sessions['opened']} | {sessions['got_page']} | {sessions['admitted']} | "
        f"{sessions['queued']} | {sum(sessions['other_states'].values())} | "
        f"{sessions['reloaded']} | {sessions['run_kept_after_reload']} | "
        f"{sessions['with_page_exception']} |",
        "",
        "| latency | n | p50 | p95 | max |",
        "|---|---|---|---|---|",
    ]
    for name, label in (
        ("page_load", "page load (live page on screen)"),
        ("first_message", "navigation → server's first message"),
        ("run_shown", "Start → run training or queued"),
        ("reload", "reload → live page on screen"),
        ("update_interval", "interval between page updates"),
        ("steps_update_interval", "interval between steps-counter changes"),
    ):
        row = lat[name]
        lines.append(
            f"| {label} | {row['n']} | {_fmt(row['p50'])} | {_fmt(row['p95'])} | "
            f"{_fmt(row['max'])} |"
        )
    lines += [
        "",
        "| server | baseline | peak | after close |",
        "|---|---|---|---|",
    ]
    for name, label, unit in (
        ("server_rss_mb", "server RSS", "MiB"),
        ("tree_pss_mb", "process tree PSS", "MiB"),
        ("server_threads", "server threads", ""),
        ("children", "child processes", ""),
        ("workers", "worker processes", ""),
    ):
        cells = [base.get(name), top.get(name), after.get(name)]
        lines.append(
            f"| {label} | "
            + " | ".join("–" if v is None else f"{v:.0f} {unit}".strip() for v in cells)
            + " |"
        )
    settle, cpu, first = result["settle_s"], result["cpu_during_class"], result["first_load"]
    sent = result["sent_kb_per_s"]
    cores = cpu["cores"]
    lines += [
        "",
        f"CPU over the {cpu['class_s']:g} s of the class, in cores: the server "
        f"{cores['server']}, its workers (training) {cores['server_children']}, the "
        f"{s['sessions']} browser sessions {cores['browsers']} (they run on the server's "
        f"machine here; in a class each student's laptop draws its own page). The machine's "
        f"load average: {machine['load_average_at_start']} at the start, "
        f"{machine['load_average_max_during']} at most ({machine['cpu_count']} CPUs). A first "
        f"page load fetched {first['files']['p50']} files, {first['mb']['p50']} MB (median); "
        f"while watched, a page whose run trained received {sent['running']['p50']} kB/s, a "
        f"queued one {sent['queued']['p50']} kB/s (median over the sessions).",
        "",
        f"Runs in the store at peak: {result['runs_in_store']['peak']}; after close: "
        f"{result['runs_in_store']['after']} (runs stopped "
        f"{_fmt(settle['runs_stopped'])} after the last session closed). Server log: "
        f"{log['tracebacks']} tracebacks"
        + (f" {log['traceback_kinds']}" if log["tracebacks"] else "")
        + f", {log['other_line_count']} other lines naming an Exception or Error, "
        f"{log['http_5xx_count']} HTTP 5xx answers. "
        f"Processes that outlived the server: {len(result['leaked_after_server_exit'])}. "
        f"Runs filed: {result['runs_final']['runs']}, of which "
        f"{result['runs_final']['never_trained']} never trained; how they ended: "
        f"{result['runs_final']['ended']}.",
        "",
        *contention_note(result),
        "| check | held |",
        "|---|---|",
        *[f"| {name} | {'yes' if held else '**no**'} |" for name, held in result["checks"].items()],
        "",
    ]
    return "\n".join(lines)


def comparison_table(*results: dict[str, Any]) -> str:
    """The docs' table (Markdown): one column per results file (30 and 10 sessions, say)."""

    def p50_p95(result: dict[str, Any], key: str) -> str:
        cell = result["latency_s"].get(key) or {}
        if not cell.get("n"):
            return "–"
        return (
            f"{cell['p50']:.2f} / {cell['p95']:.2f} s"
            if key == "update_interval"
            else (f"{cell['p50']:.1f} / {cell['p95']:.1f} s")
        )

    def server(result: dict[str, Any], key: str, fmt: str) -> str:
        s = result["server"]
        return " / ".join(format(s[phase][key], fmt) for phase in ("baseline", "peak", "after"))

    def clean(result: dict[str, Any]) -> str:
        log = result["server_log"]
        leaked = len(result["leaked_after_server_exit"])
        return f"{log['tracebacks']}, {log['http_5xx_count']}, {leaked}"

    rows = [
        (
            "got the page within the timeout",
            lambda r: f"{r['sessions']['got_page']} of {r['sessions']['opened']}",
        ),
        ("page load, p50 / p95", lambda r: p50_p95(r, "page_load")),
        ("Start → run training or queued, p50 / p95", lambda r: p50_p95(r, "run_shown")),
        ("reload → live page on screen, p50 / p95", lambda r: p50_p95(r, "reload")),
        (
            "kept its run after the reload",
            lambda r: f"{r['sessions']['run_kept_after_reload']} of {r['sessions']['reloaded']}",
        ),
        ("interval between page updates, p50 / p95", lambda r: p50_p95(r, "update_interval")),
        (
            "server RSS: baseline / peak / after close",
            lambda r: server(r, "server_rss_mb", ".0f") + " MiB",
        ),
        (
            "server threads: baseline / peak / after close",
            lambda r: server(r, "server_threads", "d"),
        ),
        (
            "server CPU, cores; the browsers' (on the same machine)",
            lambda r: (
                f"{r['cpu_during_class']['cores']['server']:.2f}; "
                f"{r['cpu_during_class']['cores']['browsers']:.2f}"
            ),
        ),
        (
            "load average at the start / at most",
            lambda r: (
                f"{r['machine']['load_average_at_start']:.1f} / "
                f"{r['machine']['load_average_max_during']:.1f}"
            ),
        ),
        ("tracebacks, HTTP 5xx, processes outliving the server", clean),
    ]
    header = "| | " + " | ".join(f"{r['settings']['sessions']} sessions" for r in results) + " |"
    lines = [header, "|---|" + "---:|" * len(results)]
    for label, cell in rows:
        lines.append(f"| {label} | " + " | ".join(cell(r) for r in results) + " |")
    commits = [r.get("commit") for r in results]
    if any(commits):
        lines += ["", "Commits: " + ", ".join(c or "not recorded" for c in commits) + "."]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=30, help="browser sessions (students)")
    parser.add_argument("--seconds", type=float, default=60.0, help="each session watches")
    parser.add_argument("--stagger", type=float, default=0.5, help="seconds between arrivals")
    parser.add_argument("--max-runs", type=int, help="RDQN_MAX_RUNS (default: the server's)")
    parser.add_argument("--max-paused", type=int, help="RDQN_MAX_PAUSED (default: the server's)")
    parser.add_argument("--idle-timeout", type=float, help="RDQN_IDLE_TIMEOUT (default: server's)")
    parser.add_argument("--executor", default="process", help="RDQN_EXECUTOR")
    parser.add_argument("--timeout", type=float, default=300.0, help="for everything, in all")
    parser.add_argument("--step-timeout", type=float, default=120.0, help="for one page step")
    parser.add_argument("--settle-timeout", type=float, default=45.0, help="after the close")
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/load_classroom.json"))
    parser.add_argument("--keep", action="store_true", help="keep the temporary RDQN_HOME")
    args = parser.parse_args()
    if args.sessions < 1 or args.seconds < 0 or args.timeout <= args.settle_timeout:
        parser.error("need --sessions >= 1, --seconds >= 0 and --timeout > --settle-timeout")

    home = Path(tempfile.mkdtemp(prefix="rdqn-load-classroom-"))
    log_path = home / "server.log"
    started = time.monotonic()
    try:
        server, url = start_server(
            home, log_path, args.executor, args.max_runs, args.max_paused, args.idle_timeout, 90
        )
    except RuntimeError as err:
        print(f"load_classroom: {err}", file=sys.stderr)
        if not args.keep:
            shutil.rmtree(home, ignore_errors=True)
        return 2
    leaked: list[str] = []
    try:
        print(f"server {url} (pid {server.pid}), RDQN_HOME {home}", flush=True)
        deadline = started + args.timeout
        # The phases keep to the deadline; this is the backstop for a hung browser call.
        raw = asyncio.run(
            asyncio.wait_for(
                measure(args, server, url, home / "rdqn.db", deadline), args.timeout + HUNG_S
            )
        )
    except TimeoutError:
        print(
            f"load_classroom: a browser call hung {HUNG_S:g} s past --timeout; no result",
            file=sys.stderr,
        )
        return 1
    finally:
        leaked = stop_server(server)
        log = read_log(log_path)
        if not args.keep:
            shutil.rmtree(home, ignore_errors=True)
    result = summarize(args, raw, log, leaked)
    result["wall_s"] = round(time.monotonic() - started, 1)
    result["commit"] = git_commit()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(result), encoding="utf-8")
    print(markdown(result))
    for block in log["first_tracebacks"]:
        print(f"server log:\n{block}")
    for line in log["other_lines"] + log["http_5xx"]:
        print(f"server log: {line}")
    for index, failure in result["sessions"]["failed"].items():
        print(f"session {index}: {failure}")
    print(f"results: {out} and {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
