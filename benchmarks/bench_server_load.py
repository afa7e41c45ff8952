"""The server alone: what one watching session costs it, and how many one core serves.

The Chromium load test (`benchmarks.load_classroom`) runs 30 browsers on the server's two cores,
so its figures mostly measure the browsers. Here the sessions are lightweight clients
(`tests.harness.streamlit_client`: Streamlit's WebSocket protocol, nothing drawn) in this one
process, and the server is pinned to one core (``--server-core``): every thread of it, so "the
sessions one core serves" is literal. This script, its clients and the server's child processes
(the zygote and the worker that trains the run) share the other core; the worker is niced so
that the clients keep their timing. On a machine others share, ``--nice -10`` (root) keeps their
work from starving the server and the clients; the load average is recorded either way.

The class: one teacher session opens the live page, presses Start (a run of 5 * 10^6 steps, the
most the page allows, full speed, in a worker process) and stays; its class code is read from
its page. For each repeat, watchers join as students do with ``/live?follow=<code>`` (each a
distinct browser: its own ``rdqn_owner`` cookie), in steps of ``--sessions`` (0, 1, 10, 30, 100
by default: added, never closed, until the repeat ends). A step's newcomers arrive at random
moments within ``--spread`` seconds, so their pages' one-second timers are out of step as in a
class; the step is measured for ``--seconds`` once every new page has loaded and ``--settle``
seconds more have passed. A page that does not load within ``--step-timeout`` ends the repeat
(recorded). Then the watchers close and the next repeat starts with new ones. Like a browser, a
client asks for its live fragment's rerun every second (the fragment's ``run_every``) whether or
not the last one has come back.

Measured per step:
  staleness       the age of the newest point each watcher's page shows: every `SAMPLE_S`
                  (0.25 s) of the window, for each watcher, the time of the read less the moment
                  the run first reached the env steps its page shows (the status line's
                  "18,262 of 5,000,000 steps", the first thing a live-fragment update writes; the
                  Env steps counter says the same). p50, p95, max, the share older than
                  `STALE_S` (2 s), the worst page's p95, and each second the pages' median and
                  max (``staleness_each_s_ms``). A page whose updates come in bursts has short
                  update intervals and old data: this is the measure of what a student sees.
                  The run's progress with wall time comes from the run store (`Progress`: its
                  ``steps`` rows, one every 10 env steps with the trainer's clock, read every
                  `POLL_S`). Resolution: the run's timeline is exact to its 10-step rows (2-3 ms
                  at the run's 4,000 steps a second) and its clock's offset to this one to a few
                  milliseconds (the smallest of about one estimate a second; the others'
                  excess is ``progress.start_later_ms`` in the results), erring only towards
                  less staleness; the reads sample the time course every 0.25 s
                  (``read_late_ms``: how late this process's loop made them), and a page's text
                  is what this process has received. The floor: the worker sends the server a
                  snapshot every 0.5 s and a page asks every second, so a server without delay
                  shows pages up to about 1.5 s old (0.75 s on average).
  run             the teacher's run: its env steps per second in the window, its env steps at
                  the window's start, and how long before the window's end it last wrote a row
                  (it must still be training for staleness to mean anything)
  server CPU      CPU seconds per second of the server process, all its threads (/proc), and
                  apart from it its children (the training worker) and this script (the clients)
  per update      the server's CPU per watcher update, over its CPU without watchers: the cost
                  of one watching session at one refresh a second
  update interval between the live fragment's consecutive updates on each watcher's page
                  (nominal 1 s): p50, p95, max, the share more than 1 s late, and the watchers
                  that got no update at all in the window
  no element      the share of those updates that brought no element, only their
                  script_finished: Streamlit takes back a fragment run's messages not yet sent
                  when the fragment's next run starts (a page then "updates" and shows old data)
  response        a fragment rerun asked for until its script_finished message (queueing
                  included); run: the script's run as the client sees it, first to last message
  bytes           ForwardMsg bytes per watching session per second
  memory          the server's RSS, and its growth per session over the ramp
  first load      a joining watcher's first page run, asked until finished
Derived: the watching sessions one core serves by CPU at one refresh a second, (1 - the
server's CPU without watchers) / the CPU per update (median over the steps of 5 watchers or
more whose server used less than 85 % of its core; the slope of CPU over watchers is recorded
beside it); whether 100 watchers on one core see pages whose staleness p95 is at most 2 s (the
goal: `GOAL_SESSIONS`, `GOAL_STALE_S`), and up to how many watchers, step by step, it holds
(``staleness_holds_up_to``, ``staleness_breaks_at``). With ``--profile SECONDS`` and py-spy
(``--py-spy PATH``, else on PATH), the server is sampled for that long with
``--profile-sessions`` watchers after the measured repeats, and the top functions are recorded.

Everything is on 127.0.0.1, every wait is bounded (``--timeout`` once the run trains), and the
script stops what it started. Results: ``--out`` (JSON); ``--table`` prints the docs' table
(docs/performance.md, *Watching sessions*).

Usage: python -m benchmarks.bench_server_load [--sessions 0 1 10 30 100] [--seconds 15]
       [--repeats 3] [--nice -10] [--profile 20 --py-spy PATH]
       [--out benchmarks/results/server_load.json]
       python -m benchmarks.bench_server_load --table [--out ...]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import os
import platform
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from array import array
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.load_classroom import _cpu_s, _status_kb, descendants, read_log, stop_server
from tests.harness.dashboard_server import start_dashboard
from tests.harness.streamlit_client import Run, StreamlitClient

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks/results/server_load.json"
LIVE_QUERY = "steps=5000000"
"""The most steps the live page lets a run ask for (`rdqn.dashboard.params.LIMITS`): at about
4,000 env steps a second the teacher's run trains for 20 minutes, so it goes on through the
measures (a run that has ended shows nothing newer to be stale against: `run_behind_s`)."""
CLASS_CODE = re.compile(r"Class code `([A-HJ-NP-Z2-9]{4})`")
RUN_ID = re.compile(r"\brun `?([0-9a-f]{12})\b")
SHOWN_STEPS = re.compile(r"· ([\d,]+) of [\d,]+ steps\b")
"""The env steps a live page shows, in its status line (`rdqn.dashboard.live_view._run_state`:
"running · run `…` (…) · 18,262 of 5,000,000 steps · …"; the Env steps counter says the same)."""
GOAL_SESSIONS = 100
GOAL_STALE_S = 2.0
"""The goal: `GOAL_SESSIONS` watchers on one core, the newest point on their pages at most this
old at the 95th percentile."""
LATE_S = 1.0
"""An update later than its period by more than this is late (a student sees the page stall)."""
STALE_S = GOAL_STALE_S
"""A page whose newest point is older than this is stale (the share of samples is reported)."""
SAMPLE_S = 0.25
"""Each watcher's page is read this often in the measured window (for its staleness)."""
POLL_S = 0.05
"""The run store is read this often for the run's progress (`Progress`)."""
SATURATED = 0.85
"""A step whose server used more of its core than this is left out of the per-session slope and
of the median CPU per update."""
WORKER_NICE = 10


