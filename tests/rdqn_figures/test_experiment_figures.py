"""Figures of the experiments (rdqn_figures.experiments) from hand-made results rows."""

from __future__ import annotations

import numpy as np

from rdqn_figures.experiments import (
    EXPERIMENT_COLORS,
    buffer_td_figure,
    cliffwalk_figure,
    probe_heatmap,
    reward_bands_figure,
    stage_histograms_figure,
)


def row(scheme: str, n: int, median, low, high, learned: int = 3) -> dict:
    return {
        "scheme": scheme,
        "n": n,
        "memory_size": 2 ** (n + 1) - 2,
        "median": median,
        "min": low,
        "max": high,
        "learned": learned,
        "seeds": [0, 1, 2],
    }


def test_cliffwalk_figure_medians_bands_and_log_axes() -> None:
    summary = [
        row("uniform", 2, 30, 20, 40),
        row("uniform", 3, None, 70, None, learned=1),
        row("uniform", 4, 300, 200, None, learned=2),
        row("oracle", 2, 14, 14, 14),
    ]
    figure = cliffwalk_figure(summary, threshold=1e-3)
    band, line, oracle_band, oracle_line, reference = figure.data
    assert line.name == "uniform" and oracle_line.name == "oracle"
    assert list(line.x) == [6, 14, 30]
    assert line.y[0] == 30 and np.isnan(line.y[1]) and line.y[2] == 300  # a gap at n = 3
    # band: highs left to right, then lows back; an unknown high stops at the low
    assert list(band.y) == [40, 70, 200, 200, 70, 20]
    assert oracle_line.line.color == EXPERIMENT_COLORS["oracle"]
    assert list(reference.x) == list(reference.y) == [6, 30]  # updates = N
    assert figure.layout.xaxis.type == "log" and figure.layout.yaxis.type == "log"
    assert "MSE to Q* < 0.001" in figure.layout.yaxis.title.text
    assert "learned 1/3" in line.text[1]


def test_cliffwalk_figure_without_rows_is_empty() -> None:
    assert cliffwalk_figure([]).layout.annotations[0].text == "no data yet"


def trial(scheme: str, seed: int, returns: list[float], probes: dict | None = None) -> dict:
    edges = np.linspace(-1.0, 1.0, 3).tolist()  # two bins: [0.1, 1) and [1, 10]
    return {
        "scheme": scheme,
        "seed": seed,
        "alpha": 0.6,
        "beta0": 0.4,
        "env_steps": 100,
        "returns": returns,
        "end_steps": [25 * (k + 1) for k in range(len(returns))],
        "probes": probes
        or {
            "env_steps": [50, 100],
            "updates": [40, 90],
            "buffer_td_mean": [1.0, 2.0],
            "sampled_td_mean": [None, 4.0],
            "buffer_td_hist": [[1, 3], [2, 2]],
            "buffer_rel_prob_hist": [[4, 0], [1, 3]],
        },
        "stages": {"labels": ["0%-50%", "50%-100%"], "sampled_td_hist": [[1, 3], [0, 2]]},
        "edges": {"log10_td": edges, "log10_rel_prob": edges},
    }


def test_reward_bands_median_and_range_over_seeds() -> None:
    trials = [trial("uniform", s, r) for s, r in ((0, [1, 1, 1, 1]), (1, [3, 3, 3, 3]))]
    trials.append(trial("uniform", 2, [2, 2, 2, 2]))
    band, line = reward_bands_figure(trials, window=1, points=5, threshold=2.5).data
    assert line.name == "uniform, 3 seeds"
    assert list(line.x) == [25, 50, 75, 100]  # nothing before the first episode ends
    assert list(line.y) == [2, 2, 2, 2]
    assert list(band.y) == [3, 3, 3, 3, 1, 1, 1, 1]


def test_buffer_td_figure_draws_buffer_and_sampled_means() -> None:
    figure = buffer_td_figure([trial("proportional", 0, [1.0])])
    names = [t.name for t in figure.data if t.name]
    assert names == ["proportional: buffer", "proportional: sampled"]
    sampled = figure.data[3]
    assert list(sampled.x) == [100] and list(sampled.y) == [4.0]  # the probe without batches
    assert sampled.line.dash == "dash"


def test_stage_histograms_are_fractions_per_panel() -> None:
    trials = [trial("uniform", 0, [1.0]), trial("uniform", 1, [1.0])]
    figure = stage_histograms_figure(trials, "sampled_td_hist", "log10_td", title="t")
    first, second = figure.data
    assert list(first.y) == [0.25, 0.75] and list(second.y) == [0.0, 1.0]
    assert (first.xaxis, second.xaxis) == ("x", "x2")
    assert figure.layout.xaxis2.title.text == "updates 50%-100%"
    assert stage_histograms_figure([], "sampled_td_hist", "log10_td", title="t").layout.annotations


def test_probe_heatmap_sums_seeds_per_probe() -> None:
    trials = [trial("proportional", 0, [1.0]), trial("proportional", 1, [1.0])]
    figure = probe_heatmap(trials, "buffer_rel_prob_hist", "log10_rel_prob", title="t", y_title="y")
    heat = figure.data[0]
    assert list(heat.x) == [40, 90]
    np.testing.assert_allclose(np.array(heat.z), [[1.0, 0.25], [0.0, 0.75]])
