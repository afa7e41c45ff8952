"""The warm-up that loads (or compiles) the numba kernels before a first run, and its progress."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from rdqn.runs.store import RunStore
from rdqn.serve.executors import ProcessExecutor, ThreadExecutor, WarmUp
from rdqn.serve.registry import RunRegistry
from rdqn.serve.worker import RUN_START_PARTS, WARM_UP_PARTS, _kernels, kernels_cached, warm_up
from tests.run_helpers import fresh_python, wait_for

N = len(WARM_UP_PARTS)


def test_warm_up_reports_each_part_then_ready() -> None:
    heard: list[WarmUp] = []
    warm_up(heard.append)
    assert [p.done for p in heard] == list(range(N + 1))
    assert {p.total for p in heard} == {N}
    assert [p.part for p in heard] == [name for name, _ in WARM_UP_PARTS] + [""]
    assert [p.ready for p in heard] == [False] * N + [True]
    assert len({p.compiling for p in heard}) == 1  # decided once, before the first part
    assert kernels_cached()  # what it compiled is in numba's cache for the next process


def test_kernels_cached_reads_a_missing_index_as_compiling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warm_up()
    assert kernels_cached()
    kernel = _kernels()[-1]
    monkeypatch.setattr(kernel._cache._cache_file, "_index_path", str(tmp_path / "none.nbi"))
    assert not kernels_cached()


def test_a_warm_up_leaves_no_kernel_for_any_preset_to_compile() -> None:
    """A fresh process warms up, then trains a tiny run of every preset: no kernel gains a
    type signature the warm-up did not load (else that preset's first run would compile)."""
    script = """
from rdqn.presets import PRESETS
from rdqn.serve.worker import _kernels, _tiny_run, warm_up
warm_up()
before = {k: set(k.signatures) for k in _kernels()}
for name in PRESETS:
    _tiny_run(name)
new = {k.__name__: set(k.signatures) - before[k] for k in _kernels()}
print({name: sigs for name, sigs in new.items() if sigs})
"""
    assert fresh_python(script).strip().splitlines()[-1] == "{}"


def test_the_thread_executor_reports_its_warm_up_thread() -> None:
    executor = ThreadExecutor()
    assert executor.warm_up_progress() == WarmUp(0, N)
    assert not executor.warm_up_progress().ready
    executor.prepare()
    wait_for(lambda: executor.warm_up_progress().ready, timeout=120)
    assert executor.warm_up_progress().done == N
    for thread in threading.enumerate():
        if thread.name == "rdqn-warm-up":
            thread.join(10)


def test_the_process_executor_hears_the_zygote_part_by_part() -> None:
    """The zygote reports the parts a run waits for (`RUN_START_PARTS`), not the later ones."""
    n = len(RUN_START_PARTS)
    executor = ProcessExecutor(capacity=1)
    try:
        assert executor.warm_up_progress() == WarmUp(0, n)  # no zygote yet
        executor.prepare()
        heard = [executor.warm_up_progress()]
        assert heard[0].done == 0 and heard[0].compiling == (not kernels_cached())

        def listen() -> bool:
            progress = executor.warm_up_progress()
            if progress != heard[-1]:
                heard.append(progress)
            return progress.ready

        wait_for(listen, timeout=120)
        assert heard[-1] == WarmUp(n, n, heard[0].compiling)
        assert [p.done for p in heard] == sorted(p.done for p in heard)
        # the zygote's own messages name the parts (the server's first guess names none)
        assert {p.part for p in heard[1:-1]} <= {name for name, _ in RUN_START_PARTS}
    finally:
        executor.close()


class _HalfWarm(ThreadExecutor):
    def warm_up_progress(self) -> WarmUp:
        return WarmUp(2, 5, compiling=True, part="sum tree")


def test_the_registry_tells_its_executors_warm_up(tmp_path: Path) -> None:
    with RunStore(tmp_path / "rdqn.db") as store:
        registry = RunRegistry(store, executor=_HalfWarm())
        try:
            assert registry.warm_up_progress() == WarmUp(2, 5, compiling=True, part="sum tree")
        finally:
            registry.shutdown()


_WARM_WORKER = r"""
import sys

from rdqn.serve.worker import warm_up

warm_up()
print(sorted(name for name in ("pandas", "plotly", "streamlit") if name in sys.modules))
"""


@pytest.mark.slow
def test_the_zygote_warm_up_loads_no_pandas() -> None:
    """The zygote's warm-up is what a first run on a fresh server waits for: the run store
    loads pandas (about 0.3 s) with its first table read, which a worker that trains never
    makes; nor does the warm-up draw anything."""
    output = fresh_python(_WARM_WORKER)
    assert output.strip() == "[]"


_DEMO_PART = r"""
import sys

from rdqn.serve.worker import WARM_UP_PARTS

for name, part in WARM_UP_PARTS:
    part()
    print(name.replace(" ", "-"), "torch._dynamo" in sys.modules)
"""


def test_the_warm_up_loads_torch_dynamo_only_for_checkpoints() -> None:
    """The parts a run waits for (`RUN_START_PARTS`: the demo's first) train without a torch
    optimizer, whose import of torch._dynamo is most of a second of CPU in one piece; a
    checkpoint builds one, in the parts the zygote loads once its first run is on its way."""
    output = fresh_python(_DEMO_PART)
    assert output.splitlines() == [
        "proportional-replay False",
        "fused-MLP-update False",
        "sum-tree False",
        "uniform-replay False",
        "rank-replay False",
        "checkpoint-and-resume True",
        "recurrent-net True",
    ]
    assert [name for name, _ in RUN_START_PARTS][-1] == "rank replay"
