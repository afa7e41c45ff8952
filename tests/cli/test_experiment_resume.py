"""``python -m rdqn experiment ... --resume``: an interrupted (or partly failed) experiment goes
on from its results file, the trials it holds as finished not run again; a file that is not
one, or was run with other settings, is refused in one line before anything runs."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import rdqn.sweeps
from rdqn.cli import main
from rdqn.cli.experiment_resume import config_digest, resumed_trials
from rdqn.cli.usage import UsageError
from rdqn.experiments.minatar import minatar_trials

pytestmark = pytest.mark.slow  # forks worker processes

GRID = ["cliffwalk", "--sizes", "2-3", "--seeds", "0", "1", "--schemes", "uniform"]
KEYS = {(n, seed) for n in (2, 3) for seed in (0, 1)}


def run(out: Path, *extra: str) -> int:
    return main(["experiment", *GRID, "--out", str(out), "--workers", "2", "--quiet", *extra])


def key(record: dict[str, Any]) -> tuple[int, int]:
    return record["n"], record["seed"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The grid run whole: four trials, none failed."""
    out = tmp_path_factory.mktemp("resume") / "cliffwalk.json"
    assert run(out) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert {key(t) for t in report["trials"]} == KEYS and report["failed"] == []
    return out


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int | None, int]]:
    """The trials handed to `map_tasks` (the trials that run), as (n, seed); n None for the
    PER notebook's."""
    calls: list[tuple[int | None, int]] = []
    real = rdqn.sweeps.map_tasks

    def spy(func: Any, items: Any, **kwargs: Any) -> Any:
        items = list(items)
        calls.extend((getattr(t, "n", None), t.seed) for t in items)
        return real(func, items, **kwargs)

    monkeypatch.setattr(rdqn.sweeps, "map_tasks", spy)
    return calls


def partial(finished: Path, tmp_path: Path, edit: Any) -> tuple[Path, dict[str, Any]]:
    """A copy of the finished file, its report changed by ``edit``; every trial left in it
    marked, so a kept record can be told from one run again."""
    report = json.loads(finished.read_text(encoding="utf-8"))
    edit(report)
    for trial in report["trials"]:
        trial["kept"] = True
    out = tmp_path / "cliffwalk.json"
    out.write_text(json.dumps(report), encoding="utf-8")
    return out, report


def test_an_interrupted_run_goes_on_without_rerunning_finished_trials(
    finished: Path, tmp_path: Path, ran: list[tuple[int | None, int]]
) -> None:
    def interrupt(report: dict[str, Any]) -> None:  # as if stopped after two trials
        report["trials"] = [t for t in report["trials"] if key(t) in {(3, 0), (2, 1)}]

    out, _ = partial(finished, tmp_path, interrupt)
    assert run(out, "--resume") == 0
    assert sorted(ran) == [(2, 0), (3, 1)]
    report = json.loads(out.read_text(encoding="utf-8"))
    assert {key(t) for t in report["trials"]} == KEYS and report["failed"] == []
    assert {key(t) for t in report["trials"] if t.get("kept")} == {(3, 0), (2, 1)}
    whole = json.loads(finished.read_text(encoding="utf-8"))
    assert report["summary"] == whole["summary"]  # the same figure as one uninterrupted run
    assert out.with_suffix(".html").exists()


def test_failed_trials_are_run_again(
    finished: Path, tmp_path: Path, ran: list[tuple[int | None, int]]
) -> None:
    def fail_one(report: dict[str, Any]) -> None:
        (lost,) = (t for t in report["trials"] if key(t) == (3, 1))
        report["trials"].remove(lost)
        fields = {k: lost[k] for k in ("n", "scheme", "seed", "threshold", "max_updates")}
        report["failed"] = [{**fields, "error": "WorkerLost: killed"}]

    out, _ = partial(finished, tmp_path, fail_one)
    assert run(out, "--resume") == 0
    assert ran == [(3, 1)]
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["failed"] == [] and {key(t) for t in report["trials"]} == KEYS


