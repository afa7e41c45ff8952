"""Tests for rdqn.runs.lifecycle: one code path records every run, whoever drives it.

The key check drives the same config once through the CLI (`python -m rdqn train`, in process)
and once as a dashboard background run (`RunHandle`), into one store, and compares everything
the store holds about the two runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import torch

from rdqn.cli import main
from rdqn.learn.agent import DivergenceError
from rdqn.presets import preset
from rdqn.runs import lifecycle
from rdqn.runs.checkpoints import load_checkpoint
from rdqn.runs.lifecycle import (
    CHECKPOINT_EVERY_S,
    RecordedRun,
    checkpoint_period,
    ending,
    next_checkpoint_gap,
    run_to_end,
)
from rdqn.runs.schema import FINAL_STATUSES
from rdqn.runs.store import RunStore, StoreError
from rdqn.serve.handle import RunHandle
from rdqn.training.trainer import Trainer
from tests.run_helpers import tiny

TINY_SET = {"train.learning_starts": 64, "replay.capacity": 256, "replay.batch_size": 16}


def test_the_cli_and_a_background_run_record_the_same_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    threads = torch.get_num_threads()
    args = ["--home", str(tmp_path), "train", "--steps", "300", "--quiet", "--seed", "3"]
    for key, value in TINY_SET.items():
        args += ["--set", f"{key}={value}"]
    try:
        assert main(args) == 0, capsys.readouterr().err
    finally:
        torch.set_num_threads(threads)
    with RunStore(tmp_path / "rdqn.db") as store:
        (cli_id,) = store.list_runs()["id"]
        config = preset("per-notebook").with_budget(300).with_overrides({**TINY_SET, "seed": 3})
        handle = RunHandle(config, store=store).start()
        assert handle.join(60)

        cli, bg = store.get_run(cli_id), store.get_run(handle.id)
        assert cli.config == bg.config == config.to_dict()
        for field in ("status", "error", "preset", "env_id", "scheme", "seed", "env_steps"):
            assert getattr(cli, field) == getattr(bg, field), field
        assert (cli.updates, cli.episodes) == (bg.updates, bg.episodes)
        assert (cli.status, cli.env_steps, cli.updates) == ("finished", 300, 300 - 64)
        for table in (store.metrics.episodes, store.metrics.steps):
            pd.testing.assert_frame_equal(
                table(cli_id).drop(columns="wall_time"), table(handle.id).drop(columns="wall_time")
            )
        assert len(store.metrics.episodes(cli_id)) == cli.episodes > 0
        assert cli.manifest is not None and bg.manifest is not None
        assert set(cli.manifest) == set(bg.manifest)
        for key in ("config", "inputs", "counters", "learner", "parameter_bytes", "seed"):
            assert cli.manifest[key] == bg.manifest[key], key
        assert cli.manifest["counters"]["env_steps"] == 300
        first, second = load_checkpoint(cli.checkpoint_path), load_checkpoint(bg.checkpoint_path)
        assert first["counters"] == second["counters"]
        for name, tensor in first["agent"]["online"].items():
            torch.testing.assert_close(tensor, second["agent"]["online"][name], rtol=0, atol=0)


def test_open_files_the_run_only_once_its_trainer_is_built(tmp_path: Path) -> None:
    bad = tiny().with_overrides({"env.kwargs": {"bogus": 1}})
    with RunStore(tmp_path / "rdqn.db") as store:
        run = RecordedRun(bad, store)
        with pytest.raises(ValueError, match="bogus"):
            run.open()
        assert run.id is None and store.list_runs().empty

        filed = RecordedRun(bad, store)
        run_id = filed.create()
        with pytest.raises(ValueError, match="bogus"):
            filed.open()
        record = store.get_run(run_id)
        assert (record.status, filed.status) == ("failed", "failed")
        assert "bogus" in record.error and record.error == filed.error


def test_statuses_move_through_the_store(tmp_path: Path) -> None:
    with RunStore(tmp_path / "rdqn.db") as store:
        run = RecordedRun(tiny(200), store, name="mine", group_id="g1")
        run_id = run.create()
        assert run.create() == run_id  # filed once
        assert store.get_run(run_id).status == "created"
        trainer = run.open(paused=True)
        assert store.get_run(run_id).status == "paused"
        run.mark("running")
        trainer.run(steps=120)
        run.record_progress()
        run.close("stopped", "stopped by the owner")
        record = store.get_run(run_id)
        assert (record.status, record.error, record.env_steps) == (
            "stopped",
            "stopped by the owner",
            120,
        )
        assert (record.name, record.group_id) == ("mine", "g1")
        assert record.manifest["counters"]["env_steps"] == 120
        assert load_checkpoint(record.checkpoint_path)["counters"]["env_steps"] == 120
        run.close("finished")  # closing twice changes nothing
        assert store.get_run(run_id).status == "stopped"
        with pytest.raises(ValueError, match="status must be one of"):
            run.close("paused")
        with pytest.raises(ValueError, match="'running' or 'paused'"):
            run.mark("finished")


def test_a_memory_only_run_has_an_id_and_a_lifecycle() -> None:
    run = run_to_end(RecordedRun(tiny(200)))
    assert run.id is not None and len(run.id) == 12
    assert run.status == "finished" and run.trainer is not None
    assert run.trainer.env_steps == 200


def test_a_run_that_reaches_its_goal_ends_finished_short_of_its_budget() -> None:
    """Every CartPole return is >= 0: a goal of 0 is reached at the 20th episode's end."""
    run = run_to_end(RecordedRun(tiny(2_000, **{"train.stop_at_return": 0.0})))
    assert (run.status, run.error) == ("finished", None)
    assert run.trainer is not None and run.trainer.episodes == 20
    assert run.trainer.env_steps < 2_000


