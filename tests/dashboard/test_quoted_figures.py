"""Every learning figure the dashboard's texts quote is the one its results file gives.

The results files (``benchmarks/results/*.json``) are the truth: commands write them. The texts
students read (``assets/text/*.md``, the lessons in ``assets/lessons/*.toml``) quote figures from
them; after a re-run changes a result, these tests fail until the text says the new figure.

Each figure is found by a pattern that anchors it in its sentence (`CLAIMS`); a text reworded so
that its pattern no longer matches fails too: update the pattern with the wording. Every number of
four digits or more (written with thousands commas, as the texts do) in a text students see must
be read by some pattern: a new figure needs a check here. The files are read as plain JSON: tests
do not import the ``benchmarks`` package.

Medians of an even number of seeds may end in .5; the texts round them half up, as
``rdqn/presets.py`` and ``docs/experiments.md`` do (1,850.5 is written 1,851).
"""

from __future__ import annotations

import bisect
import json
import math
import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from rdqn.presets import preset

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
TEXTS = ROOT / "assets" / "text"
LESSONS = ROOT / "assets" / "lessons"

NUMBER = r"(\d{1,3}(?:,\d{3})*(?:\.\d+)?)"
"""A figure as the texts write it: 1,884 or 475 or 0.8."""

BIG = re.compile(r"\d{1,3}(?:,\d{3})+")
"""The numbers every one of which a claim must read: 1,000 and up, with thousands commas."""


@cache
def results(name: str) -> Any:
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


@cache
def visible(source: str) -> str:
    """What students see of `source`: a text asset whole; of a lesson, its titles and notices."""
    path = ROOT / source
    if path.suffix == ".md":
        return path.read_text(encoding="utf-8")
    lesson = tomllib.loads(path.read_text(encoding="utf-8"))
    parts = [lesson["title"], lesson["summary"]]
    for step in lesson["steps"]:
        parts += [step["title"], step["notice"]]
    return "\n".join(parts)


def comments(source: str) -> str:
    """The comment lines of a lesson file: notes for teachers, not shown on the page."""
    lines = (ROOT / source).read_text(encoding="utf-8").splitlines()
    return "\n".join(line for line in lines if line.lstrip().startswith("#"))


def number(text: str) -> float:
    return float(text.replace(",", ""))


def written(value: float) -> str:
    """`value` as the texts write a count of steps or updates: rounded half up, with commas."""
    return f"{math.floor(value + 0.5):,}"


@dataclass(frozen=True)
class Claim:
    source: str
    """The file, relative to the repository root."""
    pattern: str
    """A regular expression whose groups are the quoted figures."""


CHAIN = "assets/text/compare_lesson.md"
CARTPOLE = "assets/text/compare_cartpole.md"
WHY = "assets/lessons/why-prioritize.toml"
SCHEMES = "assets/lessons/schemes.toml"
ALPHA_BETA = "assets/lessons/alpha-beta.toml"


def claim(source: str, pattern: str) -> Claim:
    """A claim whose `pattern` writes each quoted figure (1,884, 475 or 0.8) as ``#``."""
    return Claim(source, pattern.replace("#", NUMBER))


PER_NOTEBOOK = (
    r"In (\d+) seeds of # steps \(per-notebook preset\), proportional replay brought the mean "
    r"return of (\d+) episodes to # in (\d+) seeds, after #–# steps(?: \(median #\))?, and "
    r"uniform replay in (\d+) seeds, after #–#(?: \(median #\))?"
)

