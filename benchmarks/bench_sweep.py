"""Sweep scaling: trials per minute with 1 and 2 worker processes and on a local Ray instance,
and what a Ray trial costs beyond a worker process's.

Every measure runs the same sweep through `rdqn.sweeps.run_sweep` into a fresh run store: the
chain-lesson preset, ``--trials`` trials (one grid field, replay.alpha, times seeds) of ``--steps``
env steps each, every trial a recorded run. Variants run interleaved, round by round:

  1 worker     worker processes forked from a warm zygote, one trial at a time
  2 workers    the same, two at once
  Ray, 2 CPUs  one Ray actor per trial on a local instance of 2 CPUs, two at once; the actors
               relay every write to the driver, which makes it

Trials per minute = trials / wall seconds * 60. On a machine shared with other work, the wall
time depends on what else runs; the share of the slots' time spent inside the trainers (the
seconds of the trials' manifest timings, over wall seconds x slots) says how much of it the
sweep machinery itself takes (starting, recording, relaying, waiting for the next trial). The
load average is recorded before each round, and each round measures the machine's own ceiling:
what two plain CPU-bound processes get done at once against one (`machine_ceiling`; 2.0 on two
idle cores). The zygote's warm-up and Ray's start are paid once per sweep command, not per
trial: they are measured once and reported apart (``startup``), and the measured sweeps reuse
a warm zygote and a running Ray instance.

Ray's per-trial overhead is the slot time a trial takes on Ray beyond a worker process's,
(2 / rate on Ray) - (2 / rate of 2 workers), rates in trials per second: mostly the start of a
fresh actor process that imports torch and rdqn (a forked worker starts in milliseconds).

Usage (a shared machine: run at a high priority, several rounds; medians and ranges). Worker
processes and Ray actors lower their own priority by 10 (the zygote as it starts, each Ray actor
in `rdqn.serve.worker.lower_priority`), so the command runs at -20 for the trials to train at -10:

    nice -n -20 python -m benchmarks.bench_sweep --json benchmarks/results/sweep_scaling.json
    python -m benchmarks.bench_sweep --table benchmarks/results/sweep_scaling.json
        # prints the table; `python -m benchmarks.doc_tables --write` puts it in docs/sweeps.md
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.provenance import git_commit
from rdqn.runs.store import RunStore
from rdqn.serve.executors import Executor, ProcessExecutor
from rdqn.serve.registry import RunRegistry
from rdqn.serve.worker import lower_priority
from rdqn.sweeps import SweepSpec, run_sweep

COMMAND = (
    "nice -n -20 python -m benchmarks.bench_sweep --json benchmarks/results/sweep_scaling.json"
)
VARIANTS = ("1 worker", "2 workers", "Ray, 2 CPUs")


class Kept:
    """An executor that a registry's shutdown leaves running (for the next measure)."""

    def __init__(self, executor: Executor) -> None:
        self.inner = executor

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def close(self) -> None:
        """Kept: `end` closes it."""

    def end(self) -> None:
        self.inner.close()


