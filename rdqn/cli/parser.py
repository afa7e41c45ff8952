"""The argument parser of ``rdqn``: its commands and options, and the one error it raises.

A bad argument raises `UsageError` (not argparse's exit), which `rdqn.cli.main` reports as one line
with exit status 2. The commands that train list every config field in their ``--help``.
"""

from __future__ import annotations

import argparse
import functools
from typing import Any

from rdqn.cli.dashboard import add_dashboard_parser
from rdqn.cli.experiment import add_experiment_parser
from rdqn.cli.sweep import add_sweep_parser
from rdqn.cli.usage import Parser, set_help
from rdqn.compare import ROLLING_WINDOW
from rdqn.config import SCHEMES
from rdqn.envs import ENV_IDS
from rdqn.presets import PRESETS
from rdqn.runs.metric_tables import CSV_KINDS


def _add_run_parser(sub: Any, name: str, help_text: str) -> argparse.ArgumentParser:
    """A command that trains: the run options, and every config field in its --help."""
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=help_text,
        epilog=set_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--preset", default="per-notebook", choices=list(PRESETS))
    parser.add_argument("--env", choices=list(ENV_IDS), help="environment (default: the preset's)")
    parser.add_argument(
        "--steps",
        type=int,
        help="environment steps (default: the preset's); warm-up is capped at a tenth of it",
    )
    parser.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="override a config field; repeatable"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def build_parser(prog: str = "rdqn") -> argparse.ArgumentParser:
    parser = Parser(
        prog=prog,
        description="Prioritized experience replay for deep Q-learning.",
    )
    parser.add_argument("--home", help="run store folder (default: $RDQN_HOME or ./.rdqn)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    train = _add_run_parser(sub, "train", "train one run")
    train.add_argument("--seed", type=int, default=None, help="run seed (default: the preset's)")
    train.add_argument("--scheme", choices=SCHEMES, help="replay scheme (default: the preset's)")
    train.add_argument("--name", help="a name for the run")

    resume = sub.add_parser(
        "resume",
        help="resume a stopped run under its id, from where it stopped, to its budget",
        description="Resume a stopped run (stopped by its owner, for idleness, by a server that "
        "shut down, or by Ctrl-C) under the same id: weights, optimizer, replay memory and "
        "random streams and the episode under way as they were, going on exactly where it stopped.",
    )
    resume.add_argument("run_id")
    resume.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    resume.add_argument("--quiet", action="store_true", help="no progress bar")
    resume.add_argument(
        "--yes",
        action="store_true",
        help="go on even when the run recorded steps after its last checkpoint (a resume "
        "starts from the checkpoint and discards them; asked on a terminal)",
    )

    compare = _add_run_parser(
        sub, "compare", "uniform vs proportional vs rank-based on the same env and seeds"
    )
    compare.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    compare.add_argument("--schemes", nargs="+", choices=SCHEMES, default=list(SCHEMES))
    compare.add_argument(
        "--threshold",
        type=float,
        help="return threshold (default: the env's, 0.8 where the goal pays 1)",
    )
    compare.add_argument(
        "--window", type=int, default=ROLLING_WINDOW, help="episodes in the rolling mean"
    )
    compare.add_argument("--report", default="compare-report.html", help="HTML report path")
    compare.add_argument(
        "--parallel",
        type=int,
        help="runs training at once, one worker process each (default: one per core; "
        "RDQN_EXECUTOR=ray spreads them over a Ray cluster)",
    )

    runs = sub.add_parser("runs", help="list, show, export or delete stored runs")
    runs_sub = runs.add_subparsers(dest="action", required=True, parser_class=Parser)
    runs_sub.add_parser("list", help="list stored runs")
    show = runs_sub.add_parser("show", help="config, manifest and results of one run")
    show.add_argument("run_id")
    export = runs_sub.add_parser("export", help="metrics of one run as CSV")
    export.add_argument("run_id")
    export.add_argument("--kind", choices=CSV_KINDS, default="episodes")
    export.add_argument("--out", help="file to write (default: standard output)")
    delete = runs_sub.add_parser("delete", help="delete a run and its checkpoint")
    delete.add_argument("run_id")

    add_sweep_parser(sub)
    sub.add_parser("presets", help="list the presets")
    warm = sub.add_parser(
        "warm-up",
        help="compile every kernel into numba's on-disk cache (once, at install)",
        description="Compile the numba kernels (fused MLP update, sum tree, samplers, window "
        "gather) into numba's on-disk cache, so no server or run compiles them later: "
        "pip install -r requirements.txt && python -m rdqn warm-up. Run it as the user that "
        "runs the server (numba falls back to a per-user folder where the sources are not "
        "writable). Seconds when the cache is already warm.",
    )
    warm.add_argument("--quiet", action="store_true", help="no progress bar")
    add_experiment_parser(sub, Parser)
    add_dashboard_parser(sub)
    return parser


@functools.cache
def cached_parser(prog: str) -> argparse.ArgumentParser:
    """One parser per program name: building one costs more than most refusals (parsing leaves
    it unchanged)."""
    return build_parser(prog)