CLAIMS = {
    "chain setup": claim(CHAIN, r"this (\d+)-cell chain pays, so after # steps of mostly random"),
    "chain medians": claim(
        CHAIN,
        r"seeds (\d+)–(\d+): the mean return of (\d+) episodes reached # after a median of # "
        r"steps with proportional replay and # with rank-based, in all (\d+) seeds; uniform "
        r"replay got there in only (\d+) of (\d+) seeds, after a median of #; no "
        r"importance-sampling correction, β (\d+)",
    ),
    "chain: why not cartpole": claim(CHAIN, PER_NOTEBOOK),
    "chain: cartpole overlap": claim(CHAIN, r"curves overlap for the first # steps"),
    "cartpole headline": claim(CARTPOLE, r"CartPole needs #–# steps to show a difference"),
    "cartpole overlap": claim(CARTPOLE, r"curves overlap for the first # steps"),
    "cartpole reached": claim(CARTPOLE, PER_NOTEBOOK),
    "cartpole lesson minute": claim(
        CARTPOLE, r"the chain-lesson preset shows prioritization winning within (a minute)"
    ),
    "why: uniform batches": claim(
        WHY, r"Each update replays (\d+) memories drawn uniformly from the last #"
    ),
    "why: batches' td error": claim(
        WHY, r"the prioritized batches' \(black\) is clearly higher, (often several times)"
    ),
    "why: sooner": claim(
        WHY,
        r"Over # steps, prioritized replay brought the mean return of (\d+) episodes to # in "
        r"(\d+) of (\d+) seeds after a median of # steps, uniform replay in (\d+) of (\d+) "
        r"after #: about # steps sooner",
    ),
    "why: cliffwalk": claim(
        WHY,
        r"Blind Cliffwalk with (\d+) states, proportional replay needed about (\d+) times fewer "
        r"updates than uniform replay",
    ),
    "schemes: uniform batches": claim(
        SCHEMES, r"each batch is (\d+) memories drawn uniformly from the last #"
    ),
    "alpha-beta: notebook's choice": claim(
        ALPHA_BETA, r"α = (\d+(?:\.\d+)?) and β₀ = (\d+(?:\.\d+)?) are the notebook's"
    ),
}


def figures(name: str) -> tuple[str, ...]:
    """The figures claim `name` quotes, as written."""
    claim = CLAIMS[name]
    found = re.search(claim.pattern, visible(claim.source))
    assert found, (
        f"{claim.source} no longer says what claim {name!r} reads "
        f"(pattern {claim.pattern!r}): check its figures and update the pattern"
    )
    return found.groups()


def summary(data: dict[str, Any], scheme: str, **fields: Any) -> dict[str, Any]:
    (row,) = (
        r
        for r in data["summary"]
        if r["scheme"] == scheme and all(r[k] == v for k, v in fields.items())
    )
    return row


# --- the chain lesson (benchmarks/results/compare_default.json) -----------------------------


def chain_rows() -> dict[str, dict[str, Any]]:
    """compare_default.json's rows for the lesson as the page runs it: β 0, no IS correction."""
    data = results("compare_default.json")
    assert data["preset"] == "chain-lesson"
    return {s: summary(data, s, beta0=0.0) for s in ("proportional", "rank", "uniform")}


def test_chain_lesson_setup_is_the_preset() -> None:
    cells, warm_up = figures("chain setup")
    config = preset("chain-lesson")
    assert int(cells) == config.env.kwargs["n"]
    assert number(warm_up) == config.train.learning_starts


def test_chain_lesson_medians_are_the_results_file() -> None:
    rows = chain_rows()
    runs = [r for r in results("compare_default.json")["runs"] if r["beta0"] == 0.0]
    (first, last, window, threshold, proportional, rank, seeds, reached, of, uniform, beta) = (
        figures("chain medians")
    )
    for row in rows.values():
        assert row["seeds"] == list(range(int(first), int(last) + 1))
    assert {r["threshold"] for r in runs} == {number(threshold)}
    assert {r["beta_end"] for r in runs} == {number(beta)}
    assert window == "20"  # the file's final_mean20: a mean over 20 episodes
    for scheme in ("proportional", "rank"):
        assert rows[scheme]["reached"] == f"{seeds}/{seeds}", f"{scheme} did not reach in all"
    assert rows["uniform"]["reached"] == f"{reached}/{of}"
    assert proportional == written(rows["proportional"]["median_steps_to_threshold"])
    assert rank == written(rows["rank"]["median_steps_to_threshold"])
    assert uniform == written(rows["uniform"]["median_steps_to_threshold"])


