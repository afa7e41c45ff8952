"""The layers of rdqn: one-way imports, no UI library in the core, no prints but the CLI's.

Lowest first; a module may import rdqn modules of its own package or of lower layers only:

    validation, schemes   checking values; the replay schemes' names
    replay, envs          the replay engine; the environments
    learn                 nets, agent, its config, the fused update
    config                RunConfig (composes the configs below it)
    presets, limits       the named RunConfigs; a server's limits on them
    training              trainer, telemetry, timings
    runs                  recording: lifecycle, control, store, checkpoints, manifest, resume
    serve                 serving: the registry (cap, queue), handles, workers, executors
    compare, classroom    comparisons of recorded runs; the classroom examples
    sweeps                grids of recorded runs on the serving layer; a parallel map of tasks
    experiments           the PER paper's Blind Cliffwalk figure, the PER notebook's study
    cli                   `python -m rdqn` (a package: a module per command)

Recording starts no thread and no worker, and nothing in rdqn knows the dashboard's people:
browsers, cookies, class codes (owners are opaque tokens).

No UI library in the core: nothing in rdqn imports Streamlit, Plotly or the app (`dashboard`,
`pages`). The figures are a package of their own beside it, `rdqn_figures` (Plotly, never
Streamlit). The CLI is a client like the dashboard's pages: it is the one package that prints, and
the one that reaches `rdqn_figures` (to write its reports), only inside a function, so that a
command that draws nothing does not import Plotly.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

RDQN = Path(__file__).resolve().parents[1] / "rdqn"
FILES = sorted(RDQN.rglob("*.py"))
LAYERS = {
    "validation": 0,
    "schemes": 0,
    "replay": 1,
    "envs": 1,
    "learn": 2,
    "config": 3,
    "presets": 4,
    "limits": 4,
    "training": 5,
    "runs": 6,
    "serve": 7,
    "compare": 8,
    "classroom": 8,
    "sweeps": 9,
    "experiments": 9,
    "cli": 10,
    "__main__": 11,
}
UI_LIBRARIES = {"streamlit", "plotly", "dashboard", "pages", "rdqn_figures"}
FIGURES = sorted((RDQN.parent / "rdqn_figures").glob("*.py"))


def unit(module: str) -> str:
    """The layer unit of an rdqn module: its package below rdqn, or the module itself."""
    return module.split(".")[1]


def module_name(path: Path) -> str:
    parts = path.relative_to(RDQN.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def in_cli(path: Path) -> bool:
    """Whether a file is part of the command line: the package `rdqn.cli`, or ``python -m
    rdqn``'s entry, `rdqn.__main__` (which says so when Ctrl-C stops it loading the CLI)."""
    module = module_name(path)
    return module in ("rdqn.cli", "rdqn.__main__") or module.startswith("rdqn.cli.")


def imports(tree: ast.AST, *, top_level_only: bool = False) -> set[str]:
    nodes = ast.iter_child_nodes(tree) if top_level_only else ast.walk(tree)
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.If) and top_level_only:  # `if TYPE_CHECKING:` blocks
            names |= imports(ast.Module(body=node.body, type_ignores=[]), top_level_only=True)
    return names


def test_every_core_module_belongs_to_a_layer() -> None:
    units = {unit(module_name(path)) for path in FILES if module_name(path) != "rdqn"}
    assert units == set(LAYERS)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(RDQN)))
def test_imports_go_down_the_layers(path: Path) -> None:
    module = module_name(path)
    if module == "rdqn":
        return
    own = unit(module)
    for name in imports(ast.parse(path.read_text(encoding="utf-8"))):
        if name.split(".")[0] != "rdqn" or name == "rdqn":
            continue
        other = unit(name)
        assert other == own or LAYERS[other] < LAYERS[own], f"{module} imports {name}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(RDQN)))
def test_core_module_imports_no_ui_library(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    everywhere = {name.split(".")[0] for name in imports(tree)}
    if in_cli(path):
        top = {name.split(".")[0] for name in imports(tree, top_level_only=True)}
        assert not top & UI_LIBRARIES
        assert {n for n in imports(tree) if n.split(".")[0] in UI_LIBRARIES} <= {
            "rdqn_figures.report",
            "rdqn_figures.experiments",
            "rdqn_figures.experiment_report",
        }
    else:
        assert not everywhere & UI_LIBRARIES


def test_only_the_cli_reaches_the_figures_and_it_does() -> None:
    reaching = {
        module_name(path)
        for path in FILES
        if any(n.split(".")[0] in UI_LIBRARIES for n in imports(ast.parse(path.read_text("utf-8"))))
    }
    assert reaching == {"rdqn.cli.compare", "rdqn.cli.experiment"}


@pytest.mark.parametrize("path", FIGURES, ids=lambda p: p.name)
def test_the_figures_draw_with_plotly_and_never_import_streamlit_or_the_app(path: Path) -> None:
    found = {n.split(".")[0] for n in imports(ast.parse(path.read_text(encoding="utf-8")))}
    assert not found & {"streamlit", "dashboard", "pages"}, path.name


@pytest.mark.parametrize(
    "path", [p for p in FILES if not in_cli(p)], ids=lambda p: str(p.relative_to(RDQN))
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


RUNS = sorted((RDQN / "runs").glob("*.py"))
STARTS_WORK = {"threading.Thread", "threading.Timer", "subprocess.Popen", "os.fork"}
"""Calls that start a thread or a process; `multiprocessing`, `concurrent.futures` and Ray are
refused as imports."""


def dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return f"{dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


@pytest.mark.parametrize("path", RUNS, ids=lambda p: p.name)
def test_recording_starts_no_thread_and_no_worker(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    calls = {dotted(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    assert not calls & STARTS_WORK
    pools = {"multiprocessing", "concurrent", "ray"} & {
        name.split(".")[0] for name in imports(tree)
    }
    assert not pools, f"{path.name} imports {pools}"  # (threading's locks are welcome)
    if "subprocess.run" in calls:
        assert path.name == "manifest.py"  # the source revision: one `git` query, waited for


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(RDQN)))
def test_no_core_module_knows_browsers_cookies_or_class_codes(path: Path) -> None:
    text = path.read_text(encoding="utf-8").lower()
    for word in ("browser", "cookie", "class code", "class_code", "live_pages"):
        assert word not in text, f"{path.name} speaks of {word!r}: owners are opaque tokens"


def test_no_test_imports_the_benchmarks() -> None:
    """Tests and benchmarks share what drives the dashboard through `harness`; a test that
    imported a benchmark would test the benchmark, or break when it changes."""
    sources = {path: path.read_bytes() for path in (RDQN.parent / "tests").rglob("*.py")}
    importing = sorted(
        str(path.relative_to(RDQN.parent))
        for path, source in sources.items()
        if b"benchmarks" in source  # parse only where the name occurs at all
        and any(n.split(".")[0] == "benchmarks" for n in imports(ast.parse(source)))
    )
    assert importing == []
