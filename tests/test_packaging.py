"""`pip install .` gives a working `rdqn` command with the runtime dependencies of
requirements.txt.

The wheel is built from a copy of the sources (so the checkout gets no build/ folder) without
build isolation or dependencies (the machine may be offline), then installed into a fresh
virtual environment that sees this interpreter's packages (a `.pth` file naming its site-packages,
so that it works whether the tests run from a virtual environment or a system Python), and its
`rdqn` command runs a tiny comparison, report included. The wheel's top-level packages are `rdqn`
and `rdqn_figures` (the figures and reports): the sources copied hold no `dashboard/`, so a report
that still needed the app's package would fail here.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCES = (
    "rdqn",
    "rdqn_figures",
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


def test_the_wheel_installs_an_rdqn_command(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    for name in SOURCES:
        copy = shutil.copytree if (REPO / name).is_dir() else shutil.copy2
        copy(REPO / name, source / name)
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
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith("/METADATA"))).decode()
        entry_points = archive.read(next(n for n in names if n.endswith("entry_points.txt")))
    assert "rdqn = rdqn.cli:main" in entry_points.decode()
    assert [
        line.removeprefix("Requires-Dist: ")
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist:")
    ] == [*requirements(), 'ray==2.60.0; extra == "ray"']
    assert "Provides-Extra: ray" in metadata
    # Top-level packages named after the project only: nothing another distribution could own.
    # The app (app.py, pages/, dashboard/) runs from a checkout.
    assert {name.split("/")[0] for name in names} == {
        "rdqn",
        "rdqn_figures",
        wheel.name.rsplit("-", 3)[0] + ".dist-info",
    }
    assert "rdqn/runs/lifecycle.py" in names and "rdqn_figures/report.py" in names
    assert not [n for n in names if "__pycache__" in n]

    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    (venv_site,) = (venv / "lib").glob("python3*/site-packages")
    (venv_site / "parent_environment.pth").write_text(
        "".join(f"{path}\n" for path in site.getsitepackages()), encoding="utf-8"
    )
    run(venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps", wheel, cwd=tmp_path)
    rdqn = venv / "bin" / "rdqn"
    work = tmp_path / "work"
    work.mkdir()  # not the checkout: the installed package must stand on its own
    presets = run(rdqn, "presets", cwd=work)
    assert [line.split()[0] for line in presets.stdout.splitlines()] == [
        "e14",
        "e14-lesson",
        "e15",
        "per-notebook",
        "paper",
        "chain-lesson",
        "demo",
    ]
    assert run(rdqn, "--help", cwd=work).stdout.startswith("usage: rdqn ")
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
