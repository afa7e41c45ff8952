"""The requirements files declare what the code imports, and the lock file satisfies them.

A package the code or the tests import but no requirements file names is installed on a
developer's machine only by accident, and a fresh virtual environment fails (the way orjson and
the packaging test's pandas once did). `requirements-lock.txt`, compiled from the requirements
files by pip-tools, must pin every declared package at a version the declared range allows.
"""

from __future__ import annotations

import ast
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]
RUNTIME = ("requirements.txt", "requirements-ray.txt", "requirements-minatar.txt")  # + extras
ALL = (*RUNTIME, "requirements-dev.txt")
LOCAL = {"rdqn", "pages", "tests", "benchmarks", "app"}


def declared(files: tuple[str, ...]) -> dict[str, Requirement]:
    """The requirements named in `files` (their `-r` includes are among them), by name."""
    found: dict[str, Requirement] = {}
    for name in files:
        for line in (REPO / name).read_text(encoding="utf-8").splitlines():
            line = line.split("#")[0].strip()
            if line and not line.startswith("-"):
                requirement = Requirement(line)
                found[canonicalize_name(requirement.name)] = requirement
    return found


def locked() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for line in (REPO / "requirements-lock.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pins[canonicalize_name(name)] = Version(version)
    return pins


def imported_modules(*roots: str) -> set[str]:
    """Top-level names of every module imported anywhere under `roots` (absolute imports)."""
    names: set[str] = set()
    for root in roots:
        path = REPO / root
        for source in [path] if path.is_file() else path.rglob("*.py"):
            tree = ast.parse(source.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - LOCAL - {"__future__"}


def distributions(modules: set[str]) -> set[str]:
    """The installed distributions that provide `modules`."""
    providers = packages_distributions()
    missing = sorted(m for m in modules if m not in providers)
    assert not missing, f"imported but not installed: {missing}"
    return {canonicalize_name(d) for m in modules for d in providers[m]}


def test_the_core_and_the_dashboard_import_only_runtime_requirements() -> None:
    used = distributions(imported_modules("rdqn", "pages", "app.py"))
    assert sorted(used - set(declared(RUNTIME))) == []


def test_the_tests_import_only_declared_requirements() -> None:
    used = distributions(imported_modules("tests"))
    assert sorted(used - set(declared(ALL))) == []


def test_the_lock_pins_every_declared_requirement_within_its_range() -> None:
    pins = locked()
    for name, requirement in declared(ALL).items():
        assert name in pins, f"{name} is required but requirements-lock.txt does not pin it"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"requirements-lock.txt pins {name}=={pins[name]}, outside {requirement}"
        )
