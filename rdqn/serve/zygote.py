"""Worker processes forked from a zygote: one process that imported rdqn and its kernels once.

    server (ProcessExecutor)                zygote: python -m rdqn.serve.zygote
    launch(spec) --- requests socket --->   a run's socket end + its spec: fork ----> worker
             <---- reports socket ------   ("warm-up", "", WarmUp)  while it warms up, then
                                           ("started", id, pid)  ("exited", id, code)
    the run's link: a socket pair, server end <=========================> worker end

A fork of a process that already holds torch, numba, rdqn and the compiled kernels (those of
every module `rdqn.replay.kernels.registry` names, loaded by the warm-up) starts a run in
milliseconds instead of seconds. multiprocessing's own forkserver would do the same but
re-runs the parent's ``__main__`` in every child, and inside a Streamlit server ``__main__`` is
whatever page script is running. The zygote is started with `subprocess` (nothing of the server
is re-run) and never touches CUDA; its native thread pools (OpenBLAS) are kept to one thread.

`launch` never waits for the zygote: it writes the request and returns, so a zygote still
warming up (seconds; a first compile on a fresh checkout, a minute) holds up no lock of the
server. The zygote reports each part of its warm-up as it finishes (`Zygote.warm_up_progress`:
what a page shows while the first run waits). Each direction of the control channel has one
reader. A worker's end is known from its own link: when it ends, for whatever reason, the
server's end reads end-of-file, which does not depend on the zygote (a restarted one knows
nothing of an earlier one's children).

The zygote ends when its server does (its sockets close); each worker ends when its own link
closes (`rdqn.serve.worker`), so nothing outlives the server.

A launch is a `RunSpec` (a run, `rdqn.serve.worker.run_worker`) or a `Job`: any other work a
worker does over its link (`rdqn.sweeps.tasks`: one call of a function).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Protocol

from rdqn.serve.protocol import RUN_START_PART_NAMES, TRAINING_NICENESS, RunSpec, WarmUp

__all__ = ["Job", "Zygote", "ZygoteWorker"]

_ROOT = Path(__file__).resolve().parents[2]
LATER_PARTS_AFTER_S = 30.0
"""How long a warm zygote waits for its first launch before it loads the warm-up's later parts
anyway (`main`)."""
_NEVER_STARTED = "the worker zygote ended before it started the run"
EXIT_REPORT_WAIT_S = 30.0
"""The longest a worker's exit reason waits for the zygote's report of its exit."""


class Job(Protocol):
    """Work other than a run for a worker process: named like a run, done over the link."""

    run_id: str

    def work(self, link: Connection) -> None: ...


class ZygoteWorker:
    """The server's end of one worker process (forked by the zygote, or about to be)."""

    def __init__(self, zygote: Zygote, run_id: str, conn: Connection) -> None:
        self._zygote = zygote
        self.run_id = run_id
        self._conn = conn
        self._lock = threading.Lock()
        self._ended = False

    @property
    def pid(self) -> int | None:
        """The worker's process id, once the zygote has forked it."""
        return self._zygote.pid_of(self.run_id)

    def send(self, command: tuple[Any, ...]) -> None:
        try:
            with self._lock:
                self._conn.send(command)
        except (OSError, EOFError):
            pass  # the worker is gone; the relay notices from events() and alive()

    def events(self, timeout: float) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        try:
            wait = timeout
            while self._conn.poll(wait):
                out.append(self._conn.recv())
                wait = 0.0
        except (EOFError, OSError):
            self._ended = True  # nobody else holds the worker's end: it has ended
        return out

    def alive(self) -> bool:
        return not self._ended

    def exit_reason(self) -> str:
        # The zygote reports every child it reaps, and its end marks its children lost, so this
        # waits for an answer that comes; on a loaded machine it came after the 2 s once waited
        # ("the worker process ended", where it was killed by signal 9).
        code = self._zygote.exit_code(self.run_id, wait=EXIT_REPORT_WAIT_S)
        if code is None:
            return self._zygote.lost_reason(self.run_id) or "the worker process ended"
        if code < 0:
            return f"the worker process was killed by signal {-code}"
        return f"the worker process ended with exit code {code} before closing its run"

    def kill(self) -> None:
        pid = self.pid
        if pid is not None and self._zygote.exit_code(self.run_id) is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def join(self, timeout: float) -> None:
        """Wait (briefly) for the zygote to reap the worker, then release its link."""
        self._zygote.exit_code(self.run_id, wait=timeout)
        self._zygote.forget(self.run_id)
        self._conn.close()


