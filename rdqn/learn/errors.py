"""The learner's errors, importable without torch (the server classifies a run's end with them)."""

from __future__ import annotations

__all__ = ["DivergenceError"]


class DivergenceError(RuntimeError):
    """A non-finite loss, TD error or gradient norm; raised before the optimizer step."""
