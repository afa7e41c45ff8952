"""``rdqn experiment``: the studies of `rdqn.experiments`, run on worker processes or Ray.

    python -m rdqn experiment cliffwalk --out benchmarks/results/cliffwalk.json
    python -m rdqn experiment cliffwalk --out benchmarks/results/cliffwalk.json --resume
    python -m rdqn experiment per-notebook --out benchmarks/results/per_notebook.json
    python -m rdqn experiment minatar --out benchmarks/results/minatar.json
    python -m rdqn experiment recurrent --out benchmarks/results/recurrent.json
    python -m rdqn experiment cliffwalk --from benchmarks/results/cliffwalk.json --table
    python -m rdqn experiment tables --write docs/experiments.md

Trials go through `rdqn.sweeps.map_tasks` (``--workers``, ``--ray``), with a progress bar; a trial
that fails is reported and recorded with its error, and the others go on. The results file
(``--out``) is rewritten after every finished trial, so an interrupted experiment keeps what it
finished, and ``--resume`` goes on with it: the trials the file holds as finished are kept and not
run again, the others (failed ones included) are run. The file's settings (every option but the
trial axes ``--sizes``, ``--games``, ``--schemes``, ``--arms`` and ``--seeds``) and each kept
trial's config must be the command's, and the command must plan every trial the file holds (the
same grid or a larger one); otherwise ``--resume`` refuses in one line before anything runs.
Without the file it starts afresh.
``--from FILE`` reads a results file instead of running anything, to redraw its figure (``--plot``,
``--report``) or print its table (``--table``). ``tables`` prints every table of the docs from the
results files, or rewrites the generated blocks of a Markdown file (``--write``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rdqn.cli.experiment_run import command_line, read_results, read_text, run_trials
from rdqn.cli.options import check_writable, parse_set, write_output
from rdqn.cli.usage import UsageError
from rdqn.validation import shown

__all__ = ["add_experiment_parser", "cmd_experiment"]

RESULTS = Path("benchmarks/results")


def add_experiment_parser(sub: Any, parser_class: type[argparse.ArgumentParser]) -> None:
    """The ``experiment`` command and its subcommands."""
    from rdqn.config import SCHEMES
    from rdqn.envs.minatar import MINATAR_ENVS
    from rdqn.experiments.cliffwalk import (
        CLIFFWALK_SCHEMES,
        DEFAULT_MAX_UPDATES,
        DEFAULT_THRESHOLD,
    )
    from rdqn.experiments.minatar import MINATAR_DEFAULT_GAMES, MINATAR_DEFAULT_SCHEMES
    from rdqn.experiments.oracle import ORACLE_LOSSES
    from rdqn.experiments.per_notebook import DEFAULT_PROBES, PER_NOTEBOOK_SCHEMES
    from rdqn.experiments.recurrent import RECURRENT_ARMS

    experiment = sub.add_parser(
        "experiment",
        help="the PER paper's Blind Cliffwalk figure, the PER notebook's CartPole study, DQN "
        "on MinAtar, recurrent replay on masked CartPole, tables",
    )
    kinds = experiment.add_subparsers(dest="experiment", required=True, parser_class=parser_class)

    cliff = kinds.add_parser(
        "cliffwalk",
        help="updates until Blind Cliffwalk's Q-values are learned, by size (paper, figure 1)",
        description="Schaul et al. 2015, figure 1: a fixed memory of all 2^n action sequences "
        "of Blind Cliffwalk run to termination (2^(n+1) - 2 transitions, one rewarded); the "
        "`paper` preset's tabular learner replays it one transition per update until the mean "
        "squared error of its Q-values to the true ones is below --threshold.",
    )
    cliff.add_argument(
        "--sizes", nargs="+", default=["2-16"], help="chain sizes n: numbers or ranges A-B"
    )
    cliff.add_argument(
        "--schemes", nargs="+", choices=CLIFFWALK_SCHEMES, default=list(CLIFFWALK_SCHEMES)
    )
    cliff.add_argument(
        "--threshold", type=float, default=DEFAULT_THRESHOLD, help="MSE to Q* that counts"
    )
    cliff.add_argument("--max-updates", type=int, default=DEFAULT_MAX_UPDATES)
    cliff.add_argument(
        "--oracle-loss",
        choices=ORACLE_LOSSES,
        default=ORACLE_LOSSES[0],
        help="the global loss the oracle minimises (q-error: to Q*, known in hindsight)",
    )
    cliff.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a field of the learner's config (agent.lr, agent.gamma, replay.alpha...)",
    )
    _common(cliff, "cliffwalk.json", plot=True)

    notebook = kinds.add_parser(
        "per-notebook",
        help="uniform vs proportional replay on CartPole-v1 with probes (the PER notebook)",
        description="The PER notebook's study: the per-notebook preset on CartPole-v1, uniform "
        "against proportional replay (alpha .6, beta .4 -> 1), with probes of the buffer's TD "
        "errors and priorities and of the sampled priorities and IS weights.",
    )
    notebook.add_argument("--steps", type=int, help="env steps per run (default: the preset's)")
    notebook.add_argument(
        "--schemes", nargs="+", choices=PER_NOTEBOOK_SCHEMES, default=list(PER_NOTEBOOK_SCHEMES)
    )
    notebook.add_argument(
        "--threshold", type=float, default=475.0, help="20-episode mean return that counts"
    )
    notebook.add_argument(
        "--probes", type=int, default=DEFAULT_PROBES, help="probes of the buffer per run"
    )
    notebook.add_argument("--set", action="append", metavar="KEY=VALUE", help="config override")
    _common(notebook, "per_notebook.json", plot=False)
    notebook.add_argument("--report", help="HTML report (default: --out with .html)")

    minatar = kinds.add_parser(
        "minatar",
        help="uniform vs prioritized replay for DQN on MinAtar games, greedy evaluations",
        description="DQN (the minatar preset: MinAtar's conv net, Revisiting Rainbow's "
        "settings) on MinAtar games, uniform against prioritized replay, evaluated greedily on "
        "held-out env seeds; needs the optional minatar package (pip install -r "
        "requirements-minatar.txt).",
    )
    minatar.add_argument(
        "--games",
        nargs="+",
        choices=list(MINATAR_ENVS),
        default=list(MINATAR_DEFAULT_GAMES),
        metavar="ENV_ID",
        help=f"MinAtar env ids (default {' '.join(MINATAR_DEFAULT_GAMES)})",
    )
    minatar.add_argument(
        "--schemes", nargs="+", choices=SCHEMES, default=list(MINATAR_DEFAULT_SCHEMES)
    )
    minatar.add_argument("--steps", type=int, help="env steps per run (default: the preset's)")
    minatar.add_argument("--set", action="append", metavar="KEY=VALUE", help="config override")
    _common(minatar, "minatar.json", plot=True)

    recurrent = kinds.add_parser(
        "recurrent",
        help="E14's windows against R2D2's sequences (stored state, burn-in) on masked CartPole",
        description="The e14-lesson recurrent DQN on masked CartPole, replaying E14's windows "
        "or R2D2's sequences read from the stored LSTM state or from zeros, with and without "
        "burn-in; evaluated greedily on held-out env seeds.",
    )
    recurrent.add_argument(
        "--arms", nargs="+", choices=list(RECURRENT_ARMS), default=list(RECURRENT_ARMS)
    )
    recurrent.add_argument("--steps", type=int, help="env steps per run (default: the preset's)")
    recurrent.add_argument("--set", action="append", metavar="KEY=VALUE", help="config override")
    _common(recurrent, "recurrent.json", plot=True)

    tables = kinds.add_parser(
        "tables",
        help="the docs' learning tables, generated from the results files",
        description="Print every learning table of the docs from its results file, or rewrite "
        "the generated blocks (<!-- table: NAME --> ... <!-- /table -->) of a Markdown file.",
    )
    tables.add_argument("--results", default=str(RESULTS), help="folder of the results files")
    tables.add_argument("--write", help="Markdown file whose table blocks to rewrite")
    tables.add_argument("--check", help="Markdown file to check: exit 1 if a table is stale")


def _common(parser: argparse.ArgumentParser, out: str, *, plot: bool) -> None:
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument(
        "--out", default=out, help=f"results JSON, rewritten after each trial (default {out})"
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="go on with the --out file of an interrupted run: its finished trials are kept, "
        "the rest (failed ones too) run; its settings must be this command's",
    )
    if plot:
        parser.add_argument("--plot", help="HTML figure (default: --out with .html)")
    parser.add_argument(
        "--from",
        dest="source",
        metavar="FILE",
        help="read this results file instead of running anything",
    )
    parser.add_argument("--table", action="store_true", help="print the Markdown table")
    parser.add_argument("--workers", type=int, help="trials at once (default: one per core)")
    parser.add_argument(
        "--ray", metavar="ADDRESS", help="run trials as Ray tasks: 'local' or a cluster address"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def parse_sizes(items: Sequence[str]) -> list[int]:
    """``--sizes`` items (``8``, ``2-16``) as sorted distinct sizes; `UsageError` otherwise."""
    sizes: set[int] = set()
    for item in items:
        low, sep, high = item.partition("-")
        try:
            first, last = int(low), int(high if sep else low)
        except ValueError:
            raise UsageError(f"--sizes expects numbers or ranges A-B, got {shown(item)}") from None
        if not 2 <= first <= last <= 24:
            raise UsageError(f"--sizes must lie in 2-24 with A <= B, got {shown(item)}")
        sizes.update(range(first, last + 1))
    return sorted(sizes)


def cmd_experiment(args: argparse.Namespace) -> int:
    """Run (or read) one experiment; see the module docstring."""
    if args.experiment == "tables":
        return _cmd_tables(args)
    if args.seeds and (min(args.seeds) < 0 or len(set(args.seeds)) != len(args.seeds)):
        raise UsageError(f"--seeds must be distinct non-negative integers, got {args.seeds}")
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    if args.resume and args.source:
        raise UsageError("--resume goes on with the --out file; --from only reads a file")
    if args.experiment == "cliffwalk":
        return _cmd_cliffwalk(args)
    if args.experiment == "minatar":
        return _cmd_minatar(args)
    if args.experiment == "recurrent":
        return _cmd_recurrent(args)
    return _cmd_per_notebook(args)


# ---------------------------------------------------------------------- the studies


def _cmd_cliffwalk(args: argparse.Namespace) -> int:
    from rdqn.experiments.cliffwalk import (
        cliffwalk_summary,
        cliffwalk_trials,
        run_cliffwalk_trial,
    )
    from rdqn.experiments.tables import cliffwalk_table
    from rdqn.figures.experiments import cliffwalk_figure

    def plan(overrides: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        trials = cliffwalk_trials(
            parse_sizes(args.sizes),
            args.schemes,
            args.seeds,
            threshold=args.threshold,
            max_updates=args.max_updates,
            oracle_loss=args.oracle_loss,
            overrides=overrides,
        )
        settings = {
            "threshold": args.threshold,
            "max_updates": args.max_updates,
            "oracle_loss": args.oracle_loss,
            "overrides": overrides,
        }
        return trials, {
            "what": "Schaul et al. 2015, figure 1: learner updates until the MSE of Blind "
            "Cliffwalk's Q-values to Q* is below the threshold, from a fixed memory of all 2^n "
            "action sequences run to termination",
            **settings,
            "settings": settings,
            "learner": trials[0].config["agent"],
            "replay": {k: v for k, v in trials[0].config["replay"].items() if k != "capacity"},
        }

    def page(report: dict[str, Any]) -> str:
        figure = cliffwalk_figure(report["summary"], threshold=report.get("threshold"))
        return figure.to_html(include_plotlyjs=True, full_html=True)

    output = ("--plot", "figure", page)
    return _experiment(args, plan, run_cliffwalk_trial, cliffwalk_summary, cliffwalk_table, output)


def _cmd_per_notebook(args: argparse.Namespace) -> int:
    from rdqn.experiments.per_notebook import (
        per_notebook_summary,
        per_notebook_trials,
        run_per_notebook_trial,
    )
    from rdqn.experiments.tables import per_notebook_table
    from rdqn.figures.experiment_report import per_notebook_report

    def plan(overrides: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        trials = per_notebook_trials(
            args.schemes,
            args.seeds,
            steps=args.steps,
            threshold=args.threshold,
            probes=args.probes,
            overrides=overrides,
        )
        return trials, {
            "what": "the PER notebook's study: uniform vs proportional replay on CartPole-v1 "
            "(per-notebook preset), with probes of TD errors, priorities and IS weights",
            "threshold": args.threshold,
            "overrides": overrides,
            "settings": {
                "steps": trials[0].config["train"]["total_steps"],
                "threshold": args.threshold,
                "probes": args.probes,
                "overrides": overrides,
            },
            "config": trials[0].config,
        }

    output = ("--report", "report", per_notebook_report)
    return _experiment(
        args, plan, run_per_notebook_trial, per_notebook_summary, per_notebook_table, output
    )


def _cmd_minatar(args: argparse.Namespace) -> int:
    from rdqn.experiments.greedy import train_greedy
    from rdqn.experiments.minatar import minatar_summary, minatar_trials
    from rdqn.experiments.tables import minatar_table
    from rdqn.figures.experiments import minatar_page

    def plan(overrides: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        trials = minatar_trials(
            args.games, args.schemes, args.seeds, steps=args.steps, overrides=overrides
        )
        config = trials[0].config
        return trials, {
            "what": "DQN on MinAtar (the minatar preset), uniform against prioritized replay, "
            "with greedy evaluations on held-out env seeds",
            "overrides": overrides,
            "settings": {"steps": config["train"]["total_steps"], "overrides": overrides},
            "config": config,
        }

    output = ("--plot", "figure", minatar_page)
    return _experiment(args, plan, train_greedy, minatar_summary, minatar_table, output)


def _cmd_recurrent(args: argparse.Namespace) -> int:
    from rdqn.experiments.greedy import train_greedy
    from rdqn.experiments.recurrent import recurrent_summary, recurrent_trials
    from rdqn.experiments.tables import recurrent_table
    from rdqn.figures.experiments import recurrent_page

    def plan(overrides: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        trials = recurrent_trials(args.arms, args.seeds, steps=args.steps, overrides=overrides)
        config = trials[0].config
        return trials, {
            "what": "recurrent DQN (the e14-lesson preset) on masked CartPole, E14's windows "
            "against R2D2's sequences from the stored or a zero LSTM state, with greedy "
            "evaluations on held-out env seeds",
            "overrides": overrides,
            "settings": {"steps": config["train"]["total_steps"], "overrides": overrides},
            "config": config,
        }

    output = ("--plot", "figure", recurrent_page)
    return _experiment(args, plan, train_greedy, recurrent_summary, recurrent_table, output)


def _experiment(
    args: argparse.Namespace,
    plan: Callable[[dict[str, Any]], tuple[list[Any], dict[str, Any]]],
    func: Callable[[Any], dict[str, Any]],
    summarize: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
    table: Callable[[dict[str, Any]], str],
    output: tuple[str, str, Callable[[dict[str, Any]], str]],
) -> int:
    """One study: its trials as ``plan`` makes them from the ``--set`` overrides (with their
    results file's head) run, or its ``--from`` file read; then its HTML page written (``output``:
    the page's option, what it is, and how a results file draws it) and its table printed as
    asked. The exit status: 1 when a trial failed."""
    option, what, draw = output
    out = Path(args.out)
    given = getattr(args, option[2:])
    if not given and (out.is_dir() or not out.name):
        raise UsageError(f"--out {out} is a directory; name a file to write")
    target = Path(given) if given else out.with_suffix(".html")
    if args.source:
        report = read_results(Path(args.source))
    else:
        trials, head = plan(parse_set(args.set or []))
        for path, name in ((out, "--out"), (target, option)):
            check_writable(path, name)
        head = {"experiment": args.experiment, "command": command_line(), **head}
        report = run_trials(func, trials, head, summarize, out, args)
    if not args.source or given:
        write_output(target, draw(report), option)
        if not args.quiet:
            print(f"{what}: {target}", file=sys.stderr)
    if args.table:
        print(table(report))
    return 0 if not report.get("failed") else 1


# -------------------------------------------------------------------------------- tables


def _cmd_tables(args: argparse.Namespace) -> int:
    from rdqn.experiments.tables import RESULTS_FILES, all_tables, check_blocks, rewrite_blocks

    folder = Path(args.results)
    if not folder.is_dir():
        raise UsageError(f"--results {folder} is not a folder")
    try:
        tables = all_tables(folder)
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise UsageError(f"--results {folder}: a results file cannot be read: {err}") from None
    if not tables:
        names = ", ".join(file for file, _ in RESULTS_FILES.values())
        raise UsageError(f"--results {folder} holds none of the results files ({names})")
    if args.write:
        path = Path(args.write)
        write_output(path, rewrite_blocks(read_text(path, "--write"), tables), "--write")
        return 0
    if args.check:
        stale = check_blocks(read_text(Path(args.check), "--check"), tables)
        for name in stale:
            print(f"stale table: {name}", file=sys.stderr)
        return 1 if stale else 0
    for name, table in tables.items():
        print(f"<!-- table: {name} -->\n{table}<!-- /table -->\n")
    return 0