def sweep_spec(trials: int, steps: int, round_: int) -> SweepSpec:
    """``trials`` trials: alpha 0.6 and 1 times seeds; seeds new each round (a new sweep id)."""
    seeds = [round_ * trials + k for k in range(trials // 2)]
    return SweepSpec.from_grid("chain-lesson", {"replay.alpha": [0.6, 1.0]}, seeds, steps)


def measure(executor: Kept, workers: int, spec: SweepSpec) -> tuple[float, float]:
    """Trials per minute of ``spec`` on ``workers`` slots of ``executor``, in a fresh store,
    and the share of the slots' time the trials spent inside their trainers (the seconds their
    manifests' timings add up to, over wall x slots; the rest is starting, recording, relaying
    and waiting for a slot's next trial)."""
    home = Path(tempfile.mkdtemp(prefix="rdqn-bench-sweep-"))
    with RunStore(home / "rdqn.db") as store:
        registry = RunRegistry(store, executor=executor, max_active=workers, idle_timeout=None)
        begin = time.perf_counter()
        result = run_sweep(spec, store, registry=registry, progress=False)
        wall = time.perf_counter() - begin
        registry.shutdown()
        if not result.complete:
            failed = [o.error for o in result.trials if o.status != "finished"]
            raise SystemExit(f"a trial did not finish: {failed[:3]}")
        inside = 0.0
        for outcome in result.trials:
            manifest = store.get_run(str(outcome.run_id)).manifest or {}
            inside += sum(manifest.get("timings", {}).get("seconds", {}).values())
    shutil.rmtree(home, ignore_errors=True)
    return len(result.trials) / wall * 60.0, inside / (wall * workers)


_SPIN = """import time
end = time.perf_counter() + {s}
n = 0
while time.perf_counter() < end:
    n += sum(range(1000))
print(n)
"""


def machine_ceiling(seconds: float = 3.0) -> float:
    """What this machine gives two CPU-bound processes at once, against one, right now: the
    work two plain Python loops do together over what one does alone (2.0 on two idle cores).
    A shared machine gives less; no sweep can scale beyond it."""

    def spin(count: int) -> int:
        code = _SPIN.format(s=seconds)
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", code],
                stdout=subprocess.PIPE,
                text=True,
                preexec_fn=lower_priority,  # at the trials' priority
            )
            for _ in range(count)
        ]
        return sum(int(proc.communicate()[0]) for proc in procs)

    return spin(2) / spin(1)


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    load_before = os.getloadavg()
    begin = time.perf_counter()
    process = Kept(ProcessExecutor(capacity=2))
    process.prepare()
    warm = sweep_spec(2, 200, 10_000)
    measure(process, 2, warm)  # the zygote warm before anything is timed
    zygote_s = time.perf_counter() - begin
    ray: Kept | None = None
    ray_init_s = None
    if not args.no_ray:
        from rdqn.serve.ray_executor import RayExecutor

        # Ray starts its workers 15 nicer than itself (its worker_niceness); at 0, actors train
        # at the forked workers' priority and the two executors compare fairly.
        os.environ.setdefault("RAY_worker_niceness", "0")
        begin = time.perf_counter()
        ray = Kept(RayExecutor("local", num_cpus=2))
        ray_init_s = time.perf_counter() - begin
    variants: dict[str, Callable[[SweepSpec], tuple[float, float]]] = {
        "1 worker": lambda spec: measure(process, 1, spec),
        "2 workers": lambda spec: measure(process, 2, spec),
    }
    if ray is not None:
        variants["Ray, 2 CPUs"] = lambda spec: measure(ray, 2, spec)
    rates: dict[str, list[float]] = {name: [] for name in variants}
    busy: dict[str, list[float]] = {name: [] for name in variants}
    loads: list[float] = []
    ceilings: list[float] = []
    for round_ in range(args.rounds):
        loads.append(os.getloadavg()[0])
        ceilings.append(machine_ceiling())
        print(f"round {round_ + 1}: the machine's own 2-process speed-up {ceilings[-1]:.2f}x")
        for k, (name, timed) in enumerate(variants.items()):
            rate, share = timed(sweep_spec(args.trials, args.steps, round_ * len(variants) + k))
            rates[name].append(rate)
            busy[name].append(share)
            print(
                f"round {round_ + 1}: {name:12s} {rate:6.1f} trials/min, "
                f"{share:.0%} of slot time in the trainers (load {loads[-1]:.1f})",
                flush=True,
            )
    speedups = [two / one for one, two in zip(rates["1 worker"], rates["2 workers"], strict=True)]
    result: dict[str, Any] = {
        "command": COMMAND,
        "sweep": {"preset": "chain-lesson", "trials": args.trials, "steps": args.steps},
        "rounds": args.rounds,
        "cores": len(os.sched_getaffinity(0)),
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "load_average_per_round": loads,
        "trials_per_minute": rates,
        "summary": {name: spread(values) for name, values in rates.items()},
        "slot_time_in_trainers": busy,
        "slot_time_summary": {name: spread(values) for name, values in busy.items()},
        "speedup_2_workers": spread(speedups),
        "machine_two_process_speedup": ceilings,
        "machine_two_process_speedup_summary": spread(ceilings),
        "startup_s": {"zygote warm-up": zygote_s, "Ray instance start": ray_init_s},
    }
    if ray is not None:
        overheads = [
            120.0 / on_ray - 120.0 / two
            for on_ray, two in zip(rates["Ray, 2 CPUs"], rates["2 workers"], strict=True)
        ]
        result["ray_overhead_s_per_trial"] = spread(overheads)
        ray.end()
    process.end()
    return result


def table(result: dict[str, Any]) -> str:
    """The docs' table and notes, from a results file."""
    summary = result["summary"]
    sweep = result["sweep"]
    lines = [
        f"{sweep['trials']} trials of {sweep['preset']}, {sweep['steps']:,} env steps each; "
        f"{result['rounds']} rounds on {result['cores']} cores (load average "
        f"{result['load_average_before'][0]:.1f} before, {result['load_average_after'][0]:.1f} "
        "after). Median (min-max) over the rounds:",
        "",
        "| executor | trials per minute | slot time inside the trainers |",
        "|---|---:|---:|",
    ]
    for name in VARIANTS:
        if name in summary:
            s, b = summary[name], result["slot_time_summary"][name]
            lines.append(
                f"| {name} | {s['median']:.1f} ({s['min']:.1f}-{s['max']:.1f}) | "
                f"{b['median']:.0%} ({b['min']:.0%}-{b['max']:.0%}) |"
            )
    speed = result["speedup_2_workers"]
    lines += [
        "",
        f"2 workers / 1 worker: {speed['median']:.2f}x ({speed['min']:.2f}-{speed['max']:.2f}x) "
        "(goal: at least 1.7x).",
    ]
    if "machine_two_process_speedup_summary" in result:
        ceiling = result["machine_two_process_speedup_summary"]
        lines.append(
            f"In the same rounds the machine itself gave two plain CPU-bound processes "
            f"{ceiling['median']:.2f}x ({ceiling['min']:.2f}-{ceiling['max']:.2f}x) the work of "
            "one: no sweep can scale beyond that here."
        )
    if "ray_overhead_s_per_trial" in result:
        over = result["ray_overhead_s_per_trial"]
        lines.append(
            f"Ray's overhead per trial (slot seconds beyond a worker process's): "
            f"{over['median']:.1f} s ({over['min']:.1f}-{over['max']:.1f} s)."
        )
    startup = result["startup_s"]
    once = f"Paid once per sweep: the zygote's warm-up {startup['zygote warm-up']:.1f} s"
    if startup.get("Ray instance start") is not None:
        once += f", a local Ray instance's start {startup['Ray instance start']:.1f} s"
    lines += [f"{once}.", "", f"Command: `{result['command']}`"]
    if "commit" in result:
        lines[-1] += f"; commit {result['commit']}."
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--trials", type=int, default=8, help="trials per sweep (even)")
    parser.add_argument(
        "--steps", type=int, default=5000, help="env steps per trial (1,000: mostly start-up)"
    )
    parser.add_argument("--no-ray", action="store_true", help="leave out Ray")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--table", metavar="RESULTS", help="print the table of a results file")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(Path(args.table).read_text(encoding="utf-8"))), end="")
        return
    result = run(args)
    result["commit"] = git_commit()
    print(table(result), end="")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(f"written to {args.json}", file=sys.stderr)


if __name__ == "__main__":
    main()
