"""Figures of the experiments (rdqn.figures.experiments, rdqn.figures.seed_histograms) from
hand-made results rows."""

from __future__ import annotations

import numpy as np

from rdqn.figures.experiments import (
    EXPERIMENT_COLORS,
    buffer_td_figure,
    cliffwalk_figure,
    reward_bands_figure,
)
from rdqn.figures.seed_histograms import probe_heatmap, seed_fractions, stage_histograms_figure


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


def trial(
    scheme: str,
    seed: int,
    returns: list[float],
    probes: dict | None = None,
    *,
    stages: list | None = None,
    buffer_rel_prob_hist: list | None = None,
) -> dict:
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
            "buffer_rel_prob_hist": [[4, 0], [1, 3]]
            if buffer_rel_prob_hist is None
            else buffer_rel_prob_hist,
        },
        "stages": {
            "labels": ["0%-50%", "50%-100%"],
            "sampled_td_hist": [[1, 3], [0, 2]] if stages is None else stages,
        },
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


def test_seed_fractions_median_and_range_per_bin() -> None:
    """Three seeds' counts [1, 3], [2, 2], [0, 4] are fractions [.25, .75], [.5, .5], [0, 1]."""
    median, low, high = seed_fractions([[1, 3], [2, 2], [0, 4]])
    np.testing.assert_allclose(median, [0.25, 0.75])
    np.testing.assert_allclose(low, [0.0, 0.5])
    np.testing.assert_allclose(high, [0.5, 1.0])


def test_seed_fractions_normalise_each_seed_before_the_median() -> None:
    """A seed with ten times the counts weighs no more than the others: pooled, [10, 30] and
    [3, 1] would give [.5, .5] for bin 0 of 44 counts; per seed it is [.25, .75] and [.75, .25]."""
    median, low, high = seed_fractions([[10, 30], [3, 1]])
    np.testing.assert_allclose(median, [0.5, 0.5])
    np.testing.assert_allclose(low, [0.25, 0.25])
    np.testing.assert_allclose(high, [0.75, 0.75])


def test_seed_fractions_leave_out_an_empty_histogram() -> None:
    median, low, high = seed_fractions([[0, 0], [1, 3], [3, 1]])
    np.testing.assert_allclose(median, [0.5, 0.5])
    np.testing.assert_allclose(low, [0.25, 0.25])
    np.testing.assert_allclose(high, [0.75, 0.75])
    assert np.isnan(seed_fractions([[0, 0], [0, 0]])[0]).all()


def test_seed_fractions_over_probes_per_cell() -> None:
    """Seeds x probes x bins: every (probe, bin) cell gets its own median and range."""
    counts = [[[4, 0], [1, 3]], [[2, 2], [1, 1]], [[0, 4], [0, 2]]]
    median, low, high = seed_fractions(counts)
    np.testing.assert_allclose(median, [[0.5, 0.5], [0.25, 0.75]])
    np.testing.assert_allclose(low, [[0.0, 0.0], [0.0, 0.5]])
    np.testing.assert_allclose(high, [[1.0, 1.0], [0.5, 1.0]])


def test_stage_histograms_draw_the_median_of_the_seeds_with_their_range() -> None:
    per_seed = ([[1, 3], [0, 2]], [[2, 2], [1, 1]], [[0, 4], [0, 5]])
    trials = [trial("uniform", seed, [1.0], stages=s) for seed, s in enumerate(per_seed)]
    figure = stage_histograms_figure(trials, "sampled_td_hist", "log10_td", title="t")
    first_band, first, second_band, second = figure.data
    # each bin held flat from its left edge (10^-1) to its right (10^0, then 10^1)
    assert list(first.x) == [-1.0, 0.0, 0.0, 1.0]
    np.testing.assert_allclose(first.y, [0.25, 0.25, 0.75, 0.75])  # median of .25, .5, 0 / ...
    # the band: the highest seed left to right, then the lowest back
    assert list(first_band.x) == [-1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, -1.0]
    np.testing.assert_allclose(first_band.y, [0.5, 0.5, 1.0, 1.0, 0.5, 0.5, 0.0, 0.0])
    np.testing.assert_allclose(second.y, [0.0, 0.0, 1.0, 1.0])  # [0, 1], [.5, .5], [0, 1]
    np.testing.assert_allclose(second_band.y, [0.5, 0.5, 1.0, 1.0, 0.5, 0.5, 0.0, 0.0])
    assert first.name == "uniform, 3 seeds" and first.showlegend and not second.showlegend
    assert "median 25.0%, seeds 0.0% to 50.0%" in first.text[0]
    assert (first.xaxis, second.xaxis) == ("x", "x2") and second_band.xaxis == "x2"
    assert figure.layout.xaxis2.title.text == "updates 50%-100%"
    assert "median over 3 seeds" in figure.layout.title.subtitle.text
    assert "lowest to highest seed" in figure.layout.title.subtitle.text
    assert stage_histograms_figure([], "sampled_td_hist", "log10_td", title="t").layout.annotations