def test_chain_lesson_shows_its_difference_within_a_minute() -> None:
    """The page's first lap, every scheme's first seed, finished within a minute."""
    assert figures("cartpole lesson minute") == ("a minute",)
    assert results("compare_default.json")["dashboard"]["seconds_to_first_lap"] <= 60


# --- CartPole (benchmarks/results/per_notebook.json) -----------------------------------------


def per_notebook() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    data = results("per_notebook.json")
    assert data["config"]["preset"] == "per-notebook"
    return data, summary(data, "proportional"), summary(data, "uniform")


@pytest.mark.parametrize("name", ["chain: why not cartpole", "cartpole reached"])
def test_cartpole_steps_to_475_are_the_results_file(name: str) -> None:
    data, proportional, uniform = per_notebook()
    seeds, steps, window, threshold, p_reached, p_min, p_max, p_median = figures(name)[:8]
    u_reached, u_min, u_max, u_median = figures(name)[8:]
    assert int(seeds) == len(proportional["seeds"]) == len(uniform["seeds"])
    assert number(steps) == data["config"]["train"]["total_steps"]
    assert window == "20"  # the file's best_mean20: a mean over 20 episodes
    assert number(threshold) == data["threshold"]
    for row, reached, low, high, median in (
        (proportional, p_reached, p_min, p_max, p_median),
        (uniform, u_reached, u_min, u_max, u_median),
    ):
        assert int(reached) == row["reached"]
        assert (low, high) == (written(row["steps_min"]), written(row["steps_max"]))
        assert median is None or median == written(row["steps_median"])


def test_cartpole_headline_spans_the_steps_proportional_replay_needed() -> None:
    """The headline's range is the proportional runs' steps to 475, widened to whole ten
    thousands."""
    low, high = figures("cartpole headline")
    _, proportional, _ = per_notebook()
    assert number(low) == math.floor(proportional["steps_min"] / 10_000) * 10_000
    assert number(high) == math.ceil(proportional["steps_max"] / 10_000) * 10_000


def mean_of_last_20(trial: dict[str, Any], step: int) -> float | None:
    """The mean return of the last 20 episodes `trial` finished by env step `step`."""
    done = bisect.bisect_right(trial["end_steps"], step)
    returns = trial["returns"][max(0, done - 20) : done]
    return sum(returns) / len(returns) if returns else None


@pytest.mark.parametrize("name", ["chain: cartpole overlap", "cartpole overlap"])
def test_cartpole_curves_overlap_as_long_as_the_text_says(name: str) -> None:
    """Every 500 steps up to the quoted step, the band from the worst to the best seed of one
    scheme's 20-episode mean return overlaps the other's (the Compare page draws these bands)."""
    (until,) = figures(name)
    trials = results("per_notebook.json")["trials"]
    for step in range(500, int(number(until)) + 1, 500):
        bands = []
        for scheme in ("uniform", "proportional"):
            means = [mean_of_last_20(t, step) for t in trials if t["scheme"] == scheme]
            known = [m for m in means if m is not None]
            bands.append((min(known), max(known)) if known else None)
        if None in bands:
            continue
        (low_u, high_u), (low_p, high_p) = bands
        assert low_p <= high_u and low_u <= high_p, f"the bands part at step {step:,}"


