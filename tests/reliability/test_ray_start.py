"""A Ray process of its own killed as `rdqn sweep --ray local` starts: its raylet or its control
store (gcs_server) SIGKILLed as Ray starts or as the sweep's first actors start. Each trial is
recorded (failed, or stopped where the sweep's stop came first) with one line saying so, the
command ends in bounded time with one line and status 1, and `sweep --resume` finishes the
sweep.

It was: the raylet killed as the actors started left the sweep waiting for ever (runs 'running'
until the process was killed); the control store killed, Ray ended the process a minute later
with its own log line (nothing recorded); either killed as Ray started, one error line of Ray's
text after 40 s, nothing filed. Each sweep runs as its own process (`python -m rdqn`) on a local
Ray bound to the loopback address, bounded in time; whatever it leaves is killed at the end.

The raylet killed while ``ray.init`` connects the sweep's process to it, Ray's C++ may end that
process itself, out of Python's reach: exit 1 after its own line ("Failed to get the system config
from raylet because it is dead. Worker will terminate", or a failed check), or SIGABRT in gRPC
("ASSERTION FAILED" in call_op_set.h, seen in CI). The sweep is filed before Ray starts, so
`sweep --resume` finishes it then too (it said "no sweep"): that case accepts either outcome,
and a sweep aborted as Ray starts is resumed on purpose below.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import rdqn
from rdqn.runs.store import RunStore
from tests.run_helpers import wait_for

pytest.importorskip("ray")
pytestmark = pytest.mark.slow

_ROOT = Path(rdqn.__file__).resolve().parents[1]
SWEEP = ["sweep", "--preset", "chain-lesson", "--grid", "replay.alpha=0.6", "--seeds", "2"]
SWEEP += ["--steps", "300", "--workers", "2", "--ray", "local", "--quiet"]
BOUND_S = 120.0
"""How long a sweep may take here, Ray's start included (about 10-20 s on two loaded cores)."""
LINE = re.compile(
    r"Ray lost its (raylet|gcs_server) \(killed by SIGKILL\) "
    r"(as it started here|before the run started|while the run trained); "
    r"Ray's details are in the log"
)
RAY_ENDED = re.compile(r"^\[[^\]]* C \d+ \d+\] |Worker will terminate|ASSERTION FAILED", re.M)
"""Ray's C++ ending the process: a failed check (severity C), its "Worker will terminate" or
gRPC's assertion."""


