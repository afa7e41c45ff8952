"""Compare schemes: one agent on the same seeds with uniform, proportional and rank-based replay.

The runs of one comparison share a group id in the store; the group id also travels in the URL
(`?group=...`), so a reload, or the link, shows the same comparison again.
"""

from __future__ import annotations

import streamlit as st

from dashboard.comparisons import linked_group, start_comparison, stop_runs
from dashboard.figures import comparison_figure
from dashboard.history import (
    MIN_COMPARE_STEPS,
    curves_by_scheme,
    default_budget,
    group_progress,
    progress_frame,
)
from dashboard.state import ensure_app_frame, registry, store
from rdqn.compare import ROLLING_WINDOW, comparison_configs, summary_table
from rdqn.config import SCHEMES
from rdqn.envs import ENV_IDS, reward_threshold
from rdqn.presets import PAPER_RANK_ALPHA, PRESETS, preset
from rdqn.runs.lifecycle import FINAL_STATUSES

ensure_app_frame()

STATUS_COLUMNS = {
    "progress": st.column_config.ProgressColumn(min_value=0, max_value=100, format="%d%%"),
    f"return (last {ROLLING_WINDOW})": st.column_config.NumberColumn(format="%.1f"),
    "env steps": st.column_config.NumberColumn(format="localized"),
    "episodes": st.column_config.NumberColumn(format="localized"),
    "error": st.column_config.TextColumn(width="large"),
}


def results(run_ids: list[str], threshold: float | None, live: bool) -> None:
    """Status table, learning curves and threshold table; reruns every second while live."""
    rows = group_progress(run_ids, registry(), store())
    if not rows:
        st.info("The runs of this comparison are no longer in the store.")
        return
    status = progress_frame(rows)
    if not status["error"].any():
        status = status.drop(columns="error")
    st.dataframe(status, hide_index=True, column_config=STATUS_COLUMNS, placeholder="—")
    curves = curves_by_scheme(rows)
    total_steps = max(row.total_steps for row in rows)
    st.plotly_chart(
        comparison_figure(
            curves, total_steps=total_steps, threshold=threshold, window=ROLLING_WINDOW
        ),
        key="compare.figure",
    )
    st.markdown(f"**Episodes to threshold** (rolling mean of {ROLLING_WINDOW} episodes)")
    st.dataframe(
        summary_table(curves, threshold, ROLLING_WINDOW).round(1),
        hide_index=True,
        placeholder="—",
        key="compare.summary",
    )
    if live and all(row.done for row in rows):
        st.rerun()


st.title("Compare replay schemes")
st.caption(
    "The same agent, the same seeds, three ways to replay: the mean learning curve of each "
    "scheme with a band from its worst to its best seed."
)

left, middle, right, far = st.columns(4)
preset_name = left.selectbox("Preset", tuple(PRESETS), index=2, key="compare.preset")
base = preset(preset_name)
env_id = middle.selectbox(
    "Environment", ENV_IDS, index=ENV_IDS.index(base.env.id), key=f"compare.env.{preset_name}"
)
seed_count = right.number_input("Seeds per scheme", 1, 5, 3, key="compare.seeds")
steps = far.number_input(
    "Env steps per run",
    min_value=MIN_COMPARE_STEPS,
    max_value=1_000_000,
    value=default_budget(preset_name),
    step=1_000,
    key=f"compare.steps.{preset_name}",
    help="The budget of each run; the default finishes in a few minutes.",
)
schemes = st.multiselect(
    "Replay schemes", SCHEMES, default=list(SCHEMES), key="compare.schemes", format_func=str.title
)
runs_wanted = len(schemes) * int(seed_count)
seeds = "seed 0" if seed_count == 1 else f"seeds 0–{int(seed_count) - 1}"
note = f"{runs_wanted} runs of {int(steps):,} env steps, {seeds}; "
note += f"at most {registry().max_active} train at once, the rest wait in a queue."
if preset_name == "paper" and "rank" in schemes:
    note += f" Rank-based replay uses the paper's alpha {PAPER_RANK_ALPHA}."
st.caption(note)

group_id, run_ids = linked_group()
if st.button("Run comparison", type="primary", key="compare.run", disabled=not schemes):
    try:
        base = preset(preset_name).with_env(env_id).with_budget(int(steps))
        group_id, run_ids = start_comparison(
            comparison_configs(base, schemes, range(int(seed_count)))
        )
    except ValueError as err:
        st.error(f"Cannot start this comparison: {err}")

if group_id:
    st.divider()
    live = any(
        handle is not None and handle.status not in FINAL_STATUSES
        for handle in map(registry().get, run_ids)
    )
    heading, threshold_box, stop_box = st.columns([3, 1, 1], vertical_alignment="bottom")
    records = store().list_runs(group_id=group_id)
    group_env = records["env_id"].iloc[0] if not records.empty else env_id
    heading.subheader(f"Comparison {group_id}")
    if not records.empty:
        heading.caption(
            f"{records['preset'].iloc[0]} preset on {group_env}: {len(records)} runs, "
            f"seeds {', '.join(map(str, sorted(set(records['seed']))))}"
        )
    threshold = threshold_box.number_input(
        "Return threshold",
        value=reward_threshold(group_env),
        step=10.0,
        key=f"compare.threshold.{group_id}",
        help="'Solved' when the mean return of the last 20 episodes reaches it "
        "(default: the environment's own reward threshold).",
    )
    if stop_box.button("Stop comparison", key="compare.stop", disabled=not live):
        stop_runs(run_ids)
        st.rerun()
    st.fragment(run_every=1.0 if live else None)(results)(run_ids, threshold, live)