# ---------------------------------------------------------------------------------- the machine
def pin(pid: int, cores: set[int], nice: int | None = None) -> None:
    """Every thread of ``pid`` on ``cores``, at ``nice`` if given (on Linux both are per
    thread; a thread inherits its creator's)."""
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            os.sched_setaffinity(int(task), cores)
            if nice is not None:
                os.setpriority(os.PRIO_PROCESS, int(task), nice)


def place(args: argparse.Namespace, server: int) -> list[int]:
    """The server on its core (at ``--nice``); its children (zygote, workers) on the other
    core, niced to `WORKER_NICE`."""
    pin(server, {args.server_core}, args.nice)
    children = descendants(server)
    for child in children:
        with contextlib.suppress(OSError):
            pin(child, {args.other_core}, WORKER_NICE)
    return children


def cpu_now(server: int) -> dict[str, float]:
    """CPU seconds so far of the server, of its live children, of this process (the clients)."""
    times = os.times()
    return {
        "server": _cpu_s(server),
        "children": sum(_cpu_s(child) for child in descendants(server)),
        "clients": times.user + times.system,
        "wall": time.monotonic(),
    }


def used(start: dict[str, float], end: dict[str, float]) -> dict[str, float]:
    """Cores used between two `cpu_now` readings (a child that ended in between is missed)."""
    wall = end["wall"] - start["wall"]
    return {k: max(0.0, end[k] - start[k]) / wall for k in ("server", "children", "clients")}


def git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        return out.stdout.strip() + ("+uncommitted" if dirty.stdout.strip() else "")
    except OSError:
        return "unknown"


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# ---------------------------------------------------------------------------------- statistics
def pct(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 1) if values else None


def spread(values: list[float | None]) -> dict[str, float | None]:
    """Median, min and max of the repeats' values."""
    kept = [v for v in values if v is not None]
    if not kept:
        return {"median": None, "min": None, "max": None}
    return {
        "median": round(statistics.median(kept), 4),
        "min": round(min(kept), 4),
        "max": round(max(kept), 4),
    }


def live_fragment(client: StreamlitClient) -> str | None:
    """The live view's fragment: the one that reruns every second."""
    return next((f for f, every in client.intervals.items() if every == 1.0), None)


def window_runs(client: StreamlitClient, start: float, end: float) -> list[Run]:
    """The client's live-fragment runs that finished within [start, end]."""
    fragment = live_fragment(client)
    return [
        run
        for run in client.runs
        if run.fragment
        and fragment in run.fragments
        and run.finished is not None
        and start <= run.finished <= end
    ]


