"""``rdqn runs list | show ID | export ID | delete ID``: the stored runs."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rdqn.cli.options import check_writable, write_output
from rdqn.cli.usage import UsageError
from rdqn.compare import ROLLING_WINDOW
from rdqn.runs.resume import resume_blocker
from rdqn.runs.store import RunStore, StoreMissing


def cmd_runs(args: argparse.Namespace, store: RunStore) -> int:
    """``rdqn runs ACTION``: the exit status (0; an unknown run id is a `UsageError`)."""
    if args.action == "list":
        frame = store.list_runs()
        if frame.empty:
            print("no runs stored yet")
            return 0
        columns = ["id", "status", "preset", "env_id", "scheme", "seed", "env_steps", "episodes"]
        print(frame[[c for c in columns if c in frame]].to_string(index=False))
        return 0
    try:
        record = store.get_run(args.run_id)
    except KeyError as err:
        raise UsageError(str(err).strip("'\"")) from err
    if args.action == "show":
        episodes = store.metrics.episodes(args.run_id)
        blocker = resume_blocker(store, args.run_id)
        summary = {
            "id": record.id,
            "status": record.status,
            "error": record.error,
            "env_steps": record.env_steps,
            "updates": record.updates,
            "episodes": record.episodes,
            f"mean return (last {ROLLING_WINDOW})": float(
                episodes["return"].tail(ROLLING_WINDOW).mean()
            )
            if len(episodes)
            else None,
            "checkpoint": record.checkpoint_path,
            "resumable": blocker is None,
            "not resumable because": blocker,
            # Where a resume starts, and the recorded steps past it that it drops.
            "resumes from env step": record.resume_env_steps if blocker is None else None,
            "a resume discards env steps": max(0, record.env_steps - record.resume_env_steps)
            if blocker is None and record.resume_env_steps is not None
            else None,
            "config": record.config,
            "manifest": record.manifest,
        }
        print(json.dumps(summary, indent=2, default=str))
    elif args.action == "export":
        if args.out:
            check_writable(Path(args.out), "--out")
        text = store.metrics.export_csv(args.run_id, args.kind)
        if args.out:
            write_output(Path(args.out), text, "--out")
            print(f"wrote {args.out}")
        else:
            sys.stdout.write(text)
    elif args.action == "delete":
        store.delete_run(args.run_id)
        print(f"deleted run {args.run_id}")
    return 0


def cmd_without_store(args: argparse.Namespace, missing: StoreMissing) -> int:
    """``rdqn runs ...`` or ``rdqn resume ID`` where no store exists: nothing is created. Listing
    finds no runs (status 0); a run asked for by id is a `UsageError`."""
    if args.command == "runs" and args.action == "list":
        print(f"no runs stored yet: {missing}")
        return 0
    where = f"{missing}; check --home or RDQN_HOME"
    if args.command == "resume":
        raise UsageError(f"cannot resume run {args.run_id}: {where}")
    raise UsageError(f"no run with id {args.run_id!r}: {where}")
