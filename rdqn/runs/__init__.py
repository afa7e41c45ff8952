"""Recorded runs: one lifecycle for every run, whoever drives it. Recording starts no thread and
no worker (training runs in workers is `rdqn.serve`'s); its one child process is the manifest's
`git` query for the source revision.

- `lifecycle`: create -> running <-> paused -> finished | failed | stopped, recorded in the store
  with its manifest, checkpoint and final counters (`RecordedRun`); `record_status`, the one
  writer of a run's status; `run_to_end` drives one to its budget (the CLI, comparisons).
- `control`: pause / resume / step / speed / stop requests and the loop that honours them.
- `resume`: a stopped run continues under its id from its resume checkpoint.
- `store`, `schema`, `writer`, `metric_tables`: the SQLite run store, its schema, batched metric
  writes and the metric tables; `store_access`: opening it (folder checks, read-only stores,
  SQLite errors as `StoreError`); `processes`: which process runs a run (pid and start time) and
  `orphans`, the runs of one that died, which read as interrupted.
- `checkpoints`, `periodic`, `manifest`: atomic, weights-only checkpoint files, how often a
  training run saves one; what ran and where.
"""
