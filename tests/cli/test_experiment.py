"""``python -m rdqn experiment``: a tiny Blind Cliffwalk figure and PER notebook study through
the worker processes, their files read back with --from, the docs' table blocks, and bad
arguments refused in one line before anything runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rdqn.cli import main

pytestmark = pytest.mark.slow  # forks worker processes and trains


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["experiment", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def cliffwalk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cliffwalk") / "cliffwalk.json"
    args = ["cliffwalk", "--sizes", "2-3", "--seeds", "0", "1", "--schemes", "uniform", "oracle"]
    assert main(["experiment", *args, "--out", str(out), "--workers", "2", "--quiet"]) == 0
    return out


def test_cliffwalk_writes_results_and_figure(cliffwalk: Path) -> None:
    report = json.loads(cliffwalk.read_text(encoding="utf-8"))
    assert report["experiment"] == "cliffwalk" and report["failed"] == []
    assert len(report["trials"]) == 8
    assert {(r["scheme"], r["n"]) for r in report["summary"]} == {
        (s, n) for s in ("uniform", "oracle") for n in (2, 3)
    }
    assert all(r["learned"] == 2 for r in report["summary"])
    assert report["learner"]["network"] == "linear" and report["replay"]["batch_size"] == 1
    page = cliffwalk.with_suffix(".html").read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>") and '<script src="http' not in page  # offline
    assert "Blind Cliffwalk" in page


def test_from_prints_the_table_without_running(
    cliffwalk: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli(capsys, "cliffwalk", "--from", str(cliffwalk), "--table", "--quiet")
    assert code == 0
    assert out.startswith("| n | memory N | uniform | oracle |")
    assert "| 2 | 6 |" in out and "| 3 | 14 |" in out
    plot = tmp_path / "again.html"
    args = ("cliffwalk", "--from", str(cliffwalk), "--plot", str(plot), "--quiet")
    assert cli(capsys, *args)[0] == 0 and plot.exists()


def test_tables_fill_and_check_the_blocks(
    cliffwalk: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    results.mkdir()
    (results / "cliffwalk.json").write_text(cliffwalk.read_text(encoding="utf-8"))
    doc = tmp_path / "doc.md"
    doc.write_text("# Doc\n\n<!-- table: cliffwalk -->\nstale\n<!-- /table -->\n")
    assert cli(capsys, "tables", "--results", str(results), "--check", str(doc))[0] == 1
    assert cli(capsys, "tables", "--results", str(results), "--write", str(doc))[0] == 0
    text = doc.read_text(encoding="utf-8")
    assert "stale" not in text and "| n | memory N | uniform | oracle |" in text
    assert cli(capsys, "tables", "--results", str(results), "--check", str(doc))[0] == 0
    code, out, _ = cli(capsys, "tables", "--results", str(results))
    assert code == 0 and out.startswith("<!-- table: cliffwalk -->\n| n |")


def test_per_notebook_writes_results_and_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "study.json"
    args = ["per-notebook", "--steps", "400", "--seeds", "0", "--schemes", "proportional"]
    code, table, _ = cli(capsys, *args, "--probes", "2", "--out", str(out), "--table", "--quiet")
    assert code == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    (trial,) = report["trials"]
    assert trial["env_steps"] == 400 and len(trial["probes"]["updates"]) == 2
    assert table.startswith("| scheme | reached 475 |")
    assert "Plotly.newPlot" in out.with_suffix(".html").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["cliffwalk", "--sizes", "1-3"], "--sizes must lie in 2-24 with A <= B, got '1-3'"),
        (["cliffwalk", "--sizes", "two"], "--sizes expects numbers or ranges A-B, got 'two'"),
        (["cliffwalk", "--seeds", "0", "0"], "--seeds must be distinct non-negative integers"),
        (["cliffwalk", "--threshold", "0"], "threshold must be a finite number > 0"),
        (["cliffwalk", "--set", "agent.lr=-1"], "lr"),
        (["cliffwalk", "--schemes", "oracle", "--set", "replay.batch_size=2"], "oracle replays"),
        (["per-notebook", "--probes", "0"], "probes must be an integer"),
        (["cliffwalk", "--from", "/nonexistent/r.json"], "--from /nonexistent/r.json cannot be"),
    ],
)
def test_bad_arguments_are_one_line(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(capsys, *args, "--out", str(tmp_path / "r.json"))
    assert code == 2 and out == ""
    assert err.startswith("rdqn: error: ") and message in err and err.count("\n") == 1
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("option", ["--check", "--write"])
def test_tables_of_a_missing_doc_is_one_line(
    option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli(capsys, "tables", option, "/nonexistent/doc.md")
    assert (
        code == 2
        and err
        == f"rdqn: error: {option} /nonexistent/doc.md cannot be read: No such file or directory\n"
    )


@pytest.mark.parametrize(
    ("results", "message"),
    [
        ("/nonexistent", "--results /nonexistent is not a folder"),
        ("/etc", "--results /etc holds none of the results files (cliffwalk.json, "),
    ],
)
def test_tables_from_a_folder_without_results_is_one_line(
    results: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """It once printed nothing and exited 0."""
    code, out, err = cli(capsys, "tables", "--results", results)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"rdqn: error: {message}"), err


def test_tables_from_a_damaged_results_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rdqn.experiments.tables import RESULTS_FILES

    file = next(iter(RESULTS_FILES.values()))[0]
    (tmp_path / file).write_text("{not json", encoding="utf-8")
    code, _, err = cli(capsys, "tables", "--results", str(tmp_path))
    assert code == 2 and err.startswith(f"rdqn: error: --results {tmp_path}: a results file")


@pytest.mark.parametrize("out", ["/", "/tmp"])
def test_an_out_that_is_a_folder_is_one_line(out: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``--out /`` said "PosixPath('/') has an empty name"."""
    code, _, err = cli(capsys, "cliffwalk", "--out", out)
    assert (code, err) == (2, f"rdqn: error: --out {out} is a directory; name a file to write\n")
