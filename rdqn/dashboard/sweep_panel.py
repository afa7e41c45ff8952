"""The Sweeps page's panels: the start form's button, the sweep on show (``?sweep=ID``), and its
watch panel (progress, heatmap, the picked cell's curves), a fragment that reruns every 2 s
while trials wait or train, or while this server's job for the sweep lives (`_in_progress`). The
data comes from `rdqn.dashboard.sweeps_view`; starting and stopping from
`rdqn.dashboard.sweep_jobs`.

The picked cell is kept in session state (``sweeps.cell``: sweep id, cell key), not in the
chart: a chart's selection is lost whenever its figure changes (a refresh with new results, a
framed cell), so a click is read from the chart's state at the start of the next run, kept,
and the figure drawn with that cell framed.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from rdqn.compare import ROLLING_WINDOW
from rdqn.dashboard.display import show_chart
from rdqn.dashboard.fragments import fragment
from rdqn.dashboard.ownership import is_admin
from rdqn.dashboard.return_threshold import return_threshold_input
from rdqn.dashboard.state import for_this_viewer, session, shown_value, store
from rdqn.dashboard.sweep_jobs import SweepJob, page_spec, start_sweep, sweep_jobs
from rdqn.dashboard.sweeps_view import (
    MEASURES,
    Heatmap,
    cell_evaluations,
    cell_label,
    cell_seeds,
    heatmap_slice,
    is_live,
    selected_cell,
    sweep_summary,
    trial_counts,
    value_label,
)
from rdqn.dashboard.text import plain
from rdqn.figures import SCHEME_COLORS, cell_curves_figure, evaluation_figure, sweep_heatmap
from rdqn.sweeps import SweepSpec, load_spec, sweep_trials

__all__ = ["REFRESH_S", "HEATMAP_KEY", "chosen_sweep", "show_sweep", "start_from_form"]

REFRESH_S = 2.0
"""Seconds between two refreshes of the watch panel while trials wait or train."""
HEATMAP_KEY = "sweeps.heatmap"


def start_from_form(
    preset: str, axes: Sequence[tuple[str | None, str]], seeds: int, steps: int
) -> None:
    """The start button: the form's sweep, started for this browser and put on show; a bad
    grid or one too large for the page is one error naming the entry, nothing started."""
    try:
        job = start_sweep(page_spec(preset, axes, seeds, steps), session().owner)
    except ValueError as err:
        st.error(f"Cannot start this sweep: {plain(err)}", icon=":material/error:")
        return
    st.session_state["sweeps.id"] = job.spec.id
    st.query_params["sweep"] = job.spec.id


def chosen_sweep(sweeps: pd.DataFrame) -> str:
    """The sweep selector (`rdqn.sweeps.list_sweeps` rows, newest first): the sweep the address
    names if it is one, else the one chosen before, else the newest."""
    ids = sweeps["sweep_id"].tolist()
    rows = sweeps.set_index("sweep_id")
    linked = st.query_params.get("sweep")
    if linked in ids:
        st.session_state["sweeps.id"] = linked
    elif st.session_state.get("sweeps.id") not in ids:
        st.session_state["sweeps.id"] = ids[0]

    def label(sweep_id: str) -> str:
        row = rows.loc[sweep_id]
        return f"{sweep_id} · {row['preset']} · {row['grid']} · {row['trials']} trials"

    chosen: str = st.selectbox(
        "Sweep",
        ids,
        ids.index(shown_value("sweeps.id")),
        key="sweeps.id",
        format_func=label,
        on_change=lambda: st.query_params.update(sweep=st.session_state["sweeps.id"]),
    )
    st.query_params["sweep"] = chosen
    return chosen


def show_sweep(sweep_id: str) -> None:
    """The sweep's settings, then its watch panel (refreshed while its trials train)."""
    spec = load_spec(store(), sweep_id)
    grid = "; ".join(
        f"{name} = {', '.join(map(value_label, values))}" for name, values in spec.grid.items()
    )
    budget = f"{spec.steps:,} env steps" if spec.steps else "the preset's budget"
    st.caption(
        f"{plain(spec.preset)} preset, {budget} per trial, seeds "
        f"{', '.join(map(str, spec.seeds))}; grid: {plain(grid) or '(none: seeds only)'}"
    )
    live = _in_progress(spec, sweep_trials(store(), spec))
    fragment(run_every=REFRESH_S if live else None)(_watch)(spec, live)


