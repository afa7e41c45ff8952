"""Sweeps started from the page: the form's grid checked as the command line checks it, kept
small, one per browser at a time, trained in the server's registry as that browser's runs, and
stopped on request with every trial recorded 'stopped'."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rdqn.dashboard.sweep_jobs import (
    PAGE_MAX_ENV_STEPS,
    PAGE_MAX_TRIALS,
    SweepJobs,
    page_spec,
    trials_to_run,
)
from rdqn.runs.schema import FINAL_STATUSES
from rdqn.runs.store import RunStore
from rdqn.serve.executors import ThreadExecutor
from rdqn.serve.registry import RunRegistry
from rdqn.sweeps import GridError, SweepSpec, list_sweeps, sweep_trials
from rdqn.sweeps.records import save_spec
from tests.dashboard.sweep_cases import hand_sweep
from tests.run_helpers import wait_for
from tests.sweeps.sweep_helpers import file_trial


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    with RunStore(tmp_path / "rdqn.db") as s:
        yield s


@pytest.fixture
def registry(store: RunStore) -> Iterator[RunRegistry]:
    runs = RunRegistry(store, executor=ThreadExecutor(), max_active=1)
    yield runs
    runs.shutdown()


@pytest.mark.parametrize(
    ("axes", "message"),
    [
        ([("replay.alpha", "0, 2")], "grid entry replay.alpha=2: replay.alpha must be in"),
        ([("replay.alpha", "")], "grid entry replay.alpha: an empty list"),
        ([("replay.alpah", "0")], "grid entry replay.alpah: unknown config field"),
        ([("replay.alpha", "0"), ("replay.alpha", "1")], "--grid replay.alpha: given twice"),
        ([("replay.alpha", "0, 0.0")], "grid entry replay.alpha: the value 0.0 is given twice"),
    ],
)
def test_the_forms_grid_is_refused_as_the_command_line_refuses_it(
    axes: list[tuple[str, str]], message: str
) -> None:
    with pytest.raises(GridError, match=message):
        page_spec("chain-lesson", axes, 2, 300)


def test_the_form_reads_values_as_grid_takes_them() -> None:
    spec = page_spec(
        "chain-lesson", [("replay.alpha", "0, 0.6"), (None, "ignored"), ("replay.scheme", "rank")],
        3, 300,
    )  # fmt: skip
    assert spec.grid == {"replay.alpha": (0.0, 0.6), "replay.scheme": ("rank",)}
    assert spec.seeds == (0, 1, 2) and spec.steps == 300


def test_only_unfinished_trials_count_against_the_pages_size(store: RunStore) -> None:
    spec = hand_sweep(store)  # 8 trials of 100 steps, 5 of them finished
    assert trials_to_run(spec, store) == (3, 300)


def test_a_sweep_too_large_for_the_page_is_refused_before_anything_is_filed(
    store: RunStore, registry: RunRegistry
) -> None:
    values = ", ".join(str(k / 100) for k in range(PAGE_MAX_TRIALS + 1))
    many = page_spec("chain-lesson", [("replay.alpha", values)], 1, 100)
    with pytest.raises(GridError, match=f"would run {PAGE_MAX_TRIALS + 1} trials .* at most"):
        SweepJobs().start(many, "owner-a", store, registry)
    steps = PAGE_MAX_ENV_STEPS // 2 + 1
    long = page_spec("chain-lesson", [("replay.alpha", "0, 1")], 1, steps)
    with pytest.raises(GridError, match=f"would run {2 * steps:,} env steps in all"):
        SweepJobs().start(long, "owner-a", store, registry)
    assert list_sweeps(store).empty and store.list_runs().empty


def test_a_sweep_trained_elsewhere_is_not_started_again(
    store: RunStore, registry: RunRegistry
) -> None:
    spec = SweepSpec.from_grid("chain-lesson", {"replay.alpha": [0, 1]}, seeds=1, steps=100)
    save_spec(store, spec)
    running = file_trial(store, spec, spec.trials()[1], "running")
    with pytest.raises(GridError, match=f"being run already .* run {running} running"):
        SweepJobs().start(spec, "owner-a", store, registry)


def test_a_finished_sweep_started_again_runs_nothing(
    store: RunStore, registry: RunRegistry
) -> None:
    spec = SweepSpec.from_grid("chain-lesson", {"replay.alpha": [0]}, seeds=1, steps=100)
    save_spec(store, spec)
    file_trial(store, spec, spec.trials()[0], "finished", [(50, 10, 1.0)])
    job = SweepJobs().start(spec, "owner-a", store, registry)
    assert job.done.wait(30)
    assert job.error is None and job.result is not None and job.result.complete
    assert job.result.skipped == 1 and len(store.list_runs()) == 1


@pytest.mark.slow
def test_a_started_sweep_is_its_browsers_runs_one_at_a_time_and_stops_on_request(
    store: RunStore, registry: RunRegistry
) -> None:
    """Two trials, a cap of one: one trains, one waits, both the owner's; a second sweep of the
    same owner is refused while it runs; Stop records both 'stopped' with the reason."""
    jobs = SweepJobs()
    spec = page_spec("chain-lesson", [("replay.alpha", "0, 1")], 1, 90_000)
    job = jobs.start(spec, "owner-a", store, registry)
    assert spec.id in list_sweeps(store)["sweep_id"].tolist()  # listed at once
    wait_for(
        lambda: (
            len(registry.runs("owner-a")) == 2
            and any(h.status == "running" for h in registry.runs("owner-a"))
        ),
        60,
        what=lambda: f"two runs of owner-a, one training: {registry.runs()}",
    )
    assert [h.expected_status for h in registry.runs("owner-a")].count("running") == 1
    other = page_spec("chain-lesson", [("replay.alpha", "0.5")], 1, 100)
    with pytest.raises(GridError, match=f"your sweep {spec.id} is still running"):
        jobs.start(other, "owner-a", store, registry)
    with pytest.raises(GridError, match="running already, started by another session"):
        jobs.start(spec, "owner-b", store, registry)

    jobs.stop(spec.id, "stopped: by its owner on the Sweeps page")
    assert job.done.wait(60), "the sweep did not end after its Stop"
    trials = sweep_trials(store, spec)
    assert set(trials["status"]) == {"stopped"}
    assert set(trials["error"]) == {"stopped: by its owner on the Sweeps page"}
    assert all(h.status in FINAL_STATUSES for h in registry.runs())
    assert job.error is None