def test_why_prioritize_says_how_much_sooner() -> None:
    data, proportional, uniform = per_notebook()
    steps, window, threshold, p_reached, p_of, p_median, u_reached, u_of, u_median, sooner = (
        figures("why: sooner")
    )
    assert number(steps) == data["config"]["train"]["total_steps"]
    assert window == "20"
    assert number(threshold) == data["threshold"]
    assert (int(p_reached), int(p_of)) == (proportional["reached"], len(proportional["seeds"]))
    assert (int(u_reached), int(u_of)) == (uniform["reached"], len(uniform["seeds"]))
    assert p_median == written(proportional["steps_median"])
    assert u_median == written(uniform["steps_median"])
    gap = uniform["steps_median"] - proportional["steps_median"]
    assert number(sooner) == math.floor(gap / 100 + 0.5) * 100  # "about": to the hundred


def test_prioritized_batches_have_several_times_the_td_error() -> None:
    """Uniform batches carry the buffer's mean |TD error|, proportional ones "often several
    times" it (the buffers' own means are alike): at least 3 times, median over the probes."""
    figures("why: batches' td error")
    _, proportional, uniform = per_notebook()
    ratio = proportional["sampled_over_buffer_td_median"] / uniform["sampled_over_buffer_td_median"]
    assert ratio >= 3


# --- Blind Cliffwalk (benchmarks/results/cliffwalk.json) -------------------------------------


def test_why_prioritize_cliffwalk_ratio_is_the_results_file() -> None:
    states, times = figures("why: cliffwalk")
    rows = results("cliffwalk.json")["summary"]
    medians = {r["scheme"]: r["median"] for r in rows if r["n"] == int(states)}
    assert int(times) == math.floor(medians["uniform"] / medians["proportional"] + 0.5)


# --- what the lessons set up (rdqn/presets.py) ------------------------------------------------


@pytest.mark.parametrize(
    ("name", "source"),
    [("why: uniform batches", WHY), ("schemes: uniform batches", SCHEMES)],
)
def test_lesson_batches_are_the_preset(name: str, source: str) -> None:
    batch, capacity = figures(name)
    lesson = tomllib.loads((ROOT / source).read_text(encoding="utf-8"))
    replay = preset(lesson["preset"]).replay
    assert (int(batch), number(capacity)) == (replay.batch_size, replay.capacity)


def test_alpha_beta_notebook_choice_is_the_preset() -> None:
    alpha, beta = figures("alpha-beta: notebook's choice")
    replay = preset("per-notebook").replay
    assert (float(alpha), float(beta)) == (replay.alpha, replay.beta0)


@pytest.mark.parametrize("source", [WHY, SCHEMES, ALPHA_BETA])
def test_lesson_comments_time_a_run_as_the_dashboard_benchmark(source: str) -> None:
    """The teachers' note "30,000 env steps ... 15-30 s": the lesson's budget at the live page's
    measured speed (benchmarks/results/dashboard.json) takes a time within the quoted range."""
    found = re.search(r"([\d,]+) env steps\D*?(\d+)-(\d+) s\b", comments(source))
    assert found, f"{source}'s comments no longer time a run: update this test"
    steps, low, high = found.groups()
    lesson = tomllib.loads((ROOT / source).read_text(encoding="utf-8"))
    assert number(steps) == lesson["settings"]["steps"]
    seconds = number(steps) / results("dashboard.json")["medians"]["live page"]
    assert int(low) <= seconds <= int(high)


# --- nothing unchecked ------------------------------------------------------------------------


SOURCES = sorted(str(p.relative_to(ROOT)) for p in [*TEXTS.glob("*.md"), *LESSONS.glob("*.toml")])


@pytest.mark.parametrize("source", SOURCES)
def test_every_large_figure_is_checked(source: str) -> None:
    """Every number of four digits or more a student reads is one a claim above checks."""
    checked = {
        figure
        for claim in CLAIMS.values()
        if claim.source == source
        for found in re.finditer(claim.pattern, visible(source))
        for figure in found.groups()
    }
    unchecked = sorted(set(BIG.findall(visible(source))) - checked)
    assert not unchecked, f"{source} quotes {unchecked}: add a claim that checks them"
