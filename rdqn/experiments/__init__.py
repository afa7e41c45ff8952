"""Experiments: the studies the project's sources are built on, as functions of plain trials.

- `cliffwalk`: the PER paper's figure 1 (Schaul et al. 2015): updates until Blind Cliffwalk's
  Q-values are learned from a fixed memory, for uniform, proportional, rank-based replay and the
  paper's oracle, by size n (`cliffwalk_memory` builds the memory, `tabular` is the learner,
  `oracle` the oracle).
- `per_notebook`: the PER notebook's study (seed notebook, sections 9-10): uniform against
  proportional replay on CartPole-v1, with probes of TD errors, priorities and IS weights.
- `tables`: the Markdown tables of the docs, generated from the results files.

Each trial is a frozen dataclass and each trial function a top-level function of it, so
`rdqn.sweeps.map_tasks` runs them on worker processes or Ray; ``python -m rdqn experiment`` is
the command. Nothing here prints or draws: figures are `rdqn.figures.experiments`.
"""
