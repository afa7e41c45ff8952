"""The live page's settings form, applied: a preset, the fields edited, a prices CSV uploaded.

Apply changes the page's settings (`rdqn.dashboard.live_settings`) and restarts the run from
the seed (`rdqn.dashboard.live_run.restart`), or changes nothing when the result would not be a
valid run. An uploaded CSV is checked before it is kept on the server (`checked_prices`); the
widgets are `rdqn.dashboard.live_controls.settings_form`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import streamlit as st
from numpy.typing import NDArray

from rdqn.config import RunConfig
from rdqn.dashboard.live_run import restart
from rdqn.dashboard.live_settings import controls_follow, live_config, set_overrides
from rdqn.dashboard.state import save_upload, upload_name
from rdqn.dashboard.text import plain
from rdqn.envs import load_prices_csv, make_env
from rdqn.presets import configure

__all__ = ["UPLOAD_ENV", "apply_settings", "checked_prices", "prices_note"]

UPLOAD_ENV = "rdqn/SyntheticMarket-v0"


def apply_settings(
    preset_name: str,
    values: Mapping[str, Any],
    *,
    preset_defaults: bool,
    upload: tuple[str, bytes] | None,
) -> None:
    """The settings form's Apply: switch preset, keeping the changes made so far and the fields
    edited in the form (or, with ``preset_defaults``, nothing), take an uploaded prices CSV
    (``(file name, bytes)``), then restart. Nothing changes, and nothing restarts, when the
    result would not be a valid run or the upload is rejected (``live.error`` says why).
    Without an upload the market simulates its prices (the live view says which it uses)."""
    current = live_config()
    edited = {path: value for path, value in values.items() if current.get(path) != value}
    kept = {} if preset_defaults else dict(st.session_state["live.overrides"])
    kept.pop("env.kwargs", None)  # an uploaded CSV is used only while it is in the form
    overrides = {**kept, **({} if preset_defaults else edited)}
    try:
        env_id = configure(preset_name, overrides).env.id
        if upload is not None:
            if env_id != UPLOAD_ENV:
                raise ValueError(
                    f"prices CSV {upload[0]!r} not used: prices are for {UPLOAD_ENV} only; "
                    "choose it as the environment, or remove the file"
                )
            overrides["env.kwargs"] = {"prices_csv": str(_checked_upload(*upload))}
        set_overrides(preset_name, overrides)
    except ValueError as err:
        st.session_state["live.error"] = str(err)
        return
    controls_follow()
    restart()


def checked_prices(name: str, data: bytes) -> NDArray[np.float64]:
    """The prices of an uploaded CSV if the market can be built from them; `ValueError` saying
    what is wrong (not UTF-8 text, not a prices CSV, beyond the server's CSV limits, too short
    for an episode) otherwise. Read from the bytes, at a cost bounded before parsing
    (`rdqn.envs.read_prices_csv`)."""
    try:
        prices = load_prices_csv(data)
        make_env(UPLOAD_ENV, prices=prices).close()
    except ValueError as err:
        raise ValueError(f"prices CSV {name!r} rejected: {err}") from err
    return prices


def _checked_upload(name: str, data: bytes) -> Path:
    """Check an uploaded prices CSV (`checked_prices`), then keep it (`save_upload`): a
    rejected upload is never written."""
    checked_prices(name, data)
    return save_upload(name, data)


def prices_note(config: RunConfig) -> str | None:
    """Which prices a market run trains on: an uploaded file's, or simulated ones (None for
    other environments)."""
    if config.env.id != UPLOAD_ENV:
        return None
    path = config.env.kwargs.get("prices_csv")
    if path:
        return f"Prices: uploaded file {plain(upload_name(path))}."
    return f"Prices: simulated (a seeded price process, seed {config.seed}); no file uploaded."