class Zygote:
    """The server's handle on its zygote process: starts it, asks it for workers, hears of
    their ends. Thread-safe; a zygote that died is started again at the next launch."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._requests: socket.socket | None = None
        self._spec_writer: Connection | None = None
        self._changed = threading.Condition()
        self._pids: dict[str, int] = {}
        self._exits: dict[str, int] = {}
        self._lost: dict[str, str] = {}
        self._pending: dict[str, socket.socket] = {}  # worker ends, until the fork
        # The zygote each run was sent to: when one ends, only its runs are affected, not those
        # a zygote started after it already has (a launch can follow a zygote's death at once).
        self._sent_to: dict[str, subprocess.Popen[bytes]] = {}
        self._warm_up = WarmUp(0, len(RUN_START_PART_NAMES))

    def warm_up_progress(self) -> WarmUp:
        """How far the zygote's warm-up has come ((0, n) until it is started and reports)."""
        with self._changed:
            return self._warm_up

    def ensure_running(self) -> None:
        """Start the zygote if it is not running (it then imports and warms up: seconds)."""
        with self._lock:
            self._ensure_running()

    def _ensure_running(self) -> None:
        if self._process is not None and self._process.poll() is None:
            return
        # A fresh zygote warms up again; its first report says whether it compiles (the server
        # does not load the kernels' modules to find out: they import torch).
        with self._changed:
            self._warm_up = WarmUp(0, len(RUN_START_PART_NAMES))
        requests, zygote_requests = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        reports, zygote_reports = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(_ROOT), os.environ.get("PYTHONPATH")])),
            "OPENBLAS_NUM_THREADS": "1",  # no idle BLAS threads in a process that forks
            "OMP_NUM_THREADS": "1",
        }
        fds = (zygote_requests.fileno(), zygote_reports.fileno())
        self._process = subprocess.Popen(
            [sys.executable, "-m", "rdqn.serve.zygote", *map(str, fds)],
            pass_fds=fds,
            env=env,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C in the server's terminal is the server's
        )
        zygote_requests.close()
        zygote_reports.close()
        self._requests = requests
        self._spec_writer = Connection(os.dup(requests.fileno()))
        threading.Thread(
            target=self._listen, args=(Connection(reports.detach()), self._process), daemon=True
        ).start()

    def launch(self, spec: RunSpec | Job) -> ZygoteWorker:
        """Ask the zygote to fork a worker for ``spec``; returns at once (the worker's link
        carries its events as soon as it runs)."""
        server_end, worker_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with self._lock:
                self._ensure_running()
                assert self._requests is not None and self._spec_writer is not None
                with self._changed:
                    self._pending[spec.run_id] = worker_end  # closed once it is forked
                    self._sent_to[spec.run_id] = self._process
                socket.send_fds(self._requests, [b"R"], [worker_end.fileno()])
                self._spec_writer.send_bytes(pickle.dumps(spec))
        except BaseException:
            with self._changed:
                self._pending.pop(spec.run_id, None)
                self._sent_to.pop(spec.run_id, None)
            server_end.close()
            worker_end.close()
            raise
        return ZygoteWorker(self, spec.run_id, Connection(server_end.detach()))

    def pid_of(self, run_id: str) -> int | None:
        with self._changed:
            return self._pids.get(run_id)

    def exit_code(self, run_id: str, wait: float = 0.0) -> int | None:
        """The exit code of a worker the zygote reaped (None while unknown), after waiting up
        to ``wait`` seconds for it."""
        deadline = time.monotonic() + wait
        with self._changed:
            while run_id not in self._exits and time.monotonic() < deadline:
                if run_id in self._lost:
                    break
                self._changed.wait(max(0.0, min(0.1, deadline - time.monotonic())))
            return self._exits.get(run_id)

    def lost_reason(self, run_id: str) -> str | None:
        with self._changed:
            return self._lost.get(run_id)

    def forget(self, run_id: str) -> None:
        """Drop what is known of a finished worker."""
        with self._changed:
            for table in (self._pids, self._exits, self._lost, self._sent_to):
                table.pop(run_id, None)

    def _listen(self, reports: Connection, zygote: subprocess.Popen[bytes]) -> None:
        while True:
            try:
                kind, run_id, value = reports.recv()
            except (EOFError, OSError, pickle.UnpicklingError):
                reports.close()
                with self._changed:
                    its = {run for run, sent_to in self._sent_to.items() if sent_to is zygote}
                    # Runs it never forked end now: their links read end-of-file.
                    for run_id in its & self._pending.keys():
                        self._lost[run_id] = _NEVER_STARTED
                        self._pending.pop(run_id).close()
                    # Its children live on (their links tell when they end), unreaped by it.
                    for run_id in (its & self._pids.keys()) - self._exits.keys():
                        self._lost.setdefault(run_id, "the worker zygote ended; exit unknown")
                    if self._process is zygote:  # nothing is warm until the next launch
                        self._warm_up = WarmUp(
                            0, len(RUN_START_PART_NAMES), self._warm_up.compiling
                        )
                    self._changed.notify_all()
                return
            with self._changed:
                if kind == "warm-up":
                    self._warm_up = value
                elif kind == "started":
                    self._pids[run_id] = value
                elif kind == "exited":
                    self._exits[run_id] = value
                else:  # "failed": the fork itself failed
                    self._lost[run_id] = f"the worker could not be started: {value}"
                if kind in ("started", "failed"):
                    with contextlib.suppress(KeyError):
                        self._pending.pop(run_id).close()
                self._changed.notify_all()

    def close(self) -> None:
        """End the zygote (running workers end with their own links)."""
        with self._lock:
            for channel in (self._requests, self._spec_writer):
                if channel is not None:
                    channel.close()
            if self._process is not None:
                try:
                    self._process.wait(5.0)
                except subprocess.TimeoutExpired:
                    self._process.kill()
                    self._process.wait(5.0)
            self._process = self._requests = self._spec_writer = None


