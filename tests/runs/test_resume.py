"""Tests for rdqn.runs.resume: a stopped run resumes under its id, after a restart too.

The key check trains one config uninterrupted and once stopped (between two episodes, or inside
one), resumed by
a fresh store object and a fresh trainer (as after a server restart), and compares everything
the store holds about the two runs: they must agree bit for bit but for wall times.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
import torch

from rdqn.presets import preset
from rdqn.runs.checkpoints import checkpoint_bytes, load_checkpoint, save_checkpoint
from rdqn.runs.control import RunControls, drive
from rdqn.runs.lifecycle import RecordedRun, run_to_end
from rdqn.runs.resume import (
    ResumeError,
    resumable,
    resume_blocker,
    resume_point,
)
from rdqn.runs.store import RunStore
from rdqn.serve.executors import Executor, ThreadExecutor
from rdqn.serve.handle import RunHandle
from rdqn.serve.registry import RunRegistry, ServerBusy
from rdqn.training.trainer import Trainer
from tests.run_helpers import tiny, wait_for
from tests.runs.store_helpers import new_run


def step_to_an_episode_end(trainer: Trainer, after: int) -> None:
    while trainer.env_steps < after or trainer.recorder.episode_end_steps[-1:] != [
        trainer.env_steps
    ]:
        trainer.step()


def stopped_run(store: RunStore, config, steps: int, *, at_episode_end: bool = True) -> str:  # noqa: ANN001
    """A run of ``config`` trained ``steps`` env steps (then on to an episode end), stopped."""
    run = RecordedRun(config, store)
    trainer = run.open()
    if at_episode_end:
        step_to_an_episode_end(trainer, steps)
    else:  # inside an episode
        trainer.run(steps=steps)
        while trainer.recorder.episode_end_steps[-1:] == [trainer.env_steps]:
            trainer.step()
    run.record_progress()
    run.close("stopped", "stopped by its owner")
    assert run.id is not None
    return run.id


def resume_here(store: RunStore, run_id: str) -> RecordedRun:
    """The stopped run ``run_id`` opened to resume in this process, as the command line does:
    its checkpoint checked whole, restored, and the run taken."""
    point = resume_point(store, run_id)
    run = RecordedRun(point.config, store, resume=point)
    run.open()
    return run


def metrics(store: RunStore, run_id: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    return (
        store.metrics.episodes(run_id).drop(columns="wall_time"),
        store.metrics.steps(run_id).drop(columns="wall_time"),
    )


def assert_contiguous_rows(store: RunStore, run_id: str, log_every: int) -> None:
    """One episode row per episode and one step row per logged update: none repeated or lost."""
    record = store.get_run(run_id)
    assert store.metrics.episodes(run_id)["episode"].tolist() == list(range(1, record.episodes + 1))
    expected = list(range(log_every, record.updates + 1, log_every))
    assert store.metrics.steps(run_id)["updates"].tolist() == expected


@pytest.mark.parametrize("at_episode_end", [True, False], ids=["between", "inside"])
def test_a_stopped_run_resumed_after_a_restart_matches_the_run_never_stopped(
    tmp_path: Path, at_episode_end: bool
) -> None:
    """Stopped between two episodes or inside one (its episode row, written when it ends after
    the resume, is whole); its greedy evaluations go on as they would have."""
    config = tiny(400, **{"train.eval_every": 100, "train.eval_episodes": 2})
    with RunStore(tmp_path / "rdqn.db") as store:
        whole = run_to_end(RecordedRun(config, store)).id
        run_id = stopped_run(store, config, 150, at_episode_end=at_episode_end)
        stopped = store.get_run(run_id)
        assert stopped.resume_env_steps == stopped.env_steps >= 150
    with RunStore(tmp_path / "rdqn.db") as store:  # a new server, same files
        assert resumable(store, run_id) and resume_blocker(store, run_id) is None
        point = resume_point(store, run_id)
        assert point.recorded.env_steps == stopped.env_steps
        assert point.checkpoint == Path(stopped.checkpoint_path)
        assert store.get_run(run_id) == stopped  # nothing changes before the run opens
        run = RecordedRun(point.config, store, resume=point)
        assert run.open().env_steps == stopped.env_steps
        assert store.get_run(run_id).status == "running"
        assert run_to_end(run).status == "finished"

        ran_through, resumed = store.get_run(whole), store.get_run(run_id)
        assert (resumed.status, resumed.error, resumed.resume_env_steps) == ("finished", None, None)
        for field in ("env_steps", "updates", "episodes", "config", "name"):
            assert getattr(resumed, field) == getattr(ran_through, field), field
        for expected, got in zip(metrics(store, whole), metrics(store, run_id), strict=True):
            pd.testing.assert_frame_equal(expected, got)
        evaluations = store.metrics.evaluations(whole)
        assert evaluations["env_steps"].tolist() == [100, 100, 200, 200, 300, 300, 400, 400]
        pd.testing.assert_frame_equal(evaluations, store.metrics.evaluations(run_id))
        curve = run.trainer.evaluations
        assert curve.env_steps.tolist() == [100, 200, 300, 400]  # those before the stop too
        assert curve.returns.ravel().tolist() == evaluations["return"].tolist()
        first, second = (
            load_checkpoint(ran_through.checkpoint_path),
            load_checkpoint(resumed.checkpoint_path),
        )
        assert first["counters"] == second["counters"] and "resume" not in second
        for part in ("online", "target"):
            for name, tensor in first["agent"][part].items():
                assert torch.equal(tensor, second["agent"][part][name]), (part, name)
        assert first["agent"]["explore_rng"] == second["agent"]["explore_rng"]
        assert resumed.manifest["counters"] == ran_through.manifest["counters"]


def test_a_resume_checkpoint_loads_weights_only(tmp_path: Path) -> None:
    config = tiny(300)
    with RunStore(tmp_path / "rdqn.db") as store:
        run_id = stopped_run(store, config, 100)
        path = store.get_run(run_id).checkpoint_path
    raw = torch.load(path, weights_only=True)
    assert raw["version"] == 3 and "resume" in raw
    trainer = Trainer(config)  # the old weights-only path: load the agent, nothing else
    trainer.agent.load_state_dict(raw["agent"])
    for name, tensor in trainer.agent.online.state_dict().items():
        assert torch.equal(tensor, raw["agent"]["online"][name])


def test_a_paused_run_can_be_resumed_from_its_pause_if_its_process_dies(tmp_path: Path) -> None:
    """A pause writes the rows and a resume checkpoint. The run goes on, then its process dies
    (nothing closes it); at the next start the store marks it stopped, and resuming it drops
    the rows written after the pause and goes on from there."""
    config = tiny(400, **{"train.log_every": 1})
    with RunStore(tmp_path / "rdqn.db") as store:
        run = RecordedRun(config, store)
        trainer = run.open()
        trainer.run(steps=150)
        assert run.save_resume_point()
        assert not run.save_resume_point()  # nothing new to save
        paused = store.get_run(run.id)
        assert paused.resume_env_steps == paused.env_steps == 150
        assert len(store.metrics.episodes(run.id)) == trainer.episodes  # the rows are flushed
        trainer.run(steps=100)
        run.record_progress()
        run._writer.flush()  # the rows of the lost stretch reach the store, then the crash
        assert store.get_run(run.id).env_steps == 250
    with RunStore(tmp_path / "rdqn.db") as store:
        assert store.mark_interrupted() == 1
        assert resumable(store, run.id)
        resumed = resume_here(store, run.id)
        assert store.get_run(run.id).env_steps == resumed.trainer.env_steps == 150
        assert store.metrics.steps(run.id)["updates"].max() == resumed.trainer.updates
        run_to_end(resumed)
        assert store.get_run(run.id).env_steps == 400
        assert_contiguous_rows(store, run.id, log_every=1)
    trainer.close()


def test_drive_saves_a_resume_checkpoint_when_the_run_pauses(tmp_path: Path) -> None:
    with RunStore(tmp_path / "rdqn.db") as store:
        run = RecordedRun(tiny(1_000_000), store)
        controls = RunControls(speed=500.0)
        snapshots = []
        loop = threading.Thread(target=drive, args=(run, controls, snapshots.append))
        loop.start()
        wait_for(lambda: snapshots and snapshots[-1].env_steps >= 50)
        controls.pause()
        wait_for(lambda: store.get_run(run.id).resume_env_steps is not None)
        record = store.get_run(run.id)
        assert record.status == "paused"
        assert record.resume_env_steps == record.env_steps == run.trainer.env_steps
        controls.stop("stopped by its owner")
        loop.join(10)
        assert resumable(store, run.id)


# ------------------------------------------------------------------------ the registry
class RelayingThreadExecutor(ThreadExecutor):
    """Threads that cannot open the server's store: every write is relayed, and a resumed run's
    checkpoint travels as bytes (as for a Ray worker on another machine)."""

    shares_store = False


@pytest.fixture(params=["thread", "relayed"])
def executor(request: pytest.FixtureRequest) -> Executor:
    """Worker processes: `tests/runs/test_executors.py`, which shares one warm zygote."""
    return ThreadExecutor() if request.param == "thread" else RelayingThreadExecutor()


def test_the_registry_resumes_a_stopped_run_under_its_id_after_a_restart(
    executor: Executor, tmp_path: Path
) -> None:
    config = tiny(600, **{"train.log_every": 5})
    with RunStore(tmp_path / "rdqn.db") as store:
        handle = RunHandle(config, store=store, executor=executor, speed=400.0).start()
        wait_for(lambda: (s := handle.snapshot()) is not None and s.env_steps >= 100, 60)
        handle.stop(reason="stopped by its owner")
        assert handle.status == "stopped"
        stopped = store.get_run(handle.id)
        assert stopped.env_steps < 600 and stopped.resume_env_steps == stopped.env_steps
    with RunStore(tmp_path / "rdqn.db") as store:  # the server restarts
        registry = RunRegistry(store, executor=executor, max_active=1, idle_timeout=None)
        resumed = registry.resume(handle.id, owner="tab")
        assert resumed.id == handle.id and registry.get(handle.id) is resumed
        assert resumed.join(120)
        assert (resumed.status, resumed.error) == ("finished", None)
        record = store.get_run(handle.id)
        assert (record.status, record.env_steps, record.updates) == ("finished", 600, 600 - 32)
        assert_contiguous_rows(store, handle.id, log_every=5)
        snapshot = resumed.snapshot()  # the telemetry carried on too
        assert len(snapshot.episode_returns) == record.episodes == snapshot.episodes
        with pytest.raises(ResumeError, match=f"cannot resume run {handle.id}: it finished"):
            registry.resume(handle.id)
        registry.shutdown()


def test_runs_stopped_by_a_shutdown_resume_queued_ones_from_the_start(tmp_path: Path) -> None:
    with RunStore(tmp_path / "rdqn.db") as store:
        registry = RunRegistry(store, max_active=1)
        running, queued = registry.enqueue([tiny(1_000_000), tiny(300, seed=1)])
        wait_for(lambda: (s := running.snapshot()) is not None and s.env_steps >= 50)
        registry.shutdown()
        assert resumable(store, running.id) and resumable(store, queued.id)
        assert store.get_run(queued.id).checkpoint_path is None  # never started
    with RunStore(tmp_path / "rdqn.db") as store:
        registry = RunRegistry(store, max_active=1, idle_timeout=None)
        stored_steps = store.get_run(running.id).env_steps
        again = registry.resume(running.id)  # it takes the one training slot
        with pytest.raises(ServerBusy, match="server busy"):
            registry.resume(queued.id)
        assert store.get_run(queued.id).status == "stopped"  # a refused resume changes nothing
        waiting = registry.resume(queued.id, queue=True)
        assert (waiting.status, registry.position(queued.id)) == ("created", (1, 1))
        with pytest.raises(ResumeError, match=f"cannot resume run {queued.id}: it is queued"):
            registry.resume(queued.id, queue=True)
        wait_for(lambda: again.snapshot() is not None)
        assert again.snapshot().env_steps >= stored_steps >= 50  # on from where it stopped
        registry.pause(again.id)  # its slot goes to the queued run
        with pytest.raises(ResumeError, match=f"cannot resume run {running.id}: it is paused"):
            registry.resume(running.id)
        assert waiting.join(60) and waiting.status == "finished"
        assert store.get_run(queued.id).env_steps == 300
        registry.shutdown()


# ------------------------------------------------------------------------- refusals
@pytest.mark.parametrize(
    ("status", "reason"),
    [
        ("created", "it has not started yet"),
        ("running", "it is running, not stopped"),
        ("paused", "it is paused, not stopped"),
        ("finished", "it finished"),
        ("failed", "it failed"),
    ],
)
def test_only_a_stopped_run_is_resumable(store: RunStore, status: str, reason: str) -> None:
    run_id = new_run(store)
    store.set_status(run_id, status)
    assert resume_blocker(store, run_id).startswith(reason)
    assert not resumable(store, run_id)


def test_a_stopped_run_is_resumable_with_a_resume_checkpoint_or_if_it_never_started(
    store: RunStore,
) -> None:
    never_started = new_run(store)
    store.set_status(never_started, "stopped")
    assert resumable(store, never_started)  # it starts from the beginning

    run_id = new_run(store)
    store.write_metrics(run_id, progress={"env_steps": 40, "updates": 8, "episodes": 2})
    store.set_status(run_id, "stopped")
    assert "has no checkpoint" in resume_blocker(store, run_id)
    path = store.save_checkpoint(run_id, b"weights only")
    assert "holds no resume state" in resume_blocker(store, run_id)
    store.save_checkpoint(run_id, b"resumable", resume_env_steps=40)
    assert store.get_run(run_id).resume_env_steps == 40 and resumable(store, run_id)
    path.unlink()
    assert resume_blocker(store, run_id) == f"its checkpoint {path} is missing"
    assert resume_blocker(store, "nope").startswith("there is no run with this id")


def test_what_cannot_be_resumed_says_which_run_and_why(tmp_path: Path) -> None:
    with RunStore(tmp_path / "rdqn.db") as store:
        finished = run_to_end(RecordedRun(tiny(100), store)).id
        with pytest.raises(ResumeError, match=f"cannot resume run {finished}: it finished"):
            resume_point(store, finished)
        with pytest.raises(ResumeError, match="cannot resume run nope: there is no run with"):
            resume_point(store, "nope")
        with pytest.raises(ResumeError, match="memory only cannot resume"):
            resume_point(None, finished)

        failed = RecordedRun(tiny(100), store)
        failed.open()
        failed.close("failed", "ValueError: bad")
        with pytest.raises(ResumeError, match="it failed; only a stopped run can be resumed"):
            resume_point(store, failed.id)

        running = RecordedRun(tiny(100), store)
        running.open()
        with pytest.raises(ResumeError, match=f"cannot resume run {running.id}: it is running"):
            resume_point(store, running.id)
        running.close("finished")

        # A run stopped before resuming existed: its checkpoint holds weights only.
        old = stopped_run(store, tiny(300), 100)
        path = store.get_run(old).checkpoint_path
        state = load_checkpoint(path)
        del state["resume"]
        torch.save({"format": "rdqn-checkpoint", "version": 1, **state}, path)
        store.set_checkpoint(old, path)
        assert not resumable(store, old)
        registry = RunRegistry(store)
        with pytest.raises(ResumeError, match="its checkpoint holds no resume state"):
            registry.resume(old)
        registry.shutdown()
        assert store.get_run(old).status == "stopped"

        gone = stopped_run(store, tiny(300), 100)
        Path(store.get_run(gone).checkpoint_path).unlink()
        with pytest.raises(ResumeError, match=r"its checkpoint .*\.pt is missing"):
            resume_point(store, gone)

        # A checkpoint that claims to resume but does not (written by hand, say).
        forged = stopped_run(store, tiny(300), 100)
        forged_path = store.get_run(forged).checkpoint_path
        save_checkpoint(state, forged_path)
        before = store.get_run(forged)
        with pytest.raises(ResumeError, match="holds no resume state"):
            resume_here(store, forged)
        assert store.get_run(forged) == before


def test_a_run_cut_off_inside_a_step_stops_without_a_resume_state(tmp_path: Path) -> None:
    with RunStore(tmp_path / "rdqn.db") as store:
        run = RecordedRun(tiny(300), store)
        trainer = run.open()
        trainer.run(steps=50)
        obs = trainer.buffer.storage.obs[0].reshape(trainer.obs_shape)
        trainer.buffer.add(obs, 0, 0.0, obs, False, False)  # Ctrl-C between add and count
        run.close("stopped", "interrupted by the user")
        record = store.get_run(run.id)
        assert (record.status, record.resume_env_steps) == ("stopped", None)
        assert record.checkpoint_path is not None
        assert "cut off inside a step" in resume_blocker(store, run.id)


def test_a_resumed_run_whose_worker_cannot_start_stays_resumable(tmp_path: Path) -> None:
    class CannotLaunch(ThreadExecutor):
        def launch(self, spec: object) -> None:  # type: ignore[override]
            raise RuntimeError("no worker today")

    with RunStore(tmp_path / "rdqn.db") as store:
        run_id = stopped_run(store, tiny(300), 100)
        registry = RunRegistry(store, executor=CannotLaunch())
        before = store.get_run(run_id)
        with pytest.raises(RuntimeError, match="no worker today"):
            registry.resume(run_id)
        handle = registry.get(run_id)
        assert handle.status == "stopped"
        assert handle.error == "not resumed: RuntimeError: no worker today"
        assert store.get_run(run_id) == before  # stopped, resumable, its reason kept
        assert resumable(store, run_id)
        registry.shutdown()


# ------------------------------------------------------------------ damaged checkpoints
def test_the_registry_refuses_a_damaged_checkpoint_and_changes_nothing(
    executor: Executor, tmp_path: Path
) -> None:
    """A checkpoint whose bytes no longer match their digest is refused before a
    worker starts, in `RunRegistry.resume` as at the command line."""
    with RunStore(tmp_path / "rdqn.db") as store:
        run_id = stopped_run(store, tiny(300), 100)
        before = store.get_run(run_id)
        path = Path(before.checkpoint_path)
        data = bytearray(path.read_bytes())
        data[len(data) // 3] ^= 0x04
        path.write_bytes(bytes(data))
        registry = RunRegistry(store, executor=executor)
        with pytest.raises(ResumeError) as refused:
            registry.resume(run_id)
        registry.shutdown()
        assert str(refused.value) == (
            f"cannot resume run {run_id}: checkpoint {path} is damaged (digest mismatch); the "
            "run stays listed with its rows"
        )
        assert store.get_run(run_id) == before


def paused_run_that_ran_on_and_died(home: Path) -> tuple[str, int]:
    """A run paused at 150 env steps (rows and a resume checkpoint saved), that ran on to 250
    (its rows written) and whose process then died: marked 'stopped' by the next store. Returns
    its id and the number of its episode rows."""
    config = tiny(400, **{"train.log_every": 1})
    with RunStore(home / "rdqn.db") as store:
        run = RecordedRun(config, store)
        trainer = run.open()
        trainer.run(steps=150)
        assert run.save_resume_point()
        trainer.run(steps=100)
        run._writer.flush()  # type: ignore[union-attr]
        assert run.id is not None
        run_id = run.id
    trainer.close()
    with RunStore(home / "rdqn.db") as store:
        assert store.mark_interrupted() == 1
        return run_id, len(store.metrics.episodes(run_id))


def edit_checkpoint(store: RunStore, run_id: str) -> Path:
    """Set one weight of the run's checkpoint to NaN and save it again, with a valid digest."""
    path = Path(store.get_run(run_id).checkpoint_path)
    state = load_checkpoint(path)
    weights = state["agent"]["online"]
    weights[next(iter(weights))].view(-1)[0] = float("nan")
    save_checkpoint(state, path)
    return path


