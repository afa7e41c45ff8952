"""What to look for in each chart of the Replay internals page, by replay scheme: the line
under every chart. One text per chart; a scheme that makes a chart look different (rank-based:
a band that keeps its shape; uniform: one line, weights of 1) has its own."""

from __future__ import annotations

__all__ = ["notice"]

_NOTICE = {
    "buffer": "Uniform replay is one bar at 1. With α > 0 the bars spread out: the right tail "
    "holds the surprising transitions PER replays most, the left the ones it almost never replays.",
    "batch": "The batch just replayed, on the same axis: it sits further right than the buffer, "
    "because likely transitions are drawn more often.",
    "weights": "Log axis: 0.01 means that transition's loss counts a hundredth as much. Weights "
    "are scaled so that the rarest transition in the whole buffer would get 1 (the default, "
    "global normalisation); a batch holds mostly likely transitions, so its weights sit well "
    "below 1: the more often one is drawn, the smaller its weight.",
    "scatter": "One dot per replayed transition: the rarer it is (left), the larger its weight "
    "(up). Big bright dots have large |TD errors|: that is why they are likely.",
    "priority_history": "Each column is the buffer at one moment (bright = many transitions). A "
    "band that widens means priorities grow more uneven as training goes on.",
    "weight_history": "Each column holds the weights of the updates since the previous one. The "
    "band sinks as β anneals to 1: frequently drawn transitions are corrected more.",
    "td_stages": "Log axis. Curves moving right mean TD errors grow (Q-values still rising), "
    "moving left that they shrink; the right tail is the few surprising transitions PER favours.",
    "ages": "Bars above the dotted line are replayed more than uniform replay would. New "
    "transitions enter with the highest priority, so PER replays the newest (left) most.",
}
# Where a scheme makes a chart look different from what _NOTICE describes.
_SCHEME_NOTICE = {
    "rank": {
        "priority_history": "Rank-based replay gives P(i) by rank alone, so once the buffer is "
        "full the band keeps its shape: what changes is which transitions hold the top ranks, "
        "not how uneven the probabilities are.",
    },
    "uniform": {
        "priority_history": "Uniform replay gives every transition N·P(i) = 1: one line at 1 "
        "all through training.",
        "weight_history": "Uniform replay needs no correction: every weight is 1.",
        "weights": "Uniform replay needs no correction: every weight is 1, one bar.",
        "ages": "Uniform replay draws every stored transition alike: the bars stay near the "
        "dotted line, old and new.",
    },
}


def notice(chart: str, scheme: str) -> str:
    """What to look for in `chart` (a key of the page's charts) under `scheme`."""
    return _SCHEME_NOTICE.get(scheme, {}).get(chart, _NOTICE[chart])
