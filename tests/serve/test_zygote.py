"""The zygote starts a launch asked for during its warm-up between two of the warm-up's parts,
not after the last: Home's *Start demo*, pressed as a fresh server shows Home, must not wait for
the kernels of paths the demo never takes."""

from __future__ import annotations

import pickle
from collections.abc import Callable

import pytest

from rdqn.serve.worker import WARM_UP_PARTS, warm_up
from rdqn.serve.zygote import Zygote
from rdqn.sweeps.tasks import _Call
from tests.run_helpers import wait_for
from tests.serve.zygote_jobs import dynamo_loaded, rank_kernels_loaded


def ask(
    zygote: Zygote, run_id: str, question: Callable[[object], bool] = rank_kernels_loaded
) -> bool:
    worker = zygote.launch(_Call(run_id, pickle.dumps((question, None))))
    events: list[tuple[object, ...]] = []
    wait_for(lambda: bool(events.extend(worker.events(0.5)) or events), 120, what="no answer")
    worker.join(10)
    ((kind, loaded),) = events
    assert kind == "result", loaded
    return bool(loaded)


@pytest.mark.slow
def test_a_launch_asked_for_during_the_warm_up_starts_before_the_warm_up_ends() -> None:
    zygote = Zygote()
    try:
        # Asked for as the zygote starts: it is forked once the first part (the demo's) is loaded.
        assert not ask(zygote, "early")
        wait_for(lambda: zygote.warm_up_progress().ready, 120, what="the warm-up never ended")
        assert ask(zygote, "late")  # forked from a warm zygote: everything is loaded
    finally:
        zygote.close()


@pytest.mark.slow
def test_a_warm_zygote_forks_its_first_launch_before_it_loads_the_later_parts() -> None:
    """A *Start demo* pressed the moment a fresh server shows Home must not wait for the second
    of CPU a checkpoint's torch._dynamo takes to import: the zygote loads it only once its first
    launch is on its way (or after `LATER_PARTS_AFTER_S` without one), so that later runs
    have it too."""
    zygote = Zygote()
    try:
        zygote.ensure_running()
        wait_for(lambda: zygote.warm_up_progress().ready, 120, what="the warm-up never ended")
        assert not ask(zygote, "first", dynamo_loaded)
        count = iter(range(1000))
        wait_for(lambda: ask(zygote, f"later-{next(count)}", dynamo_loaded), 120)
    finally:
        zygote.close()


def test_the_warm_up_calls_between_parts_between_every_two_parts() -> None:
    heard: list[str] = []
    warm_up(lambda progress: heard.append(progress.part or "ready"), lambda: heard.append("|"))
    names = [name for name, _ in WARM_UP_PARTS]
    assert heard == [names[0], *(x for name in names[1:] for x in ("|", name)), "ready"]
    assert names[0] == "proportional replay"  # the demo's path first
