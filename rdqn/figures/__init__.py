"""Figure builders for the dashboard: plain data in, `plotly.graph_objects.Figure` out.

Every builder is a pure function of numpy arrays or the frozen `rdqn` dataclasses, so the pages
stay thin and the figures are unit-tested without Streamlit. The figures are meant for a
projector: a 15 px base font, axis titles with units, one color per replay scheme
(`SCHEME_COLORS`), compact margins, and an empty-state figure ("no data yet") instead
of an exception when there is nothing to plot yet. No template is set: `st.plotly_chart` applies
the app's theme, and assigning a template deep-copies it, which made building a figure cost
~130 ms of the training thread's GIL time.

Names follow the core: *priority* |delta| + eps, *mass* priority^alpha (what a sum tree stores),
P(i) = m_i / sum_k m_k, *weight* the importance-sampling weight w_i = (N * P(i))^-beta / max w
(Schaul et al. 2015, arXiv:1511.05952).
"""

from rdqn.figures._base import (
    BASE_FONT_SIZE,
    EMPTY_MESSAGE,
    PATH_PALETTE,
    SCHEME_COLORS,
    ema,
    empty_figure,
)
from rdqn.figures.curves import (
    comparison_figure,
    loss_curve,
    reward_curve,
    runs_overlay_figure,
    timing_figure,
)
from rdqn.figures.distributions import (
    age_figure,
    column_fractions,
    fit_figure,
    heatmap_over_time,
    histogram_figure,
    probability_weight_bars,
    td_stages_figure,
    weights_scatter,
)
from rdqn.figures.evaluations import evaluation_figure
from rdqn.figures.segments import draw_histogram_figure, segments_figure
from rdqn.figures.sweeps import cell_curves_figure, sweep_heatmap
from rdqn.figures.tree import sum_tree_figure, tree_levels_figure

__all__ = [
    "BASE_FONT_SIZE",
    "EMPTY_MESSAGE",
    "PATH_PALETTE",
    "SCHEME_COLORS",
    "age_figure",
    "cell_curves_figure",
    "column_fractions",
    "comparison_figure",
    "draw_histogram_figure",
    "ema",
    "empty_figure",
    "evaluation_figure",
    "fit_figure",
    "heatmap_over_time",
    "histogram_figure",
    "loss_curve",
    "probability_weight_bars",
    "reward_curve",
    "runs_overlay_figure",
    "segments_figure",
    "sum_tree_figure",
    "sweep_heatmap",
    "td_stages_figure",
    "timing_figure",
    "tree_levels_figure",
    "weights_scatter",
]
