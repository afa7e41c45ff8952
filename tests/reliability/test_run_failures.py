"""A run that ends before its budget is never recorded as 'finished': failures are recorded.

Whoever drives the run (the CLI's `run_to_end`, a dashboard worker's `drive`), any exception ends
it 'failed' with the error stored, and a Ctrl-C 'stopped' with the reason. The faults tried: a
price CSV whose prices (1e300) overflow the reward, a divergence, exceptions, out-of-memory
errors, a loop that returns short of its budget without an error, and the process running it
killed (SIGKILL): marked interrupted, resumable from its last periodic checkpoint.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from pathlib import Path

import numpy as np
import pytest

from rdqn.cli import main
from rdqn.learn.agent import DivergenceError, DQNAgent
from rdqn.runs.lifecycle import RecordedRun, run_to_end
from rdqn.runs.store import RunStore
from rdqn.serve.handle import RunHandle
from rdqn.training.trainer import Trainer
from tests.run_helpers import tiny, wait_for

TINY = ["--steps", "200", "--quiet", "--set", "train.learning_starts=32"]
TINY += ["--set", "replay.capacity=256", "--set", "replay.batch_size=16"]


def cli_train(home: Path, *extra: str) -> int:
    return main(["--home", str(home), "train", *TINY, *extra])


def only_run(home: Path):  # noqa: ANN201
    with RunStore(home / "rdqn.db") as store:
        (run_id,) = store.list_runs()["id"]
        return store.get_run(run_id)


def crash_at(monkeypatch: pytest.MonkeyPatch, step: int, error: BaseException) -> None:
    real_step = Trainer.step

    def step_or_crash(self: Trainer) -> None:
        if self.env_steps == step:
            raise error
        real_step(self)

    monkeypatch.setattr(Trainer, "step", step_or_crash)


def test_a_csv_of_1e300_prices_is_refused_before_a_run_is_filed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Such prices once made the reward overflow mid-run and the run read 'finished'; now the
    CSV is refused at once (`rdqn.envs`), in one line naming the file, and nothing is filed."""
    prices = 1e300 * np.exp(np.cumsum(np.random.default_rng(0).normal(0.0, 0.01, 600)))
    csv = tmp_path / "prices.csv"
    csv.write_text("price\n" + "".join(f"{float(p)!r}\n" for p in prices), encoding="utf-8")
    kwargs = f'env.kwargs={{"prices_csv": "{csv}"}}'
    assert cli_train(tmp_path, "--env", "rdqn/SyntheticMarket-v0", "--set", kwargs) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("rdqn: error: ") and str(csv) in line
    with RunStore(tmp_path / "rdqn.db") as store:
        assert store.list_runs().empty


@pytest.mark.parametrize(
    ("error", "stored"),
    [
        (RuntimeError("boom"), "RuntimeError: boom"),
        (OverflowError("math range error"), "OverflowError: math range error"),
        (MemoryError(), "out of memory"),
        (MemoryError("cannot allocate 8 GiB"), "out of memory: cannot allocate 8 GiB"),
    ],
)
def test_an_exception_mid_training_fails_the_cli_run_with_the_error(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    error: BaseException,
    stored: str,
) -> None:
    crash_at(monkeypatch, 90, error)
    assert cli_train(tmp_path) == 1
    record = only_run(tmp_path)
    assert (record.status, record.env_steps) == ("failed", 90)
    assert record.error is not None and record.error.startswith(stored)
    err = capsys.readouterr().err
    assert f"run {record.id} failed: {record.error}" in err
    assert "Traceback" not in err


def test_a_diverging_run_fails_and_its_trainer_is_not_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def diverge(self: DQNAgent, batch: object) -> None:
        raise DivergenceError("non-finite loss at update 1")

    monkeypatch.setattr(DQNAgent, "learn", diverge)
    with RunStore(tmp_path / "rdqn.db") as store:
        run = run_to_end(RecordedRun(tiny(200), store))
        record = store.get_run(run.id)
    assert (record.status, record.error) == ("failed", "non-finite loss at update 1")
    assert record.env_steps < 200
    trainer = run.trainer
    assert trainer is not None and not trainer.done
    with pytest.raises(RuntimeError, match="failed"):
        trainer.step()


def test_a_loop_that_returns_short_of_its_budget_is_failed_not_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_run = Trainer.run

    def short(self: Trainer, steps: int | None = None, progress: object = None) -> Trainer:
        return real_run(self, 50)

    monkeypatch.setattr(Trainer, "run", short)
    with RunStore(tmp_path / "rdqn.db") as store:
        run = run_to_end(RecordedRun(tiny(200), store))
        record = store.get_run(run.id)
    assert (record.status, record.env_steps) == ("failed", 50)
    assert record.error == "training ended after 50 of 200 env steps without an error"


