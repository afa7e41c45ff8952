"""Running sweeps on the serving layer: every trial a recorded run, a rerun skips finished ones,
a failing trial is recorded and the sweep goes on, a stop leaves every trial's state true and a
rerun resumes it, a killed worker's trial is run again, Ray's actors relay their writes to the
driver, and a trial whose Ray actor is killed (as a lost node's are) is run again. Trials are
tiny chain-lesson runs (300 env steps: about a second)."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from rdqn.runs.resume import resume_blocker
from rdqn.runs.store import RunStore
from rdqn.serve.executors import ProcessExecutor
from rdqn.serve.registry import RunRegistry
from rdqn.sweeps import SweepBusy, SweepProgress, SweepSpec, run_sweep, sweep_trials
from rdqn.sweeps.runner import lost_worker, ray_gone

PRESET = "chain-lesson"


class _KeptExecutor(ProcessExecutor):
    """One zygote for the module's sweeps: a registry's shutdown leaves it open."""

    def close(self) -> None:
        """Kept for the next test (`end`)."""

    def end(self) -> None:
        super().close()


@pytest.fixture(scope="module")
def executor() -> Iterator[_KeptExecutor]:
    kept = _KeptExecutor(capacity=2)
    kept.prepare()
    yield kept
    kept.end()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    with RunStore(tmp_path / "rdqn.db") as s:
        yield s


def registry(store: RunStore, executor: ProcessExecutor) -> RunRegistry:
    return RunRegistry(store, executor=executor, max_active=2, idle_timeout=None)


def group(store: RunStore, spec: SweepSpec) -> dict[str, str]:
    """Run id -> status of the sweep's runs."""
    frame = store.list_runs(group_id=spec.id)
    return dict(zip(frame["id"], frame["status"], strict=True))


@pytest.mark.slow
def test_every_trial_is_a_recorded_run_and_a_rerun_skips_the_finished(store: RunStore) -> None:
    spec = SweepSpec.from_grid(PRESET, {"replay.alpha": [0, 0.6]}, seeds=2, steps=300)
    heard: list[SweepProgress] = []
    result = run_sweep(spec, store, workers=2, progress=heard.append)
    assert result.complete and result.stopped is None and result.sweep_id == spec.id
    assert [o.key for o in result.trials] == [t.key for t in spec.trials()]
    assert [(o.status, o.runs) for o in result.trials] == [("finished", 1)] * 4
    runs = group(store, spec)
    assert sorted(runs) == sorted(o.run_id for o in result.trials)
    assert set(runs.values()) == {"finished"}
    for outcome, trial in zip(result.trials, spec.trials(), strict=True):
        record = store.get_run(outcome.run_id)
        assert (record.env_steps, record.group_id, record.seed) == (300, spec.id, trial.seed)
        assert record.config["replay"]["alpha"] == trial.overrides["replay.alpha"]
        assert record.manifest is not None and not store.metrics.episodes(outcome.run_id).empty
    assert heard[-1].finished == 4 and heard[-1].running == heard[-1].queued == 0
    assert max(p.running for p in heard) <= 2  # two workers

    again = run_sweep(spec, store, workers=2, progress=False)
    assert again.complete and again.skipped == 4
    assert [o.run_id for o in again.trials] == [o.run_id for o in result.trials]
    assert group(store, spec) == runs  # nothing filed, nothing rerun


@pytest.mark.slow
def test_a_failing_trial_is_recorded_and_the_sweep_goes_on(
    store: RunStore, executor: ProcessExecutor
) -> None:
    # A trial on a device this machine lacks: valid settings (a web server checks them without
    # torch), which fail where the trial trains. (Its learning rate could once be 10^6 and
    # diverge; a step size is at most 1 now.)
    if torch.cuda.is_available():  # never on the project's machines (CPU only)
        pytest.skip("this machine has CUDA: a cuda trial would not fail")
    spec = SweepSpec.from_grid(PRESET, {"agent.device": ["cuda", "cpu"]}, seeds=1, steps=300)
    result = run_sweep(spec, store, registry=registry(store, executor), progress=False)
    diverged, fine = result.trials
    assert (fine.status, fine.runs) == ("finished", 1)
    assert (diverged.status, diverged.runs) == ("failed", 1)  # an error of its own: no retry
    assert "CUDA is not available" in (diverged.error or "") and not lost_worker(diverged.error)
    assert store.get_run(diverged.run_id).error == diverged.error
    assert not result.complete

    again = run_sweep(spec, store, registry=registry(store, executor), progress=False)
    assert [o.runs for o in again.trials] == [1, 0]  # the failed trial runs again, alone
    assert again.trials[1].run_id == fine.run_id
    table = sweep_trials(store, spec)
    assert list(table["runs"]) == [2, 1]