def test_a_refused_checkpoint_drops_no_rows_and_changes_nothing(tmp_path: Path) -> None:
    """Regression: resuming deleted the rows written after the checkpoint (the run paused, ran
    on, died) and set the run 'created' before the checkpoint was restored, so a checkpoint
    refused then had already cost the rows; now the whole checkpoint is checked first, and a
    refused resume changes nothing in the store."""
    run_id, rows = paused_run_that_ran_on_and_died(tmp_path)
    with RunStore(tmp_path / "rdqn.db") as store:
        path = edit_checkpoint(store, run_id)
        before = store.get_run(run_id)
        steps = store.metrics.steps(run_id)
        assert before.env_steps == 250 and before.resume_env_steps == 150

        with pytest.raises(ResumeError) as refused:
            resume_here(store, run_id)

        said = str(refused.value)
        assert said.startswith(f"cannot resume run {run_id}: checkpoint {path} is invalid: ")
        assert "agent: online weight" in said and "must be finite" in said
        assert said.endswith("; the run stays listed with its rows") and "\n" not in said
        assert store.get_run(run_id) == before
        assert len(store.metrics.episodes(run_id)) == rows
        pd.testing.assert_frame_equal(store.metrics.steps(run_id), steps)


def test_the_registry_refuses_an_edited_checkpoint_and_changes_nothing(
    executor: Executor, tmp_path: Path
) -> None:
    """A checkpoint edited and saved again with a valid digest passes the server's cheap
    checks; the run's worker refuses it before any row is dropped or its status changes (with
    the checkpoint's bytes too, relayed), and the run's handle ends 'stopped' with the one
    line the command line says."""
    run_id, rows = paused_run_that_ran_on_and_died(tmp_path)
    with RunStore(tmp_path / "rdqn.db") as store:
        path = edit_checkpoint(store, run_id)
        before = store.get_run(run_id)
        registry = RunRegistry(store, executor=executor)
        handle = registry.resume(run_id)
        assert handle.join(60)
        registry.shutdown()
        assert handle.status == "stopped"
        assert handle.error.startswith(
            f"cannot resume run {run_id}: checkpoint {path} is invalid: agent: "
        )
        assert handle.error.endswith("; the run stays listed with its rows")
        assert store.get_run(run_id) == before
        assert len(store.metrics.episodes(run_id)) == rows
        assert resumable(store, run_id)