# ---------------------------------------------------------------------------- the run's progress
class Progress:
    """When the teacher's run reached each env step, on this process's clock: read from the run
    store (its SQLite file under the server's RDQN_HOME, read-only) every `POLL_S` seconds, in a
    thread of its own.

    The trainer writes a ``steps`` row every ``train.log_every`` (10) updates, one update per env
    step, with its env step and ``wall_time``, the seconds since the trainer began on its clock
    (``time.perf_counter``: CLOCK_MONOTONIC on Linux, as ``time.monotonic`` here), in batches
    about a second apart (`rdqn.runs.writer.RunWriter`): the run's progress every 10 env steps,
    a few milliseconds apart at its rate. When the trainer began on this clock (``start``) is
    learnt from the batches: the row that makes a batch due is written at once, so a batch first
    read at ``t`` whose newest row says ``wall_time`` gives ``t - wall_time``, later than the
    start by the write and the wait for the next read (0 to `POLL_S`); the smallest over the
    run's batches (one a second) is within a few milliseconds of it, and never before it."""

    def __init__(self, db: Path, run_id: str, every: float = POLL_S) -> None:
        self.db, self.run_id, self.every = db, run_id, every
        self._steps = array("q")  # env steps of the steps rows read, in order
        self._walls = array("d")  # their wall_time
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="progress", daemon=True)
        self.starts: list[float] = []  # t - wall_time of each batch read
        self.polls = 0
        self.error: str | None = None

    def __enter__(self) -> Progress:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _poll(self) -> None:
        try:
            conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=5)
            updates = episode = 0
            while not self._stop.wait(self.every):
                rows = conn.execute(
                    "SELECT updates, env_steps, wall_time FROM steps "
                    "WHERE run_id = ? AND updates > ? ORDER BY updates",
                    (self.run_id, updates),
                ).fetchall()
                newest = conn.execute(
                    "SELECT MAX(episode), MAX(wall_time) FROM episodes "
                    "WHERE run_id = ? AND episode > ?",
                    (self.run_id, episode),
                ).fetchone()
                seen = time.monotonic()
                self.polls += 1
                walls = [wall for _, _, wall in rows if wall is not None]
                if newest[0] is not None:
                    episode = newest[0]
                    walls += [newest[1]] if newest[1] is not None else []
                if walls:
                    self.starts.append(seen - max(walls))
                if rows:
                    updates = rows[-1][0]
                    kept = [(n, w) for _, n, w in rows if n is not None and w is not None]
                    with self._lock:
                        self._steps.extend(n for n, _ in kept)
                        self._walls.extend(w for _, w in kept)
            conn.close()
        except Exception as err:  # noqa: BLE001 (recorded: no staleness without it)
            self.error = f"{type(err).__name__}: {err}"

    @property
    def start(self) -> float | None:
        """When the trainer began, on ``time.monotonic``'s clock (None: no batch read yet)."""
        return min(self.starts) if self.starts else None

    def newest(self) -> int:
        """The furthest env step read so far."""
        with self._lock:
            return self._steps[-1] if self._steps else -1

    def reached(self, steps: np.ndarray) -> np.ndarray:
        """When the run first had each of ``steps`` env steps (``time.monotonic``), between the
        rows read around it (NaN where the rows read do not reach it)."""
        with self._lock:
            known, walls = np.array(self._steps, dtype=float), np.array(self._walls)
        if not len(known) or self.start is None:
            return np.full(len(steps), np.nan)
        steps = np.asarray(steps, dtype=float)
        at = np.interp(steps, known, walls) + self.start
        at[(steps > known[-1]) | (steps < known[0])] = np.nan
        return at

    def rate(self, start: float, end: float) -> float | None:
        """The run's env steps per second between ``start`` and ``end`` (``time.monotonic``)."""
        if self.start is None:
            return None
        with self._lock:
            known, walls = np.array(self._steps, dtype=float), np.array(self._walls)
        inside = (walls + self.start >= start) & (walls + self.start <= end)
        if inside.sum() < 2:
            return None
        return float((known[inside][-1] - known[inside][0]) / (end - start))

    def summary(self) -> dict[str, Any]:
        """How well the start is known: the batches read, and how much later than the smallest
        (the start) the others read as (the write and the wait for a read)."""
        later = [1000 * (s - self.start) for s in self.starts] if self.start is not None else []
        return {
            "poll_s": self.every,
            "polls": self.polls,
            "batches_read": len(self.starts),
            "rows_read": len(self._steps),
            "start_later_ms": {"p5": pct(later, 5), "p50": pct(later, 50), "max": pct(later, 100)},
            "error": self.error,
        }


def shown_steps(client: StreamlitClient) -> int | None:
    """The env steps the client's page shows now (its status line; None: none on it)."""
    for text in list(client.text.values()):
        if "of " in text and (found := SHOWN_STEPS.search(text)):
            return int(found.group(1).replace(",", ""))
    return None


async def read_pages(
    watchers: list[StreamlitClient], start: float, end: float, every: float = SAMPLE_S
) -> list[tuple[float, float, list[int | None]]]:
    """Every ``every`` seconds from ``start`` to ``end``: (when, how late that read was, the env
    steps each watcher's page showed)."""
    samples = []
    beat = start
    while (beat := beat + every) <= end:
        await asyncio.sleep(max(0.0, beat - time.monotonic()))
        now = time.monotonic()
        samples.append((now, now - beat, [shown_steps(w) for w in watchers]))
    return samples


async def staleness(
    progress: Progress,
    samples: list[tuple[float, float, list[int | None]]],
    start: float,
    wait: float = 5.0,
) -> dict[str, Any]:
    """The age of the newest point on each page at each read: when it was read, less when the
    run first reached the env steps it showed; pooled, per page (the worst page's p95) and over
    time (``staleness_each_s_ms``: the pages' median and max at the first read of each second
    after ``start``). Waits (up to ``wait`` s) for the store to have the rows around the last
    steps shown (a batch a second)."""
    shown = [n for _, _, pages in samples for n in pages if n is not None]
    deadline = time.monotonic() + wait
    while shown and progress.newest() < max(shown) and time.monotonic() < deadline:
        await asyncio.sleep(POLL_S)
    ages: list[float] = []
    per_page: dict[int, list[float]] = {}
    medians: dict[int, float] = {}  # per whole second into the window: the pages' median and max
    highest: dict[int, float] = {}  # at its first read (ms)
    unknown = 0
    for when, _, pages in samples:
        steps = np.array([n if n is not None else -1 for n in pages], dtype=float)
        reached = progress.reached(steps)
        now = []
        for page, (n, at) in enumerate(zip(pages, reached, strict=True)):
            if n is None or np.isnan(at):
                unknown += 1
                continue
            now.append(1000 * (when - float(at)))
            per_page.setdefault(page, []).append(now[-1])
        ages += now
        if now and int(when - start) not in medians:
            medians[int(when - start)] = round(statistics.median(now))
            highest[int(when - start)] = round(max(now))
    late = [1000 * lag for _, lag, _ in samples]
    worst = [float(np.percentile(a, 95)) for a in per_page.values()]
    return {
        "staleness_ms": {
            "p50": pct(ages, 50),
            "p95": pct(ages, 95),
            "max": pct(ages, 100),
            "n": len(ages),
            "unknown": unknown,
            "worst_page_p95": round(max(worst), 1) if worst else None,
        },
        "stale_share": (
            round(sum(a > 1000 * STALE_S for a in ages) / len(ages), 4) if ages else None
        ),
        "read_late_ms": {"p50": pct(late, 50), "p95": pct(late, 95)},
        "staleness_each_s_ms": {"median": list(medians.values()), "max": list(highest.values())},
    }


