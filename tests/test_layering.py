"""One-way dependency: rdqn/ imports no Streamlit or plotly and never prints (but its CLI)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

RDQN = Path(__file__).resolve().parents[1] / "rdqn"
FILES = sorted(RDQN.rglob("*.py"))


def imported_modules(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(RDQN)))
def test_core_module_imports_no_ui_library(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert not imported_modules(tree) & {"streamlit", "plotly", "dashboard", "pages"}


@pytest.mark.parametrize(
    "path", [p for p in FILES if p.name != "cli.py"], ids=lambda p: str(p.relative_to(RDQN))
)
def test_core_module_never_prints(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "print"
    ]
    assert not calls, f"print() at lines {[c.lineno for c in calls]}"


def test_dashboard_figures_do_not_import_streamlit() -> None:
    for path in (RDQN.parent / "dashboard" / "figures").glob("*.py"):
        assert "streamlit" not in imported_modules(ast.parse(path.read_text(encoding="utf-8")))
