"""`pip install .` gives one package, `rdqn`, with the runtime dependencies of requirements.txt,
an `rdqn` command, and the dashboard: `rdqn dashboard` serves the app the wheel carries.

The wheel is built from a copy of the sources (so the checkout gets no build/ folder) without
build isolation or dependencies (the machine may be offline), then installed into a fresh
virtual environment that sees this interpreter's packages (a `.pth` file naming its site-packages,
so that it works whether the tests run from a virtual environment or a system Python). Its
`rdqn` command runs a tiny comparison, report included, and serves Home to Chromium from a folder
that is not the checkout.
"""

from __future__ import annotations

import os
import re
import shutil
import site
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.harness.chromium import CHROMIUM, CHROMIUM_ARGS
from tests.harness.dashboard_server import free_port, wait_until_healthy

REPO = Path(__file__).resolve().parents[1]
SOURCES = (
    "rdqn",
    "app.py",
    "pages",
    "assets",
    ".streamlit",
    "benchmarks/results/cliffwalk.json",
    "pyproject.toml",
    "README.md",
    "requirements.txt",
    "requirements-ray.txt",
)


def run(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    # Threads, not worker processes: a fresh install's zygote would compile every kernel first.
    env = {**os.environ, "RDQN_EXECUTOR": "thread"}
    done = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def requirements() -> list[str]:
    lines = (REPO / "requirements.txt").read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    work: Path
    """A folder that is not the checkout: the installed package must stand on its own."""


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    tmp_path = tmp_path_factory.mktemp("packaging")
    source = tmp_path / "source"
    for name in SOURCES:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        copy = shutil.copytree if (REPO / name).is_dir() else shutil.copy2
        copy(
            REPO / name,
            source / name,
            **(
                {"ignore": shutil.ignore_patterns("__pycache__")} if copy is shutil.copytree else {}
            ),
        )
    wheels = tmp_path / "wheels"
    run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "-q",
        "--no-deps",
        "--no-build-isolation",
        ".",
        "-w",
        wheels,
        cwd=source,
    )
    (wheel,) = wheels.glob("rdqn-*.whl")
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    (venv_site,) = (venv / "lib").glob("python3*/site-packages")
    (venv_site / "parent_environment.pth").write_text(
        "".join(f"{path}\n" for path in site.getsitepackages()), encoding="utf-8"
    )
    run(venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps", wheel, cwd=tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    return Installed(wheel, venv, work)


def test_the_wheel_is_one_package_with_the_app_inside(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith("/METADATA"))).decode()
        entry_points = archive.read(next(n for n in names if n.endswith("entry_points.txt")))
    assert "rdqn = rdqn.cli:run" in entry_points.decode()
    assert [
        line.removeprefix("Requires-Dist: ")
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist:")
    ] == [*requirements(), 'ray==2.60.0; extra == "ray"']
    assert "Provides-Extra: ray" in metadata
    # One top-level package named after the project: nothing another distribution could own.
    assert {name.split("/")[0] for name in names} == {
        "rdqn",
        installed.wheel.name.rsplit("-", 3)[0] + ".dist-info",
    }
    # Every package of the checkout (pyproject.toml lists them), and the app it serves.
    packages = {str(p.parent.relative_to(REPO)) for p in (REPO / "rdqn").rglob("__init__.py")}
    assert {p for p in packages if f"{p}/__init__.py" not in names} == set()
    listed = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]
    assert {p.replace("/", ".") for p in packages} | {"rdqn.dashboard.app"} == set(
        listed["packages"]
    )
    app = "rdqn/dashboard/app/"
    for page in (REPO / "pages").glob("*.py"):
        assert f"{app}pages/{page.name}" in names
    for lesson in (REPO / "assets" / "lessons").glob("*.toml"):
        assert f"{app}assets/lessons/{lesson.name}" in names
    for text in (REPO / "assets" / "text").glob("*.md"):
        assert f"{app}assets/text/{text.name}" in names
    assert {f"{app}app.py", f"{app}.streamlit/config.toml", f"{app}assets/favicon.png"} <= set(
        names
    )
    assert "rdqn/runs/lifecycle.py" in names and "rdqn/figures/report.py" in names
    assert not [n for n in names if "__pycache__" in n]


def test_the_installed_command_trains_and_reports(installed: Installed) -> None:
    rdqn, work = installed.venv / "bin" / "rdqn", installed.work
    presets = run(rdqn, "presets", cwd=work)
    assert [line.split()[0] for line in presets.stdout.splitlines()] == [
        "e14",
        "e14-lesson",
        "e15",
        "per-notebook",
        "paper",
        "chain-lesson",
        "demo",
        "minatar",
    ]
    assert run(rdqn, "--help", cwd=work).stdout.startswith("usage: rdqn ")
    assert "--address" in run(rdqn, "dashboard", "--help", cwd=work).stdout
    compare = run(
        rdqn,
        "--home",
        work / "home",
        "compare",
        "--steps",
        "200",
        "--seeds",
        "0",
        "--schemes",
        "uniform",
        "--quiet",
        "--set",
        "agent.fused_mlp=false",
        "--set",
        "train.learning_starts=64",
        "--report",
        work / "report.html",
        cwd=work,
    )
    assert "report written to" in compare.stdout
    assert (work / "report.html").stat().st_size > 1_000_000
    assert (work / "home" / "rdqn.db").is_file()


@pytest.fixture
def served(installed: Installed) -> Iterator[tuple[str, Path]]:
    """`rdqn dashboard` of the installed wheel on a free port, its store a relative --home;
    its URL and log."""
    port = free_port()
    log = installed.work / "dashboard.log"
    env = {**os.environ, "RDQN_EXECUTOR": "thread", "RDQN_ADMIN_TOKEN": "short"}
    env.pop("RDQN_HOME", None)
    with log.open("wb") as out:
        server = subprocess.Popen(
            [installed.venv / "bin" / "rdqn", "dashboard", "--port", str(port), "--home", "class"],
            cwd=installed.work,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(server, url, log, wait_s=120)
        yield url, log
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.browser
def test_rdqn_dashboard_serves_home_from_the_installed_wheel(
    installed: Installed, served: tuple[str, Path]
) -> None:
    from playwright.sync_api import sync_playwright

    url, log = served
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.set_default_timeout(60_000)
            page.goto(url)
            page.get_by_role("button", name="Start demo").wait_for()
            assert page.get_by_text("Prioritized experience replay, live").is_visible()
            page.goto(f"{url}/runs")  # Saved runs: the store, and the lessons' folder
            page.get_by_text("Admin is off").wait_for()
        finally:
            browser.close()
    text = log.read_text(encoding="utf-8")
    assert "rdqn: warning: RDQN_ADMIN_TOKEN has fewer than 16 characters" in text
    assert f"(store: {installed.work / 'class'})" in text
    assert "Traceback" not in text, text[-3000:]
    assert (installed.work / "class" / "rdqn.db").is_file()  # --home is the folder it ran in
    assert re.search(r"serving the dashboard on http://127\.0\.0\.1:\d+", text)