@pytest.mark.slow
def test_a_stop_leaves_every_trial_true_and_a_rerun_resumes_them(
    store: RunStore, executor: ProcessExecutor
) -> None:
    spec = SweepSpec.from_grid(PRESET, {"replay.alpha": [0, 0.6]}, seeds=2, steps=1500)

    def stop() -> str | None:
        training = [s for s in group(store, spec).values() if s == "running"]
        return "stopped by the test" if training else None

    result = run_sweep(spec, store, registry=registry(store, executor), stop=stop, progress=False)
    assert result.stopped == "stopped by the test"
    statuses = group(store, spec)
    assert len(statuses) == 4 and set(statuses.values()) <= {"finished", "stopped"}
    stopped = [run_id for run_id, status in statuses.items() if status == "stopped"]
    assert stopped, "the stop came before every trial finished"
    for run_id in stopped:
        assert store.get_run(run_id).error == "stopped by the test"
        assert resume_blocker(store, run_id) is None  # a resume checkpoint, or never started

    again = run_sweep(spec, store, registry=registry(store, executor), progress=False)
    assert again.complete
    assert sorted(o.run_id for o in again.trials) == sorted(statuses)  # resumed, same ids
    assert {o.run_id: o.runs for o in again.trials} == {
        run_id: int(run_id in stopped) for run_id in statuses
    }
    assert all(store.get_run(run_id).env_steps == 1500 for run_id in statuses)


@pytest.mark.slow
def test_a_worker_killed_mid_trial_is_run_again_once(
    store: RunStore, executor: ProcessExecutor
) -> None:
    spec = SweepSpec.from_grid(PRESET, {"replay.alpha": [0.6]}, seeds=2, steps=1500)
    killed: list[int] = []

    def kill_one_worker() -> None:
        """Kill the first worker seen training (its pid is the run's recorded owner)."""
        frame = store.list_runs(group_id=spec.id, status="running")
        for pid in frame["owner_pid"]:
            if not killed and pid != os.getpid():
                os.kill(int(pid), signal.SIGKILL)
                killed.append(int(pid))

    def stop() -> None:
        kill_one_worker()
        return None

    result = run_sweep(spec, store, registry=registry(store, executor), stop=stop, progress=False)
    assert killed and result.complete and result.stopped is None
    assert sorted(o.runs for o in result.trials) == [1, 2]
    [retried] = [o for o in result.trials if o.runs == 2]
    [lost] = [rid for rid, status in group(store, spec).items() if status == "failed"]
    error = store.get_run(lost).error
    assert error == "the worker process was killed by signal 9" and lost_worker(error)
    assert store.get_run(retried.run_id).status == "finished" and retried.run_id != lost


def test_a_sweep_that_a_live_process_trains_is_refused(store: RunStore) -> None:
    spec = SweepSpec.from_grid(PRESET, {"replay.alpha": [0.6]}, seeds=1, steps=300)
    config = spec.config(spec.trials()[0])
    run_id = store.create_run(**config.record_fields(), group_id=spec.id)
    store.set_status(run_id, "running")  # this process, alive
    with pytest.raises(SweepBusy, match=rf"sweep {spec.id} is being run already: .*{run_id}"):
        run_sweep(spec, store, progress=False)


