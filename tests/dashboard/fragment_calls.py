"""Calling a dashboard fragment as a plain function in a test."""

from __future__ import annotations

from types import ModuleType

import pytest

from rdqn.dashboard import fragments


def call_plainly(monkeypatch: pytest.MonkeyPatch, module: ModuleType, name: str) -> None:
    """Make ``module.name``, a `rdqn.dashboard.fragments.fragment`, a plain call without its pause:
    outside a script run, st.fragment would not call it."""
    monkeypatch.setattr(fragments.time, "sleep", lambda seconds: None)
    monkeypatch.setattr(module, name, getattr(module, name).__wrapped__)
