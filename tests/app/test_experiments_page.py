"""AppTest of the Experiments page: the Blind Cliffwalk figure and table from a results file,
and one notice (no traceback) when the file is missing or is not one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rdqn.dashboard import experiments_view
from rdqn.dashboard.experiments_view import read_results, summary_frame

APP = Path(__file__).resolve().parents[2] / "app.py"
SUMMARY = [
    {"scheme": "uniform", "n": 2, "memory_size": 6, "seeds": [0, 1], "learned": 2,
     "median": 32, "min": 29, "max": 34},
    {"scheme": "uniform", "n": 3, "memory_size": 14, "seeds": [0, 1], "learned": 1,
     "median": None, "min": 61, "max": None},
    {"scheme": "oracle", "n": 2, "memory_size": 6, "seeds": [0, 1], "learned": 2,
     "median": 14, "min": 14, "max": 14},
]  # fmt: skip


def write(path: Path, report: dict) -> Path:
    path.write_text(json.dumps(report), encoding="utf-8")
    return path


def page(monkeypatch: pytest.MonkeyPatch, results: Path) -> AppTest:
    monkeypatch.setattr(experiments_view, "RESULTS", results)
    at = AppTest.from_file(str(APP), default_timeout=30)
    at.run()
    at.switch_page("pages/experiments.py").run()
    assert not at.exception
    return at


def test_figure_and_table_from_the_results_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = {"experiment": "cliffwalk", "threshold": 1e-3, "summary": SUMMARY, "command": "C"}
    at = page(monkeypatch, write(tmp_path / "cliffwalk.json", report))
    assert at.title[0].value == "Experiments"
    assert not [info for info in at.info if "cliffwalk" in info.value]
    (table,) = at.dataframe
    assert table.value.to_dict("records")[0] == {
        "n": 2, "memory N": 6, "uniform": "32 (29–34)", "oracle": "14"
    }  # fmt: skip
    assert len(at.get("plotly_chart")) == 1
    assert "Written by `C`" in at.caption[0].value


@pytest.mark.parametrize(
    ("content", "notice"),
    [(None, "No results yet"), ("{not json", "cannot be read"), ("[]", "is not a results file")],
)
def test_a_missing_or_foreign_file_is_one_notice(
    content: str | None, notice: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = tmp_path / "cliffwalk.json"
    if content is not None:
        results.write_text(content, encoding="utf-8")
    at = page(monkeypatch, results)
    info, *studies = at.info  # the other tabs: no results files in this folder either
    assert notice in info.value and "python -m rdqn experiment cliffwalk" in info.value
    assert [s.value.split("`")[1] for s in studies] == ["minatar.json", "recurrent.json"]
    assert not at.get("plotly_chart")


def test_summary_frame_marks_seeds_that_did_not_learn() -> None:
    frame = summary_frame(SUMMARY)
    assert frame.loc[1, "uniform"] == "— [1/2 learned]"
    assert frame.columns.tolist() == ["n", "memory N", "uniform", "oracle"]


def test_read_results_of_the_repository_file() -> None:
    report, problem = read_results(experiments_view.RESULTS)
    assert problem is None and report["summary"]


def test_the_studies_tabs_draw_the_repository_s_results_files(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """MinAtar's two games and recurrent replay's one figure, each study's generated table."""
    at = page(monkeypatch, experiments_view.RESULTS)
    assert not at.info and len(at.get("plotly_chart")) == 1 + 2 + 1
    tables = [m.value for m in at.markdown if m.value.startswith("| game | scheme |")]
    tables += [m.value for m in at.markdown if m.value.startswith("| env | arm |")]
    assert len(tables) == 2 and "| Breakout | uniform |" in tables[0]
    assert "| MaskedCartPole | stored-state |" in tables[1]
