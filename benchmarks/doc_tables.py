"""The docs' tables of measured figures, generated from the benchmarks' results files.

Every table of a benchmark's figures in docs/performance.md, docs/demo.md, docs/sweeps.md and
docs/reliability.md sits between markers, in the same style as the learning tables of
docs/experiments.md (``python -m rdqn experiment tables``)::

    <!-- table: learner -->
    | measure | result | target |
    ...
    <!-- /table -->

and its body is what the benchmark's own table function makes of its results file in
benchmarks/results (`BLOCKS`: block name -> doc, module, function, files), never typed by hand.

    python -m benchmarks.doc_tables --write   # rewrite every block from the results files
    python -m benchmarks.doc_tables --check   # exit 1, with a diff, if a block is stale
    python -m benchmarks.doc_tables           # print every block

A results file that is missing, a block a doc lacks, or a block the docs have that no benchmark
makes is an error (exit 1) for ``--check`` and ``--write``. The learning tables of
docs/experiments.md are checked and rewritten with them (`rdqn.experiments.tables`, the same as
``python -m rdqn experiment tables --check|--write docs/experiments.md``).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import json
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rdqn.experiments.tables import all_tables, check_blocks, rewrite_blocks

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


@dataclass(frozen=True)
class Block:
    """A doc's generated table: ``module.function(*parsed results files)``."""

    doc: str
    module: str
    function: str
    files: tuple[str, ...]


PERFORMANCE, DEMO, SWEEPS, RELIABILITY = (
    "docs/performance.md",
    "docs/demo.md",
    "docs/sweeps.md",
    "docs/reliability.md",
)
BLOCKS: dict[str, Block] = {
    "replay": Block(PERFORMANCE, "bench_replay", "table", ("replay.json",)),
    "rank": Block(PERFORMANCE, "bench_rank", "table", ("rank.json",)),
    "buffer": Block(PERFORMANCE, "bench_buffer", "table", ("buffer.json",)),
    "learner": Block(PERFORMANCE, "bench_learner", "table", ("learner.json",)),
    "minatar-loop": Block(PERFORMANCE, "bench_minatar_loop", "table", ("minatar_loop.json",)),
    "executors": Block(PERFORMANCE, "bench_executors", "table", ("executors.json",)),
    "dashboard": Block(PERFORMANCE, "bench_dashboard", "table", ("dashboard.json",)),
    "page-load": Block(PERFORMANCE, "bench_page_load", "table", ("page_load.json",)),
    "page-load-watching": Block(
        PERFORMANCE, "bench_page_load", "table", ("page_load_watching.json",)
    ),
    "live-curves": Block(PERFORMANCE, "bench_live_curves", "table", ("live_curves.json",)),
    "server-start": Block(PERFORMANCE, "bench_server_start", "table", ("server_start.json",)),
    "server-load": Block(PERFORMANCE, "bench_server_load", "docs_table", ("server_load.json",)),
    "server-exit": Block(PERFORMANCE, "bench_server_exit", "table", ("server_exit.json",)),
    "checkpoint": Block(PERFORMANCE, "bench_checkpoint", "table", ("checkpoint.json",)),
    "watch": Block(PERFORMANCE, "bench_watch", "table", ("watch.json",)),
    "demo-quiet": Block(DEMO, "bench_demo", "summary_table", ("demo_quiet.json",)),
    "demo": Block(DEMO, "bench_demo", "table", ("demo.json",)),
    "demo-tuning": Block(DEMO, "bench_demo", "summary_table", ("demo_tuning.json",)),
    "demo-held-out": Block(DEMO, "bench_demo", "table", ("demo_seeds_10_19.json",)),
    "whole-loop": Block(DEMO, "bench_whole_loop", "table", ("whole_loop.json",)),
    "sweep-scaling": Block(SWEEPS, "bench_sweep", "table", ("sweep_scaling.json",)),
    "load-classroom": Block(
        RELIABILITY,
        "load_classroom",
        "comparison_table",
        ("load_classroom.json", "load_classroom_10.json"),
    ),
}
DOCS = (PERFORMANCE, DEMO, SWEEPS, RELIABILITY)
EXPERIMENTS = "docs/experiments.md"
"""The learning tables' doc, whose blocks `rdqn.experiments.tables` makes."""