def test_run_to_end_records_any_exception_as_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_step = Trainer.step

    def crash(self: Trainer) -> None:
        if self.env_steps == 90:
            raise OverflowError("math range error")
        real_step(self)

    monkeypatch.setattr(Trainer, "step", crash)
    with RunStore(tmp_path / "rdqn.db") as store:
        run = run_to_end(RecordedRun(tiny(200), store))
        record = store.get_run(run.id)
    assert (run.status, record.status) == ("failed", "failed")
    assert record.error == "OverflowError: math range error"
    assert record.env_steps == 90
    assert record.checkpoint_path and record.manifest["counters"]["env_steps"] == 90


def test_run_to_end_records_ctrl_c_as_stopped_and_reraises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_step = Trainer.step

    def interrupt(self: Trainer) -> None:
        if self.env_steps == 50:
            raise KeyboardInterrupt
        real_step(self)

    monkeypatch.setattr(Trainer, "step", interrupt)
    with RunStore(tmp_path / "rdqn.db") as store:
        run = RecordedRun(tiny(200), store)
        with pytest.raises(KeyboardInterrupt):
            run_to_end(run)
        record = store.get_run(run.id)
    assert (record.status, record.error, record.env_steps) == (
        "stopped",
        "interrupted by the user",
        50,
    )


def test_run_to_end_stops_between_two_steps_when_asked(tmp_path: Path) -> None:
    """``stop`` (a Ctrl-C handler's flag, `rdqn.cli.interrupts`) is read before every step: the
    run ends 'stopped' with its reason and a checkpoint that resumes it."""
    with RunStore(tmp_path / "rdqn.db") as store:
        run = RecordedRun(tiny(200), store)
        run_to_end(run, stop=lambda: "stopped by Ctrl-C" if run.trainer.env_steps >= 70 else None)
        record = store.get_run(run.id)
    assert (run.status, record.status, record.error) == ("stopped", "stopped", "stopped by Ctrl-C")
    assert record.env_steps == record.resume_env_steps == 70


