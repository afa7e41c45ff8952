"""Tests for the command line (`python -m rdqn`): train, resume, compare, runs, presets, bad
arguments.

Every test gets its own run store under tmp_path and trains tiny runs (200 env steps).
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from rdqn.cli import main
from rdqn.compare import Curve, episodes_to_threshold
from rdqn.config import field_docs
from rdqn.learn.agent import DivergenceError
from rdqn.presets import PRESETS, preset
from rdqn.runs.checkpoints import load_checkpoint
from rdqn.runs.store import RunStore
from rdqn.training.trainer import Trainer
from tests.report_helpers import figure_in_page, trace_names

REPO = Path(__file__).resolve().parents[1]
STEPS = 200
TINY_SET = {"train.learning_starts": 64, "replay.capacity": 256, "replay.batch_size": 16}
TINY = ["--steps", str(STEPS), "--quiet"]
for _key, _value in TINY_SET.items():
    TINY += ["--set", f"{_key}={_value}"]
RUN_LINE = re.compile(
    r"^run ([0-9a-f]{12}): (\w+), ([\d,]+) env steps, ([\d,]+) updates, ([\d,]+) episodes, "
    r"mean return of the last 20 episodes (-?[\d.]+|nan)$"
)


@pytest.fixture(autouse=True)
def _restore_torch_threads() -> Iterator[None]:
    """main() sets torch's thread count process-wide; put it back for the other tests."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def cli(capsys: pytest.CaptureFixture[str], home: Path, *args: str) -> tuple[int, str, str]:
    code = main(["--home", str(home), *args])
    out, err = capsys.readouterr()
    return code, out, err


def train(capsys: pytest.CaptureFixture[str], home: Path, *extra: str) -> str:
    """Train one tiny run; return its id."""
    code, out, err = cli(capsys, home, "train", *TINY, *extra)
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 1, out
    match = RUN_LINE.match(lines[0])
    assert match, lines[0]
    return match.group(1)


def open_store(home: Path) -> RunStore:
    return RunStore(home / "rdqn.db")


def stored_runs(home: Path) -> pd.DataFrame:
    if not (home / "rdqn.db").exists():
        return pd.DataFrame()
    with open_store(home) as store:
        return store.list_runs()


