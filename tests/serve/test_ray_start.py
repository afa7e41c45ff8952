"""rdqn.serve.ray_start: joining a cluster that is not there fails in one line, in bounded
time (Ray itself retries for many minutes, a warning every few seconds), and a lost worker's
error is one line (Ray's text, with addresses and pids, goes to the log); a local Ray's lost
raylet or control store is named with how it ended, and one lost as Ray started gives workers
lost in one line (tests/reliability/test_ray_start.py kills them in a real sweep); a start given
up on while ``ray.init`` still runs is known (`start_given_up`: the CLI then ends by os._exit)."""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import threading
from types import SimpleNamespace

import pytest

from rdqn.serve import ray_executor, ray_start
from rdqn.serve.protocol import ExecutorUnavailable
from rdqn.serve.ray_executor import ray_lost
from rdqn.serve.ray_start import check_reachable
from tests.run_helpers import wait_for


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nothing listens there once it is closed


@pytest.mark.parametrize("scheme", ["", "ray://"])
def test_a_head_that_refuses_is_one_line(scheme: str) -> None:
    address = f"{scheme}127.0.0.1:{closed_port()}"
    with pytest.raises(ExecutorUnavailable) as refused:
        check_reachable(address)
    assert str(refused.value).startswith(f"cannot reach Ray at {address}: ")
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("address", ["nohost", "host:port", "host:", ":6379"])
def test_an_address_that_is_not_host_port_is_named(address: str) -> None:
    with pytest.raises(ExecutorUnavailable, match=r"is not host:port \(nor local or auto\)"):
        check_reachable(address)


def test_local_auto_and_a_listening_port_pass() -> None:
    check_reachable("local")
    check_reachable("auto")
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        check_reachable(f"127.0.0.1:{listening.getsockname()[1]}")


def test_a_head_that_never_answers_as_ray_is_given_up_in_bounded_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A port that accepts but is no Ray (a proxy, another service): `ray.init` would retry for
    many minutes; the join gives up after `JOIN_TIMEOUT_S` with one line."""
    monkeypatch.setattr(ray_start, "JOIN_TIMEOUT_S", 0.2)
    release = threading.Event()
    hanging = SimpleNamespace(init=lambda **_: release.wait(30))
    with pytest.raises(ExecutorUnavailable, match=r"no Ray answered there within 0.2 s"):
        ray_start.join_cluster(hanging, "10.0.0.1:6379", {})
    release.set()


def test_a_join_that_fails_raises_its_own_error() -> None:
    def refuse(**_: object) -> None:
        raise ConnectionError("the head said no")

    with pytest.raises(ConnectionError, match="the head said no"):
        ray_start.join_cluster(SimpleNamespace(init=refuse), "10.0.0.1:6379", {})


def test_a_lost_worker_is_one_line_and_the_log_has_rays_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class ActorDiedError(Exception):
        pass

    rays_text = "The actor died unexpectedly.\n\tpid: 4242\n\tip: 10.1.2.3\n\tnamespace: abc"
    with caplog.at_level(logging.WARNING, logger=ray_start.RAY_LOGGER):
        line = ray_lost("the Ray worker", ActorDiedError(rays_text))
    assert line == "the Ray worker was lost (ActorDiedError; the server's log has Ray's details)"
    assert "10.1.2.3" in caplog.text and "4242" in caplog.text


def test_a_core_process_that_ended_is_named_with_how_it_ended() -> None:
    """How a local Ray's raylet or control store is seen lost: without reaping it (Ray's own
    objects do), and by its signal."""
    core = ray_start.CoreProcesses()
    child = subprocess.Popen(["sleep", "30"])
    try:
        core.pids = {child.pid: "raylet"}
        assert core.ended() is None
        os.kill(child.pid, signal.SIGKILL)
        assert wait_for(core.ended, 10) == "its raylet (killed by SIGKILL)"
        assert child.poll() == -signal.SIGKILL  # still there to be reaped by its owner
        assert core.ended() == "its raylet (ended)"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_a_ray_lost_as_it_started_gives_workers_lost_in_one_line() -> None:
    what = "its raylet (killed by SIGKILL) as it started here"
    executor = ray_executor.LostRayExecutor(ray_start.RayLost("-", what), capacity=3)
    assert executor.capacity == 3 and executor.lost() == what
    worker = executor.launch(None)  # type: ignore[arg-type]  # nothing of it is used
    assert not worker.alive() and worker.events(0.0) == []
    assert worker.exit_reason() == (
        "Ray lost its raylet (killed by SIGKILL) as it started here; Ray's details are in the log"
    )
    worker.send(("stop", None))  # no Ray to call: nothing happens, nothing waits
    worker.kill()
    worker.join(0.0)
    executor.close()


def test_a_start_given_up_is_known_while_its_thread_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its raylet lost, `RayLost` comes at once though ``ray.init`` goes on in its thread (it
    may be in Ray's C++, which the process's end must not run beside: SIGSEGV, 2 of 34)."""
    monkeypatch.setattr(ray_start, "_GIVEN_UP", [])
    connecting, returned, release = threading.Event(), threading.Event(), threading.Event()

    def init(**_: object) -> None:
        connecting.wait()
        returned.set()

    ray = SimpleNamespace(init=init)
    core = SimpleNamespace(
        find=lambda: None, ended=lambda: "its raylet (killed by SIGKILL)", describe=lambda: "-"
    )
    assert not ray_start.start_given_up()
    with pytest.raises(ray_start.RayLost, match="its raylet .* as it started here"):
        ray_start.start_local(ray, None, {}, core, release)  # type: ignore[arg-type]
    assert ray_start.start_given_up()
    connecting.set()  # ray.init returns: the thread waits for a close that never comes
    wait_for(returned.is_set, 5)
    assert ray_start.start_given_up()
    release.set()
    ray_start._GIVEN_UP[0].join(5.0)
    assert not ray_start.start_given_up()
