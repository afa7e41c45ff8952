"""A sweep filed by hand, with every number its heatmap must show worked out here.

``chain-lesson``, budget T = 100 env steps, grid replay.alpha in (0, 1) x replay.scheme in
(proportional, rank), seeds 0 and 1; summary window 20 (the rolling mean of up to 20 returns,
0 before the first episode ends), threshold 0.8 (the chain's), which needs a full window of 20
episodes. AUC = (1/T) * sum_k R_k (s_{k+1} - s_k), s_{K+1} = T.

    cell                 seed 0                                seed 1
    alpha 0, prop.       20 returns of 1 ending at 3, 6 .. 60  one return 1 ending at 25
                         AUC (100-3)/100 = .97; R reaches .8   AUC 75/100 = .75; no full
                         at episode 20: step 60, update 30     window: not reached
    alpha 0, rank        returns 0, 1 ending at 20, 60:        return 0 ending at 40: AUC 0
                         R = .5 from 60: AUC .5*40/100 = .2
    alpha 1, prop.       20 returns of 1 ending at 2, 4 .. 40  failed (not counted)
                         AUC .98; reached at step 40, upd. 20
    alpha 1, rank        stopped                               no run yet

    AUC mean +- sd (sample sd, ddof 1): alpha 0 prop. .86 +- .22/sqrt(2); alpha 0 rank
    .1 +- .2/sqrt(2); alpha 1 prop. .98 +- 0 (1 seed); alpha 1 rank: none.
    AUC IQM [95% CI]: two seeds are their mean, and a resample of two is both or either twice
    (1/4 each), so the interval runs from the lower to the higher: alpha 0 prop. .86 [.75, .97];
    alpha 0 rank .1 [0, .2]; alpha 1 prop. .98 [.98, .98]; alpha 1 rank: none.
    Steps to threshold: alpha 0 prop. 60 (1 of 2 reached); alpha 1 prop. 40 (1 of 1).
"""

from __future__ import annotations

import math

from rdqn.runs.store import RunStore
from rdqn.sweeps import SweepSpec
from rdqn.sweeps.records import save_spec
from tests.sweeps.sweep_helpers import file_trial

GRID = {"replay.alpha": [0, 1], "replay.scheme": ["proportional", "rank"]}
AUC_MEAN = {
    (0.0, "proportional"): 0.86,
    (0.0, "rank"): 0.1,
    (1.0, "proportional"): 0.98,
    (1.0, "rank"): math.nan,
}
AUC_SD = {
    (0.0, "proportional"): 0.22 / math.sqrt(2),
    (0.0, "rank"): 0.2 / math.sqrt(2),
    (1.0, "proportional"): 0.0,
    (1.0, "rank"): math.nan,
}
AUC_IQM = {
    (0.0, "proportional"): (0.86, 0.75, 0.97),
    (0.0, "rank"): (0.1, 0.0, 0.2),
    (1.0, "proportional"): (0.98, 0.98, 0.98),
    (1.0, "rank"): (math.nan, math.nan, math.nan),
}
SEEDS_FINISHED = {
    (0.0, "proportional"): "2/2 seeds",
    (0.0, "rank"): "2/2 seeds",
    (1.0, "proportional"): "1/2 seeds",
    (1.0, "rank"): "0/2 seeds",
}
STEPS_MEAN = {
    (0.0, "proportional"): 60.0,
    (0.0, "rank"): math.nan,
    (1.0, "proportional"): 40.0,
    (1.0, "rank"): math.nan,
}
REACHED = {
    (0.0, "proportional"): "1/2 reached",
    (0.0, "rank"): "0/2 reached",
    (1.0, "proportional"): "1/1 reached",
    (1.0, "rank"): "0/2 finished",
}


def hand_sweep(store: RunStore) -> SweepSpec:
    """File the sweep of the module docstring in ``store``; returns its spec."""
    spec = SweepSpec.from_grid("chain-lesson", GRID, seeds=2, steps=100)
    save_spec(store, spec)
    t = {
        (trial.overrides["replay.alpha"], trial.overrides["replay.scheme"], trial.seed): trial
        for trial in spec.trials()
    }
    ones = [(3 * k, 3 * k // 2, 1.0) for k in range(1, 21)]
    file_trial(store, spec, t[0.0, "proportional", 0], "finished", ones)
    file_trial(store, spec, t[0.0, "proportional", 1], "finished", [(25, 5, 1.0)])
    file_trial(store, spec, t[0.0, "rank", 0], "finished", [(20, 0, 0.0), (60, 20, 1.0)])
    file_trial(store, spec, t[0.0, "rank", 1], "finished", [(40, 10, 0.0)])
    quick = [(2 * k, k, 1.0) for k in range(1, 21)]
    file_trial(store, spec, t[1.0, "proportional", 0], "finished", quick)
    file_trial(store, spec, t[1.0, "proportional", 1], "failed", [], error="boom: diverged")
    file_trial(store, spec, t[1.0, "rank", 0], "stopped", [(30, 5, 1.0)])
    return spec
