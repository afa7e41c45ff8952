"""The training loop: `trainer.Trainer` steps env + agent + replay one environment step at a time,
`telemetry` turns what it sees into immutable snapshots, `timings` says where the time went.
"""
