"""The layers of rdqn: one-way imports, no UI library in the core, no prints but the CLI's.

Lowest first; a module may import rdqn modules of its own package or of lower layers only:

    validation, schemes   checking values; the replay schemes' names
    replay, envs, stats   the replay engine; the environments; spread over runs (IQM, CIs);
    config_paths          dotted paths over a tree of dataclasses
    learn                 nets, agent, its config, the fused update
    config                RunConfig (composes the configs below it)
    presets, limits       the named RunConfigs; a server's limits on them
    training              trainer, telemetry, timings
    runs                  recording: lifecycle, control, store, checkpoints, manifest, resume
    serve                 serving: the registry (cap, queue), handles, workers, executors
    compare, classroom    comparisons of recorded runs; the classroom examples
    sweeps                grids of recorded runs on the serving layer; a parallel map of tasks
    experiments           the PER paper's Blind Cliffwalk figure, the PER notebook's study
    -- the clients of the core --
    figures               Plotly builders (never Streamlit)
    cli                   `python -m rdqn` (a package: a module per command)
    dashboard             the Streamlit app's layer under `pages/`

Recording starts no thread and no worker, and nothing in the core knows the dashboard's people:
browsers, cookies, class codes (owners are opaque tokens).

No UI library in the core: nothing in it imports Streamlit, Plotly, the app's pages or the clients
`rdqn.dashboard` and `rdqn.figures`. The figures draw with Plotly and never import Streamlit or the
dashboard. The CLI is a client like the dashboard: it is the one package that prints, and it
reaches `rdqn.figures` (to write its reports) and `rdqn.dashboard` (where `rdqn dashboard` finds
the app, and the admin token's rule) only inside functions, so that a command that draws nothing
does not import Plotly.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

RDQN = Path(__file__).resolve().parents[1] / "rdqn"
CLIENTS = ("dashboard", "figures")
"""rdqn's packages that are clients of the core beside `rdqn.cli`, which is a layer of its own."""
ALL_FILES = sorted(RDQN.rglob("*.py"))
FILES = [p for p in ALL_FILES if p.relative_to(RDQN).parts[0] not in CLIENTS]
"""The core and the command line."""
FIGURES = sorted((RDQN / "figures").rglob("*.py"))
DASHBOARD = sorted((RDQN / "dashboard").rglob("*.py"))
LAYERS = {
    "validation": 0,
    "schemes": 0,
    "replay": 1,
    "envs": 1,
    "stats": 1,
    "config_paths": 1,
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
    "figures": 10,
    "cli": 11,
    "__main__": 12,
    "dashboard": 12,
}
UI_LIBRARIES = {"streamlit", "plotly", "pages", "app"}
CLI_REACHES = {
    "rdqn.figures.report",
    "rdqn.figures.experiments",
    "rdqn.figures.experiment_report",
    "rdqn.dashboard.assets",
    "rdqn.dashboard.admin",
}
"""What the command line imports of its fellow clients, each only inside a function."""


def ui(name: str) -> bool:
    """Whether an imported module is a UI library, the app, or one of rdqn's UI clients."""
    parts = name.split(".")
    return parts[0] in UI_LIBRARIES or ".".join(parts[:2]) in ("rdqn.dashboard", "rdqn.figures")


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


def test_every_module_belongs_to_a_layer() -> None:
    units = {unit(module_name(path)) for path in ALL_FILES if module_name(path) != "rdqn"}
    assert units == set(LAYERS)


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: str(p.relative_to(RDQN)))
def test_imports_go_down_the_layers(path: Path) -> None:
    module = module_name(path)
    if module == "rdqn":
        return
    own = unit(module)
    for name in imports(ast.parse(path.read_text(encoding="utf-8"))):
        if name.split(".")[0] != "rdqn" or name == "rdqn":
            continue
        other = unit(name)
        if own == "cli" and other == "dashboard":  # where the app is, and its admin token's rule
            assert name in CLI_REACHES, f"{module} imports {name}"
        else:
            assert other == own or LAYERS[other] < LAYERS[own], f"{module} imports {name}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(RDQN)))
def test_core_module_imports_no_ui_library(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    if in_cli(path):
        assert not [n for n in imports(tree, top_level_only=True) if ui(n)]
        assert {n for n in imports(tree) if ui(n)} <= CLI_REACHES
    else:
        assert not [n for n in imports(tree) if ui(n)]


def test_only_the_cli_reaches_the_clients_and_it_does() -> None:
    reaching = {
        module_name(path)
        for path in FILES
        if any(ui(n) for n in imports(ast.parse(path.read_text("utf-8"))))
    }
    assert reaching == {"rdqn.cli.compare", "rdqn.cli.experiment", "rdqn.cli.dashboard"}


@pytest.mark.parametrize("path", FIGURES, ids=lambda p: p.name)
def test_the_figures_draw_with_plotly_and_never_import_streamlit_or_the_app(path: Path) -> None:
    found = imports(ast.parse(path.read_text(encoding="utf-8")))
    assert not [n for n in found if n.split(".")[0] in {"streamlit", "pages", "app"}], path.name
    assert not [n for n in found if n.startswith("rdqn.dashboard")], path.name


@pytest.mark.parametrize("path", DASHBOARD, ids=lambda p: str(p.relative_to(RDQN)))
def test_the_dashboard_never_imports_the_pages_or_the_cli(path: Path) -> None:
    found = imports(ast.parse(path.read_text(encoding="utf-8")))
    assert not [n for n in found if n.split(".")[0] in {"pages", "app"}], path.name
    assert not [n for n in found if n.startswith("rdqn.cli")], path.name


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
    """Tests and benchmarks share what drives the dashboard through `tests.harness`; a test that
    imported a benchmark would test the benchmark, or break when it changes."""
    sources = {path: path.read_bytes() for path in (RDQN.parent / "tests").rglob("*.py")}
    importing = sorted(
        str(path.relative_to(RDQN.parent))
        for path, source in sources.items()
        if b"benchmarks" in source  # parse only where the name occurs at all
        and any(n.split(".")[0] == "benchmarks" for n in imports(ast.parse(source)))
    )
    assert importing == []
