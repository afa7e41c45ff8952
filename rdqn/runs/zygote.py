"""Worker processes forked from a zygote: one process that imported rdqn and its kernels once.

    server (ProcessExecutor)               zygote: python -m rdqn.runs.zygote
    launch(spec) -- spec + socket --->     fork --------------------------> worker: run_worker
             <-- ("started", id, pid) --
             <-- ("exited", id, code) --   reaps its children
    the run's link: a socket pair, server end <==================> worker end

A fork of a process that already holds torch, numba, rdqn and the compiled kernels starts a run
in milliseconds instead of seconds. multiprocessing's own forkserver would do the same but
re-runs the parent's ``__main__`` in every child, and inside a Streamlit server ``__main__`` is
whatever page script is running. The zygote is started with `subprocess` (nothing of the server
is re-run), never touches CUDA, and forks from a single thread.

The zygote ends when its server does (its control socket closes); each worker ends when its own
link closes (`rdqn.runs.worker`), so nothing outlives the server.
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
from multiprocessing.reduction import recv_handle, send_handle
from pathlib import Path
from typing import Any

from rdqn.runs.worker import RunSpec, run_worker

__all__ = ["Zygote", "ZygoteWorker"]

_ROOT = Path(__file__).resolve().parents[2]
_START_TIMEOUT_S = 300.0  # a first compile of the kernels on a fresh checkout takes ~20-60 s


class ZygoteWorker:
    """The server's end of one worker process forked by the zygote."""

    def __init__(self, zygote: Zygote, run_id: str, conn: Connection, pid: int) -> None:
        self._zygote = zygote
        self.run_id = run_id
        self.pid = pid
        self._conn = conn
        self._lock = threading.Lock()

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
            if not out:
                time.sleep(min(timeout, 0.05))  # the worker is ending: let the zygote report
        return out

    def alive(self) -> bool:
        return self._zygote.exit_code(self.run_id, self.pid) is None

    def exit_reason(self) -> str:
        deadline = time.monotonic() + 2.0
        code = self._zygote.exit_code(self.run_id, self.pid)
        while code is None and time.monotonic() < deadline:
            time.sleep(0.02)
            code = self._zygote.exit_code(self.run_id, self.pid)
        if code is not None and code < 0:
            return f"the worker process was killed by signal {-code}"
        return f"the worker process ended with exit code {code} before closing its run"

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        self.join(5.0)

    def join(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        self._conn.close()


class Zygote:
    """The server's handle on its zygote process: starts it, asks it for workers, hears of
    their ends. Thread-safe; a zygote that died is started again at the next launch."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._control: Connection | None = None
        self._started: dict[str, int] = {}
        self._exits: dict[str, int] = {}
        self._changed = threading.Condition()

    def ensure_running(self) -> None:
        """Start the zygote if it is not running (it then imports and warms up: seconds)."""
        with self._lock:
            if self._process is not None and self._process.poll() is None:
                return
            server_end, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            env = {
                **os.environ,
                "PYTHONPATH": os.pathsep.join(
                    filter(None, [str(_ROOT), os.environ.get("PYTHONPATH")])
                ),
            }
            self._process = subprocess.Popen(
                [sys.executable, "-m", "rdqn.runs.zygote", str(zygote_end.fileno())],
                pass_fds=(zygote_end.fileno(),),
                env=env,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # Ctrl-C in the server's terminal is the server's
            )
            zygote_end.close()
            self._control = Connection(server_end.detach())
            threading.Thread(
                target=self._listen, args=(self._control,), name="rdqn-zygote", daemon=True
            ).start()

    def launch(self, spec: RunSpec) -> ZygoteWorker:
        """Fork a worker for ``spec``; returns once it runs (the first, after the warm-up)."""
        self.ensure_running()
        server_end, worker_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        with self._lock:
            control = self._control
            assert control is not None and self._process is not None
            control.send(pickle.dumps(spec))
            send_handle(control, worker_end.fileno(), self._process.pid)
        worker_end.close()
        deadline = time.monotonic() + _START_TIMEOUT_S
        with self._changed:
            while spec.run_id not in self._started:
                if control.closed or time.monotonic() > deadline:
                    server_end.close()
                    raise RuntimeError(f"the worker zygote did not start run {spec.run_id}")
                self._changed.wait(0.1)
            pid = self._started[spec.run_id]
        return ZygoteWorker(self, spec.run_id, Connection(server_end.detach()), pid)

    def exit_code(self, run_id: str, pid: int) -> int | None:
        """The exit code of a worker that ended (None while it runs)."""
        with self._changed:
            if run_id in self._exits:
                return self._exits[run_id]
        if self._control is None or self._control.closed:  # nobody reaps it any more
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return -signal.SIGKILL
        return None

    def _listen(self, control: Connection) -> None:
        while True:
            try:
                kind, run_id, value = control.recv()
            except (EOFError, OSError):
                control.close()
                with self._changed:
                    self._changed.notify_all()
                return
            with self._changed:
                (self._started if kind == "started" else self._exits)[run_id] = value
                self._changed.notify_all()

    def close(self) -> None:
        """End the zygote (running workers end with their own links)."""
        with self._lock:
            if self._control is not None:
                self._control.close()
            if self._process is not None:
                try:
                    self._process.wait(5.0)
                except subprocess.TimeoutExpired:
                    self._process.kill()
                    self._process.wait(5.0)
            self._process = self._control = None


# ------------------------------------------------------------------------------ the zygote
def _worker_main(spec: RunSpec, fd: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    run_worker(spec, Connection(fd))


def _serve(control: Connection) -> None:
    """Fork a worker per request; report starts and exits; end when the server does."""
    children: dict[int, str] = {}
    while True:
        ready, _, _ = select.select([control], [], [], 0.2)
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            run_id = children.pop(pid)
            control.send(("exited", run_id, os.waitstatus_to_exitcode(status)))
        if not ready:
            continue
        try:
            spec: RunSpec = pickle.loads(control.recv())
            fd = recv_handle(control)
        except (EOFError, OSError):
            return
        pid = os.fork()
        if pid == 0:
            control.close()
            code = 0
            try:
                _worker_main(spec, fd)
            except BaseException:  # noqa: BLE001 - a worker must never return into the loop
                code = 1
            finally:
                os._exit(code)
        os.close(fd)
        children[pid] = spec.run_id
        control.send(("started", spec.run_id, pid))


def main(control_fd: int) -> None:
    """The zygote: warm up, then serve launches on the control socket."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from rdqn.runs.worker import warm_up

    warm_up()
    _serve(Connection(control_fd))


if __name__ == "__main__":
    main(int(sys.argv[1]))
