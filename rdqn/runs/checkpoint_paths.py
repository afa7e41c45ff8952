"""Where a store's checkpoints live, and how the ``runs`` table records their paths.

A store at ``<home>/rdqn.db`` keeps its checkpoint files in ``<home>/checkpoints``, one per run
(``<run id>.pt``). The table records a file in the home folder by its path relative to the folder
(``checkpoints/<id>.pt``, POSIX separators), so a copied or moved home resumes from its own files;
a file elsewhere by its absolute path. Read back, a relative path is joined to the folder the store
was opened from; absolute ones (files elsewhere, and what stores recorded before paths were
relative) are read as they are.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["CheckpointPaths"]


class CheckpointPaths:
    """The checkpoint paths of the store whose file is ``db`` (a path, not opened here)."""

    def __init__(self, db: Path) -> None:
        self.home = db.parent.absolute()
        """The folder relative paths are relative to (absolute: a later change of the working
        directory changes nothing)."""
        self.folder: Path = self.home / "checkpoints"
        """Where the store's own checkpoint files belong."""

    def for_run(self, run_id: str) -> Path:
        """Where a run's checkpoint belongs: ``folder / "<run_id>.pt"``."""
        return self.folder / f"{run_id}.pt"

    def stored(self, path: Path) -> str:
        """How the ``runs`` table holds ``path``: relative to `home` (POSIX separators) when the
        file is in it, else absolute."""
        absolute = path.absolute()
        if absolute.is_relative_to(self.home):
            return absolute.relative_to(self.home).as_posix()
        return str(absolute)

    def read(self, value: str | None) -> str | None:
        """A stored path (`stored`) as a path to open: a relative one under `home`, an absolute
        one (or None) as it is."""
        if value is None or Path(value).is_absolute():
            return value
        return str(self.home / value)

    def is_own(self, path: str) -> bool:
        """Whether ``path`` (as `read` gives it), links resolved, lies in `folder`: a file the
        store may delete with its run (files elsewhere are their owners')."""
        return Path(path).resolve().is_relative_to(self.folder.resolve())