_NAME = re.compile(r"<!-- table: ([\w-]+) -->\n")


def table(name: str, results: Path = RESULTS) -> str:
    """Block ``name``'s body, made by its benchmark's table function from its results files."""
    block = BLOCKS[name]
    parsed = [json.loads((results / f).read_text(encoding="utf-8")) for f in block.files]
    make = getattr(importlib.import_module(f"benchmarks.{block.module}"), block.function)
    body = make(*parsed)
    return body if body.endswith("\n") else body + "\n"


def tables(results: Path = RESULTS) -> tuple[dict[str, str], list[str]]:
    """Every block's body by name, and the errors (a results file missing)."""
    out, errors = {}, []
    for name, block in BLOCKS.items():
        missing = [f for f in block.files if not (results / f).exists()]
        if missing:
            errors.append(f"{name}: no results file {', '.join(missing)} in {results}")
            continue
        out[name] = table(name, results)
    return out, errors


def regenerate(doc: str, text: str, bodies: Mapping[str, str]) -> tuple[str, list[str]]:
    """``text`` with its blocks rewritten, and the errors: a block of ``doc`` that the text
    lacks, a block in the text that belongs to another doc or to no benchmark."""
    found = _NAME.findall(text)
    errors = [
        f"{doc}: no block <!-- table: {name} -->"
        for name, block in BLOCKS.items()
        if block.doc == doc and name not in found
    ]
    errors += [
        f"{doc}: block {name!r} is not one of {doc}'s generated tables"
        for name in found
        if name not in BLOCKS or BLOCKS[name].doc != doc
    ]
    mine = {name: body for name, body in bodies.items() if BLOCKS[name].doc == doc}
    return rewrite_blocks(text, mine), errors


def learning_tables(results: Path, *, write: bool) -> tuple[bool, list[str]]:
    """docs/experiments.md's learning tables from the results files: whether a block is stale
    (rewritten with ``write``), and the errors (a block with no results file)."""
    path = ROOT / EXPERIMENTS
    text = path.read_text(encoding="utf-8")
    bodies = all_tables(results)
    stale = check_blocks(text, bodies)
    errors = [f"{EXPERIMENTS}: block {name!r} has no results file" for name in stale
              if name not in bodies]  # fmt: skip
    if stale and write:
        path.write_text(rewrite_blocks(text, bodies), encoding="utf-8")
        print(f"rewrote the tables of {EXPERIMENTS}")
    elif stale and not errors:
        print(f"{EXPERIMENTS}: stale learning tables: {', '.join(stale)}")
    return bool(stale), errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help="rewrite the docs' blocks")
    action.add_argument("--check", action="store_true", help="exit 1 if a block is stale")
    parser.add_argument("--results", type=Path, default=RESULTS, help="folder of the files")
    args = parser.parse_args(argv)
    bodies, errors = tables(args.results)
    if not (args.write or args.check):
        for name, body in bodies.items():
            print(f"{BLOCKS[name].doc}:\n<!-- table: {name} -->\n{body}<!-- /table -->\n")
        for error in errors:
            print(f"doc_tables: {error}", file=sys.stderr)
        return 1 if errors else 0
    stale = []
    for doc in DOCS:
        path = ROOT / doc
        text = path.read_text(encoding="utf-8")
        new, doc_errors = regenerate(doc, text, bodies)
        errors += doc_errors
        if new == text:
            continue
        stale.append(doc)
        if args.write:
            path.write_text(new, encoding="utf-8")
            print(f"rewrote the tables of {doc}")
        else:
            sys.stdout.writelines(
                difflib.unified_diff(
                    text.splitlines(keepends=True),
                    new.splitlines(keepends=True),
                    f"{doc} (as it is)",
                    f"{doc} (from the results files)",
                )
            )
    learning_stale, learning_errors = learning_tables(args.results, write=args.write)
    errors += learning_errors
    if learning_stale:
        stale.append(EXPERIMENTS)
    for error in errors:
        print(f"doc_tables: {error}", file=sys.stderr)
    if args.check and stale:
        print(
            f"doc_tables: stale tables in {', '.join(stale)}: "
            "python -m benchmarks.doc_tables --write",
            file=sys.stderr,
        )
    return 1 if errors or (args.check and stale) else 0


if __name__ == "__main__":
    raise SystemExit(main())
