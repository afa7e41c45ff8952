"""Explanatory text the pages show, kept as Markdown files in ``assets/text/``."""

from __future__ import annotations

from functools import cache
from pathlib import Path

__all__ = ["TEXT_DIR", "explanation"]

TEXT_DIR = Path(__file__).resolve().parents[1] / "assets" / "text"


@cache
def explanation(name: str) -> str:
    """The Markdown of ``assets/text/<name>.md``."""
    return (TEXT_DIR / f"{name}.md").read_text(encoding="utf-8")
