"""Recorded runs: one lifecycle for every run, whoever drives it.

- `lifecycle`: create -> running <-> paused -> finished | failed | stopped, recorded in the store
  with its manifest, checkpoint and final counters (`RecordedRun`); `run_to_end` drives one to
  its budget (the CLI, comparisons).
- `control`: pause / resume / step / speed / stop requests and the loop that honours them.
- `resume`: a stopped run continues under its id from its resume checkpoint.
- `handle`, `registry`: background runs, capped and queued, controlled by their owner only
  (the dashboard), `live_pages` (the run each browser shows, the classes following it);
  `worker`, `zygote`, `executors`, `ray_executor`: where they train.
- `store`, `schema`, `writer`: the SQLite run store, its schema and batched metric writes;
  `store_access`: opening it (folder checks, read-only stores, SQLite errors as `StoreError`);
  `owners`: who runs a run (pid and start time), so a dead owner's runs read as interrupted.
- `checkpoints`, `manifest`: atomic, weights-only checkpoint files; what ran and where.
"""