# ----------------------------------------------------------------------------------- the class
async def teacher_session(
    url: str, timeout: float, start_timeout: float
) -> tuple[StreamlitClient, str, str]:
    """The teacher's live page with a run training: (its client, the run, the class code).
    ``start_timeout``: for the run to train (a first start compiles the replay kernels)."""
    teacher = StreamlitClient(url, "/live", LIVE_QUERY)
    await teacher.open(timeout)
    await teacher.wait_run(timeout)
    await teacher.click("live.start")
    found = await teacher.wait_for(
        lambda: re.search(r"(?m)^running\b.*", teacher.page_text()),
        start_timeout,
        "the run training",
    )
    run = RUN_ID.search(found.group(0)) or RUN_ID.search(teacher.page_text())
    code = CLASS_CODE.search(teacher.page_text())
    if run is None or code is None:
        raise RuntimeError(f"no run id or class code on the teacher's page:\n{teacher.page_text()}")
    return teacher, run.group(1), code.group(1)


async def join(
    url: str, code: str, run_id: str, timeout: float, delay: float = 0.0
) -> tuple[StreamlitClient, float]:
    """A student's browser opens the class's link ``delay`` seconds from now; returns it and
    its first page run (s), once its live fragment has shown the teacher's run."""
    await asyncio.sleep(delay)
    student = StreamlitClient(url, "/live", f"follow={code}")
    try:
        await student.open(timeout)
        first = await student.wait_run(timeout)
        await student.wait_for(
            lambda: run_id in student.page_text(), timeout, f"the teacher's run {run_id}"
        )
    except BaseException:
        await student.close(quiet_s=0)
        raise
    assert first.asked is not None and first.finished is not None
    return student, first.finished - first.asked


async def measure_step(
    server: int, watchers: list[StreamlitClient], seconds: float, progress: Progress
) -> dict[str, Any]:
    """Everything measured over ``seconds`` with these watchers open."""
    bytes_before = [w.received_bytes for w in watchers]
    start_cpu = cpu_now(server)
    start = time.monotonic()
    at_start = progress.newest()
    samples = await read_pages(watchers, start, start + seconds)
    await asyncio.sleep(max(0.0, start + seconds - time.monotonic()))
    end = time.monotonic()
    cores = used(start_cpu, cpu_now(server))
    stale = await staleness(progress, samples, start)
    rate = progress.rate(start, end)
    newest = progress.reached(np.array([progress.newest()]))[0]
    intervals: list[float] = []
    response: list[float] = []
    run_time: list[float] = []
    updates = 0
    for watcher in watchers:
        runs = window_runs(watcher, start, end)
        updates += len(runs)
        done = [r.finished for r in runs if r.finished is not None]
        intervals += [1000 * (b - a) for a, b in zip(done, done[1:], strict=False)]
        response += [1000 * (r.finished - r.asked) for r in runs if r.finished and r.asked]
        run_time += [
            1000 * (r.finished - r.first_message) for r in runs if r.finished and r.first_message
        ]
    # Updates that brought no element: Streamlit takes back a fragment run's unsent messages
    # when the fragment's next run starts, all but its script_finished.
    empty = sum(1 for w in watchers for r in window_runs(w, start, end) if not r.deltas)
    n = len(watchers)
    received = sum(w.received_bytes - b for w, b in zip(watchers, bytes_before, strict=True))
    stalled = sum(1 for w in watchers if not window_runs(w, start, end))
    return {
        "window_s": round(end - start, 2),
        "server_cores": round(cores["server"], 4),
        "children_cores": round(cores["children"], 4),
        "clients_cores": round(cores["clients"], 4),
        "server_rss_mb": round(_status_kb(server, "VmRSS") / 1024, 1),
        "server_threads": _status_kb(server, "Threads"),
        "updates_per_session_s": round(updates / n / (end - start), 3) if n else None,
        "empty_update_share": round(empty / updates, 4) if updates else None,
        "sessions_without_update": stalled,
        "interval_ms": {
            "p50": pct(intervals, 50),
            "p95": pct(intervals, 95),
            "max": pct(intervals, 100),
            "n": len(intervals),
        },
        "late_share": (
            round(sum(i > 1000 * (1 + LATE_S) for i in intervals) / len(intervals), 4)
            if intervals
            else None
        ),
        "response_ms": {"p50": pct(response, 50), "p95": pct(response, 95)},
        "run_ms": {"p50": pct(run_time, 50), "p95": pct(run_time, 95)},
        "bytes_per_session_s": round(received / n / (end - start)) if n else None,
        "sessions_closed": sum(1 for w in watchers if w.closed),
        "run_steps_per_s": round(rate) if rate is not None else None,
        "run_env_steps_at_start": at_start,
        # How long before the window's end the run last wrote a row (below 1 s: still training).
        "run_behind_s": None if np.isnan(newest) else round(end - float(newest), 2),
        "loadavg": loadavg(),
    } | stale


