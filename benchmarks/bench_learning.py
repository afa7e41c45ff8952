"""Learning checks: does the agent actually learn, and does prioritized replay help?

Experiments:

  cliffwalk Blind Cliffwalk at n = 8 and 12, 5 seeds, from a memory of random-policy episodes:
            a random behaviour policy fills it with 10 * 2^n env steps, then it is held fixed
            while the `paper` preset's learner (batch 32) replays it; learner updates until
            max |Q - Q*| < 0.05, checked every 25 updates, proportional vs uniform. The paper's
            figure itself (every action sequence in memory, the oracle, n = 2..16) is
            ``python -m rdqn experiment cliffwalk``.
  memory    velocity-masked CartPole: `e14` (recurrent, window 8) vs `per-notebook`'s MLP.
  cartpole-sweep
            `per-notebook` on CartPole-v1, 100,000 env steps, 5 seeds, proportional replay, for
            variants of the preset (Double DQN, learning rate, target period): how robust is
            reaching a 20-episode mean return of 475? (Proportional against uniform replay at
            the preset itself is ``python -m rdqn experiment per-notebook``.)

Runs execute in parallel worker processes (one torch thread each). Results go to a JSON file;
``--table`` prints the docs' Markdown table of a results file (`rdqn.experiments.tables`)
instead of running anything.

Usage (R = benchmarks/results):
    python -m benchmarks.bench_learning cliffwalk --out R/cliffwalk_random_memory.json
    python -m benchmarks.bench_learning memory --seeds 5 --out R/memory.json
    python -m benchmarks.bench_learning cartpole-sweep --out R/cartpole_sweep.json
    python -m benchmarks.bench_learning cartpole-sweep --table --out R/cartpole_sweep.json
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.provenance import git_commit

SEEDS = (0, 1, 2, 3, 4)

CARTPOLE_VARIANTS: dict[str, dict[str, Any]] = {
    "preset (DQN, lr 1e-3, sync 500)": {},
    "Double DQN": {"agent.double_dqn": True},
    "Double DQN, lr 5e-4": {"agent.double_dqn": True, "agent.lr": 5e-4},
    "Double DQN, lr 5e-4, sync 1000": {
        "agent.double_dqn": True,
        "agent.lr": 5e-4,
        "agent.target_sync_every": 1000,
    },
    "Double DQN, lr 2.5e-4": {"agent.double_dqn": True, "agent.lr": 2.5e-4},
}


def _episodes_to(returns: list[float], end_steps: list[int], threshold: float, window: int = 20):
    from rdqn.compare import Curve, episodes_to_threshold

    return episodes_to_threshold(
        Curve(np.array(end_steps, dtype=np.int64), np.array(returns, dtype=np.float64)),
        threshold,
        window,
    )


def run_curve(job: dict[str, Any]) -> dict[str, Any]:
    """Train one config to the end; returns its learning curve and threshold statistics."""
    import torch

    from rdqn.config import RunConfig
    from rdqn.training.trainer import Trainer

    torch.set_num_threads(1)
    config = RunConfig.from_dict(job["config"])
    trainer = Trainer(config)
    started = time.perf_counter()
    trainer.run()
    seconds = time.perf_counter() - started
    returns = list(trainer.recorder.episode_returns)
    end_steps = list(trainer.recorder.episode_end_steps)
    episodes, steps = _episodes_to(returns, end_steps, job["threshold"])
    best = max(
        (float(np.mean(returns[max(0, k - 19) : k + 1])) for k in range(19, len(returns))),
        default=float("nan"),
    )
    return {
        **{k: v for k, v in job.items() if k != "config"},
        "final_mean20": float(np.mean(returns[-20:])) if returns else float("nan"),
        "best_mean20": best,
        "episodes_to_threshold": episodes,
        "steps_to_threshold": steps,
        "episodes": len(returns),
        "env_steps_per_second": trainer.env_steps / seconds,
        "seconds": seconds,
        "returns": returns,
        "end_steps": end_steps,
    }


def run_cliffwalk(job: dict[str, Any]) -> dict[str, Any]:
    """Fill the memory with the random policy's warm-up, hold it fixed, replay it until
    max |Q - Q*| over all (state, action) pairs is below the tolerance."""
    import torch

    from rdqn.config import RunConfig
    from rdqn.training.trainer import Trainer

    torch.set_num_threads(1)
    config = RunConfig.from_dict(job["config"])
    trainer = Trainer(config)
    while trainer.env_steps < config.train.learning_starts:
        trainer.step()  # no update before learning_starts: only the memory fills
    buffer, agent = trainer.buffer, trainer.agent
    writes = buffer.storage.writes
    env = trainer.env.unwrapped
    q_star = env.optimal_q_values(config.agent.gamma)
    states = np.eye(env.n, dtype=np.float32)[:, None, :]
    solved_at, error, updates = None, float("nan"), 0
    while updates < job["max_updates"]:
        batch = buffer.sample(config.replay.batch_size, beta=config.replay.beta0)
        result = agent.learn(batch)
        buffer.update_priorities(batch, np.abs(result.td_errors))
        updates += 1
        if updates % job["check_every"] == 0:
            with torch.no_grad():
                q = agent.online(torch.from_numpy(states)).numpy()
            error = float(np.abs(q - q_star).max())
            if error < job["tolerance"]:
                solved_at = updates
                break
    assert buffer.storage.writes == writes, "the memory must stay fixed while it is replayed"
    return {
        **{k: v for k, v in job.items() if k != "config"},
        "memory_size": len(buffer),
        "rewarded": int(np.count_nonzero(buffer.storage.rewards[: len(buffer)])),
        "updates_to_solve": solved_at,
        "final_error": error,
        "updates": updates,
    }


def cartpole_sweep_jobs(steps: int) -> list[dict[str, Any]]:
    from rdqn.presets import preset

    jobs = []
    for variant, overrides in CARTPOLE_VARIANTS.items():
        for seed in SEEDS:
            config = preset("per-notebook").with_overrides(
                {"seed": seed, "train.total_steps": steps, **overrides}
            )
            jobs.append(
                {
                    "kind": "curve",
                    "task": "CartPole-v1",
                    "variant": variant,
                    "scheme": "proportional",
                    "seed": seed,
                    "threshold": 475.0,
                    "config": config.to_dict(),
                }
            )
    return jobs


def cliffwalk_jobs(sizes: tuple[int, ...]) -> list[dict[str, Any]]:
    """A random behaviour policy first fills the memory with 10 * 2^n env steps (about five
    episodes reach the goal, each with probability 2^-n), then the tabular learner (`paper`
    preset, batch 32) replays it, the memory held fixed; the count is learner updates until
    max |Q - Q*| < tolerance."""
    from rdqn.presets import preset

    jobs = []
    for n in sizes:
        fill = 10 * 2**n
        for scheme in ("proportional", "uniform"):
            for seed in SEEDS:
                config = preset("paper").with_overrides(
                    {
                        "env.kwargs": {"n": n},
                        "replay.scheme": scheme,
                        "replay.capacity": 12 * 2**n,
                        "seed": seed,
                        "train.learning_starts": fill,
                        "train.total_steps": fill + 30_000,
                        "train.epsilon_start": 1.0,
                        "train.epsilon_end": 1.0,
                        # Figure 1 of the paper measures prioritization alone, without the
                        # importance-sampling correction.
                        "replay.beta0": 0.0,
                        "replay.beta_end": 0.0,
                    }
                )
                jobs.append(
                    {
                        "kind": "cliffwalk",
                        "task": f"BlindCliffwalk n={n}",
                        "n": n,
                        "scheme": scheme,
                        "seed": seed,
                        "tolerance": 0.05,
                        "check_every": 25,
                        "max_updates": 30_000,
                        "config": config.to_dict(),
                    }
                )
    return jobs


def memory_jobs(steps: int, seeds: tuple[int, ...]) -> list[dict[str, Any]]:
    from rdqn.presets import preset

    jobs = []
    for name in ("e14", "per-notebook"):
        for seed in seeds:
            config = preset(name).with_overrides(
                {
                    "env.id": "rdqn/MaskedCartPole-v0",
                    "env.kwargs": {},
                    "seed": seed,
                    "train.total_steps": steps,
                    "train.train_every": 4,
                }
            )
            jobs.append(
                {
                    "kind": "curve",
                    "task": "MaskedCartPole",
                    "preset": name,
                    "seed": seed,
                    "scheme": config.replay.scheme,
                    "threshold": 475.0,
                    "config": config.to_dict(),
                }
            )
    return jobs


def _run(job: dict[str, Any]) -> dict[str, Any]:
    return run_cliffwalk(job) if job["kind"] == "cliffwalk" else run_curve(job)


TABLES = {
    "cartpole-sweep": "cartpole_sweep_table",
    "memory": "memory_table",
    "cliffwalk": "cliffwalk_random_memory_table",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("experiment", choices=["cartpole-sweep", "cliffwalk", "memory"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=None, help="env steps per run")
    parser.add_argument("--seeds", type=int, default=None, help="seeds 0..N-1 (memory: 3)")
    parser.add_argument("--out", required=True)
    parser.add_argument(
        "--table", action="store_true", help="print the Markdown table of --out; run nothing"
    )
    args = parser.parse_args()
    if args.table:
        from rdqn.experiments import tables

        if args.experiment not in TABLES:
            parser.error(f"no docs table for {args.experiment} (its table: rdqn experiment)")
        results = json.loads(Path(args.out).read_text(encoding="utf-8"))
        print(getattr(tables, TABLES[args.experiment])(results), end="")
        return
    if args.experiment == "cartpole-sweep":
        jobs = cartpole_sweep_jobs(args.steps or 100_000)
    elif args.experiment == "cliffwalk":
        jobs = cliffwalk_jobs((8, 12))
    else:
        jobs = memory_jobs(args.steps or 40_000, tuple(range(args.seeds or 3)))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    commit = git_commit()
    results = []
    with mp.get_context("spawn").Pool(args.workers) as pool:
        for result in pool.imap_unordered(_run, jobs):
            result["commit"] = commit
            results.append(result)
            keys = (
                "task",
                "variant",
                "scheme",
                "preset",
                "seed",
                "final_mean20",
                "best_mean20",
                "steps_to_threshold",
                "updates_to_solve",
                "rewarded",
                "env_steps_per_second",
            )
            print({k: result[k] for k in keys if k in result}, flush=True)
            out.write_text(json.dumps(results, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
