"""Run folders on their own small file systems, for the read-only and full home tests.

A real ``tmpfs`` mount where this process may mount one (root with CAP_SYS_ADMIN, as in the CI
container): remounted read-only, or filled to its last byte, the kernel refuses writes as a
read-only or full disk does, for root too. Elsewhere the tests that need a mount are skipped
(a read-only home falls back to file modes for a user that modes stop).

Also here: a store with one finished and one stopped (resumable) run, and `frame_on_every_run`,
which makes AppTest run the app frame (``app.py``) on every page run, as a browser does.
"""

from __future__ import annotations

import errno
import functools
import os
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from streamlit.runtime import pages_manager

from rdqn.cli import main
from rdqn.runs.lifecycle import RecordedRun, run_to_end
from rdqn.runs.store import RunStore
from tests.run_helpers import tiny


@functools.cache
def can_mount() -> bool:
    """Whether this process can mount a tmpfs (tried once, in a folder of its own)."""
    if os.geteuid() != 0:
        return False
    with tempfile.TemporaryDirectory() as folder:
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", folder], capture_output=True
        )
        if mounted.returncode != 0:
            return False
        subprocess.run(["umount", "-l", folder], check=True)
    return True


needs_mount = pytest.mark.skipif(
    not can_mount(), reason="mounting a tmpfs needs root with CAP_SYS_ADMIN"
)


@contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (``"2m"``) mounted at ``path`` (created) while in the block."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        # Lazy: a store or a page of the test may still hold a file open; it goes with them.
        subprocess.run(["umount", "-l", str(path)], check=True)


def remount_read_only(path: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(path)], check=True)


def fill(folder: Path) -> Path:
    """Write a file in ``folder`` until the file system is full; returns it."""
    filler = folder / "filler"
    block = bytes(64 * 1024)
    with open(filler, "wb", buffering=0) as handle:
        for size in (len(block), 4096, 512, 1):
            try:
                while True:
                    handle.write(block[:size])
            except OSError as err:
                assert err.errno == errno.ENOSPC, err
    return filler


def store_with_runs(home: Path) -> tuple[str, str]:
    """A store in ``home`` with a finished run and a stopped one that can be resumed."""
    with RunStore(home / "rdqn.db") as store:
        finished = run_to_end(RecordedRun(tiny(60), store)).id
        run = RecordedRun(tiny(400), store)
        run.open().run(steps=100)
        run.record_progress()
        run.close("stopped", "stopped by its owner")
    assert finished is not None and run.id is not None
    return finished, run.id


def snapshot(home: Path) -> dict[str, bytes]:
    """Every file under ``home`` but the filler, by path."""
    return {
        str(p): p.read_bytes()
        for p in sorted(home.rglob("*"))
        if p.is_file() and p.name != "filler"
    }


def run_cli(home: Path, args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Exit status and stdout of one command; stderr must be empty (exit 0) or one line."""
    code = main(["--home", str(home), *args])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code in (0, 2), (args, code, err)
    assert (code == 0 and not lines) or (code == 2 and len(lines) == 1), (args, err)
    return code, out if code == 0 else lines[0]


def assert_the_reads_work(
    home: Path,
    runs: tuple[str, str],
    shown: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """What reads a home (its runs: a finished and a stopped one) works: listing, showing (the
    stopped run's JSON holds ``shown``), exporting to stdout and to a file elsewhere, the presets
    and the warm-up (numba's cache, not the home)."""
    finished, stopped = runs
    code, out = run_cli(home, ["runs", "list"], capsys)
    assert code == 0 and finished in out and stopped in out
    code, out = run_cli(home, ["runs", "show", stopped], capsys)
    assert code == 0 and '"status": "stopped"' in out and shown in out
    code, csv = run_cli(home, ["runs", "export", finished], capsys)
    assert code == 0 and csv.startswith("episode,env_steps,") and len(csv.splitlines()) > 2
    target = tmp_path / "episodes.csv"
    code, _ = run_cli(home, ["runs", "export", finished, "--out", str(target)], capsys)
    assert code == 0 and target.read_text() == csv
    code, out = run_cli(home, ["presets"], capsys)
    assert code == 0 and "per-notebook" in out
    code, out = run_cli(home, ["warm-up", "--quiet"], capsys)
    assert code == 0 and "numba's cache" in out


@pytest.fixture
def frame_on_every_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """AppTest runs a page of a ``pages/`` folder on its own after the first run (Streamlit's
    old multipage mode), so the app frame, which shows a failed store's message, does not run.
    A server runs the frame on every page run (``st.navigation`` turns the old mode off): so
    here. A Streamlit that changes this shows as the frame's message missing in the tests."""
    init = pages_manager.PagesManager.__init__

    def frame_first(self: pages_manager.PagesManager, *args: object, **kwargs: object) -> None:
        init(self, *args, **kwargs)  # type: ignore[arg-type]
        pages_manager.PagesManager.uses_pages_directory = False

    monkeypatch.setattr(pages_manager.PagesManager, "__init__", frame_first)
