"""The named presets (docs/design.md, "Presets and environments"): each a `RunConfig` factory.

| preset | net | replay | target |
|---|---|---|---|
| e14 | recurrent | proportional alpha .6, beta .4 -> 1 | soft, tau .005 |
| e14-lesson | recurrent, T 4, batch 32, update every 2 steps, 20,000 steps | as e14 | as e14 |
| e15 | recurrent | uniform, bounded FIFO | hard sync |
| per-notebook | MLP 64-64 | proportional alpha .6, beta .4 -> 1 | hard sync |
| paper | linear (tabular), SGD | proportional alpha .6 (rank-based alpha .7), beta .5 | none |
| chain-lesson | as paper, lr .1, on an 8-cell sparse chain, 4,000 steps | as paper, beta 0 | none |
| demo | MLP 64-64, Double DQN, lr 5e-4, stop at 475 | as per-notebook, IS / batch max | soft .01 |
| minatar | MinAtar's conv net, Adam 2.5e-4, 1 update / 4 steps | prop. alpha .5, beta .5 | hard |

`e14-lesson` exists because `e14` runs at tens of env steps per second on one CPU core (its
50,000-step budget takes about half an hour of CPU time, longer on a busy machine). It is `e14`
with exactly four fields changed, everything else (masked CartPole, proportional PER alpha .6 and
beta .4 -> 1, soft target tau .005, Adam 1e-3, gamma .99, capacity 50,000, warm-up 1,000, the
two-LSTM net) kept:

| field | e14 | e14-lesson | why |
|---|---|---|---|
| replay.window | 8 | 4 | four observations already show both velocities; half the LSTM steps |
| replay.batch_size | 128 | 32 | a quarter of the samples per update |
| train.train_every | 1 | 2 | half the updates per env step |
| train.total_steps | 50,000 | 20,000 | the memory effect shows well before |

Its comparison partner is the same config with ``agent.network="mlp"`` and ``replay.window=1``
(`FEED_FORWARD_LESSON`: same budget, no memory), which cannot tell which way the pole moves.
Measured by `benchmarks/recurrent_lesson.py` (`benchmarks/results/recurrent_lesson.json`; seeds
0-4, one torch thread each, two cores): a run takes about 1.6 CPU minutes (96 s median; e14's
budget, about 25 minutes), 6.0 times e14's env steps per CPU second once learning starts. Mean
return of the last 20 episodes, median (per seed): recurrent 137 (103, 154, 137, 160, 19),
feed-forward 43 (45, 43, 42, 47, 36); best 20-episode mean: recurrent 174 (143, 174, 156, 264,
191), feed-forward 48 (49, 52, 48, 48, 46). The gap opens at 8,000 steps, and every recurrent
seed stays above every feed-forward seed from there to 19,000; returns sag at times, as DQN's do
(seed 4 fell from about 80 at 19,000 steps to 15 and ended at 19).

The `paper` preset is tabular Q-learning as in the paper's Blind Cliffwalk: a bias-free linear
net on one-hot states, plain SGD, and the target copied after every update (no target network).

`chain-lesson` is the Compare page's default: the setup in which prioritized replay visibly beats
uniform replay within a lesson's minute. It is the `paper` learner (SGD lr .1) on
`rdqn/SparseChain-v0` with 8 cells (reward 1 at the right end, 0.001 at the left, 32 steps per
episode), 4,000 env steps, a warm-up of 1,500 steps of mostly random play (epsilon 1 -> 0.05 over
the first 2,000 steps), and no importance-sampling correction (beta 0 throughout, as in the
paper's figure 1). After the warm-up the memory holds a handful of goal transitions among
thousands of others: uniform replay samples them as rarely as they occur, prioritized replay
samples them until their TD error is gone, so the value of the goal reaches the start sooner.
Measured by `benchmarks/compare_default.py` (`benchmarks/results/compare_default.json`; seeds
0-9, one torch thread each): env steps until the mean return of 20 episodes first reached 0.8,
median (range) over the seeds that did:

| scheme | reached 0.8 | env steps, median (range) |
|---|---:|---|
| proportional, alpha .6 | 10/10 | 1,884 (1,792-2,295) |
| rank-based, alpha .7 | 10/10 | 1,851 (1,823-1,887) |
| uniform | 7/10 | 3,222 (2,494-3,798) |

A run takes about 3 CPU seconds; the page's default nine runs (three seeds per scheme, one run
at a time on two cores) all finished 35 s after the click on a quiet machine, every scheme's
first seed after 15 s (124 s and 50 s at a load average of 9-15). With the IS correction on
(beta .4 -> 1) and the paper's global max-weight normalisation, proportional replay reached 0.8
in 0 of 10 seeds, fewer than uniform's 7: every weight is divided by (N·P_min)^-β, which shrinks
every step of a tabular learner. With batch or no normalisation it reached 0.8 in 8 and 9 of 10;
rank-based did in 10 of 10 under all three (docs/experiments.md).
CartPole shows no difference at such budgets (`python -m rdqn experiment per-notebook`,
docs/experiments.md: proportional reached 475 in 4 of 5 seeds after 60,892-89,779 steps,
uniform in 4 of 5 after 90,662-95,676).

`minatar` is DQN on a MinAtar game (`rdqn/MinAtar-Breakout-v0`; `--set env.id=...` picks
another) with Revisiting Rainbow's settings (Obando-Ceron & Castro 2021, its DQN gin files for
MinAtar: Dopamine's DQN): the MinAtar paper's network (one 3x3 conv of 16 channels, 128 hidden),
Adam lr 2.5e-4, Huber loss, gamma .99, batch 32, a memory of 100,000, learning from 1,000 steps
on, one update every 4 env steps, the target copied every 1,000 env steps (250 updates), no
gradient clipping; a greedy evaluation of 5 episodes every 25,000 steps. Where it differs: Adam's
epsilon is PyTorch's 1e-8 (theirs 3.125e-4); epsilon falls from 1 to .01 over the first 100,000
steps (the MinAtar paper's span; Dopamine's is 250,000), so that a budget of a few hundred
thousand steps is not mostly exploration; the budget is 500,000 steps, not 10 million (an
experiment's budget, docs/experiments.md); prioritized replay samples |delta|^.5 with weights
(N P)^-.5 divided by the batch's largest, where Dopamine's priority is the square root of the
Huber loss (|delta| / sqrt 2 below 1: alpha 1 there, .5 above) with the same weights. Against
the MinAtar paper's own DQN (Young & Tian 2019: RMSprop 2.5e-4, one update per env step from step
5,000, epsilon 1 -> .1 over 100,000 steps, 5 million frames), the network, batch, memory, target
period and exploration span are the same; the optimizer, the update rate, the warm-up and the
final epsilon are Revisiting Rainbow's.

`demo` is Home's Start demo: CartPole-v1 solved in seconds by every seed, where `per-notebook`
(the notebook's setup) needs 60,000-90,000 steps when it gets there and then falls apart. It is
`per-notebook` with the learner and the replay tuned (docs/demo.md says what and why):

| field | per-notebook | demo | why |
|---|---|---|---|
| agent.target_update | hard, every 500 updates | soft, tau .01 | targets follow in ~100 updates |
| agent.double_dqn, lr | False, 1e-3 | True, 5e-4 | a fast target swings, overestimates |
| replay.is_normalization | global | batch | the global max jumps; Adam lags the scale |
| replay.capacity | 10,000 | 50,000 | early failures stay in memory |
| train.epsilon_fraction | .1 of 100,000 | .05 (5,000 steps) | |
| train.stop_at_return | None | 475 | left running, DQN forgets what it learned |

Measured by `benchmarks/bench_demo.py` (`benchmarks/results/demo.json`; seeds 0-9, one run at a
time, one torch thread): 10 of 10 seeds reach a 20-episode mean of 475, after a median of 29,246
env steps (19,313-55,670) and 9.6 CPU seconds (7.2-23.5); the same settings with uniform replay
9 of 10, median 33,932 steps; without the stop, the 20-episode mean at 100,000 steps is 174
(median; 400 or more in 1 of 10).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rdqn.config import PRESET_NAMES, AgentConfig, EnvConfig, ReplayConfig, RunConfig, TrainConfig
from rdqn.validation import check_choice

__all__ = ["FEED_FORWARD_LESSON", "PAPER_RANK_ALPHA", "PRESETS", "configure", "preset"]

PAPER_RANK_ALPHA = 0.7
"""Schaul et al. 2015 (arXiv:1511.05952), table 3: rank-based PER uses alpha 0.7 where the
proportional variant uses 0.6."""

FEED_FORWARD_LESSON: dict[str, Any] = {"agent.network": "mlp", "replay.window": 1}
"""Overrides that make `e14-lesson`'s comparison partner: the 64-64 MLP on the current observation
only, everything else (env, replay, batch, update rate, target, budget) the same."""


def _e14() -> RunConfig:
    return RunConfig(
        preset="e14",
        env=EnvConfig(id="rdqn/MaskedCartPole-v0"),
        replay=ReplayConfig(scheme="proportional", capacity=50_000, batch_size=128, window=8),
        agent=AgentConfig(network="recurrent", target_update="soft", tau=0.005),
        train=TrainConfig(total_steps=50_000, learning_starts=1_000),
    )


def _e14_lesson() -> RunConfig:
    # e14 at lesson size; the module docstring's table lists the four changed fields and why.
    return RunConfig(
        preset="e14-lesson",
        env=EnvConfig(id="rdqn/MaskedCartPole-v0"),
        replay=ReplayConfig(scheme="proportional", capacity=50_000, batch_size=32, window=4),
        agent=AgentConfig(network="recurrent", target_update="soft", tau=0.005),
        train=TrainConfig(total_steps=20_000, learning_starts=1_000, train_every=2),
    )


def _e15() -> RunConfig:
    return RunConfig(
        preset="e15",
        env=EnvConfig(id="rdqn/SyntheticMarket-v0"),
        replay=ReplayConfig(scheme="uniform", capacity=50_000, batch_size=128, window=8),
        agent=AgentConfig(network="recurrent", target_update="hard", target_sync_every=1_000),
        train=TrainConfig(total_steps=50_000, learning_starts=1_000),
    )


def _per_notebook() -> RunConfig:
    # Plain DQN, as in the notebook (it leaves out Double DQN to isolate PER's effect), with a
    # short, low exploration schedule; a sweep of learning rate, target period and Double DQN is
    # in docs/experiments.md ("How robust is reaching 475?").
    return RunConfig(
        preset="per-notebook",
        env=EnvConfig(id="CartPole-v1"),
        replay=ReplayConfig(scheme="proportional", capacity=10_000, batch_size=32, window=1),
        agent=AgentConfig(network="mlp", target_update="hard", target_sync_every=500),
        train=TrainConfig(
            total_steps=100_000, learning_starts=1_000, epsilon_end=0.01, epsilon_fraction=0.1
        ),
    )


def _tabular_agent(lr: float) -> AgentConfig:
    """The paper's tabular learner (`paper`, `chain-lesson`): a bias-free linear net on one-hot
    states, plain SGD on the squared TD error, the target copied after every update."""
    return AgentConfig(
        network="linear",
        optimizer="sgd",
        lr=lr,
        gamma=0.99,
        loss="mse",
        target_update="hard",
        target_sync_every=1,
        grad_clip_norm=None,
    )


def _paper() -> RunConfig:
    return RunConfig(
        preset="paper",
        env=EnvConfig(id="rdqn/BlindCliffwalk-v0", kwargs={"n": 8}),
        replay=ReplayConfig(
            scheme="proportional", capacity=10_000, batch_size=32, window=1, alpha=0.6, beta0=0.5
        ),
        agent=_tabular_agent(lr=0.25),
        train=TrainConfig(total_steps=5_000, learning_starts=100),
    )


def _chain_lesson() -> RunConfig:
    # The Compare page's default; the module docstring says what it shows and what was measured.
    return RunConfig(
        preset="chain-lesson",
        env=EnvConfig(id="rdqn/SparseChain-v0", kwargs={"n": 8, "max_steps": 32}),
        replay=ReplayConfig(
            scheme="proportional",
            capacity=10_000,
            batch_size=32,
            window=1,
            alpha=0.6,
            beta0=0.0,
            beta_end=0.0,
        ),
        agent=_tabular_agent(lr=0.1),
        train=TrainConfig(total_steps=4_000, learning_starts=1_500, epsilon_fraction=0.5),
    )


def _demo() -> RunConfig:
    # Home's Start demo; the module docstring says what was tuned and what was measured.
    return RunConfig(
        preset="demo",
        env=EnvConfig(id="CartPole-v1"),
        replay=ReplayConfig(
            scheme="proportional",
            capacity=50_000,
            batch_size=32,
            window=1,
            alpha=0.6,
            beta0=0.4,
            is_normalization="batch",
        ),
        agent=AgentConfig(network="mlp", double_dqn=True, lr=5e-4, target_update="soft", tau=0.01),
        train=TrainConfig(
            total_steps=100_000,
            learning_starts=1_000,
            epsilon_end=0.01,
            epsilon_fraction=0.05,
            stop_at_return=475.0,
        ),
    )


def _minatar() -> RunConfig:
    # DQN on MinAtar as Revisiting Rainbow runs it; the module docstring says where it differs.
    return RunConfig(
        preset="minatar",
        env=EnvConfig(id="rdqn/MinAtar-Breakout-v0"),
        replay=ReplayConfig(
            scheme="proportional",
            capacity=100_000,
            batch_size=32,
            window=1,
            alpha=0.5,
            beta0=0.5,
            beta_end=0.5,
            is_normalization="batch",
        ),
        agent=AgentConfig(
            network="conv",
            lr=2.5e-4,
            target_update="hard",
            target_sync_every=250,
            grad_clip_norm=None,
        ),
        train=TrainConfig(
            total_steps=500_000,
            learning_starts=1_000,
            train_every=4,
            epsilon_end=0.01,
            epsilon_fraction=0.2,
            eval_every=25_000,
            eval_episodes=5,
        ),
    )


PRESETS: dict[str, Callable[[], RunConfig]] = {
    "e14": _e14,
    "e14-lesson": _e14_lesson,
    "e15": _e15,
    "per-notebook": _per_notebook,
    "paper": _paper,
    "chain-lesson": _chain_lesson,
    "demo": _demo,
    "minatar": _minatar,
}
"""Preset name -> factory of its `RunConfig` (in the order of `rdqn.config.PRESET_NAMES`)."""


def preset(name: str) -> RunConfig:
    """The `RunConfig` of a named preset (`ValueError` naming the allowed names otherwise)."""
    return PRESETS[check_choice("preset", name, PRESET_NAMES)]()


def configure(name: str, overrides: Mapping[str, Any] | None = None) -> RunConfig:
    """Preset ``name`` with dotted overrides (``{"replay.alpha": 0.8}``) applied: how the CLI,
    the live page and comparisons all build a run's config.

    An ``env.id`` override goes first, through `RunConfig.with_env`: a preset's env options
    (Blind Cliffwalk's ``n``) mean nothing on another env, unless ``env.kwargs`` sets new ones.
    A ``train.total_steps`` override goes last, through `RunConfig.with_budget` (the warm-up is
    capped at a tenth of the budget), unless ``train.learning_starts`` is overridden too.
    """
    rest = dict(overrides or {})
    config = preset(name)
    if "env.id" in rest:
        config = config.with_env(rest.pop("env.id"))
    if "train.total_steps" in rest and "train.learning_starts" not in rest:
        budget = rest.pop("train.total_steps")
        return config.with_budget(budget, rest)
    return config.with_overrides(rest) if rest else config
