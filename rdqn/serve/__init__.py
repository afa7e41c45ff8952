"""Serving runs: where recorded runs (`rdqn.runs`) train, and who may drive them.

- `registry`: the pool. It caps the runs training at once (and those held paused), queues the
  rest, replaces a run by another in its slot, resumes stopped runs, and checks every control
  against the run's owner, an opaque token (a client's; the command line's is None). Its
  parts: `run_owners` (whose runs are whose, and the checks) and `run_queue` (the runs waiting for
  a slot).
- `handle`: one run as the server sees it: it relays its owner's controls to the run's worker
  and the worker's snapshots, status and store writes back.
- `worker`: a run training in a worker, driven by messages (`rdqn.runs.control.drive`).
- `executors`, `zygote`, `ray_executor`: where workers run: processes forked from a warm zygote
  (the default), threads (tests and debugging), or Ray actors on a cluster.

Owners are opaque: the dashboard's classroom (`rdqn.dashboard.classroom`) maps them to people.
"""