def test_a_ctrl_c_that_cut_a_compiled_call_short_is_a_stop_and_propagates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: a KeyboardInterrupt inside a numba call surfaces as a SystemError caused by
    it; the run was filed 'failed'."""
    real_step = Trainer.step

    def numba_interrupted(self: Trainer) -> None:
        if self.env_steps == 50:
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt as err:
                raise SystemError(
                    "CPUDispatcher(<function _dqn_update>) returned a result with an exception set"
                ) from err
        real_step(self)

    monkeypatch.setattr(Trainer, "step", numba_interrupted)
    with RunStore(tmp_path / "rdqn.db") as store:
        run = RecordedRun(tiny(200), store)
        with pytest.raises(KeyboardInterrupt):
            run_to_end(run)
        record = store.get_run(run.id)
    assert (record.status, record.error) == ("stopped", "interrupted by the user")


def test_a_failing_checkpoint_still_ends_the_run_with_its_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("rdqn.runs.store.write_checkpoint", full_disk)
    with RunStore(tmp_path / "rdqn.db") as store:
        run = RecordedRun(tiny(200), store)
        run.open()
        with pytest.raises(StoreError, match="disk full while saving the checkpoint"):
            run.close("finished")
        record = store.get_run(run.id)
        folder = store.checkpoint_dir
    assert record.status == "failed"
    assert record.error == (
        f"disk full while saving the checkpoint of run {run.id} to {folder / run.id}.pt: free "
        f"space in {folder}"
    )


def _caused_by_ctrl_c() -> SystemError:
    error = SystemError("CPUDispatcher(<function _dqn_update>) returned a result with an ...")
    error.__cause__ = KeyboardInterrupt()
    return error


@pytest.mark.parametrize(
    ("error", "status", "reason"),
    [
        (KeyboardInterrupt(), "stopped", "interrupted by the user"),
        (_caused_by_ctrl_c(), "stopped", "interrupted by the user"),
        (DivergenceError("non-finite loss at update 7"), "failed", "non-finite loss at update 7"),
        (ValueError("bad"), "failed", "ValueError: bad"),
        (
            MemoryError(),
            "failed",
            "out of memory; lower replay.capacity, replay.window or replay.batch_size, "
            "or run fewer runs at once",
        ),
        (StoreError("disk full while saving x"), "failed", "disk full while saving x"),
    ],
)
def test_ending_maps_exceptions_to_statuses(error: BaseException, status: str, reason: str) -> None:
    assert ending(error) == (status, reason)
    assert status in FINAL_STATUSES


# -- periodic checkpoints ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "period"),
    [(None, CHECKPOINT_EVERY_S), ("", CHECKPOINT_EVERY_S), ("5", 5.0), (" 0.25 ", 0.25)]
    + [("0", None), ("off", None), ("OFF", None)],
)
def test_checkpoint_period_comes_from_rdqn_checkpoint_every(
    value: str | None, period: float | None
) -> None:
    environ = {} if value is None else {"RDQN_CHECKPOINT_EVERY": value}
    assert checkpoint_period(environ) == period


@pytest.mark.parametrize("value", ["-1", "abc", "nan", "inf", "1e999"])
def test_a_bad_checkpoint_period_names_the_variable(value: str) -> None:
    with pytest.raises(ValueError, match=f"RDQN_CHECKPOINT_EVERY .* got '{value}'"):
        checkpoint_period({"RDQN_CHECKPOINT_EVERY": value})
    with pytest.raises(ValueError, match="checkpoint_every must be > 0"):
        RecordedRun(tiny(), checkpoint_every=0.0)


def test_saving_takes_at_most_a_small_share_of_the_run() -> None:
    assert next_checkpoint_gap(60.0, 0.1) == 60.0
    assert next_checkpoint_gap(1.0, 0.1) == pytest.approx(0.1 / lifecycle.MAX_CHECKPOINT_SHARE)
    assert lifecycle.MAX_CHECKPOINT_SHARE <= 0.02


def test_the_cheaper_of_the_last_two_saves_spaces_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first save slowed by what it loads (or a moment of load) does not push the next one
    away; a disk slow save after save does."""
    now = [0.0]
    monkeypatch.setattr(lifecycle.time, "monotonic", lambda: now[0])
    costs: list[float] = []
    monkeypatch.setattr(
        lifecycle, "next_checkpoint_gap", lambda period, cost: (costs.append(cost), period)[1]
    )
    with RunStore(tmp_path / "rdqn.db") as store:
        run = RecordedRun(tiny(1000), store, checkpoint_every=1.0)
        trainer = run.open()
        for took in (5.0, 0.1, 0.2, 3.0, 4.0):
            trainer.step()
            now[0] += 1.5  # the period has passed
            monkeypatch.setattr(
                run, "save_resume_point", lambda t=took: now.__setitem__(0, now[0] + t)
            )
            run.record_progress()
        run.close("stopped")
    assert costs == pytest.approx([0.0, 0.1, 0.1, 0.2, 3.0])


