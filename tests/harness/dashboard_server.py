"""The dashboard's server for the browser tests and the benchmarks that drive a browser:
`streamlit run app.py` on a free port of 127.0.0.1, ready once it answers its health check."""

from __future__ import annotations

import socket
import subprocess
import sys
import urllib.request
from collections.abc import Mapping
from contextlib import nullcontext
from pathlib import Path

from tests.run_helpers import wait_for

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_dashboard(
    env: Mapping[str, str], log_path: Path | None = None, wait_s: float = 60.0
) -> tuple[subprocess.Popen[bytes], str]:
    """Start the server with exactly the environment ``env``, its output in ``log_path`` (or
    nowhere); return it and its URL once it answers. A server that exits or does not answer
    within ``wait_s`` is killed and raises `RuntimeError` with the tail of its log."""
    port = free_port()
    output = log_path.open("wb") if log_path is not None else nullcontext(subprocess.DEVNULL)
    with output as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port)]
            + ["--server.address", "127.0.0.1", "--server.headless", "true"],
            cwd=ROOT,
            env=dict(env),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: a Ctrl-C here reaches us first
        )
    url = f"http://127.0.0.1:{port}"
    wait_until_healthy(process, url, log_path, wait_s)
    return process, url


def wait_until_healthy(
    process: subprocess.Popen[bytes], url: str, log_path: Path | None, wait_s: float
) -> None:
    """Return once the server at ``url`` answers its health check. A server that exits or does
    not answer within ``wait_s`` is killed and raises `RuntimeError` with the tail of its log."""

    def answers() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"exited with code {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    try:
        wait_for(answers, wait_s, what=f"did not answer {url}/_stcore/health", every=0.3)
    except (RuntimeError, AssertionError) as why:
        process.kill()
        process.wait(10)
        tail = log_path.read_text(errors="replace")[-4000:] if log_path else "(not kept)"
        raise RuntimeError(f"the dashboard server {why}; its log ({log_path}):\n{tail}") from None
