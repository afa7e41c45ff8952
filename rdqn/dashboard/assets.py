"""Where the Streamlit app's files are, and the explanatory text the pages show (Markdown files in
``assets/text/``).

The app (``app.py``, ``pages/``, ``assets/``, the server's ``.streamlit/config.toml``) lives at the
top of a checkout, where ``streamlit run app.py`` serves it; an installed wheel carries a copy of
the same files as ``rdqn/dashboard/app/`` (pyproject.toml), which ``rdqn dashboard`` serves.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

__all__ = ["APP_ROOT", "TEXT_DIR", "explanation"]


def _app_root() -> Path:
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "app.py").is_file() and (checkout / "pages").is_dir():
        return checkout
    return Path(__file__).resolve().parent / "app"


APP_ROOT = _app_root()
"""The folder holding ``app.py``, ``pages/`` and ``assets/``: a checkout's top, or the wheel's
copy."""
TEXT_DIR = APP_ROOT / "assets" / "text"


@cache
def explanation(name: str) -> str:
    """The Markdown of ``assets/text/<name>.md``."""
    return (TEXT_DIR / f"{name}.md").read_text(encoding="utf-8")