async def ramp(
    args: argparse.Namespace,
    server: int,
    url: str,
    code: str,
    run_id: str,
    repeat: int,
    steps: list[dict[str, Any]],
    progress: Progress,
) -> None:
    """One repeat: watchers join step by step, each step measured (into ``steps``); then they
    all close."""
    watchers: list[StreamlitClient] = []
    mine: list[dict[str, Any]] = []
    rng = random.Random(args.seed * 1000 + repeat)
    try:
        for sessions in args.sessions:
            # Students arrive at random moments: their pages' one-second timers are out of
            # step, as in a class (timers started together make every refresh a burst).
            arrivals = await asyncio.gather(
                *(
                    join(url, code, run_id, args.step_timeout, rng.uniform(0, args.spread))
                    for _ in range(sessions - len(watchers))
                ),
                return_exceptions=True,
            )
            joined = [a for a in arrivals if not isinstance(a, BaseException)]
            failed = [
                f"{type(a).__name__}: {str(a)[:200]}"
                for a in arrivals
                if isinstance(a, BaseException)
            ]
            watchers += [client for client, _ in joined]
            if failed:  # a page that did not load in --step-timeout: the repeat ends here
                steps.append({"repeat": repeat, "sessions": sessions, "join_failures": failed})
                mine.append(steps[-1])
                print(f"repeat {repeat} sessions {sessions}: {len(failed)} did not load")
                break
            place(args, server)
            await asyncio.sleep(args.settle)
            step = await measure_step(server, watchers, args.seconds, progress)
            step |= {
                "repeat": repeat,
                "sessions": sessions,
                "first_load_ms": {
                    "p50": pct([1000 * s for _, s in joined], 50),
                    "p95": pct([1000 * s for _, s in joined], 95),
                },
            }
            base = next((s for s in mine if s.get("sessions") == 0), None)
            if base is not None and sessions and step["updates_per_session_s"]:
                # The server's CPU for one watcher update, over what it used without watchers:
                # robust to a starved server (fewer updates, less CPU), unlike the slope.
                extra = step["server_cores"] - base["server_cores"]
                step["server_ms_per_update"] = round(
                    1000 * extra / (step["updates_per_session_s"] * sessions), 2
                )
            steps.append(step)
            mine.append(step)
            print(
                f"repeat {repeat} sessions {sessions:3d}: server {step['server_cores']:.3f} cores, "
                f"interval p50/p95 {step['interval_ms']['p50']}/{step['interval_ms']['p95']} ms, "
                f"response p95 {step['response_ms']['p95']} ms, "
                f"staleness p50/p95/max {step['staleness_ms']['p50']}/"
                f"{step['staleness_ms']['p95']}/{step['staleness_ms']['max']} ms "
                f"(> {STALE_S:g} s {step['stale_share']}), run {step['run_steps_per_s']} steps/s "
                f"(behind {step['run_behind_s']} s), "
                f"{step['bytes_per_session_s']} B/s/session, RSS {step['server_rss_mb']} MiB, "
                f"{step['sessions_without_update']} without update, "
                f"{step['empty_update_share']} of updates empty, "
                f"clients {step['clients_cores']:.2f} cores, load {step['loadavg'][0]}",
                flush=True,
            )
    finally:
        await asyncio.gather(*(w.close() for w in watchers))
    return steps