def test_an_exception_in_a_worker_fails_the_run_with_the_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dashboard's path: a worker (`rdqn.serve.worker.run_worker`, here on a thread so the
    fault can be injected) drives the run with `rdqn.runs.control.drive`."""
    crash_at(monkeypatch, 70, MemoryError())
    with RunStore(tmp_path / "rdqn.db") as store:
        handle = RunHandle(tiny(200), store=store).start()
        assert handle.join(30)
        record = store.get_run(handle.id)
    assert (handle.status, record.status, record.env_steps) == ("failed", "failed", 70)
    assert handle.error == record.error
    assert record.error is not None and record.error.startswith("out of memory")


AFTER_THE_CHECKPOINT = 50
"""Steps a run with ``hang_after_checkpoint`` takes after its first periodic checkpoint."""


def _train(home: Path, steps: int, hang_after_checkpoint: bool, checkpoint_every: str) -> None:
    os.environ["RDQN_CHECKPOINT_EVERY"] = checkpoint_every
    if hang_after_checkpoint:
        real_save, real_step = RecordedRun.save_resume_point, Trainer.step
        saved_at: list[int] = []

        def save_resume_point(self: RecordedRun) -> bool:
            saved = real_save(self)
            if saved and not saved_at and self.trainer is not None:
                saved_at.append(self.trainer.env_steps)
            return saved

        def step(self: Trainer) -> None:
            if saved_at and self.env_steps >= saved_at[0] + AFTER_THE_CHECKPOINT:
                signal.pause()  # until the test kills this process: the run cannot end first
            real_step(self)

        RecordedRun.save_resume_point = save_resume_point  # type: ignore[method-assign]
        Trainer.step = step  # type: ignore[method-assign]
    args = ["--home", str(home), "train", *TINY]
    args[args.index("200")] = str(steps)
    os._exit(main(args))


def start_cli_run(
    home: Path,
    steps: int = 200_000,
    hang_after_checkpoint: bool = False,
    checkpoint_every: str = "60",
) -> multiprocessing.process.BaseProcess:
    """A process running ``python -m rdqn train`` (`rdqn.cli.main`, what ``python -m rdqn``
    runs) of a tiny config; with ``hang_after_checkpoint``, its run stops stepping (and waits to
    be killed) `AFTER_THE_CHECKPOINT` steps after its first periodic checkpoint. Forked, not
    started afresh: the same code in a process of its own (its own pid and start time), without
    the seconds a fresh interpreter takes to import torch.
    """
    process = multiprocessing.get_context("fork").Process(
        target=_train, args=(home, steps, hang_after_checkpoint, checkpoint_every)
    )
    process.start()
    return process


def wait_for_progress(home: Path, process: multiprocessing.process.BaseProcess, condition) -> str:  # noqa: ANN001
    """Poll the store until its one run meets ``condition``; returns the run's id."""

    def run_meeting_it() -> str | None:
        assert process.is_alive(), f"the CLI run ended with exit code {process.exitcode}"
        if (home / "rdqn.db").exists():
            with RunStore(home / "rdqn.db") as store:
                runs = store.list_runs()
                if len(runs) and condition(store.get_run(runs["id"].iloc[0])):
                    return str(runs["id"].iloc[0])
        return None

    return wait_for(run_meeting_it, 60, what="the CLI run made no progress", every=0.1)


def kill(process: multiprocessing.process.BaseProcess) -> None:
    os.kill(process.pid, signal.SIGKILL)  # type: ignore[arg-type]
    process.join(10)


def test_a_killed_cli_run_is_marked_interrupted_and_can_be_deleted(tmp_path: Path) -> None:
    process = start_cli_run(tmp_path)
    try:
        run_id = wait_for_progress(
            tmp_path, process, lambda r: r.status == "running" and r.env_steps > 0
        )
    finally:
        kill(process)
    with RunStore(tmp_path / "rdqn.db") as store:
        record = store.get_run(run_id)
        assert (record.status, record.error) == (
            "stopped",
            "interrupted: the process running it ended",
        )
        assert record.env_steps > 0
        store.delete_run(run_id)
        assert store.list_runs().empty


def test_a_killed_cli_run_resumes_from_its_last_periodic_checkpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Killed (SIGKILL) after its first periodic checkpoint, the run loses only what came after
    it: ``python -m rdqn resume`` takes it from there to its budget."""
    # The first checkpoint comes at the first progress report past 0.01 s, long before the
    # budget's end; the run then hangs AFTER_THE_CHECKPOINT steps later, to be killed.
    process = start_cli_run(
        tmp_path, steps=1500, hang_after_checkpoint=True, checkpoint_every="0.01"
    )
    try:
        run_id = wait_for_progress(tmp_path, process, lambda r: r.resume_env_steps)
    finally:
        kill(process)
    with RunStore(tmp_path / "rdqn.db") as store:
        killed = store.get_run(run_id)
    assert killed.status == "stopped" and killed.checkpoint_path
    resume_at = killed.resume_env_steps
    assert resume_at is not None and 0 < resume_at < 1500
    assert main(["--home", str(tmp_path), "resume", run_id, "--quiet"]) == 0, capsys.readouterr()
    with RunStore(tmp_path / "rdqn.db") as store:
        record = store.get_run(run_id)
        episodes = store.metrics.episodes(run_id)["episode"].tolist()
    assert (record.status, record.error, record.env_steps) == ("finished", None, 1500)
    assert episodes == list(range(1, record.episodes + 1))  # none lost, none repeated
