"""Sweeps: start a small grid of runs, or watch one, and read its results as a heatmap.

The sweeps listed are those of the run store (``python -m rdqn sweep`` records them too); the
one on show travels in the URL (``?sweep=ID``). While its trials wait or train (or the sweep
this server started is still filing them), the progress and the heatmap refresh every 2 s. A
click on a heatmap cell draws that cell's reward curves below.
"""

from __future__ import annotations

import streamlit as st

from rdqn.compare import LESSON_PRESET
from rdqn.dashboard.config_widgets import config_widget
from rdqn.dashboard.state import ensure_app_frame, registry, store
from rdqn.dashboard.sweep_jobs import (
    AXES,
    PAGE_MAX_ENV_STEPS,
    PAGE_MAX_SEEDS,
    PAGE_MAX_TRIALS,
    grid_fields,
)
from rdqn.dashboard.sweep_panel import chosen_sweep, show_sweep, start_from_form
from rdqn.presets import preset
from rdqn.sweeps import list_sweeps

ensure_app_frame()

st.title("Sweeps")
st.caption(
    "One run per grid cell and seed: which settings learn, and how reliably. Each cell of the "
    "heatmap is the mean over its seeds, with their spread."
)
sweeps = list_sweeps(store())

with st.expander("Start a sweep", expanded=sweeps.empty, icon=":material/play_arrow:"):
    left, middle, right = st.columns(3)
    preset_name = config_widget(left, "preset", LESSON_PRESET, key="sweeps.preset")
    steps = middle.number_input(
        "Env steps per trial",
        100,
        PAGE_MAX_ENV_STEPS,
        preset(preset_name).train.total_steps,
        step=500,
        key=f"sweeps.steps.{preset_name}",
    )
    seeds = right.number_input("Seeds per cell", 1, PAGE_MAX_SEEDS, 2, key="sweeps.seeds")
    fields = ["—", *grid_fields()]
    axes = []
    for number, (field, values) in enumerate(AXES, start=1):
        field_box, values_box = st.columns([1, 2])
        name = field_box.selectbox(
            f"Axis {number}", fields, index=fields.index(field or "—"), key=f"sweeps.axis{number}"
        )
        typed = values_box.text_input(
            f"Values of axis {number}",
            values,
            key=f"sweeps.values{number}",
            disabled=name == "—",
            help="Comma-separated, as python -m rdqn sweep --grid KEY=V1,V2,... takes them: "
            "0, 0.6, 1 or proportional, rank",
        )
        axes.append((None if name == "—" else name, typed))
    st.caption(
        f"At most {registry().max_active} runs train at once on this server; the rest wait in "
        f"line. A sweep started here runs at most {PAGE_MAX_TRIALS} trials and "
        f"{PAGE_MAX_ENV_STEPS:,} env steps in all. Larger ones: python -m rdqn sweep on the "
        "server; this page shows them too."
    )
    if st.button("Start sweep", type="primary", key="sweeps.start"):
        start_from_form(preset_name, axes, int(seeds), int(steps))
        sweeps = list_sweeps(store())

if sweeps.empty:
    st.info("No sweep in the run store yet: start one above, or with python -m rdqn sweep.")
else:
    show_sweep(chosen_sweep(sweeps))