def saved_checkpoints(store: RunStore, monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, ...]]:
    """Spy on the store's checkpoint saves: (resume env step or -1, env steps in the store)."""
    saves: list[tuple[int, ...]] = []
    real = store.save_checkpoint

    def spy(
        run_id: str, data: bytes, *, resume_env_steps: int | None = None, **chunks: Any
    ) -> Path:
        record = store.get_run(run_id)
        saves.append((-1 if resume_env_steps is None else resume_env_steps, record.env_steps))
        return real(run_id, data, resume_env_steps=resume_env_steps, **chunks)

    monkeypatch.setattr(store, "save_checkpoint", spy)
    return saves


def test_a_training_run_saves_a_resume_checkpoint_periodically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A tiny period stays tiny, whatever a save costs on a busy machine (the share rule, which
    # would space saves by their cost, has its own test).
    monkeypatch.setattr(lifecycle, "next_checkpoint_gap", lambda period, cost: period)
    with RunStore(tmp_path / "rdqn.db") as store:
        saves = saved_checkpoints(store, monkeypatch)
        run = run_to_end(RecordedRun(tiny(500), store, checkpoint_every=1e-6))
        record = store.get_run(run.id)
    assert record.status == "finished" and record.resume_env_steps is None
    periodic, final = saves[:-1], saves[-1]
    assert final == (-1, 500)
    assert len(periodic) >= 2
    for resume_at, stored_steps in periodic:
        # Between two steps, with the rows and counters up to that step already in the store.
        assert resume_at % 100 == 0 and 0 < resume_at < 500 and stored_steps == resume_at
    assert [s[0] for s in periodic] == sorted({s[0] for s in periodic})


def test_a_short_run_saves_no_periodic_checkpoint_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RDQN_CHECKPOINT_EVERY", raising=False)
    with RunStore(tmp_path / "rdqn.db") as store:
        saves = saved_checkpoints(store, monkeypatch)
        run = RecordedRun(tiny(300), store)
        assert run.checkpoint_every == CHECKPOINT_EVERY_S
        run_to_end(run)
    assert saves == [(-1, 300)]


def test_a_failing_periodic_checkpoint_fails_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full_disk(*args: object, **kwargs: object) -> None:
        raise StoreError("disk full while saving a checkpoint")

    with RunStore(tmp_path / "rdqn.db") as store:
        monkeypatch.setattr(store, "save_checkpoint", full_disk)
        run = run_to_end(RecordedRun(tiny(500), store, checkpoint_every=1e-6))
        record = store.get_run(run.id)
    assert (record.status, record.error) == ("failed", "disk full while saving a checkpoint")
    assert record.env_steps == 100