def assert_usage_error(code: int, out: str, err: str, *needles: str) -> None:
    assert code == 2
    assert out == ""
    lines = err.strip("\n").splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("rdqn: error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


# ---------------------------------------------------------------------------------- train
def test_train_writes_a_finished_run_to_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(capsys, tmp_path, "train", *TINY)
    assert code == 0, err
    assert err == ""  # --quiet: no progress bar
    match = RUN_LINE.match(out.strip())
    assert match, out
    run_id, status = match.group(1), match.group(2)
    env_steps, updates, episodes = (int(match.group(i).replace(",", "")) for i in (3, 4, 5))
    assert status == "finished"
    assert env_steps == STEPS
    assert updates == STEPS - TINY_SET["train.learning_starts"]  # one per step after 64
    assert episodes > 0

    with open_store(tmp_path) as store:
        record = store.get_run(run_id)
        assert record.status == "finished"
        assert record.error is None
        assert (record.env_steps, record.updates, record.episodes) == (STEPS, updates, episodes)
        assert record.preset == "per-notebook"
        assert (record.env_id, record.scheme, record.seed) == ("CartPole-v1", "proportional", 0)
        assert record.group_id is None
        expected = preset("per-notebook").with_overrides({"train.total_steps": STEPS, **TINY_SET})
        assert record.config == expected.to_dict()

        # episodes rows: one per finished episode, in order, lengths adding up to env steps
        frame = store.metrics.episodes(run_id)
        assert len(frame) == episodes
        assert frame["episode"].tolist() == list(range(1, episodes + 1))
        assert (np.diff(frame["env_steps"]) > 0).all()
        assert frame["env_steps"].iloc[-1] <= STEPS
        assert frame["length"].cumsum().tolist() == frame["env_steps"].tolist()
        assert (frame["return"] == frame["length"]).all()  # CartPole: reward 1 per step
        mean20 = float(frame["return"].tail(20).mean())
        assert float(match.group(6)) == pytest.approx(mean20, abs=0.051)

        # steps rows: every log_every (10) updates
        steps = store.metrics.steps(run_id)
        assert steps["updates"].tolist() == list(range(10, updates + 1, 10))
        assert np.isfinite(steps["loss"]).all()

        # manifest
        assert record.manifest is not None
        assert record.manifest["counters"]["env_steps"] == STEPS
        assert record.manifest["counters"]["updates"] == updates
        assert record.manifest["counters"]["episodes"] == episodes

        # checkpoint
        assert record.checkpoint_path == str(store.checkpoint_path_for(run_id))
        checkpoint = Path(record.checkpoint_path)
        assert checkpoint.is_file()
        assert checkpoint.parent == tmp_path / "checkpoints"
        state = load_checkpoint(checkpoint)
        assert state["counters"] == {"env_steps": STEPS, "updates": updates, "episodes": episodes}
        assert state["config"] == record.config
        assert isinstance(state["agent"], dict) and state["agent"]


def test_train_set_overrides_reach_the_stored_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = train(
        capsys,
        tmp_path,
        "--set",
        "replay.alpha=0.7",
        "--set",
        "replay.is_normalization=batch",  # a bare word is a string
        "--set",
        "replay.max_weight=null",
        "--set",
        "train.epsilon_end=0",  # an int where a float is declared
    )
    with open_store(tmp_path) as store:
        config = store.get_run(run_id).config
        assert config["replay"]["alpha"] == 0.7
        assert config["replay"]["is_normalization"] == "batch"
        assert config["replay"]["max_weight"] is None
        assert config["train"]["epsilon_end"] == 0.0
        assert isinstance(config["train"]["epsilon_end"], float)
        checkpoint = load_checkpoint(store.get_run(run_id).checkpoint_path)
        assert checkpoint["config"]["replay"]["alpha"] == 0.7


def test_train_env_seed_scheme_and_name_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = train(
        capsys,
        tmp_path,
        "--env",
        "rdqn/BlindCliffwalk-v0",
        "--seed",
        "3",
        "--scheme",
        "rank",
        "--name",
        "my cliffwalk",
    )
    with open_store(tmp_path) as store:
        record = store.get_run(run_id)
        assert (record.env_id, record.scheme, record.seed) == ("rdqn/BlindCliffwalk-v0", "rank", 3)
        assert record.name == "my cliffwalk"
        assert record.config["env"] == {"id": "rdqn/BlindCliffwalk-v0", "kwargs": {}}
        assert record.config["seed"] == 3
        assert record.config["replay"]["scheme"] == "rank"
        assert record.manifest is not None and record.manifest["seed"] == 3
        assert len(store.metrics.episodes(run_id)) == record.episodes > 0


def test_train_threads_option_sets_torch_threads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    torch.set_num_threads(1)
    train(capsys, tmp_path, "--steps", "80", "--threads", "2")
    assert torch.get_num_threads() == 2


def test_train_default_options_come_from_the_preset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = train(capsys, tmp_path, "--preset", "paper")
    with open_store(tmp_path) as store:
        record = store.get_run(run_id)
    paper = preset("paper")
    assert record.preset == "paper"
    assert record.env_id == paper.env.id
    assert record.config["env"]["kwargs"] == paper.env.kwargs
    assert record.config["agent"]["network"] == "linear"
    assert record.name == f"paper {paper.env.id} seed {paper.seed}"


def test_train_same_seed_is_reproducible(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = train(capsys, tmp_path, "--seed", "5", "--steps", "120")
    second = train(capsys, tmp_path, "--seed", "5", "--steps", "120")
    with open_store(tmp_path) as store:
        a, b = store.metrics.episodes(first), store.metrics.episodes(second)
    assert first != second
    pd.testing.assert_frame_equal(
        a.drop(columns="wall_time"), b.drop(columns="wall_time"), check_exact=True
    )


def test_train_progress_bar_goes_to_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [a for a in TINY if a != "--quiet"]
    code, out, err = cli(capsys, tmp_path, "train", *args)
    assert code == 0
    assert RUN_LINE.match(out.strip())
    assert f"{STEPS}/{STEPS}" in err  # tqdm's bar reached the end
    assert "100%" in err
    assert err.endswith("\n")


def test_store_defaults_to_rdqn_home(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.setenv("RDQN_HOME", str(home))
    monkeypatch.chdir(cwd)
    assert main(["train", *TINY]) == 0
    run_id = RUN_LINE.match(capsys.readouterr().out.strip()).group(1)  # type: ignore[union-attr]
    assert list(cwd.iterdir()) == []
    assert (home / "checkpoints" / f"{run_id}.pt").is_file()
    assert main(["runs", "list"]) == 0
    assert run_id in capsys.readouterr().out


# ---------------------------------------------------------------------- failures in a run
def test_train_divergence_is_stored_as_failed_with_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real_run = Trainer.run

    def diverge(
        self: Trainer, steps: int | None = None, progress: object = None, **_: object
    ) -> Trainer:
        real_run(self, steps=100)
        self.status = "failed"
        raise DivergenceError("non-finite loss at update 36")

    monkeypatch.setattr(Trainer, "run", diverge)
    code, out, err = cli(capsys, tmp_path, "train", *TINY)
    assert code == 1
    match = re.search(r"run ([0-9a-f]{12}) failed: non-finite loss at update 36", err)
    assert match, err
    run_id = match.group(1)
    with open_store(tmp_path) as store:
        record = store.get_run(run_id)
        assert record.status == "failed"
        assert record.error == "non-finite loss at update 36"
        assert record.env_steps == 100
        assert len(store.metrics.episodes(run_id)) == record.episodes
        assert load_checkpoint(record.checkpoint_path)["counters"]["env_steps"] == 100


def test_train_interrupted_is_stored_as_stopped_with_exit_130(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real_run = Trainer.run

    def interrupt(
        self: Trainer, steps: int | None = None, progress: object = None, **_: object
    ) -> Trainer:
        real_run(self, steps=80)
        raise KeyboardInterrupt

    monkeypatch.setattr(Trainer, "run", interrupt)
    code, out, err = cli(capsys, tmp_path, "train", *TINY)
    assert code == 130
    assert "interrupted" in err
    runs = stored_runs(tmp_path)
    assert len(runs) == 1
    with open_store(tmp_path) as store:
        record = store.get_run(runs["id"][0])
    assert record.status == "stopped"
    assert record.error == "interrupted by the user"
    assert record.env_steps == 80
    assert load_checkpoint(record.checkpoint_path)["counters"]["env_steps"] == 80


def test_resume_trains_an_interrupted_run_on_to_its_budget_under_its_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real_run = Trainer.run

    def interrupt(
        self: Trainer, steps: int | None = None, progress: object = None, **_: object
    ) -> Trainer:
        real_run(self, steps=80)
        raise KeyboardInterrupt

    monkeypatch.setattr(Trainer, "run", interrupt)
    assert cli(capsys, tmp_path, "train", *TINY)[0] == 130
    monkeypatch.undo()
    (run_id,) = stored_runs(tmp_path)["id"]
    shown = json.loads(cli(capsys, tmp_path, "runs", "show", run_id)[1])
    assert (shown["resumable"], shown["not resumable because"]) == (True, None)

    code, out, err = cli(capsys, tmp_path, "resume", run_id, "--quiet")
    assert code == 0, err
    match = RUN_LINE.match(out.strip())
    assert match, out
    assert match.group(1, 2, 3) == (run_id, "finished", str(STEPS))
    with open_store(tmp_path) as store:
        record = store.get_run(run_id)
        assert (record.status, record.env_steps, record.updates) == ("finished", STEPS, STEPS - 64)
        assert store.metrics.episodes(run_id)["episode"].tolist() == list(
            range(1, record.episodes + 1)
        )
        assert store.metrics.steps(run_id)["updates"].is_unique
    assert len(stored_runs(tmp_path)) == 1

    code, out, err = cli(capsys, tmp_path, "resume", run_id)
    assert_usage_error(code, out, err, f"cannot resume run {run_id}: it finished")


# -------------------------------------------------------------------------- bad arguments
BAD_ARGUMENTS = [
    pytest.param(["train", *TINY, "--preset", "nope"], ["--preset", "nope"], id="unknown-preset"),
    pytest.param(["train", *TINY, "--env", "Nope-v9"], ["--env", "Nope-v9"], id="unknown-env"),
    pytest.param(["train", *TINY, "--set", "replay.alfa=1"], ["replay.alfa"], id="unknown-field"),
    pytest.param(
        ["train", *TINY, "--set", "replay.alpha=-1"], ["replay.alpha", "-1"], id="out-of-range"
    ),
    pytest.param(
        ["train", *TINY, "--set", "replay.capacity=8"],
        ["batch_size", "capacity"],
        id="batch-over-capacity",
    ),
    pytest.param(["train", *TINY, "--set", "foo"], ["--set", "KEY=VALUE", "foo"], id="no-equals"),
    pytest.param(["train", *TINY, "--set", "=1"], ["--set", "KEY=VALUE"], id="empty-key"),
    pytest.param(["train", *TINY, "--threads", "0"], ["--threads", "0"], id="threads-0"),
    pytest.param(["train", *TINY, "--steps", "0"], ["total_steps", "0"], id="steps-0"),
    pytest.param(["train", *TINY, "--seed", "-3"], ["seed", "-3"], id="negative-seed"),
    pytest.param(["train", *TINY, "--scheme", "greedy"], ["--scheme", "greedy"], id="scheme"),
    pytest.param(["train", "--bogus"], ["--bogus"], id="unknown-option"),
    pytest.param(["compare", *TINY, "--seeds", "-1"], ["--seeds"], id="negative-seeds"),
    pytest.param(["runs", "show", "0123456789ab"], ["0123456789ab"], id="show-unknown"),
    pytest.param(["runs", "export", "0123456789ab"], ["0123456789ab"], id="export-unknown"),
    pytest.param(["runs", "delete", "0123456789ab"], ["0123456789ab"], id="delete-unknown"),
    pytest.param(["runs", "rename", "x"], ["rename"], id="runs-unknown-action"),
    pytest.param(
        ["resume", "0123456789ab"],
        ["cannot resume run 0123456789ab", "no run"],
        id="resume-unknown",
    ),
    pytest.param([], ["command"], id="no-command"),
]


@pytest.mark.parametrize(("args", "needles"), BAD_ARGUMENTS)
def test_bad_arguments_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], needles: list[str]
) -> None:
    code, out, err = cli(capsys, tmp_path, *args)
    assert_usage_error(code, out, err, *needles)
    assert stored_runs(tmp_path).empty  # nothing was trained or recorded


def test_bad_env_kwargs_exit_2_without_leaving_a_run_behind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Regression: the env used to be made after the run was filed, and gymnasium's TypeError
    # escaped main() as a traceback, leaving a 'created' run forever.
    code, out, err = cli(capsys, tmp_path, "train", *TINY, "--set", 'env.kwargs={"bogus": 1}')
    assert_usage_error(code, out, err, "bogus")
    assert "created" not in stored_runs(tmp_path).get("status", pd.Series(dtype=str)).tolist()


@pytest.mark.parametrize("window", ["0", "-1"])
def test_compare_rejects_a_bad_window_before_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], window: str
) -> None:
    # BUG (rdqn/cli/compare.py cmd_compare): --window is never validated; 0 prints an all-NaN table
    # with RuntimeWarnings and exits 0, -1 crashes with IndexError after training every run.
    code, out, err = cli(
        capsys,
        tmp_path,
        "compare",
        *TINY,
        "--seeds",
        "0",
        "--schemes",
        "uniform",
        "--window",
        window,
        "--report",
        str(tmp_path / "r.html"),
    )
    assert_usage_error(code, out, err, "--window")
    assert stored_runs(tmp_path).empty