def test_a_queued_resume_that_is_stopped_leaves_the_run_as_it_was(tmp_path: Path) -> None:
    """A resume waits in the queue with the run still 'stopped' in the store (its worker takes
    it); stopped before it started (a server shutting down, its owner going away), the record
    keeps its own reason."""
    with RunStore(tmp_path / "rdqn.db") as store:
        run_id = stopped_run(store, tiny(300), 100)
        before = store.get_run(run_id)
        registry = RunRegistry(store, max_active=1, idle_timeout=None)
        registry.start(tiny(1_000_000))
        queued = registry.resume(run_id, queue=True)
        assert store.get_run(run_id) == before
        registry.shutdown()
        assert (queued.status, queued.error) == ("stopped", "stopped: the server shut down")
        assert store.get_run(run_id) == before and resumable(store, run_id)


def test_a_resume_queued_while_its_record_changed_takes_the_run_only_as_checked(
    executor: Executor, tmp_path: Path
) -> None:
    """The server reads the run's record when the resume is asked for; a worker that can read
    the store reads it again as it opens the run and resumes, while one whose writes are relayed
    checks against the server's reading, and the store refuses to let it take a run recorded
    otherwise since: its handle ends 'stopped', the run as it was."""
    with RunStore(tmp_path / "rdqn.db") as store:
        run_id = stopped_run(store, tiny(300), 100)
        registry = RunRegistry(store, executor=executor, max_active=1, idle_timeout=None)
        busy = registry.start(tiny(1_000_000))
        resumed = registry.resume(run_id, queue=True)
        assert registry.position(run_id) == (1, 1)
        record = store.get_run(run_id)
        store.set_checkpoint(  # a newer file's record (its counters within the run's progress)
            run_id, record.checkpoint_path, resume_env_steps=record.resume_env_steps - 1
        )
        changed = store.get_run(run_id)
        registry.stop(busy.id)
        assert resumed.join(60)
        registry.shutdown()
        if executor.shares_store:
            assert resumed.status == "finished"
        else:
            assert (resumed.status, resumed.error) == (
                "stopped",
                f"cannot resume run {run_id}: its record changed while its checkpoint was "
                "checked; try again",
            )
            assert store.get_run(run_id) == changed


