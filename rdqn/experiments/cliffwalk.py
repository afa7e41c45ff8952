"""The PER paper's figure 1: learner updates until Blind Cliffwalk's Q-values are right, by size.

Schaul et al. 2015 (arXiv:1511.05952), section 3.1, figure 1 and appendix B.1. One trial is one
(n, scheme, seed):

1. the memory: every one of the 2^n action sequences run to termination, N = 2^(n+1) - 2
   transitions with exactly one reward, in an order drawn from the seed
   (`rdqn.experiments.cliffwalk_memory`); it is written once into a `ReplayBuffer` of exactly N
   slots and **held fixed**: nothing is added while the learner replays it;
2. the learner: the `paper` preset's tabular learner (bias-free linear net on one-hot states, SGD
   lr .25 on the squared TD error, targets copied after every update, Q = 0 at the start), as the
   NumPy table `rdqn.experiments.tabular.TabularLearner`, with one transition per update
   (``replay.batch_size`` 1, as the paper's Q-learning updates) and no importance-sampling
   correction (beta 0: the figure measures the replay order alone);
3. the replay: ``uniform``, ``proportional`` (alpha .6) or ``rank`` (alpha .7, table 3) from the
   project's samplers, priorities set to |delta| after each update; or the paper's ``oracle``
   (`rdqn.experiments.oracle`), which replays the transition that most reduces the global loss
   (by default the squared error of the Q-values to the true ones, known in hindsight);
4. the count: updates until the mean squared error of the 2n Q-values against the true ones,
   Q*(s, right) = gamma^(n-1-s) and Q*(s, wrong) = 0, is below the threshold (the paper's 1e-3),
   checked after every update; ``None`` when ``max_updates`` pass first.

Any field of the learner's config can be overridden (``agent.lr``, ``agent.gamma``,
``replay.alpha``, ``replay.beta0``...; the paper's own step size and discount are ``agent.lr``
.125, i.e. eta = 1/4, and ``agent.gamma`` 1 - 1/n). Trials are plain frozen dataclasses and
`run_cliffwalk_trial` a top-level function, so `rdqn.sweeps.map_tasks` runs them on worker
processes or Ray.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rdqn.config import RunConfig
from rdqn.envs.blind_cliffwalk import BlindCliffwalkEnv
from rdqn.experiments.cliffwalk_memory import (
    CliffwalkMemory,
    fill_buffer,
    memory_size,
    paper_memory,
)
from rdqn.experiments.oracle import ORACLE_LOSSES, oracle_update
from rdqn.experiments.tabular import TabularLearner
from rdqn.presets import PAPER_RANK_ALPHA, preset
from rdqn.replay import ReplayBuffer
from rdqn.training.trainer import build_sampler
from rdqn.validation import check_choice, check_integer, check_real

__all__ = [
    "CLIFFWALK_SCHEMES",
    "DEFAULT_MAX_UPDATES",
    "DEFAULT_SIZES",
    "DEFAULT_THRESHOLD",
    "ORACLE",
    "CliffwalkTrial",
    "cliffwalk_summary",
    "cliffwalk_trials",
    "learned",
    "replay_until_learned",
    "run_cliffwalk_trial",
    "trial_config",
]

ORACLE = "oracle"
CLIFFWALK_SCHEMES: tuple[str, ...] = ("uniform", "proportional", "rank", ORACLE)
DEFAULT_SIZES: tuple[int, ...] = tuple(range(2, 17))
DEFAULT_THRESHOLD = 1e-3
"""Mean squared error of the Q-values against Q* below which a trial counts as learned (B.1)."""
DEFAULT_MAX_UPDATES = 20_000_000
"""Updates after which a trial gives up (uniform replay at n = 16 needs about a million)."""
FIGURE_OVERRIDES: dict[str, Any] = {
    "replay.batch_size": 1,
    "replay.beta0": 0.0,
    "replay.beta_end": 0.0,
}
"""What the figure changes in the `paper` preset: one transition per update, no IS correction."""


@dataclass(frozen=True, kw_only=True)
class CliffwalkTrial:
    """One (n, scheme, seed) of the figure, with the learner's whole config."""

    n: int
    scheme: str
    seed: int
    config: dict[str, Any] = field(repr=False)
    """`RunConfig.to_dict()` of the learner and sampler (`trial_config`)."""
    threshold: float = DEFAULT_THRESHOLD
    max_updates: int = DEFAULT_MAX_UPDATES
    oracle_loss: str = ORACLE_LOSSES[0]
    """The global loss the oracle minimises (`rdqn.experiments.oracle.ORACLE_LOSSES`)."""