def test_train_help_lists_config_fields_with_their_docs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "--set KEY=VALUE" in out
    assert re.search(r"^\s+replay\.alpha\s+Priority exponent", out, re.MULTILINE)
    for key, doc in field_docs().items():
        if key in ("preset", "seed"):
            continue
        assert re.search(rf"^\s+{re.escape(key)}\s+{re.escape(doc)}$", out, re.MULTILINE), key
    for option in ("--preset", "--env", "--steps", "--seed", "--scheme", "--threads", "--quiet"):
        assert option in out


# -------------------------------------------------------------------------------- compare
@pytest.mark.slow  # trains two runs and draws the report
def test_compare_two_schemes_one_seed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "out" / "report.html"
    code, out, err = cli(
        capsys,
        tmp_path,
        "compare",
        *TINY,
        "--seeds",
        "0",
        "--schemes",
        "uniform",
        "rank",
        "--threshold",
        "5",
        "--window",
        "3",
        "--report",
        str(report),
    )
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 4, out  # header, two scheme rows, "report written"
    header = lines[0].split()
    assert header[0] == "scheme"
    for column in ("seeds", "reached", "threshold"):
        assert column in header
    rows = {line.split()[0]: line for line in lines[1:3]}
    assert set(rows) == {"uniform", "rank"}
    match = re.fullmatch(r"report written to (.+) \(group ([0-9a-f]{12})\)", lines[3])
    assert match, lines[3]
    assert Path(match.group(1)) == report
    group_id = match.group(2)

    with open_store(tmp_path) as store:
        runs = store.list_runs()
        assert len(runs) == 2
        assert set(runs["group_id"]) == {group_id}
        assert sorted(runs["scheme"]) == ["rank", "uniform"]
        assert set(runs["seed"]) == {0}
        assert set(runs["status"]) == {"finished"}
        assert set(runs["env_steps"]) == {STEPS}
        assert runs.set_index("scheme")["preset"].eq("per-notebook").all()
        # The table agrees with the stored episodes (CartPole returns >= 8 > threshold 5).
        for _, run in runs.iterrows():
            frame = store.metrics.episodes(run["id"])
            episodes, steps = episodes_to_threshold(
                Curve(frame["env_steps"].to_numpy(), frame["return"].to_numpy()), 5.0, window=3
            )
            assert episodes == 3
            cells = rows[run["scheme"]].split()
            assert cells[1] == "1"  # seeds
            assert "1/1" in cells
            assert f"{steps:,.1f}" in cells
            final = float(frame["return"].tail(3).mean())
            assert f"{final:,.1f}" in cells

    page = report.read_bytes().decode("utf-8")
    figure = figure_in_page(page, "curves")
    # schemes named as on the Compare page, by their alpha and beta0
    assert {"uniform (1 seed)", "rank · α 0.6 · β₀ 0.4 (1 seed)"} <= trace_names(figure)
    assert "<table" in page and '">uniform</span></td>' in page
    assert 5.0 in {shape.get("y0") for shape in figure["layout"]["shapes"]}  # the threshold line


