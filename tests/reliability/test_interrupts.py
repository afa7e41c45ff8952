"""Ctrl-C (SIGINT) and SIGTERM while the command line trains: the run ends 'stopped', resumable.

Regression: 8 of 21 SIGINTs sent while ``python -m rdqn train`` trained filed the run as
'failed' ("SystemError: CPUDispatcher(<function _dqn_update ...>) returned a result with an
exception set", exit status 1): the KeyboardInterrupt landed inside a compiled call, and a run
cut off inside a step cannot resume. Now a signal only asks the run to stop, and the loop stops
between two steps (`rdqn.cli.interrupts`). The in-process tests send the signal at the worst
moment (inside an update, after its weights changed) every time; the subprocess tests send real
signals to ``python -m rdqn`` once it learns, wherever it happens to be.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import pytest
import torch

from rdqn.cli import interrupts, main
from rdqn.replay import ReplayBuffer
from rdqn.runs.resume import resume_blocker
from rdqn.runs.store import RunStore
from tests.run_helpers import wait_for

REPO = Path(__file__).resolve().parents[2]
TINY = ["--quiet", "--set", "train.learning_starts=32"]
TINY += ["--set", "replay.capacity=256", "--set", "replay.batch_size=16"]
WAIT_S = 120.0
"""The most a subprocess may take to start learning, or to end once signalled."""

pytestmark = pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread(),
    reason="signal handlers are installed from the main thread only",
)


@pytest.fixture(autouse=True)
def _restore_torch_threads() -> Iterator[None]:
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def signal_inside_an_update(
    monkeypatch: pytest.MonkeyPatch, signum: int, at: int, times: int = 1
) -> None:
    """Send ``signum`` to this process ``times`` times from inside update ``at``, after the
    agent's weights changed and before the trainer counts the update: where a KeyboardInterrupt
    leaves a trainer that cannot be resumed."""
    real = ReplayBuffer.update_priorities
    calls = 0

    def update_priorities(self: ReplayBuffer, *args: object, **kwargs: object) -> None:
        nonlocal calls
        # Only the command line's run, in the main thread: a run another test left training in
        # a thread of this process (the dashboard's tests train in threads) is not counted.
        if threading.current_thread() is threading.main_thread():
            calls += 1
        if calls == at and threading.current_thread() is threading.main_thread():
            for _ in range(times):
                os.kill(os.getpid(), signum)
        real(self, *args, **kwargs)

    monkeypatch.setattr(ReplayBuffer, "update_priorities", update_priorities)


def the_run(home: Path):  # noqa: ANN201
    with RunStore(home / "rdqn.db") as store:
        (run_id,) = store.list_runs()["id"]
        return store.get_run(run_id), resume_blocker(store, run_id)


@pytest.mark.parametrize(
    ("signum", "code", "reason"),
    [(signal.SIGINT, 130, "stopped by Ctrl-C"), (signal.SIGTERM, 143, "stopped by SIGTERM")],
    ids=["SIGINT", "SIGTERM"],
)
def test_a_signal_inside_an_update_stops_the_run_resumably(
    signum: int,
    code: int,
    reason: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    signal_inside_an_update(monkeypatch, signum, at=50)
    home = str(tmp_path)

    assert main(["--home", home, "train", "--steps", "5000", *TINY]) == code

    out, err = capsys.readouterr()
    record, blocker = the_run(tmp_path)
    assert (record.status, record.error, blocker) == ("stopped", reason, None)
    assert record.updates == 50 and record.resume_env_steps == record.env_steps == 32 + 50
    assert out.startswith(f"run {record.id}: stopped, 82 env steps, 50 updates")
    assert err == f"run {record.id} {reason}: `rdqn resume {record.id}` goes on\n"
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers

    monkeypatch.undo()  # no more signals: the resumed run trains to its budget
    assert main(["--home", home, "resume", record.id, *TINY[:1]]) == 0, capsys.readouterr()
    record, _ = the_run(tmp_path)
    assert (record.status, record.env_steps, record.updates) == ("finished", 5000, 5000 - 32)


def test_a_resumed_run_stops_on_ctrl_c_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    signal_inside_an_update(monkeypatch, signal.SIGINT, at=50)
    home = str(tmp_path)
    assert main(["--home", home, "train", "--steps", "5000", *TINY]) == 130
    run_id = the_run(tmp_path)[0].id
    signal_inside_an_update(monkeypatch, signal.SIGINT, at=50)  # counts afresh
    assert main(["--home", home, "resume", run_id, *TINY[:1]]) == 130
    record, blocker = the_run(tmp_path)
    assert (record.status, record.error, blocker) == ("stopped", "stopped by Ctrl-C", None)
    assert record.updates == 100
    capsys.readouterr()


def test_ctrl_c_twice_in_a_row_still_stops_resumably(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C pressed twice (a habit): the second, within seconds of the first, is the same
    request; the run still stops between two steps with its checkpoint; the handler found is
    back (Python's, or SIG_IGN in a process started in the background)."""
    found = signal.getsignal(signal.SIGINT)
    signal_inside_an_update(monkeypatch, signal.SIGINT, at=50, times=3)
    assert main(["--home", str(tmp_path), "train", "--steps", "5000", *TINY]) == 130
    _, err = capsys.readouterr()
    record, blocker = the_run(tmp_path)
    assert (record.status, record.error, blocker) == ("stopped", "stopped by Ctrl-C", None)
    assert err.count("rdqn: stopping after this step") == 1, err
    assert err.endswith(f"run {record.id} stopped by Ctrl-C: `rdqn resume {record.id}` goes on\n")
    assert signal.getsignal(signal.SIGINT) is found