def trial_config(
    n: int, scheme: str, seed: int, overrides: Mapping[str, Any] | None = None
) -> RunConfig:
    """The `paper` preset with `FIGURE_OVERRIDES`, then ``overrides``, for one trial: Blind
    Cliffwalk of size ``n``, a capacity of exactly the memory, rank-based alpha .7 (unless
    ``overrides`` sets ``replay.alpha``). The oracle's config names the scheme ``uniform``: it
    samples nothing, and its learner is the same."""
    settings: dict[str, Any] = {
        **FIGURE_OVERRIDES,
        "env.kwargs": {"n": n},
        "replay.capacity": memory_size(n),
        "replay.scheme": "uniform" if scheme == ORACLE else scheme,
        "seed": seed,
    }
    if scheme == "rank":
        settings["replay.alpha"] = PAPER_RANK_ALPHA
    return preset("paper").with_overrides({**settings, **(overrides or {})})


def cliffwalk_trials(
    sizes: Sequence[int],
    schemes: Sequence[str],
    seeds: Sequence[int],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    max_updates: int = DEFAULT_MAX_UPDATES,
    oracle_loss: str = ORACLE_LOSSES[0],
    overrides: Mapping[str, Any] | None = None,
) -> list[CliffwalkTrial]:
    """Every (n, scheme, seed), largest n first (the longest trials start first); a bad value is
    one `ValueError` naming it."""
    if not sizes or not schemes or not seeds:
        raise ValueError("sizes, schemes and seeds must each hold at least one value")
    for n in sizes:
        check_integer("n", n, minimum=2, maximum=24)
    for scheme in schemes:
        check_choice("scheme", scheme, CLIFFWALK_SCHEMES)
    for seed in seeds:
        check_integer("seed", seed, minimum=0)
    threshold = check_real("threshold", threshold, minimum=0.0, open_minimum=True)
    max_updates = check_integer("max_updates", max_updates, minimum=1)
    oracle_loss = check_choice("oracle_loss", oracle_loss, ORACLE_LOSSES)
    trials = []
    for n in sorted(set(sizes), reverse=True):
        for scheme in schemes:
            for seed in seeds:
                config = trial_config(n, scheme, seed, overrides)
                if scheme == ORACLE and config.replay.batch_size != 1:
                    raise ValueError(
                        "the oracle replays one transition per update: replay.batch_size must "
                        f"be 1, got {config.replay.batch_size}"
                    )
                trials.append(
                    CliffwalkTrial(
                        n=n,
                        scheme=scheme,
                        seed=seed,
                        config=config.to_dict(),
                        threshold=threshold,
                        max_updates=max_updates,
                        oracle_loss=oracle_loss,
                    )
                )
    return trials


def learned(q: NDArray[np.float64], q_star: NDArray[np.float64], threshold: float) -> bool:
    """Whether the mean squared error of the Q-table to Q* is below ``threshold``."""
    return float(np.mean((q - q_star) ** 2)) < threshold


