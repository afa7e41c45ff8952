"""Replay-engine benchmark: the PER cycle against peer libraries, window sampling, and memory.

The PER cycle (`benchmarks.peers.protocol`): 128 sorted stratified masses, the leaf and P(i) of
each, one write of 128 new priorities. rdqn's cycle is its public API,
`ProportionalSampler.sample(N, 128, beta, rng)` (which also computes IS weights from a min tree)
plus `update_priorities`. The peers perform the same cycle through their own libraries
(`benchmarks/peers/adapters.py`): TorchRL's C++ segment trees, tianshou's numba SegmentTree and
cpprb's PrioritizedReplayBuffer. They need torch 2.14.1, so they run in a separate venv
(`bash benchmarks/peers/setup.sh` creates `.venv-peers`) in a long-lived worker process
(`benchmarks/peers/driver.py`), while rdqn and the NumPy references run in this process.
Rounds interleave every implementation of both processes at every size; the table reports the
median over rounds of the mean time per cycle.

Usage: python -m benchmarks.bench_replay [--quick] [--json OUT.json] [--peer-python PATH]
       python -m benchmarks.bench_replay --table benchmarks/results/replay.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numba
import numpy as np

from benchmarks.peers.driver import Worker
from benchmarks.peers.numpy_references import REFERENCES
from benchmarks.peers.protocol import ALPHA, BATCH, BETA, EPS, LOG2_SIZES, initial_magnitudes
from benchmarks.provenance import git_commit
from rdqn.replay import ProportionalSampler, ReplayBuffer

ROOT = Path(__file__).resolve().parent.parent
PEER_PYTHON = ROOT / ".venv-peers" / "bin" / "python"
SETUP_HINT = (
    "create it with `bash benchmarks/peers/setup.sh` (a separate venv at .venv-peers, about "
    "6 GB: torch 2.14.1, torchrl 0.14.1, tianshou 2.0.1, cpprb 11.0.0), then rerun"
)
SUBJECT = "rdqn ProportionalSampler"
SLOW_ROUNDS = 3  # slow references are timed in the first rounds only, with calls / 50


# ---------------------------------------------------------------- rdqn in the main environment
class _GivenUniforms:
    """Stands in for a Generator so that a check can hand the sampler its u_k: rdqn's samplers
    draw them with `rng.random(out=...)`."""

    def __init__(self, u: np.ndarray) -> None:
        self.u = u

    def random(self, *, out: np.ndarray) -> np.ndarray:
        if out.shape != self.u.shape:
            raise ValueError(f"out must have shape {self.u.shape}, got {out.shape}")
        out[...] = self.u
        return out


class RdqnSampler:
    """rdqn's ProportionalSampler: sample (indices, P(i), IS weights) + update_priorities."""

    def __init__(self, n: int) -> None:
        self.sampler = ProportionalSampler(alpha=ALPHA, eps=EPS)
        self.sampler.attach(n)
        for slot in range(n):  # stored, as a buffer's adds would: only stored slots update
            self.sampler.on_add(slot)
        self.sampler.update_priorities(np.arange(n), initial_magnitudes(n))
        self.rng, self.n = np.random.default_rng(2), n

    def draw(self, u: np.ndarray, deltas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        draw = self.sampler.sample(self.n, BATCH, BETA, _GivenUniforms(u))
        self.sampler.update_priorities(draw.indices, np.abs(deltas))
        return draw.indices, draw.probabilities

    def cycle(self, deltas: np.ndarray) -> None:
        draw = self.sampler.sample(self.n, BATCH, BETA, self.rng)
        self.sampler.update_priorities(draw.indices, np.abs(deltas))


class RdqnBuffer:
    """rdqn's whole ReplayBuffer (validation, stale-update guard, transition gather), T = 1.

    More than the cycle, so it is shown for information and left out of the ratios. Filling it
    takes one add() per transition (about 45 s for 2^20), so it is measured up to 2^17.
    """

    max_log2n = 17

    def __init__(self, n: int) -> None:
        self.buffer = _filled_buffer(n, 1, np.random.default_rng(1))
        self.buffer.sampler.update_priorities(np.arange(n), initial_magnitudes(n))

    def cycle(self, deltas: np.ndarray) -> None:
        batch = self.buffer.sample(BATCH, beta=BETA)
        self.buffer.update_priorities(batch, np.abs(deltas))


MAIN_IMPLEMENTATIONS: dict[str, Callable[[int], object]] = {
    SUBJECT: RdqnSampler,
    **REFERENCES,
    "rdqn ReplayBuffer, whole (T=1)": RdqnBuffer,
}
INFORMATIONAL = {"rdqn ReplayBuffer, whole (T=1)"}
DESCRIPTIONS = {
    SUBJECT: "numba; sample also computes IS weights from a min tree",
    "rdqn ReplayBuffer, whole (T=1)": "validation, stale-update guard, transition gather",
    "TorchRL SumSegmentTreeFp64 (C++), NumPy arrays": "sum tree only",
    "TorchRL SumSegmentTreeFp32 (C++), NumPy arrays": "sum tree only",
    "TorchRL sum + min trees as PrioritizedSampler (C++, fp32)": "torch tensors, IS weights",
    "cpprb PrioritizedReplayBuffer (C++)": "sample + update_priorities, fp32, IS weights",
}


def _filled_buffer(n: int, window: int, rng: np.random.Generator) -> ReplayBuffer:
    buffer = ReplayBuffer(n, (4,), window=window, sampler=ProportionalSampler(), seed=0)
    obs = rng.random((n + 1, 4), dtype=np.float32)
    for t in range(n):
        buffer.add(obs[t], t % 2, 1.0, obs[t + 1], bool(t % 200 == 199), False)
    return buffer


def _time_per_call(fn: Callable[[], None], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


# ---------------------------------------------------------------- the peer venv's worker
class PeerProcess:
    """The peer driver in the peer venv, one JSON line per command each way."""

    def __init__(self, python: Path) -> None:
        self.process = subprocess.Popen(
            [str(python), "-m", "benchmarks.peers.driver", "--serve"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def ask(self, **command: object) -> dict:
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the peer driver exited (status {self.process.wait()})")
        answer = json.loads(line)
        if not answer.pop("ok"):
            raise RuntimeError(f"the peer driver failed: {answer['error']}")
        return answer

    def setup(self, log2n: list[int]) -> dict:
        return self.ask(cmd="setup", log2n=log2n)

    def time(self, impl: str, log2n: int, calls: int) -> dict:
        return self.ask(cmd="time", impl=impl, log2n=log2n, calls=calls)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
            self.process.stdin.close()
            self.process.wait(timeout=60)


def start_peers(python: Path, log2n: list[int]) -> tuple[PeerProcess | None, dict]:
    """The peer worker, set up, and its status; (None, status saying why) when it cannot run."""
    if not Path(python).exists():
        message = f"peers NOT measured: no peer venv ({python} is missing); {SETUP_HINT}"
        return None, {"status": "missing", "message": message}
    peer = PeerProcess(python)
    try:
        answer = peer.setup(log2n)
    except RuntimeError as error:
        peer.close()
        return None, {"status": "failed", "message": f"peers NOT measured: {error}"}
    status = {"status": "ok", "python": str(python), **answer}
    if answer["unavailable"]:
        lost = "; ".join(f"{k}: {v}" for k, v in answer["unavailable"].items())
        status["message"] = f"some peers NOT measured: {lost}"
    return peer, status


# ---------------------------------------------------------------- the interleaved rounds
def bench_cycle(log2n: list[int], rounds: int, calls: int, peer_python: Path) -> dict:
    """µs per cycle of every implementation, both processes interleaved round by round."""
    local = Worker(MAIN_IMPLEMENTATIONS)
    main_setup = local.setup(log2n)
    peer, peers = start_peers(peer_python, log2n)
    lineup = [(local, impl, "main") for impl in main_setup["impls"]]
    if peer is not None:
        lineup += [(peer, impl, "peers") for impl in peers["impls"]]
    lineup.sort(key=lambda entry: entry[1]["slow"])  # slow references last in each round
    samples: dict[str, dict[str, list[float]]] = {
        impl["name"]: {f"2^{k}": [] for k in impl["log2n"]} for _, impl, _ in lineup
    }
    try:
        for r in range(rounds):
            for worker, impl, _ in lineup:
                if impl["slow"] and r >= SLOW_ROUNDS:
                    continue
                for k in impl["log2n"]:
                    count = max(1, calls // 50) if impl["slow"] else calls
                    seconds = worker.time(impl["name"], k, count)["seconds"]
                    samples[impl["name"]][f"2^{k}"].append(seconds * 1e6)
    finally:
        if peer is not None:
            peer.close()
    medians = {
        name: {size: statistics.median(v) for size, v in by_size.items()}
        for name, by_size in samples.items()
    }
    return {
        "log2n": log2n,
        "rounds": rounds,
        "calls": calls,
        "environment": {impl["name"]: env for _, impl, env in lineup},
        "unavailable": main_setup["unavailable"] | peers.get("unavailable", {}),
        "peers": {k: v for k, v in peers.items() if k not in ("impls", "unavailable")},
        "samples_us": samples,
        "median_us": medians,
        "fastest_peer": fastest_peer(medians, {impl["name"]: env for _, impl, env in lineup}),
    }


def fastest_peer(medians: dict, environment: dict) -> dict[str, dict]:
    """At each size: the quickest peer library, its time and its time / rdqn's."""
    out = {}
    for size, rdqn_us in medians.get(SUBJECT, {}).items():
        peer_times = {
            name: by_size[size]
            for name, by_size in medians.items()
            if environment[name] == "peers" and size in by_size
        }
        if peer_times:
            name = min(peer_times, key=peer_times.get)
            out[size] = {"name": name, "us": peer_times[name], "ratio": peer_times[name] / rdqn_us}
    return out


def _faster_or_slower(ratio: float) -> str:
    return f"{ratio:.1f}× faster" if ratio >= 1 else f"{1 / ratio:.1f}× slower"


def cycle_table(cycle: dict) -> str:
    """The Markdown table docs/performance.md shows, with its ratio line and any missing peers."""
    medians, sizes = cycle["median_us"], [f"2^{k}" for k in cycle["log2n"]]
    base = medians[SUBJECT]
    env = cycle["environment"]

    def order(name: str) -> tuple[int, float]:
        """rdqn, then the peers, the NumPy references, the whole buffer; by time at the top N."""
        if name == SUBJECT:
            group = 0
        elif name in INFORMATIONAL:
            group = 3
        else:
            group = 1 if env[name] == "peers" else 2
        return group, medians[name].get(sizes[-1], float("inf"))

    header = "| µs per cycle | " + " | ".join(f"N = {s} | × rdqn" for s in sizes) + " |"
    lines = [header, "|---|" + "---:|---:|" * len(sizes)]
    for name in sorted(medians, key=order):
        label = f"**{name}**" if name == SUBJECT else name
        if name in DESCRIPTIONS:
            label += f" ({DESCRIPTIONS[name]})"
        cells = []
        for size in sizes:
            us = medians[name].get(size)
            if us is None:
                cells.append("— | —")
            else:
                text = f"{us:,.1f}" if us < 1000 else f"{us:,.0f}"
                ratio = f"{us / base[size]:.1f}"
                cells.append(f"**{text}** | {ratio}" if name == SUBJECT else f"{text} | {ratio}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    fastest = cycle["fastest_peer"]
    if fastest:
        parts = [
            f"N = {size}: {f['ratio']:.2f} ({f['name']}; rdqn {_faster_or_slower(f['ratio'])})"
            for size, f in fastest.items()
        ]
        lines.append("\nFastest peer's time / rdqn's: " + "; ".join(parts) + ".")
    for message in filter(None, [cycle["peers"].get("message")]):
        lines.append(f"\n**{message}**")
    return "\n".join(lines)


def table(results: dict) -> str:
    """The docs' tables (Markdown) from a results file: the PER cycle (`cycle_table`), then
    window sampling and the memory of a full buffer."""
    lines = [
        cycle_table(results["cycle"]),
        "",
        "| ReplayBuffer, 50,000 transitions of 4 float32 | |",
        "|---|---:|",
    ]
    for name, us in results["sample_us"].items():
        lines.append(f"| {name.replace('x 4 floats', 'x 4 float32')}: µs per call | {us:.1f} |")
    for name, m in results["memory"].items():
        lines.append(
            f"| full buffer, {name}: bytes per item (share of 2.2 × N × obs + 96 N) "
            f"| {m['bytes_per_item']:.1f} ({m['fraction_of_budget']:.0%}) |"
        )
    note = f"{results['date']}, `{results['command']}`"
    if "commit" in results:
        note += f", commit {results['commit']}"
    lines += ["", note + "."]
    return "\n".join(lines) + "\n"


def bench_window_sample(rounds: int, calls: int) -> dict[str, float]:
    """µs per ReplayBuffer.sample(128) with T=8 windows of 4 floats from 50,000 transitions."""
    rng = np.random.default_rng(0)
    out = {}
    for window in (1, 8):
        buffer = _filled_buffer(50_000, window, rng)
        buffer.sample(BATCH)
        times = [
            _time_per_call(lambda b=buffer: b.sample(BATCH, beta=BETA), calls)
            for _ in range(rounds)
        ]
        out[f"ReplayBuffer.sample(128), T={window}, 50,000 x 4 floats"] = (
            statistics.median(times) * 1e6
        )
    return out


def bench_memory(n: int) -> dict[str, dict[str, float]]:
    """Bytes of a full buffer of n transitions of 4 float32s (T = 1 and 32) against the budget."""
    rng = np.random.default_rng(0)
    obs_bytes = 4 * 4
    budget = 2.2 * n * obs_bytes + 96 * n
    out = {}
    for window in (1, 32):
        tracemalloc.start()
        buffer = _filled_buffer(n, window, rng)
        traced, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        out[f"T={window}"] = {
            "nbytes": buffer.nbytes,
            "traced_bytes": traced,
            "bytes_per_item": buffer.nbytes / n,
            "budget_bytes": budget,
            "fraction_of_budget": buffer.nbytes / budget,
        }
    return out


def machine() -> dict[str, object]:
    cpu = next(
        (line.split(":", 1)[1].strip() for line in _lines("/proc/cpuinfo") if "model name" in line),
        platform.processor(),
    )
    return {"machine": platform.machine(), "cpu": cpu, "cpus": os.cpu_count()}


def _lines(path: str) -> list[str]:
    try:
        with open(path) as fh:
            return fh.readlines()
    except OSError:
        return []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (for a smoke run)")
    parser.add_argument("--json", help="also write the results to this JSON file")
    parser.add_argument(
        "--peer-python", type=Path, default=PEER_PYTHON, help="the peer venv's python"
    )
    parser.add_argument("--table", type=Path, help="print the tables of a results file and exit")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(args.table.read_text(encoding="utf-8"))), end="")
        return
    rounds, calls = (3, 200) if args.quick else (9, 2000)
    command = "python -m benchmarks.bench_replay" + (" --quick" if args.quick else "")
    date = datetime.date.today().isoformat()
    cycle = bench_cycle(list(LOG2_SIZES), rounds, calls, args.peer_python)
    results = {
        "date": date,
        "command": command,
        "commit": git_commit(),
        "versions": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "numba": numba.__version__,
            "peers": cycle["peers"].get("versions", {}),
        },
        "machine": machine(),
        "cycle": cycle,
        "sample_us": bench_window_sample(rounds, calls),
        "memory": bench_memory(50_000),
    }
    print(
        f"\nPER cycle ({command}, {date}; {rounds} rounds x {calls} cycles, median; "
        f"{results['machine']['cpu']}, {results['machine']['cpus']} CPUs)\n"
    )
    print(cycle_table(cycle))
    for name, error in cycle["unavailable"].items():
        print(f"NOT measured: {name}: {error}")
    print("\nBuffer sampling with windows")
    for name, us in results["sample_us"].items():
        print(f"{name:55s} {us:8.1f} µs")
    print("\nMemory of a full buffer of 50,000 transitions (obs = 4 float32)")
    for name, m in results["memory"].items():
        print(
            f"{name:5s} {m['nbytes'] / 1e6:6.2f} MB = {m['bytes_per_item']:.1f} B/item "
            f"({m['fraction_of_budget']:.0%} of the 2.2 x N x obs + 96 N budget; "
            f"tracemalloc {m['traced_bytes'] / 1e6:.2f} MB)"
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)


if __name__ == "__main__":
    main()
