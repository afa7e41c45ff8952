"""Sweeps: many runs over a grid of settings and seeds, and experiments built on them.

- `tasks`: `map_tasks`, a parallel map of one function over items on worker processes or Ray,
  for experiments whose results are not recorded runs.
"""

from rdqn.sweeps.tasks import TaskError, WorkerLost, map_tasks

__all__ = ["TaskError", "WorkerLost", "map_tasks"]
