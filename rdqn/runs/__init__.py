"""Recorded runs: one lifecycle for every run, whoever drives it. Recording starts no thread and
no worker (training runs in workers is `rdqn.serve`'s); its one child process is the manifest's
`git` query for the source revision.

- `lifecycle`: create -> running <-> paused -> finished | failed | stopped, recorded in the store
  with its manifest, checkpoint and final counters (`RecordedRun`); `run_to_end` drives one to
  its budget (the CLI, comparisons).
- `control`: pause / resume / step / speed / stop requests and the loop that honours them.
- `resume`: a stopped run continues under its id from its resume checkpoint.
- `store`, `schema`, `writer`: the SQLite run store, its schema and batched metric writes;
  `store_access`: opening it (folder checks, read-only stores, SQLite errors as `StoreError`);
  `owners`: who runs a run (pid and start time), so a dead owner's runs read as interrupted.
- `checkpoints`, `manifest`: atomic, weights-only checkpoint files; what ran and where.
"""