def test_a_ctrl_c_long_after_the_first_aborts_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """For a stop that takes too long: a later Ctrl-C interrupts where it lands, as Python
    would, and the run is still filed 'stopped'; the handler found is back."""
    found = signal.getsignal(signal.SIGINT)
    monkeypatch.setattr(interrupts, "ABORT_AFTER_S", 0.0)  # "later" at once
    signal_inside_an_update(monkeypatch, signal.SIGINT, at=50, times=2)
    assert main(["--home", str(tmp_path), "train", "--steps", "5000", *TINY]) == 130
    _, err = capsys.readouterr()
    assert err == "rdqn: interrupted (`rdqn runs list` shows any run it left)\n"
    record, _ = the_run(tmp_path)
    assert (record.status, record.error) == ("stopped", "interrupted by the user")
    assert signal.getsignal(signal.SIGINT) is found


# -- real signals to python -m rdqn ---------------------------------------------------------------


def rdqn(home: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "RDQN_CHECKPOINT_EVERY": "off", "RDQN_EXECUTOR": "process"}
    return subprocess.Popen(
        [sys.executable, "-m", "rdqn", "--home", str(home), *args],
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def runs(home: Path) -> list[tuple[str, str, str | None, int]]:
    """(id, status, error, updates) of every run, read without opening a `RunStore`."""
    db = home / "rdqn.db"
    if not db.exists():
        return []
    with closing(sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=10)) as conn:
        try:
            return conn.execute("SELECT id, status, error, updates FROM runs").fetchall()
        except sqlite3.OperationalError:  # the schema is not there yet
            return []


def wait_until(process: subprocess.Popen[str], condition: Callable[[], bool]) -> None:
    def met() -> bool:
        if condition():
            return True
        if process.poll() is not None:
            raise AssertionError(f"rdqn ended ({process.returncode}): {process.communicate()}")
        return False

    try:
        wait_for(met, WAIT_S, every=0.05)
    except AssertionError:
        if process.poll() is None:
            process.kill()
            message = f"rdqn made no progress in {WAIT_S} s: {process.communicate()}"
            raise AssertionError(message) from None
        raise


