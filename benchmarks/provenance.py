"""Where a results file came from: the commit it was measured on, recorded by each benchmark
as it writes the file (``"commit"``: `git rev-parse --short HEAD`, with ``+uncommitted`` when the
working tree had changes to tracked files)."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def git_commit() -> str:
    """The checkout's short commit (``+uncommitted`` if tracked files differ), or "unknown"."""
    try:
        head = _git("rev-parse", "--short", "HEAD")
        dirty = _git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+uncommitted" if dirty else "")
