"""What does a run's resume checkpoint cost, against the size of its replay memory?

For each scheme and replay capacity, a CartPole run of the per-notebook preset fills its memory
(capacity env steps, no updates), then saves resume checkpoints three ways, each timed from the
trainer's state to the file fsynced, with the bytes written:

* **first chunked save**: the archive and every chunk (`checkpoint_parts`, `write_checkpoint`)
  into an empty folder;
* **later chunked saves**: after each of ``--repeats`` stretches of ``--steps`` env steps of
  training (an update per step), the save a periodic checkpoint makes, writing only the chunks
  that changed;
* **whole file**, of the same state just before each later save (the reference beside it: how
  every save was written before chunks): the state as one archive (`checkpoint_bytes`), written
  atomically.

Usage: python -m benchmarks.bench_checkpoint [--capacities 10000 100000 1000000] [--steps 10000]
       python -m benchmarks.bench_checkpoint --table benchmarks/results/checkpoint.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.provenance import git_commit
from rdqn.presets import preset
from rdqn.runs.checkpoint_chunks import chunk_folder
from rdqn.runs.checkpoints import checkpoint_bytes, checkpoint_parts, write_checkpoint
from rdqn.training.trainer import Trainer


def whole_save(trainer: Trainer, path: Path) -> tuple[float, int]:
    started = time.perf_counter()
    data = checkpoint_bytes(trainer.checkpoint_state(resumable=True))
    write_checkpoint(data, path)
    return time.perf_counter() - started, len(data)


def chunked_save(trainer: Trainer, path: Path) -> tuple[float, int]:
    """One save as a run makes it (the chunks the folder holds are not written again)."""
    folder = chunk_folder(path)
    held = set(os.listdir(folder)) if folder.is_dir() else set()
    started = time.perf_counter()
    data, chunks = checkpoint_parts(trainer.checkpoint_state(resumable=True))
    write_checkpoint(data, path, {d: None if d in held else c for d, c in chunks.items()})
    seconds = time.perf_counter() - started
    return seconds, len(data) + sum(len(c) for d, c in chunks.items() if d not in held)


def measure(scheme: str, capacity: int, steps: int, repeats: int) -> dict[str, Any]:
    config = preset("per-notebook").with_overrides(
        {
            "replay.scheme": scheme,
            "replay.capacity": capacity,
            "train.learning_starts": capacity,
            "train.total_steps": capacity + (repeats + 1) * steps,
        }
    )
    trainer = Trainer(config)
    while trainer.env_steps < capacity:
        trainer.step()
    folder = Path(tempfile.mkdtemp(prefix="rdqn-bench-checkpoint-"))
    first = chunked_save(trainer, folder / "run.pt")
    whole, later = [], []
    for _ in range(repeats):
        for _ in range(steps):
            trainer.step()
        whole.append(whole_save(trainer, folder / "whole.pt"))  # the same state, beside it
        later.append(chunked_save(trainer, folder / "run.pt"))
    trainer.close()
    shutil.rmtree(folder)
    result = {
        "scheme": scheme,
        "capacity": capacity,
        "whole_s": statistics.median(s for s, _ in whole),
        "whole_bytes": statistics.median(b for _, b in whole),
        "first_s": first[0],
        "first_bytes": first[1],
        "later_s": statistics.median(s for s, _ in later),
        "later_bytes": statistics.median(b for _, b in later),
        "later_all": later,
    }
    print(
        f"{scheme:>12} {capacity:>9,}: whole {result['whole_s']:.3f} s "
        f"{result['whole_bytes'] / 1e6:.1f} MB; first {first[0]:.3f} s; later "
        f"{result['later_s']:.3f} s {result['later_bytes'] / 1e6:.1f} MB",
        flush=True,
    )
    return result


def table(results: dict[str, Any]) -> str:
    """The docs' table (Markdown) from a results file."""
    rows = [
        "| scheme | capacity | checkpoint (MB) | whole file: s | first chunked save: s "
        "| later save: s | later save writes (MB) | later save: time vs whole file |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results["rows"]:
        rows.append(
            f"| {r['scheme']} | {r['capacity']:,} | {r['whole_bytes'] / 1e6:.1f} "
            f"| {r['whole_s']:.3f} | {r['first_s']:.3f} | {r['later_s']:.3f} "
            f"| {r['later_bytes'] / 1e6:.1f} | {r['later_s'] / r['whole_s']:.0%} |"
        )
    return (
        "\n".join(rows)
        + f"\n\nLater saves follow {results['steps']:,} env steps of training each, a whole "
        f"file of the same state beside each (medians of {results['repeats']}). Commit "
        f"{results['commit']}, {results['date']}, load average "
        f"{results['load_average'][0]:.1f} at the end.\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--capacities", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--schemes", nargs="+", default=["proportional", "rank"])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default="benchmarks/results/checkpoint.json")
    parser.add_argument("--table", type=Path, help="print the table of a results file and exit")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(args.table.read_text(encoding="utf-8"))), end="")
        return
    # A process's first save also loads what saving needs (torch's optimizer code, about a
    # second): made here, so that no row's first save pays it.
    checkpoint_bytes(Trainer(preset("per-notebook")).checkpoint_state(resumable=True))
    rows = [
        measure(scheme, capacity, args.steps, args.repeats)
        for scheme in args.schemes
        for capacity in args.capacities
    ]
    results = {
        "what": "seconds and bytes of a resume checkpoint's save, whole file vs chunked",
        "commit": git_commit(),
        "date": time.strftime("%Y-%m-%d"),
        "load_average": os.getloadavg(),
        "steps": args.steps,
        "repeats": args.repeats,
        "rows": rows,
    }
    Path(args.json).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(table(results), end="")


if __name__ == "__main__":
    main()