@pytest.mark.parametrize(
    ("counters", "said"),
    [
        ({"env_steps": 10**12}, "env_steps is 1,000,000,000,000, past the "),
        ({"env_steps": 0, "updates": 0, "episodes": 0}, "env_steps is 0, before env step "),
        ({"episodes": 10**6}, "episodes is 1,000,000, past the "),
    ],
)
def test_counters_other_than_the_store_recorded_are_refused(
    tmp_path: Path, counters: dict[str, int], said: str
) -> None:
    """Regression: counters of 10^12 env steps resumed a run straight to 'finished' at
    1,000,000,000,000 env steps; counters of 0 dropped every stored row. The counters must be
    no earlier than the store recorded for the checkpoint (`runs.resume_env_steps`) and no
    further than the run's progress."""
    with RunStore(tmp_path / "rdqn.db") as store:
        run_id = stopped_run(store, tiny(300), 100)
        path = Path(store.get_run(run_id).checkpoint_path)
        state = load_checkpoint(path)
        state["counters"].update(counters)
        save_checkpoint(state, path)
        before = store.get_run(run_id)
        rows = len(store.metrics.episodes(run_id))

        with pytest.raises(ResumeError) as refused:
            resume_here(store, run_id)

        assert str(refused.value).startswith(
            f"cannot resume run {run_id}: checkpoint {path} is invalid: counters: {said}"
        )
        assert store.get_run(run_id) == before
        assert len(store.metrics.episodes(run_id)) == rows


