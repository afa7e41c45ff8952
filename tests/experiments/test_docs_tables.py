"""Every learning table in docs/experiments.md is the one its results file gives: regenerate
them with ``python -m rdqn experiment tables --write docs/experiments.md`` after a re-run."""

from __future__ import annotations

import re
from pathlib import Path

from rdqn.experiments.tables import RESULTS_FILES, all_tables, check_blocks

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "experiments.md"
RESULTS = ROOT / "benchmarks" / "results"


def test_every_table_block_matches_its_results_file() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert check_blocks(text, all_tables(RESULTS)) == []


def test_every_results_file_has_its_block_and_the_file_exists() -> None:
    names = re.findall(r"<!-- table: ([\w-]+) -->", DOC.read_text(encoding="utf-8"))
    assert sorted(names) == sorted(RESULTS_FILES)
    for file, _ in RESULTS_FILES.values():
        assert (RESULTS / file).exists(), file