def replay_until_learned(
    learner: TabularLearner,
    buffer: ReplayBuffer,
    memory: CliffwalkMemory,
    q_star: NDArray[np.float64],
    *,
    threshold: float,
    max_updates: int,
    batch_size: int = 1,
    beta: float = 0.0,
) -> tuple[int, bool]:
    """Replay the filled ``buffer`` (slot k holds ``memory`` row k) into ``learner``, one batch
    per update, priorities set to |delta| after each, until `learned` or ``max_updates``;
    returns (updates, learned). Nothing is written to the buffer's storage (``RuntimeError`` if
    anything was: the memory must stay fixed). IS weights apply when ``beta`` > 0."""
    writes = buffer.storage.writes
    updates, solved = 0, learned(learner.q, q_star, threshold)
    while not solved and updates < max_updates:
        batch = buffer.sample(batch_size, beta=beta)
        weights = batch.weights if beta > 0.0 else None
        delta = learner.learn(*memory.batch(batch.indices), weights)
        buffer.update_priorities(batch, np.abs(delta))
        updates += 1
        solved = learned(learner.q, q_star, threshold)
    if buffer.storage.writes != writes:
        raise RuntimeError("the memory was written to during replay; it must stay fixed")
    return updates, solved


def run_cliffwalk_trial(trial: CliffwalkTrial) -> dict[str, Any]:
    """Build the trial's memory, replay it until the Q-values are learned; the count and facts.

    Returns the trial's fields (without its config) and ``memory_size``, ``rewarded`` (goal
    transitions in memory: 1), ``updates_to_threshold`` (None: not within ``max_updates``),
    ``updates`` run, ``final_mse``, ``seconds``.
    """
    started = time.perf_counter()
    config = RunConfig.from_dict(trial.config)
    env = BlindCliffwalkEnv(**config.env.kwargs)
    memory_seed, buffer_seed = np.random.SeedSequence(config.seed).generate_state(2)
    memory = paper_memory(env, np.random.default_rng(int(memory_seed)))
    q_star = env.optimal_q_values(config.agent.gamma)
    learner = TabularLearner(env.n, 2, config.agent)

    if trial.scheme == ORACLE:
        updates, solved = 0, learned(learner.q, q_star, trial.threshold)
        while not solved and updates < trial.max_updates:
            oracle_update(learner, memory, q_star, trial.oracle_loss)
            updates += 1
            solved = learned(learner.q, q_star, trial.threshold)
    else:
        buffer = fill_buffer(memory, build_sampler(config), int(buffer_seed))
        updates, solved = replay_until_learned(
            learner,
            buffer,
            memory,
            q_star,
            threshold=trial.threshold,
            max_updates=trial.max_updates,
            batch_size=config.replay.batch_size,
            beta=config.replay.beta0,
        )
    return {
        **{k: v for k, v in asdict(trial).items() if k != "config"},
        "memory_size": len(memory),
        "rewarded": int(np.count_nonzero(memory.rewards)),
        "updates_to_threshold": updates if solved else None,
        "updates": updates,
        "final_mse": float(np.mean((learner.q - q_star) ** 2)),
        "seconds": time.perf_counter() - started,
    }


def cliffwalk_summary(results: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per (scheme, n), in `CLIFFWALK_SCHEMES` order then n: the memory size, the seeds,
    how many learned within the cap, and the median, min and max updates over all the seeds.

    A trial that did not learn counts as more updates than any that did: the median is None when
    half or more of the seeds did not learn, the max is None when any did not.
    """
    rows = []
    keys = sorted(
        {(r["scheme"], r["n"]) for r in results},
        key=lambda k: (CLIFFWALK_SCHEMES.index(k[0]) if k[0] in CLIFFWALK_SCHEMES else 99, k[1]),
    )
    for scheme, n in keys:
        runs = sorted((r for r in results if (r["scheme"], r["n"]) == (scheme, n)), key=_seed)
        counts = [r["updates_to_threshold"] for r in runs]
        done = sorted(c for c in counts if c is not None)
        ordered = done + [float("inf")] * (len(counts) - len(done))
        median = statistics.median(ordered)
        rows.append(
            {
                "scheme": scheme,
                "n": n,
                "memory_size": runs[0]["memory_size"],
                "seeds": [r["seed"] for r in runs],
                "learned": len(done),
                "median": None if median == float("inf") else median,
                "min": done[0] if done else None,
                "max": done[-1] if len(done) == len(counts) else None,
                "updates_to_threshold": counts,
            }
        )
    return rows


def _seed(result: Mapping[str, Any]) -> int:
    return int(result["seed"])