def interrupt(process: subprocess.Popen[str], times: int = 1) -> tuple[int, str, str]:
    for _ in range(times):
        process.send_signal(signal.SIGINT)
    try:
        out, err = process.communicate(timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    return process.returncode, out, err


def assert_stopped_and_resumable(home: Path, run_id: str) -> None:
    with RunStore(home / "rdqn.db") as store:
        record = store.get_run(run_id)
        assert (record.status, record.error) == ("stopped", "stopped by Ctrl-C")
        assert resume_blocker(store, run_id) is None


def test_ctrl_c_during_python_m_rdqn_train_leaves_a_resumable_run(tmp_path: Path) -> None:
    """Three runs, each sent SIGINT once it learns, then one of them resumed and sent another:
    every time exit status 130 and a stopped, resumable run (8 of 21 used to be 'failed')."""
    for attempt in range(3):
        home = tmp_path / f"home{attempt}"
        process = rdqn(home, "train", "--steps", "500000", *TINY)
        wait_until(process, lambda home=home: any(r[3] > 0 for r in runs(home)))
        code, out, err = interrupt(process)
        ((run_id, *_),) = runs(home)
        assert code == 130, err
        assert err == f"run {run_id} stopped by Ctrl-C: `rdqn resume {run_id}` goes on\n"
        assert out.startswith(f"run {run_id}: stopped, ")
        assert_stopped_and_resumable(home, run_id)

    process = rdqn(home, "resume", run_id, "--quiet")  # Ctrl-C twice, at once: the same stop
    wait_until(process, lambda: runs(home)[0][1] == "running")
    code, out, err = interrupt(process, times=2)
    assert code == 130 and "Traceback" not in err, err
    assert_stopped_and_resumable(home, run_id)

    before = runs(home)[0][3]
    process = rdqn(home, "resume", run_id, "--quiet")
    wait_until(process, lambda: runs(home)[0][1] == "running" and runs(home)[0][3] > before)
    code, out, err = interrupt(process)
    assert code == 130 and "Traceback" not in err, err
    assert_stopped_and_resumable(home, run_id)


def test_ctrl_c_again_while_the_stopped_command_exits_keeps_its_status(tmp_path: Path) -> None:
    """Ctrl-C pressed three times: the run stopped at the first, and the others land while the
    process ends. It exits 130 (it was killed by SIGINT, status -2, when they came late in
    Python's exit)."""
    process = rdqn(tmp_path, "train", "--steps", "500000", *TINY)
    wait_until(process, lambda: any(r[3] > 0 for r in runs(tmp_path)))
    process.send_signal(signal.SIGINT)
    wait_for(lambda: runs(tmp_path)[0][1] == "stopped", WAIT_S, every=0.01)
    code, _, err = interrupt(process, times=2)
    assert code == 130 and "Traceback" not in err, (code, err)
    assert_stopped_and_resumable(tmp_path, runs(tmp_path)[0][0])


def test_ctrl_c_during_python_m_rdqn_compare_stops_every_run(tmp_path: Path) -> None:
    """A comparison trains in worker processes (which ignore SIGINT) and queues what does not
    fit: on Ctrl-C each run, the queued one too, is 'stopped' and resumable, none 'failed'."""
    process = rdqn(
        tmp_path,
        "compare",
        "--steps",
        "500000",
        "--seeds",
        "0",
        "--schemes",
        "uniform",
        "proportional",
        "--parallel",
        "1",
        "--report",
        str(tmp_path / "r.html"),
        *TINY,
    )
    wait_until(process, lambda: any(r[3] > 0 for r in runs(tmp_path)))
    code, out, err = interrupt(process)
    assert code == 130, err
    assert "Traceback" not in err and "stopped by Ctrl-C" in err
    stored = runs(tmp_path)
    assert len(stored) == 2
    for run_id, *_ in stored:
        assert_stopped_and_resumable(tmp_path, run_id)
    assert not (tmp_path / "r.html").exists()


def test_ctrl_c_while_python_loads_the_command_is_one_line() -> None:
    """Ctrl-C in the first seconds, while ``python -m rdqn`` still imports: no traceback."""
    loading = (
        "import runpy, sys\n"
        "class Interrupted:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'rdqn.cli':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Interrupted())\n"
        "runpy.run_module('rdqn', run_name='__main__')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", loading], cwd=REPO, capture_output=True, text=True, timeout=WAIT_S
    )
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "rdqn: interrupted\n")
