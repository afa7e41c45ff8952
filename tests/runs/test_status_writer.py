"""A run's status has one writer, `rdqn.runs.status.record_status`, called from a few named
places (docs/design.md, "One owner per piece of state"). The status used to be written from five
places besides the recorded run: the server's handle (a worker lost, a store a worker could not
open), raw SQL marking a dead process's runs, the full-disk retry and a resume's reopen. A scan of
`rdqn/` fails on any status written elsewhere: a call of a store's ``set_status``, an SQL ``UPDATE``
outside the store's one generic update, a ``status`` column written through it outside
`RunStore.set_status`, or `record_status` called from a place the design does not name.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

RDQN = Path(__file__).resolve().parents[2] / "rdqn"

RECORD_STATUS_CALLERS = {
    ("runs/lifecycle.py", "RecordedRun._resume"),  # a resume taking its run
    ("runs/lifecycle.py", "RecordedRun.mark"),  # running <-> paused
    ("runs/lifecycle.py", "RecordedRun.close"),  # its end, with its reason
    ("serve/handle.py", "RunHandle._lost"),  # a worker lost
    ("serve/handle.py", "RunHandle._ended"),  # a worker that could not open the store
    ("runs/store.py", "RunStore._mark_orphans"),  # the runs of a process that died
    ("runs/store.py", "RunStore._write_unwritten"),  # a final status a full disk kept out
}
"""Where `record_status` is called: the places docs/design.md names."""


def calls(tree: ast.AST) -> list[tuple[str, ast.Call]]:
    """Every call in ``tree`` with the qualified name of the function it is in."""
    found: list[tuple[str, ast.Call]] = []

    def visit(node: ast.AST, scope: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                visit(child, (*scope, child.name))
                continue
            if isinstance(child, ast.Call):
                found.append((".".join(scope), child))
            visit(child, scope)

    visit(tree, ())
    return found


def name_of(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


@functools.cache
def sources() -> list[tuple[str, ast.AST]]:
    """Every module of ``rdqn/``, parsed once for the tests here."""
    return [
        (path.relative_to(RDQN).as_posix(), ast.parse(path.read_text(), filename=str(path)))
        for path in sorted(RDQN.rglob("*.py"))
    ]


def test_a_store_status_is_set_only_by_record_status() -> None:
    setters = [
        (module, scope)
        for module, tree in sources()
        for scope, call in calls(tree)
        if name_of(call) == "set_status"
    ]
    assert setters == [("runs/status.py", "record_status")]


def test_record_status_is_called_only_where_the_design_says() -> None:
    callers = {
        (module, scope)
        for module, tree in sources()
        for scope, call in calls(tree)
        if name_of(call) == "record_status"
    }
    assert callers == RECORD_STATUS_CALLERS


def test_no_sql_writes_a_status_but_the_stores_set_status() -> None:
    """SQL that updates runs is the store's one generic update (and the metric tables' progress,
    which leaves the status alone); the status column goes through it from `set_status` only,
    and a run is filed ('created') by `create_run` only."""
    updates, inserts = [], []
    for module, tree in sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if re.search(r"\bUPDATE\s+runs\b", node.value):
                    updates.append((module, "status" in node.value))
                if re.search(r"\bINSERT\s+INTO\s+runs\b", node.value):
                    inserts.append(module)
    assert sorted(updates) == [("runs/metric_tables.py", False), ("runs/store.py", False)]
    assert inserts == ["runs/store.py"]

    tree = dict(sources())["runs/store.py"]
    generic = [(scope, call) for scope, call in calls(tree) if name_of(call) == "_update_run"]
    for scope, call in generic:
        sql = call.args[2]
        if scope != "RunStore.set_status":
            assert isinstance(sql, ast.Constant) and "status" not in sql.value, scope
    assert "RunStore.set_status" in {scope for scope, _ in generic}
    filing = [scope for scope, call in calls(tree) if name_of(call) == "execute"]
    assert "RunStore.create_run" in filing
