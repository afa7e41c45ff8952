"""The layout every figure shares: a title and a legend that never overlap in a narrow column."""

from __future__ import annotations

from rdqn.figures._base import _style


def test_title_reserves_its_height_and_the_legend_sits_under_it() -> None:
    """Narrow columns wrapped a right-aligned legend into the title: the title now sits at the top
    of the figure and reserves its height, the legend starts at the left on top of the plot."""
    layout = _style(title="A long title over a narrow chart", legend=True)
    title, legend = layout["title"], layout["legend"]
    assert (title["yref"], title["y"], title["yanchor"], title["automargin"]) == (
        "container",
        1.0,
        "top",
        True,
    )
    assert (legend["x"], legend["xanchor"], legend["y"], legend["yanchor"]) == (
        0.0,
        "left",
        1.0,
        "bottom",
    )
    assert layout["margin"]["t"] < 40  # the title and the legend add their own heights