@pytest.mark.slow
def test_on_a_local_ray_the_driver_records_every_trial(store: RunStore) -> None:
    spec = SweepSpec.from_grid(PRESET, {"replay.alpha": [0, 0.6, 1]}, seeds=1, steps=300)
    result = run_sweep(spec, store, workers=2, ray="local", progress=False)
    assert result.complete, [o.error for o in result.trials]
    for outcome in result.trials:
        record = store.get_run(outcome.run_id)
        # The actors relayed every write; this process made it (it owns the rows it wrote).
        assert (record.status, record.env_steps, record.owner_pid) == (
            "finished",
            300,
            os.getpid(),
        )
        assert record.manifest is not None and not store.metrics.episodes(outcome.run_id).empty


def _ray_actor_pids() -> dict[str, int]:
    """Name -> process id of the live Ray actors, from Ray's control store (the state API
    `ray.util.state` needs the dashboard, which the executors do not start)."""
    from ray._private.state import actors

    return {
        actor["Name"]: int(actor["Pid"])
        for actor in actors().values()
        if actor.get("State") == "ALIVE" and actor.get("Name") and actor.get("Pid")
    }


@pytest.mark.slow
def test_on_a_local_ray_an_actor_killed_mid_trial_is_run_again_once(store: RunStore) -> None:
    """As a lost node loses its actors: the process of a trial's actor is killed while the trial
    trains (env steps relayed); the driver records that run failed, files the trial again once,
    and the sweep finishes with every run's state true."""
    spec = SweepSpec.from_grid(PRESET, {"replay.alpha": [0.6]}, seeds=2, steps=2000)
    killed: list[str] = []

    def kill_an_actor_mid_trial() -> None:
        """Kill the actor of the first run seen training with steps recorded (SIGKILL)."""
        if killed:
            return None
        frame = store.list_runs(group_id=spec.id, status="running")
        training = frame.loc[frame["env_steps"] > 0, "id"].tolist()
        pids = _ray_actor_pids() if training else {}
        for run_id in training:
            pid = pids.get(f"rdqn-run-{run_id}")
            if pid is not None and pid != os.getpid():
                os.kill(pid, signal.SIGKILL)
                killed.append(run_id)
                break
        return None

    result = run_sweep(
        spec, store, workers=2, ray="local", stop=kill_an_actor_mid_trial, progress=False
    )
    assert killed, "no trial was seen training"
    assert result.complete and result.stopped is None, [o.error for o in result.trials]
    assert sorted(o.runs for o in result.trials) == [1, 2]
    [lost] = killed
    record = store.get_run(lost)
    assert record.status == "failed" and lost_worker(record.error), record.error
    # One line for the pages students see; Ray's ~1 kB (address, namespace, pid) is in the log.
    assert re.fullmatch(
        r"the Ray actor was lost \(\w+; the server's log has Ray's details\)", record.error or ""
    ), record.error
    assert record.env_steps > 0  # its rows up to the last relayed batch are kept
    [retried] = [o for o in result.trials if o.runs == 2]
    assert retried.run_id != lost and retried.status == "finished"
    runs = group(store, spec)
    assert sorted(runs.values()) == ["failed", "finished", "finished"]  # no run left 'running'
    for run_id, status in runs.items():
        record = store.get_run(run_id)
        assert record.owner_pid == os.getpid()  # the driver made every write
        if status == "finished":
            assert record.env_steps == 2000 and record.manifest is not None
    table = sweep_trials(store, spec)
    assert list(table["status"]) == ["finished", "finished"] and sorted(table["runs"]) == [1, 2]


def test_an_error_saying_ray_itself_lost_a_process_is_told_apart() -> None:
    line = "Ray lost its raylet (killed by SIGKILL) before the run started; Ray's details are in "
    line += "the log"
    assert ray_gone(line) and ray_gone(f"not resumed: {line}") and ray_gone(f"stopped; {line}")
    assert ray_gone("Ray did not start here within 60 s (...); Ray's details are in the log")
    assert not ray_gone(
        "the Ray actor was lost (ActorDiedError; the server's log has Ray's details)"
    )
    assert not ray_gone(None) and not lost_worker(line)  # not retried: no retry helps
