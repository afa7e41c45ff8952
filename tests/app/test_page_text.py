"""What the pages write: ε is only ever the priority offset of |δ| + ε (exploration is the
"explore rate"), and the tables of the classroom pages round every number the same way."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
EPSILON = re.compile(r"ε|\\epsilon")
DELTA = re.compile(r"δ|\\delta")


def shown_text_files() -> list[Path]:
    return [
        *sorted((ROOT / "pages").glob("*.py")),
        *sorted((ROOT / "rdqn" / "dashboard").glob("*.py")),
        *sorted((ROOT / "rdqn" / "figures").glob("*.py")),
        *sorted((ROOT / "assets" / "text").glob("*.md")),
    ]


def test_epsilon_only_ever_means_the_priority_offset() -> None:
    """Every line that writes ε also writes δ (p = |δ| + ε); exploration is never ε."""
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in shown_text_files()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if EPSILON.search(line) and not DELTA.search(line)
    ]
    assert not offenders, "\n".join(offenders)


def number_formats(at: AppTest) -> list[tuple[str, str | None]]:
    """(column label, format) of every number or progress column of every table on the page."""
    found = []
    for table in at.dataframe:
        for column in json.loads(table.proto.columns or "{}").values():
            config = column.get("type_config", {})
            if config.get("type") in ("number", "progress"):
                found.append((column.get("label", ""), config.get("format")))
    return found


@pytest.mark.parametrize("page", ["pages/by_hand.py", "pages/sum_tree.py"])
def test_every_table_number_has_three_decimals(page: str) -> None:
    at = AppTest.from_file(APP, default_timeout=30)
    at.run()
    at.switch_page(page).run()
    if page.endswith("sum_tree.py"):
        at.button(key="tree.draw").click().run()  # the queries table
    assert not at.exception
    formats = number_formats(at)
    assert len(formats) >= 5
    assert {fmt for _, fmt in formats} == {"%.3f"}, formats


def test_by_hand_names_the_batch_b_and_the_buffer_n() -> None:
    at = AppTest.from_file(APP, default_timeout=30)
    at.run()
    at.switch_page("pages/by_hand.py").run()
    assert "(B = 4)" in at.caption[0].value and "(N = 4)" in at.caption[0].value
    assert at.metric[0].label == "Loss = (1/B) Σ wᵢ·Lᵢ"
    assert any(r"\frac{1}{B}" in latex.value for latex in at.latex)
    # Short headers so that the ten columns fit 1280 px beside the sidebar, full names as help.
    (results,) = [t for t in at.dataframe if "target" in t.value.columns]
    labels = {c["label"]: c.get("help") for c in json.loads(results.proto.columns).values()}
    assert max(len(label) for label in labels) <= 10 and all(labels.values())
