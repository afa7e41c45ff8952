"""Recorded runs: one lifecycle for every run, whoever drives it.

- `lifecycle`: create -> running <-> paused -> finished | failed | stopped, recorded in the store
  with its manifest, checkpoint and final counters (`RecordedRun`); `run_to_end` drives one to
  its budget (the CLI, comparisons).
- `control`: pause / resume / step / speed / stop requests and the loop that honours them.
- `resume`: a stopped run continues under its id from its resume checkpoint.
- `handle`, `registry`: background runs in daemon threads, capped and queued (the dashboard).
- `store`, `schema`, `writer`: the SQLite run store, its schema and batched metric writes.
- `checkpoints`, `manifest`: atomic, weights-only checkpoint files; what ran and where.
"""