def _stats() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, start time) of every process, from /proc."""
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as stat:
                    line = stat.read()
            except OSError:
                continue
            fields = line[line.rfind(")") + 2 :].split()
            stats[int(entry)] = (int(fields[1]), fields[19])
    return stats


def descendants(root: int) -> dict[tuple[int, str], str]:
    """(pid, start time) -> command line (the name where there is none) of ``root``'s
    descendants: the start time tells a process from a later one given the same pid."""
    stats = _stats()
    found: dict[tuple[int, str], str] = {}
    frontier = {root}
    done: set[int] = set()
    while frontier:
        frontier = {pid for pid, (parent, _) in stats.items() if parent in frontier} - done
        done |= frontier
        for pid in frontier:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                    words = cmdline.read().replace(b"\0", b" ").decode(errors="replace").strip()
                if not words:
                    with open(f"/proc/{pid}/comm", encoding="utf-8") as comm:
                        words = comm.read().strip()
            except OSError:
                words = ""
            found[pid, stats[pid][1]] = words
    return found


class Sweep:
    """`python -m rdqn sweep` in a process of its own, and every process it started."""

    def __init__(self, home: Path, *args: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(_ROOT), "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "rdqn", "--home", str(home), *args],
            cwd=_ROOT,
            env=env,  # RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0: the node's address is 127.0.0.1
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.seen: set[tuple[int, str]] = set()

    def kill_when(self, appears: str, victim: str) -> float:
        """SIGKILL the child named ``victim`` once a process whose command line holds
        ``appears`` runs under the sweep; returns when (seconds after the sweep began)."""
        pid = self._wait_under_sweep(
            appears, lambda words: words.split(" ", 1)[0].endswith(f"/{victim}") or words == victim
        )
        os.kill(pid, signal.SIGKILL)
        return time.monotonic() - self.started

    def abort_when(self, appears: str) -> None:
        """SIGABRT the sweep itself, as gRPC's assertion in Ray does, once a process whose
        command line holds ``appears`` runs under it."""
        self._wait_under_sweep(appears)
        os.kill(self.process.pid, signal.SIGABRT)

    def _wait_under_sweep(
        self, appears: str, is_victim: Callable[[str], bool] | None = None
    ) -> int:
        """Until a process whose command line holds ``appears`` runs under the sweep (and, given
        ``is_victim``, one it picks by command line does too): that one's pid, else the sweep's.
        Fails the test if the sweep ends first or `BOUND_S` passes."""

        def found() -> int | None:
            if self.process.poll() is not None:
                pytest.fail(f"the sweep ended ({self.process.returncode}) before {appears!r} ran")
            under = descendants(self.process.pid)
            self.seen.update(under)
            if not any(appears in words for words in under.values()):
                return None
            if is_victim is None:
                return self.process.pid
            victims = [pid for (pid, _), words in under.items() if is_victim(words)]
            return victims[0] if victims else None

        left = BOUND_S - (time.monotonic() - self.started)
        return wait_for(found, left, what=f"no {appears!r} under the sweep", every=0.05)

    def end(self) -> tuple[int, str, str, float]:
        """Exit status, stdout, stderr and seconds since the sweep began; fails the test for a
        sweep that has not ended `BOUND_S` after it began."""
        try:
            out, err = self.process.communicate(
                timeout=max(1.0, BOUND_S - (time.monotonic() - self.started))
            )
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"the sweep had not ended {BOUND_S:g} s after it began")
        return self.process.returncode, out, err, time.monotonic() - self.started

    def kill(self) -> None:
        """End the sweep and whatever it started that still runs (by id and start time: not a
        later process given a freed id)."""
        if self.process.poll() is None:
            self.seen.update(descendants(self.process.pid))
            self.process.kill()
            self.process.communicate()
        alive = _stats()
        for pid, started in self.seen:
            if pid in alive and alive[pid][1] == started:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


@pytest.fixture
def sweeps() -> Iterator[list[Sweep]]:
    started: list[Sweep] = []
    yield started
    for sweep in started:
        sweep.kill()


def recorded(home: Path, sweep_id: str) -> dict[str, tuple[str, str | None]]:
    with RunStore(home / "rdqn.db") as store:
        frame = store.list_runs(group_id=sweep_id)
        return {
            run_id: (store.get_run(run_id).status, store.get_run(run_id).error)
            for run_id in frame["id"]
        }


def resume(home: Path, sweeps: list[Sweep], sweep_id: str, left: set[str]) -> None:
    """`sweep --resume` finishes both trials; runs of ``left`` statuses may stay beside them (a
    failed trial is run anew, its lost run kept; a stopped one resumes under its id)."""
    again = Sweep(home, "sweep", "--resume", sweep_id, "--ray", "local", "--quiet")
    sweeps.append(again)
    code, out, err, _ = again.end()
    assert code == 0, (out[-2000:], err[-2000:])
    assert f"sweep {sweep_id}: 2 finished" in out
    statuses = sorted(status for status, _ in recorded(home, sweep_id).values())
    assert statuses.count("finished") == 2 and set(statuses) <= {"finished", *left}, statuses


def ended_by_ray(code: int, err: str) -> bool:
    """Whether Ray's C++ ended the sweep's process: status 1 or SIGABRT, with its text."""
    return code in (1, -signal.SIGABRT) and RAY_ENDED.search(err) is not None


@pytest.mark.parametrize(
    ("victim", "appears"),
    [
        ("raylet", "raylet"),  # as Ray starts: the moment its raylet is there
        ("raylet", "ray::rdqn-run-"),  # as the first trial's actor starts
        ("gcs_server", "ray::rdqn-run-"),
    ],
    ids=["raylet-as-ray-starts", "raylet-as-actors-start", "gcs-as-actors-start"],
)
def test_a_ray_process_killed_at_start_is_recorded_and_the_sweep_resumes(
    tmp_path: Path, sweeps: list[Sweep], victim: str, appears: str
) -> None:
    sweep = Sweep(tmp_path, *SWEEP)
    sweeps.append(sweep)
    sweep.kill_when(appears, victim)
    code, out, err, _ = sweep.end()

    sweep_id = re.search(r"sweep ([0-9a-f]{12}): 2 trials", out).group(1)
    ours = [line for line in err.splitlines() if line.startswith(f"sweep {sweep_id}")]
    # The raylet killed as `ray.init` connects to it, Ray's C++ may end the process (see above)
    # before the sweep's line or after it; else the sweep ends as its own, status 1.
    by_ray = appears == "raylet" and ended_by_ray(code, err)
    if by_ray and not ours:
        assert "Traceback" not in err and "results:" not in out, (out[-2000:], err[-3000:])
        assert (tmp_path / "sweeps" / f"{sweep_id}.json").is_file()  # filed before Ray started
        assert all(status != "finished" for status, _ in recorded(tmp_path, sweep_id).values())
        resume(tmp_path, sweeps, sweep_id, {"failed", "stopped"})
        return
    assert code == 1 or by_ray, (out[-2000:], err[-2000:])
    # One line of ours on stderr (Ray prints its own text as well, which is not ours to stop).
    assert ours == [
        f"sweep {sweep_id} stopped: Ray lost its {victim} (killed by SIGKILL)"
        + (" as it started here" if appears == "raylet" else "")
        + f": every trial is stored as it ended; `python -m rdqn sweep --resume {sweep_id}` "
        "goes on"
    ], err[-3000:]
    assert "Traceback" not in err and "rdqn: error" not in err, err[-3000:]
    runs = recorded(tmp_path, sweep_id)
    assert len(runs) == 2, runs  # every trial filed, none run twice on a Ray that is gone
    for status, error in runs.values():
        # Failed; or stopped, where the sweep's stop reached a run before it saw Ray lost.
        line = (error or "").removeprefix("stopped; ")
        assert LINE.fullmatch(line), error
        assert status == ("stopped" if line != error else "failed"), (status, error)
    # Ray's text (addresses, pids, namespaces) is in the sweep's log, not in what is stored.
    log = (tmp_path / "sweeps" / f"{sweep_id}.log").read_text()
    assert f"Ray lost its {victim} (killed by SIGKILL)" in log and "pid" in log
    resume(tmp_path, sweeps, sweep_id, {"failed"})


def test_a_sweep_aborted_as_ray_starts_is_filed_and_resumes(
    tmp_path: Path, sweeps: list[Sweep]
) -> None:
    """What Ray's C++ may do to the sweep's process as it starts (its raylet lost while
    ``ray.init`` connects), done on purpose: SIGABRT once the raylet is there. The sweep was
    filed before Ray started, so `--resume` finishes it (it said "no sweep '...'")."""
    sweep = Sweep(tmp_path, *SWEEP)
    sweeps.append(sweep)
    sweep.abort_when("raylet")
    code, out, _, _ = sweep.end()
    assert code == -signal.SIGABRT
    sweep_id = re.search(r"sweep ([0-9a-f]{12}): 2 trials", out).group(1)
    assert (tmp_path / "sweeps" / f"{sweep_id}.json").is_file()
    resume(tmp_path, sweeps, sweep_id, {"stopped"})