@pytest.mark.slow  # trains four runs of the paper preset
def test_compare_paper_preset_uses_alpha_07_for_rank(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(
        capsys,
        tmp_path,
        "compare",
        *TINY,
        "--preset",
        "paper",
        "--seeds",
        "0",
        "1",
        "--schemes",
        "proportional",
        "rank",
        "--report",
        str(tmp_path / "r.html"),
    )
    assert code == 0, err
    with open_store(tmp_path) as store:
        runs = store.list_runs()
        assert len(runs) == 4
        assert runs["group_id"].nunique() == 1
        alphas = {
            (r.scheme, int(r.seed)): store.get_run(r.id).config["replay"]["alpha"]
            for r in runs.itertuples()
        }
    assert alphas == {
        ("proportional", 0): 0.6,
        ("proportional", 1): 0.6,
        ("rank", 0): 0.7,
        ("rank", 1): 0.7,
    }
    # BlindCliffwalk registers no reward threshold; its goal pays 1, so the default is 0.8.
    assert "reached threshold" in out.splitlines()[0]
    assert '"y0":0.8' in (tmp_path / "r.html").read_text(encoding="utf-8")  # its line


# ----------------------------------------------------------------------------------- runs
def test_runs_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, tmp_path, "runs", "list")
    store = tmp_path / "rdqn.db"
    assert (code, out, err) == (0, f"no runs stored yet: there is no run store at {store}\n", "")
    first = train(capsys, tmp_path)
    second = train(capsys, tmp_path, "--scheme", "uniform", "--seed", "1")
    code, out, err = cli(capsys, tmp_path, "runs", "list")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == [
        "id",
        "status",
        "preset",
        "env_id",
        "scheme",
        "seed",
        "env_steps",
        "episodes",
    ]
    assert len(lines) == 3
    by_id = {line.split()[0]: line.split() for line in lines[1:]}
    row = ["finished", "per-notebook", "CartPole-v1"]
    assert by_id[first][1:7] == [*row, "proportional", "0", str(STEPS)]
    assert by_id[second][1:7] == [*row, "uniform", "1", str(STEPS)]
    assert lines[1].split()[0] == second  # newest first