def test_a_finished_run_resumed_runs_nothing_and_a_missing_file_runs_all(
    finished: Path,
    tmp_path: Path,
    ran: list[tuple[int | None, int]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    out, _ = partial(finished, tmp_path, lambda report: None)
    assert run(out, "--resume") == 0 and ran == []
    report = json.loads(out.read_text(encoding="utf-8"))
    assert all(t["kept"] for t in report["trials"]) and len(report["trials"]) == 4
    capsys.readouterr()

    fresh = tmp_path / "fresh.json"
    assert run(fresh, "--resume") == 0 and sorted(ran) == sorted(KEYS)
    assert "does not exist yet; running every trial" in capsys.readouterr().err
    assert len(json.loads(fresh.read_text(encoding="utf-8"))["trials"]) == 4


def _digest_changed(report: dict[str, Any]) -> None:
    report["trials"][0]["config_digest"] = "0" * 16


@pytest.mark.parametrize(
    ("text", "extra", "message"),
    [
        ("{not json", [], "is not JSON"),
        ('{"experiment": "per-notebook", "trials": []}', [], "(it holds 'per-notebook')"),
        ('[{"trials": []}]', [], "is not a results file of `rdqn experiment cliffwalk`"),
        (None, ["--threshold", "0.01"], "other settings (threshold 0.001 there, 0.01 here)"),
        (None, ["--set", "agent.lr=0.5"], 'overrides {} there, {"agent.lr": 0.5} here'),
        (
            None,
            ["--seeds", "0"],
            "a finished trial this command does not run (n=2 scheme=uniform seed=1)",
        ),
        (_digest_changed, [], "was run with another config than this command's"),
        (None, ["--from", "x.json"], "--resume goes on with the --out file"),
    ],
)
def test_a_bad_or_mismatched_file_is_one_line(
    text: Any,
    extra: list[str],
    message: str,
    finished: Path,
    tmp_path: Path,
    ran: list[tuple[int | None, int]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    if isinstance(text, str):
        out = tmp_path / "cliffwalk.json"
        out.write_text(text, encoding="utf-8")
    else:
        out, _ = partial(finished, tmp_path, text or (lambda report: None))
    before = out.read_bytes()
    capsys.readouterr()
    code = main(["experiment", *GRID, *extra, "--out", str(out), "--resume", "--quiet"])
    _, err = capsys.readouterr()
    assert code == 2 and err.startswith("rdqn: error: ") and err.count("\n") == 1, err
    assert message in err, err
    assert ran == [] and out.read_bytes() == before  # nothing ran, the file as it was


def test_the_per_notebook_study_resumes_with_more_seeds(
    tmp_path: Path, ran: list[tuple[int | None, int]], capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "study.json"
    study = ["per-notebook", "--steps", "300", "--schemes", "uniform", "--probes", "2"]
    common = ["--out", str(out), "--workers", "2", "--quiet"]
    assert main(["experiment", *study, "--seeds", "0", *common]) == 0
    first = json.loads(out.read_text(encoding="utf-8"))["trials"][0]
    ran.clear()

    assert main(["experiment", *study, "--seeds", "0", "1", *common, "--resume"]) == 0
    assert ran == [(None, 1)]  # seed 0 kept: only seed 1 ran
    report = json.loads(out.read_text(encoding="utf-8"))
    assert [t["seed"] for t in report["trials"]] == [0, 1] and report["trials"][0] == first
    assert report["settings"] == {"steps": 300, "threshold": 475.0, "probes": 2, "overrides": {}}
    capsys.readouterr()

    again = ["per-notebook", "--steps", "300", "--schemes", "uniform", "--probes", "3"]
    assert main(["experiment", *again, "--seeds", "0", "1", *common, "--resume"]) == 2
    err = capsys.readouterr().err
    assert "other settings (probes 2 there, 3 here)" in err and ran == [(None, 1)]


def test_a_file_written_before_a_config_field_existed_resumes_where_the_field_is_its_default(
    tmp_path: Path,
) -> None:
    """A results file of an older rdqn, whose configs lack a field added since (here
    ``replay.mode``): its trials are kept while the command's trials hold the value such a
    config gets (the default: the older rdqn ran as that does), and refused where they differ."""
    trials = minatar_trials(["rdqn/MinAtar-Breakout-v0"], ["uniform", "rank"], [0], steps=1000)
    older = copy.deepcopy(trials[0].config)
    del older["replay"]["mode"]
    settings = {"steps": 1000, "overrides": {}}
    head = {"experiment": "minatar", "settings": settings}
    result = {"game": trials[0].game, "scheme": "uniform", "seed": 0}
    result["config_digest"] = config_digest(SimpleNamespace(config=older))
    out = tmp_path / "minatar.json"
    report = {**head, "config": older, "trials": [result]}
    out.write_text(json.dumps(report), encoding="utf-8")
    kept, _, rest = resumed_trials(out, head, trials, quiet=True)
    assert kept == [result] and [t.scheme for t in rest] == ["rank"]

    sequences = copy.deepcopy(trials[0].config)
    sequences["replay"]["mode"] = "sequences"
    changed = [dataclasses.replace(trials[0], config=sequences), trials[1]]
    with pytest.raises(UsageError, match="was run with another config than this command's"):
        resumed_trials(out, head, changed, quiet=True)