def profile(py_spy: str, server: int, seconds: float, out: Path) -> dict[str, Any]:
    """Sample the server with py-spy for ``seconds`` (without stopping it), the thread holding
    the GIL only: the share of samples in each function, as the innermost frame (self) and
    anywhere on the stack (inclusive)."""
    raw = out.with_suffix(".pyspy.txt")
    command = [py_spy, "record", "--pid", str(server), "--duration", str(int(seconds))]
    # --gil: only the thread holding the GIL is sampled, so shares are of the server's Python
    # CPU time (without it a thread waiting for the GIL, or sleeping in a poll, counts too).
    command += ["--rate", "100", "--format", "raw", "--output", str(raw), "--nonblocking"]
    command += ["--gil"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60)
    if done.returncode != 0 or not raw.exists():
        return {"error": (done.stderr or done.stdout)[-1000:]}
    own: Counter[str] = Counter()
    anywhere: Counter[str] = Counter()
    total = 0
    for line in raw.read_text(encoding="utf-8", errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = [shorten(frame) for frame in stack.split(";")]
        total += int(count)
        own[frames[-1]] += int(count)
        for frame in set(frames):
            anywhere[frame] += int(count)
    raw.unlink()
    return {
        "samples": total,
        "seconds": seconds,
        "self_pct": {frame: round(100 * c / total, 1) for frame, c in own.most_common(20)},
        "inclusive_pct": {
            frame: round(100 * c / total, 1) for frame, c in anywhere.most_common(40)
        },
    }


def shorten(frame: str) -> str:
    """``func (…/site-packages/pkg/mod.py:12)`` -> ``func (pkg/mod.py)``."""
    match = re.match(r"(.*) \((.*?)(?::\d+)?\)$", frame)
    if not match:
        return frame
    name, path = match.groups()
    for marker in ("site-packages/", "/lib/python3", str(ROOT) + "/"):
        if marker in path:
            path = path.split(marker, 1)[1]
    return f"{name} ({path})"


# ----------------------------------------------------------------------------------- summary
def slope(steps: list[dict[str, Any]]) -> tuple[float | None, float | None]:
    """(the server's cores per watching session, its cores without watchers): least squares
    over the unsaturated steps of one repeat."""
    kept = [s for s in steps if "server_cores" in s and s["server_cores"] < SATURATED]
    if len({s["sessions"] for s in kept}) < 2:
        return None, None
    per, base = np.polyfit([s["sessions"] for s in kept], [s["server_cores"] for s in kept], 1)
    return float(per), float(base)


def summarise(steps: list[dict[str, Any]], sessions: list[int]) -> dict[str, Any]:
    """Each step's measures as the median and range over the repeats, and what follows."""
    measured = [s for s in steps if "server_cores" in s]
    by_n = {}
    for before, n in zip([0, *sessions], sessions, strict=False):
        rows = [s for s in measured if s["sessions"] == n]
        failed = [s for s in steps if s["sessions"] == n and "join_failures" in s]
        by_n[str(n)] = {
            "repeats": len(rows),
            "join_failures": sum(len(s["join_failures"]) for s in failed),
            "joins_tried": (n - before) * len(failed),
            "server_cores": spread([r["server_cores"] for r in rows]),
            "children_cores": spread([r["children_cores"] for r in rows]),
            "clients_cores": spread([r["clients_cores"] for r in rows]),
            "server_ms_per_update": spread([r.get("server_ms_per_update") for r in rows]),
            "updates_per_session_s": spread([r["updates_per_session_s"] for r in rows]),
            "sessions_without_update": spread([r["sessions_without_update"] for r in rows]),
            "interval_p50_ms": spread([r["interval_ms"]["p50"] for r in rows]),
            "interval_p95_ms": spread([r["interval_ms"]["p95"] for r in rows]),
            "interval_max_ms": spread([r["interval_ms"]["max"] for r in rows]),
            "late_share": spread([r["late_share"] for r in rows]),
            "response_p50_ms": spread([r["response_ms"]["p50"] for r in rows]),
            "response_p95_ms": spread([r["response_ms"]["p95"] for r in rows]),
            "run_p50_ms": spread([r["run_ms"]["p50"] for r in rows]),
            "bytes_per_session_s": spread([r["bytes_per_session_s"] for r in rows]),
            "server_rss_mb": spread([r["server_rss_mb"] for r in rows]),
            "first_load_p50_ms": spread([r["first_load_ms"]["p50"] for r in rows]),
            "staleness_p50_ms": spread([stale(r, "p50") for r in rows]),
            "staleness_p95_ms": spread([stale(r, "p95") for r in rows]),
            "staleness_max_ms": spread([stale(r, "max") for r in rows]),
            "stale_share": spread([r.get("stale_share") for r in rows]),
            "empty_update_share": spread([r.get("empty_update_share") for r in rows]),
            "run_steps_per_s": spread([r.get("run_steps_per_s") for r in rows]),
        }
    repeats = sorted({s["repeat"] for s in measured})
    fits = [slope([s for s in measured if s["repeat"] == r]) for r in repeats]
    # Per session at one refresh a second: the server's CPU per watcher update over what it
    # used without watchers, in the steps of 5 watchers or more (a starved step gives fewer
    # updates and uses less CPU, so the ratio holds where the slope does not) whose server used
    # less than `SATURATED` of its core (on a saturated one the updates it made are not the
    # updates the pages got: see `empty_update_share`).
    per_update = [
        s["server_ms_per_update"] / 1000
        for s in measured
        if s["sessions"] >= 5
        and s.get("server_ms_per_update") is not None
        and s["server_cores"] < SATURATED
    ]
    per_session = spread(per_update)
    base = spread([s["server_cores"] for s in measured if s["sessions"] == 0])
    # The first repeat's ramp is the fresh server's growth; later repeats reuse what the watchers
    # before them freed (Python keeps its heap), so theirs is smaller, even negative.
    rss = [
        (rows[-1]["server_rss_mb"] - rows[0]["server_rss_mb"])
        / (rows[-1]["sessions"] - rows[0]["sessions"])
        for r in repeats
        if len(
            rows := sorted((s for s in measured if s["repeat"] == r), key=lambda s: s["sessions"])
        )
        > 1
    ]
    serves = (
        int((1 - base["median"]) / per_session["median"])
        if per_session["median"] and base["median"] is not None and per_session["median"] > 0
        else None
    )
    at_goal = by_n.get(str(GOAL_SESSIONS), {})
    goal_p95 = at_goal.get("staleness_p95_ms", {}).get("median")
    # Up to how many watchers the pages stay fresh: the steps in order, until the first whose
    # median staleness p95 is over the goal's (or whose pages did not all load).
    holds, breaks = None, None
    for n, row in by_n.items():
        if n == "0":
            continue  # no pages
        p95 = row["staleness_p95_ms"]["median"]
        if row["join_failures"] or (row["repeats"] and (p95 is None or p95 > 1000 * GOAL_STALE_S)):
            breaks = int(n)
            break
        if row["repeats"]:
            holds = int(n)
    return {
        "by_sessions": by_n,
        "per_session_cores": per_session,
        "per_session_cores_slope": spread([f[0] for f in fits]),
        "server_cores_without_watchers": base,
        "sessions_one_core_serves": serves,
        "rss_per_session_mb": spread(rss),
        "rss_per_session_first_repeat_mb": round(rss[0], 3) if rss else None,
        "staleness_holds_up_to": holds,
        "staleness_breaks_at": breaks,
        "goal": {
            "sessions": GOAL_SESSIONS,
            "staleness_p95_limit_ms": 1000 * GOAL_STALE_S,
            "staleness_p95_ms": goal_p95,
            "met": (
                goal_p95 is not None
                and goal_p95 <= 1000 * GOAL_STALE_S
                and not at_goal.get("join_failures")
                and not at_goal.get("sessions_without_update", {}).get("max")
            ),
            "measured": bool(at_goal.get("repeats")),
        },
    }


def stale(step: dict[str, Any], key: str) -> float | None:
    """A step's staleness percentile ``key`` (ms; None for a results file from before it)."""
    return (step.get("staleness_ms") or {}).get(key)


def docs_table(results: dict[str, Any]) -> str:
    """`table` with the summary derived again from the steps, as this version derives it (what
    ``--table`` prints, and the docs show)."""
    again = {**results, "summary": summarise(results["steps"], results["settings"]["sessions"])}
    return table(again) + "\n"


def table(results: dict[str, Any]) -> str:
    """The table of docs/performance.md, from a results file."""
    summary = results["summary"]
    lines = [
        "| watchers | server CPU (cores) | server CPU per update | staleness p50 / p95 / max "
        f"| older than {STALE_S:g} s | update interval p50 / p95 / max | late > 1 s "
        "| updates with no element "
        "| response p50 / p95 | received per watcher | worker (apart) | run's env steps/s "
        "| server RSS |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def med(cell: dict[str, Any], fmt: str, scale: float = 1.0) -> str:
        return "–" if cell["median"] is None else format(scale * cell["median"], fmt)

    def rng(cell: dict[str, Any], fmt: str, scale: float = 1.0) -> str:
        if cell["median"] is None or cell["min"] == cell["max"]:
            return med(cell, fmt, scale)
        low, high = format(scale * cell["min"], fmt), format(scale * cell["max"], fmt)
        return f"{med(cell, fmt, scale)} ({low}-{high})"

    for n, row in summary["by_sessions"].items():
        if not row["repeats"]:
            lines.append(
                f"| {n} | not measured: {row['join_failures']} of the {row['joins_tried']} pages "
                f"that joined (over {results['settings']['repeats']} repeats) did not load within "
                f"{results['settings'].get('step_timeout', 120):g} s | | | | | | | | | | | |"
            )
            continue
        lines.append(
            f"| {n} | {rng(row['server_cores'], '.3f')} "
            f"| {med(row['server_ms_per_update'], '.1f')} ms "
            f"| {med(row['staleness_p50_ms'], '.2f', 1e-3)} / "
            f"{rng(row['staleness_p95_ms'], '.2f', 1e-3)} / "
            f"{med(row['staleness_max_ms'], '.1f', 1e-3)} s "
            f"| {med(row['stale_share'], '.1f', 100)} % "
            f"| {med(row['interval_p50_ms'], '.0f')} / {rng(row['interval_p95_ms'], '.0f')} / "
            f"{med(row['interval_max_ms'], '.0f')} ms "
            f"| {med(row['late_share'], '.1f', 100)} % "
            f"| {med(row['empty_update_share'], '.1f', 100)} % "
            f"| {med(row['response_p50_ms'], '.0f')} / {med(row['response_p95_ms'], '.0f')} ms "
            f"| {med(row['bytes_per_session_s'], '.1f', 1e-3)} kB/s "
            f"| {med(row['children_cores'], '.2f')} "
            f"| {med(row['run_steps_per_s'], ',.0f')} "
            f"| {med(row['server_rss_mb'], '.0f')} MiB |"
        )
    per = summary["per_session_cores"]
    rss = summary["rss_per_session_first_repeat_mb"]
    goal = summary["goal"]
    if goal["staleness_p95_ms"] is not None:
        at_goal = f"staleness p95 {goal['staleness_p95_ms'] / 1000:.2f} s"
    elif goal["measured"] or summary["by_sessions"].get(str(goal["sessions"])):
        at_goal = f"{goal['sessions']} watchers' pages did not all load"
    else:
        at_goal = f"{goal['sessions']} watchers not measured"
    holds, breaks = summary.get("staleness_holds_up_to"), summary.get("staleness_breaks_at")
    where = (
        f"; staleness p95 ≤ {STALE_S:g} s up to {holds} watchers"
        + (f", over it from {breaks}" if breaks is not None else "")
        if holds is not None or breaks is not None
        else ""
    )
    lines += [
        "",
        f"Per watching session at one refresh a second: {rng(per, '.1f', 100)} % of a core "
        f"(slope of server CPU over watchers: {rng(summary['per_session_cores_slope'], '.1f', 100)}"
        f" %), {rss:.2f} MiB of server RSS (a fresh server's first ramp); without watchers it used "
        f"{med(summary['server_cores_without_watchers'], '.3f')} cores, so by CPU one core serves "
        f"about **{summary['sessions_one_core_serves']}** watching sessions. Goal "
        f"({goal['sessions']} watchers on one core, staleness p95 ≤ "
        f"{goal['staleness_p95_limit_ms'] / 1000:g} s): "
        + ("**met**" if goal["met"] else "**not met**")
        + f" ({at_goal}{where}). Load average {results['loadavg_start']} at "
        f"the start, {results['loadavg_end']} at the end (server and clients at nice "
        f"{results['settings']['nice']}); {results['date'][:10]}, commit {results['commit']}.",
    ]
    profile = results.get("profile") or {}
    share = profile.get("inclusive_pct", {})
    if share:
        parts = [
            ("the live fragment", "run_view (rdqn/dashboard/live_view.py)"),
            (
                "building its Plotly figures (`go.Figure`)",
                "__init__ (plotly/graph_objs/_figure.py)",
            ),
            ("`st.plotly_chart`", "plotly_chart (streamlit/elements/plotly_chart.py)"),
            ("of which the figure's `to_dict` copy", "to_dict (plotly/basedatatypes.py)"),
            ("`st.metric`", "metric (streamlit/elements/metric.py)"),
            ("the event loop (sending, receiving)", "run (asyncio/runners.py)"),
        ]
        found = ", ".join(f"{name} {share[key]:.0f} %" for name, key in parts if key in share)
        lines += [
            "",
            f"Where the server's Python time goes (py-spy, the thread holding the GIL, "
            f"{profile['sessions']} watchers, {profile['samples']} samples in "
            f"{profile['seconds']:g} s): {found}.",
        ]
    return "\n".join(lines)


# -------------------------------------------------------------------------------------- main
async def run(args: argparse.Namespace, home: Path) -> dict[str, Any]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("RDQN_")}
    env |= {"RDQN_HOME": str(home), "RDQN_EXECUTOR": "process", "RDQN_MAX_RUNS": "1"}
    log_path = home / "server.log"
    os.sched_setaffinity(0, {args.other_core})
    os.setpriority(os.PRIO_PROCESS, 0, args.nice)  # the clients; threads made later inherit it
    process, url = start_dashboard(env, log_path)
    server = process.pid
    results: dict[str, Any] = {}
    try:
        pin(server, {args.server_core}, args.nice)
        warm = StreamlitClient(url, "/")  # the first page run imports the dashboard
        await warm.open(args.step_timeout)
        await warm.wait_run(args.step_timeout)
        await warm.close()
        teacher, run_id, code = await teacher_session(url, args.step_timeout, args.start_timeout)
        place(args, server)
        deadline = time.monotonic() + args.timeout
        print(
            f"teacher's run {run_id}, class {code}; server pid {server} on core {args.server_core}",
            flush=True,
        )
        steps: list[dict[str, Any]] = results.setdefault("steps", [])
        with Progress(home / "rdqn.db", run_id) as progress:
            try:
                for repeat in range(args.repeats):
                    if time.monotonic() > deadline:
                        print("--timeout reached: no more repeats", flush=True)
                        break
                    await asyncio.wait_for(
                        ramp(args, server, url, code, run_id, repeat, steps, progress),
                        max(1.0, deadline - time.monotonic()),
                    )
                if args.profile and time.monotonic() < deadline:
                    results["profile"] = await profile_top(args, server, url, code, run_id)
            except Exception as err:  # noqa: BLE001 (recorded: the steps so far are kept)
                results["error"] = f"{type(err).__name__}: {err}"[:2000]
                print(f"stopped early: {results['error']}", flush=True)
        results["progress"] = progress.summary()
        results["teacher_closed"] = teacher.closed
        await teacher.close()
    finally:
        results["leaked_processes"] = stop_server(process)
        results["log"] = read_log(log_path)
    return results


async def profile_top(
    args: argparse.Namespace, server: int, url: str, code: str, run_id: str
) -> dict[str, Any]:
    py_spy = args.py_spy or shutil.which("py-spy")
    if not py_spy:
        return {"error": "py-spy not found (--py-spy PATH)"}
    rng = random.Random(args.seed * 1000 + args.repeats)
    arrivals = await asyncio.gather(
        *(
            join(url, code, run_id, args.step_timeout, rng.uniform(0, args.spread))
            for _ in range(args.profile_sessions)
        ),
        return_exceptions=True,
    )
    watchers = [a[0] for a in arrivals if not isinstance(a, BaseException)]
    try:
        await asyncio.sleep(args.settle)
        found = await asyncio.to_thread(profile, py_spy, server, args.profile, Path(args.out))
        found["sessions"] = len(watchers)
        return found
    finally:
        await asyncio.gather(*(w.close() for w in watchers))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[0, 1, 10, 30, 100])
    parser.add_argument("--seconds", type=float, default=15.0, help="measured per step")
    parser.add_argument("--settle", type=float, default=3.0, help="after a step's pages load")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--spread", type=float, default=2.0, help="a step's watchers arrive within these seconds"
    )
    parser.add_argument("--seed", type=int, default=0, help="of the arrival times")
    parser.add_argument("--server-core", type=int, default=0)
    parser.add_argument(
        "--nice",
        type=int,
        default=0,
        help="the server's and the clients' nice value (below 0: root only): on a shared "
        "machine, -10 keeps other work from starving them",
    )
    parser.add_argument("--other-core", type=int, default=1, help="clients and workers")
    parser.add_argument("--profile", type=float, default=0.0, help="py-spy seconds (0: none)")
    parser.add_argument("--py-spy", help="the py-spy binary (default: on PATH)")
    parser.add_argument("--profile-sessions", type=int, default=20, help="watchers profiled")
    parser.add_argument(
        "--timeout", type=float, default=900.0, help="for the measures, once the run trains"
    )
    parser.add_argument("--step-timeout", type=float, default=120.0, help="for one page run")
    parser.add_argument(
        "--start-timeout", type=float, default=600.0, help="for the teacher's run to train"
    )
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--table", action="store_true", help="print the table of --out; no run")
    parser.add_argument("--keep", action="store_true", help="keep the temporary RDQN_HOME")
    args = parser.parse_args()
    if args.table:
        print(docs_table(json.loads(Path(args.out).read_text(encoding="utf-8"))), end="")
        return 0
    args.sessions = sorted(set(args.sessions))
    if len(os.sched_getaffinity(0) & {args.server_core, args.other_core}) < 2:
        parser.error(f"cores {args.server_core} and {args.other_core} are not both available")
    import streamlit

    header = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "loadavg_start": loadavg(),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "streamlit": streamlit.__version__,
            "platform": platform.platform(),
        },
        "settings": {
            key: getattr(args, key)
            for key in (
                "sessions",
                "seconds",
                "settle",
                "repeats",
                "step_timeout",
                "spread",
                "seed",
                "server_core",
                "other_core",
                "nice",
            )
        }
        | {"worker_nice": WORKER_NICE, "late_s": LATE_S, "saturated": SATURATED},
        "command": "python -m benchmarks.bench_server_load " + " ".join(sys.argv[1:]),
    }
    home = Path(tempfile.mkdtemp(prefix="rdqn-server-load-"))
    try:
        results = header | asyncio.run(run(args, home))
    finally:
        if not args.keep:
            shutil.rmtree(home, ignore_errors=True)
    results["loadavg_end"] = loadavg()
    results["summary"] = summarise(results.get("steps", []), args.sessions)
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(table(results))
    print(f"tracebacks in the server log: {results['log']['tracebacks']}; written {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