def test_stage_histograms_one_line_per_scheme() -> None:
    trials = [trial("proportional", 0, [1.0]), trial("uniform", 0, [1.0])]
    figure = stage_histograms_figure(trials, "sampled_td_hist", "log10_td", title="t")
    names = [t.name for t in figure.data if t.showlegend]
    assert names == ["uniform, 1 seed", "proportional, 1 seed"]
    band = figure.data[0]
    assert band.fill == "toself" and band.fillcolor.startswith("rgba(99,110,250")


def test_probe_heatmap_median_over_seeds_and_spread_per_cell() -> None:
    per_seed = (
        [[4, 0], [1, 3]],  # probe at update 40: [1, 0]; at 90: [.25, .75]
        [[2, 2], [1, 1]],  # [.5, .5]; [.5, .5]
        [[0, 4], [0, 2]],  # [0, 1]; [0, 1]
    )
    trials = [
        trial("proportional", seed, [1.0], buffer_rel_prob_hist=h)
        for seed, h in enumerate(per_seed)
    ]
    figure = probe_heatmap(trials, "buffer_rel_prob_hist", "log10_rel_prob", title="t", y_title="y")
    median, spread = figure.data
    assert list(median.x) == [40, 90] and list(spread.x) == [40, 90]
    # z is bins x probes
    np.testing.assert_allclose(np.array(median.z), [[0.5, 0.25], [0.5, 0.75]])
    np.testing.assert_allclose(np.array(spread.z), [[1.0, 0.5], [1.0, 0.5]])
    seeds = np.array(median.customdata)  # bins x probes x (lowest, highest), for the hover
    np.testing.assert_allclose(seeds[..., 0], [[0.0, 0.0], [0.0, 0.5]])
    np.testing.assert_allclose(seeds[..., 1], [[1.0, 0.5], [1.0, 1.0]])
    assert (spread.xaxis, spread.yaxis) == ("x2", "y2")
    assert median.coloraxis == spread.coloraxis == "coloraxis"  # one colour scale for both
    assert figure.layout.coloraxis.cmin == 0.0 and figure.layout.coloraxis.cmax == 1.0
    labels = [a.text for a in figure.layout.annotations]
    assert labels == ["<b>median of 3 seeds</b>", "<b>spread: highest minus lowest seed</b>"]
    assert "3 seeds" in figure.layout.title.subtitle.text


def test_probe_heatmap_without_probe_histograms_is_empty() -> None:
    uniform = trial("uniform", 0, [1.0], buffer_rel_prob_hist=[])
    figure = probe_heatmap(
        [uniform], "buffer_rel_prob_hist", "log10_rel_prob", title="t", y_title="y"
    )
    assert figure.layout.annotations[0].text == "no data yet"


def notebook_trial(scheme: str, seed: int) -> dict:
    """A trial with every histogram the study's figures read, two bins each."""
    base = trial(scheme, seed, [1.0, 2.0])
    stage = [[seed, 3], [1, seed + 1]]
    base["stages"].update(sampled_rel_prob_hist=stage, sampled_weight_hist=stage)
    base["edges"]["log10_weight"] = base["edges"]["log10_td"]
    if scheme == "uniform":
        base["probes"]["buffer_rel_prob_hist"] = []
    return base


def test_the_report_draws_each_seeds_distribution_as_a_median_and_a_spread() -> None:
    """The report's figures (and the docs' PNGs, `benchmarks.experiment_figures`, which draws
    these): the priority heatmap is the median of the seeds over a spread panel."""
    from rdqn.figures.experiment_report import per_notebook_figures

    trials = [notebook_trial(s, seed) for s in ("uniform", "proportional") for seed in range(3)]
    figures = per_notebook_figures({"threshold": 1.5, "trials": trials})
    heat = figures["per_notebook_priorities"]
    assert [t.name for t in heat.data] == ["median", "spread"]
    assert heat.layout.annotations[0].text == "<b>median of 3 seeds</b>"
