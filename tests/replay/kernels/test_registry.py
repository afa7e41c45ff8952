"""The kernel registry: it names every module with kernels numba caches on disk, imports none of
them (replay may not import the layers above it), and reads numba's cache as this numba keeps
it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from rdqn.replay import sumtree
from rdqn.replay.kernels import registry
from rdqn.replay.kernels.registry import KERNEL_MODULES, all_cached, cache_dirs, kernels
from rdqn.replay.rank import layout
from tests.run_helpers import fresh_python

RDQN = Path(__file__).resolve().parents[3] / "rdqn"
KERNELS = RDQN / "replay" / "kernels"
CACHED = {"kernel", "refcounted"}
"""`rdqn.replay.kernels.compiled`'s decorators of kernels numba caches (`inlined` is not)."""


def _module(path: Path) -> str:
    parts = path.relative_to(RDQN.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _caches(decorator: ast.expr) -> bool:
    """Whether a decorator compiles a kernel numba caches on disk: `kernel`, `refcounted`, or
    ``numba.njit(cache=True)`` not inlined."""
    if isinstance(decorator, ast.Name):
        return decorator.id in CACHED
    if not isinstance(decorator, ast.Call):
        return False
    name = ast.unparse(decorator.func)
    options = {k.arg: ast.unparse(k.value) for k in decorator.keywords}
    return (
        name in ("numba.njit", "njit")
        and options.get("cache") == "True"
        and options.get("inline", "'never'") == "'never'"
    )


def _with_cached_kernels() -> set[str]:
    """The modules of rdqn (but the kernels' own package) that define a cached kernel."""
    found = set()
    for path in RDQN.rglob("*.py"):
        if path.is_relative_to(KERNELS):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and any(map(_caches, node.decorator_list)):
                found.add(_module(path))
    return found


def test_the_registry_names_every_module_with_cached_kernels() -> None:
    """A module of kernels the registry missed would compile in a first run, not in the
    warm-up, and `all_cached` would not know of it."""
    assert set(KERNEL_MODULES) == _with_cached_kernels()
    assert len(set(KERNEL_MODULES)) == len(KERNEL_MODULES)


def test_kernels_are_those_numba_caches_and_not_the_inlined() -> None:
    names = {kernel.__name__ for kernel in kernels([sumtree])}
    assert {"update_tree_kernel", "find_kernel"} <= names
    assert not {"descend", "descend_sorted"} & names  # inlined: compiled into their callers
    assert kernels([layout]) == []  # its kernels are all inlined


def test_the_registry_loads_no_numba_and_no_module_it_names() -> None:
    script = (
        "import sys\n"
        "from rdqn.replay.kernels import registry\n"
        "print(sorted(m for m in sys.modules if m.startswith(('rdqn', 'numba', 'torch'))))\n"
    )
    loaded = fresh_python(script).strip()
    assert loaded == str(["rdqn", "rdqn.replay", "rdqn.replay.kernels", registry.__name__])


def test_the_kernels_import_nothing_of_replay_but_the_formulas() -> None:
    """The kernels' package is the bottom of replay: every other replay module may import it,
    it imports none of them (but `rdqn.replay.priorities`, the formulas it compiles)."""
    for path in KERNELS.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {
            node.module
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rdqn")
        }
        imported |= {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
            if alias.name.startswith("rdqn")
        }
        allowed = {"rdqn.replay", "rdqn.replay.kernels"}
        assert imported <= allowed, path.name
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "rdqn.replay":
                assert [alias.name for alias in node.names] == ["priorities"], path.name


def test_this_numba_keeps_its_cache_as_the_registry_reads_it() -> None:
    """`cache_dirs` and `all_cached` read numba's private cache index: where a numba changes
    it they say "cannot tell" (below), and this test fails, so that the change is seen."""
    listed = lambda: kernels([sumtree])  # noqa: E731
    assert all_cached(listed) is not None
    assert cache_dirs(listed), "numba no longer says where it keeps its cache"


def test_a_numba_whose_cache_cannot_be_read_leaves_it_unknown() -> None:
    def changed() -> list[object]:
        raise AttributeError("'CPUDispatcher' object has no attribute '_cache'")

    assert all_cached(changed) is None
    assert cache_dirs(changed) == []


@pytest.mark.parametrize("name", KERNEL_MODULES)
def test_every_module_named_defines_a_cached_kernel(name: str) -> None:
    module = pytest.importorskip(name)
    assert kernels([module]), name
