"""The server alone: what one watching session costs it, and how many one core serves.

The Chromium load test (`benchmarks.load_classroom`) runs 30 browsers on the server's two cores,
so its figures mostly measure the browsers. Here the sessions are lightweight clients
(`tests.harness.streamlit_client`: Streamlit's WebSocket protocol, nothing drawn) in this one
process, and the server is pinned to one core (``--server-core``): every thread of it, so "the
sessions one core serves" is literal. This script, its clients and the server's child processes
(the zygote and the worker that trains the run) share the other core; the worker is niced so
that the clients keep their timing. On a machine others share, ``--nice -10`` (root) keeps their
work from starving the server and the clients; the load average is recorded either way.

The class: one teacher session opens the live page, presses Start (a 10^6-step run, full speed,
in a worker process) and stays; its class code is read from its page. For each repeat, watchers
join as students do with ``/live?follow=<code>`` (each a distinct browser: its own ``rdqn_owner``
cookie), in steps of ``--sessions`` (0, 1, 5, 10, 20, 30 by default: added, never closed, until
the repeat ends). A step's newcomers arrive at random moments within ``--spread`` seconds, so
their pages' one-second timers are out of step as in a class; the step is measured for
``--seconds`` once every new page has loaded and ``--settle`` seconds more have passed. A page
that does not load within ``--step-timeout`` ends the repeat (recorded). Then the watchers close
and the next repeat starts with new ones. Like a browser, a client asks for its live fragment's
rerun every second (the fragment's ``run_every``) whether or not the last one has come back.

Measured per step:
  server CPU      CPU seconds per second of the server process, all its threads (/proc), and
                  apart from it its children (the training worker) and this script (the clients)
  per update      the server's CPU per watcher update, over its CPU without watchers: the cost
                  of one watching session at one refresh a second
  update interval between the live fragment's consecutive updates on each watcher's page (what a
                  student sees; nominal 1 s): p50, p95, max, the share more than 1 s late, and
                  the watchers that got no update at all in the window
  response        a fragment rerun asked for until its script_finished message (queueing
                  included); run: the script's run as the client sees it, first to last message
  bytes           ForwardMsg bytes per watching session per second
  memory          the server's RSS, and its growth per session over the ramp
  first load      a joining watcher's first page run, asked until finished
Derived: the watching sessions one core serves at one refresh a second, (1 - the server's CPU
without watchers) / the CPU per update (median over the steps of 5 watchers or more; the slope
of CPU over watchers is recorded beside it); and whether 30 watchers on one core get their
updates with a p95 interval of at most 1.5 s (the goal). With ``--profile SECONDS`` and
py-spy (``--py-spy PATH``, else on PATH), the server is sampled for that long with
``--profile-sessions`` watchers after the measured repeats, and the top functions are recorded.

Everything is on 127.0.0.1, every wait is bounded (``--timeout`` once the run trains), and the
script stops what it started. Results: ``--out`` (JSON); ``--table`` prints the docs' table
(docs/performance.md, *Watching sessions*).

Usage: python -m benchmarks.bench_server_load [--sessions 0 1 5 10 20 30] [--seconds 15]
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
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.load_classroom import _cpu_s, _status_kb, descendants, read_log, stop_server
from tests.harness.dashboard_server import start_dashboard
from tests.harness.streamlit_client import Run, StreamlitClient

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks/results/server_load.json"
LIVE_QUERY = "steps=1000000"  # a budget the teacher's run does not finish while measured
CLASS_CODE = re.compile(r"Class code `([A-HJ-NP-Z2-9]{4})`")
RUN_ID = re.compile(r"\brun `?([0-9a-f]{12})\b")
GOAL_SESSIONS = 30
GOAL_P95_S = 1.5
LATE_S = 1.0
"""An update later than its period by more than this is late (a student sees the page stall)."""
SATURATED = 0.85
"""A step whose server used more of its core than this is left out of the per-session slope."""
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
    server: int, watchers: list[StreamlitClient], seconds: float
) -> dict[str, Any]:
    """Everything measured over ``seconds`` with these watchers open."""
    bytes_before = [w.received_bytes for w in watchers]
    start_cpu = cpu_now(server)
    start = time.monotonic()
    await asyncio.sleep(seconds)
    end = time.monotonic()
    cores = used(start_cpu, cpu_now(server))
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
        "loadavg": loadavg(),
    }


async def ramp(
    args: argparse.Namespace,
    server: int,
    url: str,
    code: str,
    run_id: str,
    repeat: int,
    steps: list[dict[str, Any]],
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
            step = await measure_step(server, watchers, args.seconds)
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
                f"{step['bytes_per_session_s']} B/s/session, RSS {step['server_rss_mb']} MiB, "
                f"{step['sessions_without_update']} without update, "
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
        }
    repeats = sorted({s["repeat"] for s in measured})
    fits = [slope([s for s in measured if s["repeat"] == r]) for r in repeats]
    # Per session at one refresh a second: the server's CPU per watcher update over what it
    # used without watchers, in the steps of 5 watchers or more (a starved step gives fewer
    # updates and uses less CPU, so the ratio holds where the slope does not).
    per_update = [
        s["server_ms_per_update"] / 1000
        for s in measured
        if s["sessions"] >= 5 and s.get("server_ms_per_update") is not None
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
    goal_p95 = at_goal.get("interval_p95_ms", {}).get("median")
    return {
        "by_sessions": by_n,
        "per_session_cores": per_session,
        "per_session_cores_slope": spread([f[0] for f in fits]),
        "server_cores_without_watchers": base,
        "sessions_one_core_serves": serves,
        "rss_per_session_mb": spread(rss),
        "rss_per_session_first_repeat_mb": round(rss[0], 3) if rss else None,
        "goal": {
            "sessions": GOAL_SESSIONS,
            "interval_p95_limit_ms": 1000 * GOAL_P95_S,
            "interval_p95_ms": goal_p95,
            "met": (
                goal_p95 is not None
                and goal_p95 <= 1000 * GOAL_P95_S
                and (serves or 0) >= GOAL_SESSIONS
                and not at_goal.get("join_failures")
                and not at_goal.get("sessions_without_update", {}).get("max")
            ),
            "measured": bool(at_goal.get("repeats")),
        },
    }


def docs_table(results: dict[str, Any]) -> str:
    """`table` with the summary derived again from the steps, as this version derives it (what
    ``--table`` prints, and the docs show)."""
    again = {**results, "summary": summarise(results["steps"], results["settings"]["sessions"])}
    return table(again) + "\n"


def table(results: dict[str, Any]) -> str:
    """The table of docs/performance.md, from a results file."""
    summary = results["summary"]
    lines = [
        "| watchers | server CPU (cores) | server CPU per update | update interval p50 / p95 / max "
        "| late > 1 s | response p50 / p95 | received per watcher | worker (apart) | server RSS |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
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
                f"{results['settings'].get('step_timeout', 120):g} s | | | | | | | |"
            )
            continue
        lines.append(
            f"| {n} | {rng(row['server_cores'], '.3f')} "
            f"| {med(row['server_ms_per_update'], '.1f')} ms "
            f"| {med(row['interval_p50_ms'], '.0f')} / {rng(row['interval_p95_ms'], '.0f')} / "
            f"{med(row['interval_max_ms'], '.0f')} ms "
            f"| {med(row['late_share'], '.1f', 100)} % "
            f"| {med(row['response_p50_ms'], '.0f')} / {med(row['response_p95_ms'], '.0f')} ms "
            f"| {med(row['bytes_per_session_s'], '.1f', 1e-3)} kB/s "
            f"| {med(row['children_cores'], '.2f')} "
            f"| {med(row['server_rss_mb'], '.0f')} MiB |"
        )
    per = summary["per_session_cores"]
    rss = summary["rss_per_session_first_repeat_mb"]
    goal = summary["goal"]
    at_goal = (
        f"p95 {goal['interval_p95_ms']:.0f} ms"
        if goal["interval_p95_ms"] is not None
        else f"{goal['sessions']} watchers' pages did not all load"
    )
    lines += [
        "",
        f"Per watching session at one refresh a second: {rng(per, '.1f', 100)} % of a core "
        f"(slope of server CPU over watchers: {rng(summary['per_session_cores_slope'], '.1f', 100)}"
        f" %), {rss:.2f} MiB of server RSS (a fresh server's first ramp); without watchers it used "
        f"{med(summary['server_cores_without_watchers'], '.3f')} cores, so one core serves about "
        f"**{summary['sessions_one_core_serves']}** watching sessions. Goal "
        f"({goal['sessions']} watchers on one core, update p95 ≤ "
        f"{goal['interval_p95_limit_ms'] / 1000:g} s): "
        + ("**met**" if goal["met"] else "**not met**")
        + f" ({at_goal}). Load average {results['loadavg_start']} at "
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
        try:
            for repeat in range(args.repeats):
                if time.monotonic() > deadline:
                    print("--timeout reached: no more repeats", flush=True)
                    break
                await asyncio.wait_for(
                    ramp(args, server, url, code, run_id, repeat, steps),
                    max(1.0, deadline - time.monotonic()),
                )
            if args.profile and time.monotonic() < deadline:
                results["profile"] = await profile_top(args, server, url, code, run_id)
        except Exception as err:  # noqa: BLE001 (recorded: the steps so far are kept)
            results["error"] = f"{type(err).__name__}: {err}"[:2000]
            print(f"stopped early: {results['error']}", flush=True)
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
    parser.add_argument("--sessions", type=int, nargs="+", default=[0, 1, 5, 10, 20, 30])
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