def _in_progress(spec: SweepSpec, trials: pd.DataFrame) -> bool:
    """Whether the panel must keep refreshing: a trial waits or trains, or this server's job
    for the sweep lives. A job files its trials from its own thread while the start button's
    run goes on, so on a loaded machine that run can read no trial yet (all "not run"): the
    trials alone then stopped the panel's refresh on the sweep's first draw, for good ("not
    run 8/8" on the page for minutes while the store held all eight finished)."""
    if is_live(trials):
        return True
    job = sweep_jobs().get(spec.id)
    return job is not None and job.live


def _watch(spec: SweepSpec, live: bool) -> None:
    trials = sweep_trials(store(), spec)
    _progress(spec, trials)
    heat, table = _heatmap(spec, trials)
    chosen = st.session_state["sweeps.cell"]
    if chosen is not None and chosen[0] == spec.id and any(chosen[1] in row for row in heat.keys):
        _curves(spec, trials, table, chosen[1])
    else:
        st.caption("Click a cell of the heatmap to see the reward curves of its trials.")
    if live and not _in_progress(spec, trials):
        st.rerun()  # every trial has ended, and the job with them: the page stops refreshing


def _progress(spec: SweepSpec, trials: pd.DataFrame) -> None:
    """Counts of the trials, a bar of those ended, and who may stop or go on with the sweep."""
    counts = trial_counts(trials)
    always = ("finished", "training", "waiting", "failed")
    shown = {name: n for name, n in counts.items() if n or name in always}
    for column, (name, n) in zip(st.columns(len(shown)), shown.items(), strict=True):
        column.metric(name, f"{n}/{len(trials)}")
    ended = counts["finished"] + counts["failed"] + counts["stopped"]
    st.progress(ended / len(trials), text=f"{ended} of {len(trials)} trials ended")
    job = sweep_jobs().get(spec.id)
    if job is not None and job.live:
        _stop_button(job)
    elif is_live(trials):
        st.caption("Another process trains this sweep (python -m rdqn sweep); this page watches.")
    elif counts["finished"] < len(trials):
        left = len(trials) - counts["finished"]
        if st.button(f"Run its {left} unfinished trials", key="sweeps.rest"):
            try:
                start_sweep(spec, session().owner)
            except ValueError as err:
                st.error(f"Cannot run them: {plain(err)}", icon=":material/error:")
            else:
                st.rerun()
    if job is not None and job.error:
        st.error(f"The sweep ended with an error: {plain(for_this_viewer(job.error))}")
    failed = trials[trials["status"] == "failed"]
    if not failed.empty:
        with st.expander(f"Failed trials ({len(failed)})", icon=":material/error:"):
            for row in failed.itertuples(index=False):
                error = plain(for_this_viewer(row.error or "no reason recorded"))
                st.markdown(f"{plain(row.key)} (run {row.run_id}): {error}")


def _stop_button(job: SweepJob) -> None:
    mine = job.owner == session().owner
    if not (mine or is_admin()):
        st.caption("Another browser started this sweep: you can watch it, not stop it.")
        return
    if st.button("Stop sweep", key="sweeps.stop", icon=":material/stop:"):
        by = "by its owner" if mine else "by the server's admin"
        sweep_jobs().stop(job.spec.id, f"stopped: {by} on the Sweeps page")