# ------------------------------------------------------------------------------ the zygote
def _worker_main(spec: RunSpec | Job, fd: int) -> None:
    from rdqn.serve.worker import run_worker  # loaded by the zygote's warm-up

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the zygote's lowered priority is inherited
    if isinstance(spec, RunSpec):
        run_worker(spec, Connection(fd))
    else:
        spec.work(Connection(fd))


class _Launcher:
    """The zygote's side of the requests socket: forks a worker per launch asked for, and
    reports starts and exits."""

    def __init__(self, requests: socket.socket, reports: Connection) -> None:
        self.requests = requests
        self.reports = reports
        self.spec_reader = Connection(os.dup(requests.fileno()))
        self.children: dict[int, str] = {}
        self.launches = 0

    def serve_waiting(self, timeout: float = 0.0) -> bool:
        """Start every launch asked for (waiting up to ``timeout`` s for one), report the
        workers that exited; False once the server has closed the channel."""
        self._reap()
        while select.select([self.requests], [], [], timeout)[0]:
            _, fds, _, _ = socket.recv_fds(self.requests, 1, 1)
            if not fds:
                return False  # the server closed the channel
            spec: RunSpec | Job = pickle.loads(self.spec_reader.recv_bytes())
            self._fork(spec, fds[0])
            timeout = 0.0
        return True

    def serve(self) -> None:
        """Serve launches until the server goes away."""
        while self.serve_waiting(0.2):
            pass

    def serve_until_a_launch(self, timeout: float) -> bool:
        """Serve launches until one has been asked for (since this launcher began) or
        ``timeout`` s have passed; False once the server has closed the channel."""
        deadline = time.monotonic() + timeout
        while not self.launches and (left := deadline - time.monotonic()) > 0:
            if not self.serve_waiting(min(left, 0.2)):
                return False
        return True

    def _fork(self, spec: RunSpec | Job, fd: int) -> None:
        self.launches += 1
        try:
            pid = os.fork()
        except OSError as err:
            os.close(fd)
            self.reports.send(("failed", spec.run_id, f"{type(err).__name__}: {err}"))
            return
        if pid == 0:
            code = 0
            try:
                self.requests.close()
                self.spec_reader.close()
                self.reports.close()
                _worker_main(spec, fd)
            except BaseException:  # noqa: BLE001 - a worker must never return into the loop
                code = 1
            finally:
                os._exit(code)
        os.close(fd)
        self.children[pid] = spec.run_id
        self.reports.send(("started", spec.run_id, pid))

    def _reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            run_id = self.children.pop(pid, None)
            if run_id is not None:
                self.reports.send(("exited", run_id, os.waitstatus_to_exitcode(status)))


class _ServerGone(Exception):
    """The server closed the requests channel during the warm-up."""


def main(requests_fd: int, reports_fd: int) -> None:
    """The zygote: warm up what a run waits for (`rdqn.serve.worker.RUN_START_PARTS`,
    reporting each part), then serve launches until the server goes away. A launch asked for
    during the warm-up starts between two of its parts: the demo's path is loaded first, and a
    worker loads by itself whatever its run needs that the warm-up has not loaded yet.

    The rest (`LATER_PARTS`: about a second of CPU in one piece, which a launch would wait for)
    is loaded once the first launch is on its way, or after `LATER_PARTS_AFTER_S` without one:
    a *Start demo* pressed the moment a fresh server shows Home forks at once."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The pages come first, from the start: the warm-up (seconds of CPU, as the server starts)
    # must not slow the server's first page, and the workers forked from here inherit it.
    with contextlib.suppress(OSError):
        os.nice(TRAINING_NICENESS)
    from rdqn.serve.worker import LATER_PARTS, RUN_START_PARTS, warm_up

    reports = Connection(reports_fd)
    launcher = _Launcher(socket.socket(fileno=requests_fd), reports)

    def between_parts() -> None:
        if not launcher.serve_waiting():
            raise _ServerGone

    with contextlib.suppress(OSError, EOFError, _ServerGone):  # the server went away
        warm_up(
            lambda progress: reports.send(("warm-up", "", progress)), between_parts, RUN_START_PARTS
        )
        if launcher.serve_until_a_launch(LATER_PARTS_AFTER_S):
            warm_up(None, between_parts, LATER_PARTS)
            launcher.serve()
    # Nothing is left to clean up; the interpreter's own finalization would spend seconds
    # collecting the garbage of torch and numba while the server waits for this exit.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
