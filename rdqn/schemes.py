"""The replay schemes, by name: uniform, proportional (sum tree) and rank-based.

A module of its own so that naming them loads nothing else: the web server starts the worker
zygote (`rdqn.serve.protocol` orders its warm-up by scheme) before it imports the config
(gymnasium) or anything else."""

SCHEMES: tuple[str, ...] = ("uniform", "proportional", "rank")
