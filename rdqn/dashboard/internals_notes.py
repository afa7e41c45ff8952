"""What to look for in each chart of the Replay internals page, by replay scheme: the line
under every chart. One text per chart; a scheme that makes a chart look different (rank-based:
a band that keeps its shape; uniform: one line, weights of 1) has its own. The texts say what is
replayed, ``{item}``: a transition, or under sequence replay a sequence."""

from __future__ import annotations

__all__ = ["notice"]

_NOTICE = {
    "buffer": "Uniform replay is one bar at 1. With α > 0 the bars spread out: the right tail "
    "holds the surprising {items} PER replays most, the left the ones it almost never replays.",
    "batch": "The batch just replayed, on the same axis: it sits further right than the buffer, "
    "because likely {items} are drawn more often.",
    "weights": "Log axis: 0.01 means that {item}'s loss counts a hundredth as much. Weights "
    "are scaled so that the rarest {item} in the whole buffer would get 1 (the default, "
    "global normalisation); a batch holds mostly likely {items}, so its weights sit well "
    "below 1: the more often one is drawn, the smaller its weight.",
    "scatter": "One dot per replayed {item}: the rarer it is (left), the larger its weight "
    "(up). Big bright dots have large |TD errors|: that is why they are likely.",
    "priority_history": "Each column is the buffer at one moment (bright = many {items}). A "
    "band that widens means priorities grow more uneven as training goes on.",
    "weight_history": "Each column holds the weights of the updates since the previous one. The "
    "band sinks as β anneals to 1: frequently drawn {items} are corrected more.",
    "td_stages": "Log axis. Curves moving right mean TD errors grow (Q-values still rising), "
    "moving left that they shrink; the right tail is the few surprising {items} PER favours.",
    "ages": "Bars above the dotted line are replayed more than uniform replay would. New "
    "{items} enter with the highest priority, so PER replays the newest (left) most.",
}
# Where a scheme makes a chart look different from what _NOTICE describes.
_SCHEME_NOTICE = {
    "rank": {
        "priority_history": "Rank-based replay gives P(i) by rank alone, so once the buffer is "
        "full the band keeps its shape: what changes is which {items} hold the top ranks, "
        "not how uneven the probabilities are.",
    },
    "uniform": {
        "priority_history": "Uniform replay gives every {item} N·P(i) = 1: one line at 1 "
        "all through training.",
        "weight_history": "Uniform replay needs no correction: every weight is 1.",
        "weights": "Uniform replay needs no correction: every weight is 1, one bar.",
        "ages": "Uniform replay draws every stored {item} alike: the bars stay near the "
        "dotted line, old and new.",
    },
}


def notice(chart: str, scheme: str, item: str = "transition") -> str:
    """What to look for in `chart` (a key of the page's charts) under `scheme`, where one item
    replayed is a ``"transition"`` or a ``"sequence"`` (sequence replay)."""
    text = _SCHEME_NOTICE.get(scheme, {}).get(chart, _NOTICE[chart])
    return text.format(item=item, items=f"{item}s")
