"""``python -m rdqn sweep``: bad sweeps refused in one line before anything is filed, a sweep
run, shown and listed, a rerun skipping finished trials, and Ctrl-C to a real process leaving
every trial's state true, then ``--resume`` finishing them."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from rdqn.cli import main
from rdqn.runs.resume import resume_blocker
from rdqn.runs.store import RunStore
from tests.run_helpers import wait_for

REPO = Path(__file__).resolve().parents[2]
SWEEP = ["sweep", "--preset", "chain-lesson", "--grid", "replay.alpha=0,0.6", "--seeds", "2"]


@pytest.fixture(autouse=True)
def _restore_torch_threads() -> Iterator[None]:
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def cli(capsys: pytest.CaptureFixture[str], home: Path, *args: str) -> tuple[int, str, str]:
    code = main(["--home", str(home), *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([*SWEEP[:4], "replay.alpha=0,2"], r"grid entry replay.alpha=2: replay.alpha must be in"),
        ([*SWEEP[:4], "replay.alpah=0,1"], r"grid entry replay.alpah: unknown config field"),
        ([*SWEEP[:4], "replay.alpha="], r"grid entry replay.alpha: an empty list"),
        ([*SWEEP, "--grid", "replay.alpha=1"], r"--grid replay.alpha: given twice"),
        ([*SWEEP, "--seeds", "0"], r"seeds must be a count from 1"),
        (["sweep", "--grid", "replay.alpha=0,1"], r"sweep needs --preset NAME and --grid"),
        ([*SWEEP, "--file", "x.toml"], r"--file holds the whole sweep; leave out --preset, --grid"),
        (["sweep", "--file", "x.toml", "--resume", "abc"], r"give --file or --resume, not both"),
        (["sweep", "--file", "nope.toml"], r"sweep file nope.toml cannot be read"),
        ([*SWEEP, "--workers", "0"], r"--workers must be >= 1, got 0"),
        (["sweep", "show"], r"sweep show needs a SWEEP_ID"),
        (["sweep", "abc"], r"invalid choice: 'abc'"),
        (["sweep", "show", "abc"], r"no sweep 'abc': there is no run store at .*check --home"),
    ],
)
def test_a_bad_sweep_is_one_line_and_nothing_is_filed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], message: str
) -> None:
    code, out, err = cli(capsys, tmp_path, *args)
    assert code == 2 and out == ""
    assert err.startswith("rdqn: error: ") and err.count("\n") == 1 and re.search(message, err)
    assert not (tmp_path / "rdqn.db").exists()


def test_listing_sweeps_where_no_store_exists_finds_none_and_creates_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """As `rdqn runs list` does: a read creates nothing, and an empty list is no error."""
    home = tmp_path / "not" / "here"
    code, out, err = cli(capsys, home, "sweep", "list")
    assert (code, err) == (0, "")
    assert out == f"no sweeps stored yet: there is no run store at {home / 'rdqn.db'}\n"
    assert not (tmp_path / "not").exists()


def test_without_ray_the_message_says_what_to_install(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None)
    code, _, err = cli(capsys, tmp_path, *SWEEP, "--steps", "300", "--ray", "local")
    assert code == 2
    assert err == (
        "rdqn: error: --ray needs Ray, which is not installed here: pip install -r "
        "requirements-ray.txt (or pip install 'rdqn[ray]')\n"
    )
    assert not (tmp_path / "rdqn.db").exists()


def test_a_cluster_that_is_not_there_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``--ray`` at a port nobody listens on: one line at once (Ray retried for minutes)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{sock.getsockname()[1]}"
    code, _, err = cli(capsys, tmp_path, *SWEEP, "--steps", "300", "--ray", address)
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"rdqn: error: cannot reach Ray at {address}: "), err


@pytest.mark.slow
def test_a_sweep_runs_shows_lists_and_skips_finished_trials_when_rerun(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    args = [*SWEEP, "--steps", "300", "--workers", "2", "--quiet"]
    code, out, err = cli(capsys, tmp_path, *args)
    assert code == 0, err
    sweep_id = re.match(r"sweep ([0-9a-f]{12}): 4 trials \(2 cells x 2 seeds\)", out).group(1)
    assert f"sweep {sweep_id}: 4 finished\n" in out
    assert f"results: python -m rdqn sweep show {sweep_id}" in out
    assert re.search(r"replay.alpha +finished +seeds +auc_mean", out)

    code, out, _ = cli(capsys, tmp_path, *args)
    assert code == 0 and f"sweep {sweep_id}: 4 finished (4 finished before)" in out
    with RunStore(tmp_path / "rdqn.db") as store:
        assert len(store.list_runs(group_id=sweep_id)) == 4

    csv = tmp_path / "summary.csv"
    code, out, _ = cli(capsys, tmp_path, "sweep", "show", sweep_id, "--out", str(csv))
    assert code == 0
    assert f"sweep {sweep_id}: chain-lesson, 300 steps, seeds [0, 1]" in out
    assert "grid: replay.alpha = [0.0, 0.6]" in out and "trials: 4 finished" in out
    assert csv.read_text().startswith("replay.alpha,cell,seeds,finished,failed,threshold")
    code, out, _ = cli(capsys, tmp_path, "sweep", "list")
    assert code == 0 and sweep_id in out and "chain-lesson" in out


@pytest.mark.slow
def test_ctrl_c_stops_every_trial_truly_and_resume_finishes_them(tmp_path: Path) -> None:
    env = {**os.environ, "RDQN_HOME": str(tmp_path), "PYTHONUNBUFFERED": "1"}
    args = [sys.executable, "-m", "rdqn", *SWEEP, "--steps", "1500", "--workers", "2", "--quiet"]
    process = subprocess.Popen(
        args, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        wait_for(lambda: (tmp_path / "rdqn.db").exists(), timeout=60)
        with RunStore(tmp_path / "rdqn.db") as store:
            wait_for(lambda: not store.list_runs(status="running").empty, timeout=120)
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=60)
            assert process.returncode == 130, err
            sweep_id = re.match(r"sweep ([0-9a-f]{12}):", out).group(1)
            assert f"`python -m rdqn sweep --resume {sweep_id}` goes on" in err
            runs = store.list_runs(group_id=sweep_id)
            assert len(runs) == 4 and set(runs["status"]) <= {"finished", "stopped"}
            stopped = runs[runs["status"] == "stopped"]
            assert not stopped.empty
            assert set(stopped["error"]) == {"stopped by Ctrl-C"}
            assert all(resume_blocker(store, run_id) is None for run_id in stopped["id"])

            done = subprocess.run(
                [sys.executable, "-m", "rdqn", "sweep", "--resume", sweep_id, "--quiet"],
                cwd=REPO,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            assert done.returncode == 0, done.stderr
            after = store.list_runs(group_id=sweep_id)
            assert sorted(after["id"]) == sorted(runs["id"])  # resumed under their ids
            assert set(after["status"]) == {"finished"} and set(after["env_steps"]) == {1500}
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