def test_runs_show_prints_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_id = train(capsys, tmp_path, "--set", "replay.alpha=0.7")
    code, out, err = cli(capsys, tmp_path, "runs", "show", run_id)
    assert code == 0 and err == ""
    shown = json.loads(out)
    with open_store(tmp_path) as store:
        record = store.get_run(run_id)
        episodes = store.metrics.episodes(run_id)
    assert shown["id"] == run_id
    assert shown["status"] == "finished"
    assert shown["error"] is None
    assert (shown["env_steps"], shown["updates"], shown["episodes"]) == (
        record.env_steps,
        record.updates,
        record.episodes,
    )
    assert shown["mean return (last 20)"] == pytest.approx(episodes["return"].tail(20).mean())
    assert shown["checkpoint"] == record.checkpoint_path
    assert shown["config"] == record.config
    assert shown["config"]["replay"]["alpha"] == 0.7
    assert shown["manifest"]["counters"] == record.manifest["counters"]  # type: ignore[index]


def test_runs_export_episodes_to_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_id = train(capsys, tmp_path)
    target = tmp_path / "episodes.csv"
    code, out, err = cli(
        capsys, tmp_path, "runs", "export", run_id, "--kind", "episodes", "--out", str(target)
    )
    assert code == 0 and err == ""
    assert out.strip() == f"wrote {target}"
    exported = pd.read_csv(target)
    with open_store(tmp_path) as store:
        expected = store.metrics.episodes(run_id)
    assert len(exported) == len(expected) > 0
    pd.testing.assert_frame_equal(exported, expected, check_exact=True)