def test_a_checkpoint_newer_than_its_record_resumes_from_where_it_was_saved(
    tmp_path: Path,
) -> None:
    """The process died between writing a checkpoint file and recording it: the store still
    names the step of the one before. The file's counters lie between that step and the run's
    progress (its rows came first), so it resumes, from where it was saved."""
    with RunStore(tmp_path / "rdqn.db") as store:
        run_id = stopped_run(store, tiny(300), 100)
        record = store.get_run(run_id)
        saved_at = record.resume_env_steps
        assert saved_at is not None and saved_at > 10
        store.set_checkpoint(run_id, record.checkpoint_path, resume_env_steps=saved_at - 10)
        run = resume_here(store, run_id)
        assert run.trainer.env_steps == saved_at
        assert store.get_run(run_id).status == "running"
        run.close("stopped", "stopped by its owner")


def test_a_checkpoint_sent_as_bytes_is_refused_where_the_run_resumes_and_changes_nothing(
    tmp_path: Path,
) -> None:
    """A worker that cannot read the server's files is sent the checkpoint's bytes: should
    they not restore (here: an edited wall time), `RecordedRun.open` refuses them in one line
    naming the run and the server's file, ends the run 'stopped' with it (in memory) and leaves
    the store as it was."""
    with RunStore(tmp_path / "rdqn.db") as store:
        run_id = stopped_run(store, tiny(300), 100)
        point = resume_point(store, run_id)
        state = load_checkpoint(point.checkpoint)
        state["resume"]["wall_time"] = float("nan")
        before = store.get_run(run_id)
        sent = replace(point, data=checkpoint_bytes(state))
        run = RecordedRun(point.config, RelayingRecords(store), resume=sent)
        with pytest.raises(ResumeError) as refused:
            run.open()
        said = str(refused.value)
        assert said.startswith(f"cannot resume run {run_id}: checkpoint {point.checkpoint} is ")
        assert "wall_time must be a finite number of seconds >= 0, got nan" in said
        assert (run.status, run.error) == ("stopped", said)
        assert store.get_run(run_id) == before
        assert resumable(store, run_id)


