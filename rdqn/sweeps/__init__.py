"""Sweeps: many runs over a grid of settings and seeds, on the serving layer (docs/sweeps.md).

- `spec`: `SweepSpec`, a grid over dotted config fields times seeds on a preset, checked whole
  (`GridError` naming the entry); its `Trial`s, with stable keys and a digest as the sweep id.
- `runner`: `run_sweep` trains the trials as recorded runs (worker processes or Ray), resumes
  an interrupted sweep, records failures and goes on, stops cleanly.
- `records`: where a sweep is recorded (runs grouped by the sweep id; the spec beside the store).
- `summary`: per grid cell, the area under the reward curve and steps to a threshold over seeds.
- `tasks`: `map_tasks`, a parallel map of one function over items on worker processes or Ray,
  for experiments whose results are not recorded runs.
"""

from rdqn.sweeps.records import list_sweeps, load_spec, spec_path, sweep_trials
from rdqn.sweeps.runner import (
    SweepBusy,
    SweepProgress,
    SweepResult,
    TrialOutcome,
    make_executor,
    run_sweep,
)
from rdqn.sweeps.spec import MAX_TRIALS, GridError, SweepSpec, Trial, grid_from_items
from rdqn.sweeps.summary import reward_auc, summary
from rdqn.sweeps.tasks import TaskError, WorkerLost, map_tasks

__all__ = [
    "MAX_TRIALS",
    "GridError",
    "SweepBusy",
    "SweepProgress",
    "SweepResult",
    "SweepSpec",
    "TaskError",
    "Trial",
    "TrialOutcome",
    "WorkerLost",
    "grid_from_items",
    "list_sweeps",
    "load_spec",
    "make_executor",
    "map_tasks",
    "reward_auc",
    "run_sweep",
    "spec_path",
    "summary",
    "sweep_trials",
]