def _heatmap(spec: SweepSpec, trials: pd.DataFrame) -> tuple[Heatmap, pd.DataFrame]:
    """The measure, threshold and axis selectors, the heatmap, and the cell a click on it
    picked; returns the heatmap and the summary it shows."""
    fields = list(spec.grid)
    measure_box, threshold_box, x_box, y_box = st.columns([3, 2, 2, 2])
    measure: str = measure_box.selectbox(
        "Value", list(MEASURES), format_func=lambda m: MEASURES[m].label, key="sweeps.measure"
    )
    threshold = None
    if measure != "auc":
        env_id = spec.config(spec.trials()[0]).env.id
        threshold = return_threshold_input(threshold_box, env_id, f"sweeps.threshold.{spec.id}")
    table = sweep_summary(store(), spec.id, trials, threshold)
    x = x_box.selectbox("Across", fields, key=f"sweeps.x.{spec.id}") if fields else None
    rest = [name for name in fields if name != x]
    y_choice = y_box.selectbox(
        "Down", ["—", *rest], index=1 if rest else 0, key=f"sweeps.y.{spec.id}"
    )
    y = None if y_choice == "—" else y_choice
    others = [name for name in fields if name not in (x, y)]
    fixed = {}
    for column, name in zip(st.columns(max(1, len(others))), others, strict=False):
        fixed[name] = column.selectbox(
            f"{name} held at",
            list(spec.grid[name]),
            format_func=value_label,
            key=f"sweeps.fixed.{spec.id}.{name}",
        )
    heat = heatmap_slice(table, spec, x, y, fixed, measure)
    clicked = selected_cell(_clicked_points(), heat.keys)
    if clicked is not None:
        st.session_state["sweeps.cell"] = (spec.id, clicked)
    chosen = st.session_state["sweeps.cell"]
    kind = MEASURES[measure]
    show_chart(
        st,
        sweep_heatmap(
            heat.mean,
            heat.sd,
            heat.notes,
            heat.keys,
            x_labels=heat.x_labels,
            y_labels=heat.y_labels,
            x_title=x or "",
            y_title=y or "",
            measure=kind.label,
            lower_is_better=kind.lower_is_better,
            selected=chosen[1] if chosen is not None and chosen[0] == spec.id else None,
            intervals=heat.iqm,
        ),
        height=170 + 80 * len(heat.y_labels),
        key=HEATMAP_KEY,
        on_select="rerun",
        selection_mode="points",
    )
    if measure == "auc":
        note = "the mean ± standard deviation over the finished seeds (finished / trials)"
    else:
        threshold = table["threshold"].iloc[0]
        note = (
            f"the mean ± standard deviation over the seeds whose mean of {ROLLING_WINDOW} "
            f"returns reached {threshold:g} (reached / finished)"
        )
    st.caption(
        f"Each cell: {note}. Hover: their interquartile mean (the mean of the middle half) "
        "with its 95 % stratified bootstrap interval (Agarwal et al. 2021)."
    )
    return heat, table


def _clicked_points() -> list[dict]:
    """The points of the heatmap's selection as the last run left it (none: nothing clicked
    since its figure last changed)."""
    state = st.session_state.get(HEATMAP_KEY)
    if not state:
        return []
    return list(state.get("selection", {}).get("points", []))


def _curves(spec: SweepSpec, trials: pd.DataFrame, table: pd.DataFrame, key: str) -> None:
    """The reward curves of cell ``key``'s trials (every seed, and their mean)."""
    config = spec.config(next(trial for trial in spec.trials() if trial.cell == key))
    threshold = table["threshold"].iloc[0]
    scheme = config.replay.scheme
    st.markdown(f"**Reward curves of the cell** {plain(cell_label(spec, key)) or '(no grid)'}")
    show_chart(
        st,
        cell_curves_figure(
            cell_seeds(store(), spec, trials, key),
            total_steps=config.train.total_steps,
            window=ROLLING_WINDOW,
            threshold=None if pd.isna(threshold) else float(threshold),
            scheme=scheme if scheme in SCHEME_COLORS else None,
            title=f"Reward curves: {len(spec.seeds)} seeds, {scheme} replay",
        ),
        height=420,
        key="sweeps.curves",
    )
    evaluations = cell_evaluations(store(), spec, trials, key)
    if any(evaluations):
        show_chart(
            st,
            evaluation_figure(
                {scheme: evaluations},
                labels={scheme: f"{scheme} replay"},
                threshold=None if pd.isna(threshold) else float(threshold),
                title=f"Greedy evaluation of the cell on held-out seeds: {scheme} replay",
            ),
            height=360,
            key="sweeps.evaluations",
        )