def test_runs_export_to_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_id = train(capsys, tmp_path)
    code, out, err = cli(capsys, tmp_path, "runs", "export", run_id, "--kind", "steps")
    assert code == 0 and err == ""
    exported = pd.read_csv(io.StringIO(out))
    with open_store(tmp_path) as store:
        expected = store.metrics.steps(run_id)
        episodes_csv = store.metrics.export_csv(run_id, "episodes")
    assert len(exported) == len(expected) > 0
    pd.testing.assert_frame_equal(exported, expected, check_exact=True)
    # --kind defaults to episodes
    code, out, err = cli(capsys, tmp_path, "runs", "export", run_id)
    assert code == 0
    assert out == episodes_csv


def test_runs_delete(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keep = train(capsys, tmp_path)
    gone = train(capsys, tmp_path)
    with open_store(tmp_path) as store:
        checkpoint = Path(store.get_run(gone).checkpoint_path)  # type: ignore[arg-type]
    assert checkpoint.is_file()
    code, out, err = cli(capsys, tmp_path, "runs", "delete", gone)
    assert (code, out, err) == (0, f"deleted run {gone}\n", "")
    assert not checkpoint.exists()
    with open_store(tmp_path) as store:
        with pytest.raises(KeyError):
            store.get_run(gone)
        with pytest.raises(KeyError):
            store.metrics.episodes(gone)
        assert store.list_runs()["id"].tolist() == [keep]
        assert Path(store.get_run(keep).checkpoint_path).is_file()  # type: ignore[arg-type]
    code, out, err = cli(capsys, tmp_path, "runs", "show", gone)
    assert_usage_error(code, out, err, gone)


def test_presets_in_process(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, tmp_path, "presets")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == list(PRESETS)
    for line, name in zip(lines, PRESETS, strict=True):
        config = preset(name)
        assert f"env={config.env.id}" in line
        assert f"net={config.agent.network}" in line
        assert f"replay={config.replay.scheme}" in line
    assert not (tmp_path / "rdqn.db").exists()  # presets opens no store


# ----------------------------------------------------------------------------- subprocess
@pytest.mark.slow  # two fresh interpreters, each importing torch
def test_python_m_rdqn_subprocess(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = dict(os.environ)
    env["RDQN_HOME"] = str(home)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))

    def start(*args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "rdqn", *args],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def finish(process: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
        try:
            out, err = process.communicate(timeout=120)
        finally:
            process.kill()
        return subprocess.CompletedProcess(process.args, process.returncode, out, err)

    # Both at once: each pays the torch import, and they need not wait for each other.
    started = start("presets"), start("train", "--steps", "10x")
    presets, bad = (finish(p) for p in started)

    assert presets.returncode == 0, presets.stderr
    assert [line.split()[0] for line in presets.stdout.splitlines()] == list(PRESETS)
    assert presets.stderr == ""

    assert bad.returncode == 2
    assert bad.stdout == ""
    lines = bad.stderr.splitlines()
    assert len(lines) == 1, bad.stderr
    assert lines[0].startswith("rdqn: error:")
    assert "--steps" in lines[0] and "10x" in lines[0]
    assert not home.exists()
    assert not (tmp_path / ".rdqn").exists()


def test_warm_up_fills_numbas_cache_and_says_where(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from rdqn.serve.worker import kernel_cache_dirs

    code, out, err = cli(capsys, tmp_path / "home", "warm-up")
    assert code == 0, err
    assert out.startswith("kernels ") and "numba's cache in" in out
    assert all(folder in out for folder in kernel_cache_dirs())
    assert "kernels ready" in err  # the progress bar's last label
    assert not (tmp_path / "home").exists()  # it needs no run store


def test_warm_up_works_with_a_numba_whose_cache_it_cannot_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check of numba's cache reads numba's private cache index: a numba that changed it
    must not fail the README's set-up. The kernels compile and run; the warm-up says it cannot
    tell whether they were kept."""
    from rdqn.serve import worker

    def changed() -> list[object]:
        raise AttributeError("'CPUDispatcher' object has no attribute '_cache'")

    monkeypatch.setattr(worker, "_kernels", changed)
    assert worker.kernels_cached() is None and worker.kernel_cache_dirs() == []
    code, out, err = cli(capsys, tmp_path, "warm-up", "--quiet")
    assert code == 0, err
    assert out.startswith("kernels compiled in ") and "does not say whether" in out


def test_warm_up_fails_when_numba_keeps_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("rdqn.cli.warm_up.kernels_cached", lambda: False)
    code, out, err = cli(capsys, tmp_path, "warm-up", "--quiet")
    assert code == 1
    assert out == ""
    assert err.startswith("rdqn: error: numba did not keep the compiled kernels in ")


@pytest.mark.slow  # trains a run, then resumes it to its end
def test_resume_says_what_it_discards_and_needs_yes_for_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A run that recorded steps after its last checkpoint (its process died between two):
    `runs show` gives the step a resume starts from and what it drops; `resume` refuses in one
    line until --yes (it restarted from the checkpoint without a word, dropping 100 steps)."""
    from tests.runs.test_resume import paused_run_that_ran_on_and_died

    run_id, _ = paused_run_that_ran_on_and_died(tmp_path)
    code, out, _ = cli(capsys, tmp_path, "runs", "show", run_id)
    shown = json.loads(out)
    assert code == 0 and shown["resumes from env step"] == 150
    assert shown["a resume discards env steps"] == 100
    code, out, err = cli(capsys, tmp_path, "resume", run_id, "--quiet")
    assert code == 2 and err == (
        f"rdqn: error: run {run_id} resumes from env step 150 (its last checkpoint) and "
        "discards the 100 env steps it recorded after it; add --yes to go on\n"
    )
    with RunStore(tmp_path / "rdqn.db") as store:
        assert store.get_run(run_id).env_steps == 250  # nothing dropped yet
    code, _, err = cli(capsys, tmp_path, "resume", run_id, "--quiet", "--yes")
    assert code == 0 and "discards the 100 env steps" in err
    with RunStore(tmp_path / "rdqn.db") as store:
        assert (store.get_run(run_id).status, store.get_run(run_id).env_steps) == ("finished", 400)