class RelayingRecords:
    """A store's writes without its reads, as a worker's relay to the server makes them."""

    def __init__(self, store: RunStore) -> None:
        for name in ("set_status", "write_metrics", "set_manifest", "save_checkpoint"):
            setattr(self, name, getattr(store, name))


def test_records_give_a_checkpoint_under_the_folder_the_store_was_opened_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checkpoint paths are stored relative to the store's folder: a moved store's records
    (and so `resume_blocker`) name its own files, also when opened by a relative path."""
    with RunStore(tmp_path / "a" / "rdqn.db") as store:
        run_id = stopped_run(store, tiny(300), 100)
    (tmp_path / "a").rename(tmp_path / "b")
    monkeypatch.chdir(tmp_path)
    with RunStore(Path("b") / "rdqn.db") as store:
        expected = str(tmp_path / "b" / "checkpoints" / f"{run_id}.pt")
        assert store.get_run(run_id).checkpoint_path == expected
        assert list(store.list_runs()["checkpoint_path"]) == [expected]
        assert resume_point(store, run_id).checkpoint == Path(expected)


def test_a_finished_run_is_not_resumable_because_of_how_it_finished(store: RunStore) -> None:
    goal = preset("demo")
    run_id = new_run(store, config=goal.to_dict(), preset="demo")
    store.write_metrics(run_id, progress={"env_steps": 29_403, "updates": 7_000, "episodes": 99})
    store.set_status(run_id, "finished")
    assert resume_blocker(store, run_id) == (
        "it finished: it reached its goal, a mean return of 475 over 20 episodes"
    )
    spent = new_run(store, config=preset("per-notebook").to_dict())
    store.set_status(spent, "finished")
    assert resume_blocker(store, spent) == "it finished: its budget of steps is spent"


def test_a_checkpoint_path_that_is_a_folder_is_called_a_folder(store: RunStore) -> None:
    """It was called "missing"."""
    run_id = new_run(store)
    folder = store.checkpoint_dir / f"{run_id}.pt"
    folder.mkdir(parents=True)
    store.set_checkpoint(run_id, folder, resume_env_steps=0)
    store.set_status(run_id, "stopped")
    assert resume_blocker(store, run_id) == (
        f"its checkpoint {folder} is a folder, not a checkpoint file"
    )
