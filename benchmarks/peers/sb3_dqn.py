"""Stable-Baselines3's DQN on CartPole-v1 at the `per-notebook` preset's hyperparameters.

Runs in the SB3 venv (`bash benchmarks/peers/setup_sb3.sh` creates `.venv-sb3`), started by
`benchmarks/bench_whole_loop.py` once per seed:

    .venv-sb3/bin/python -m benchmarks.peers.sb3_dqn --seed 0 --steps 100000

Prints one JSON line: every episode's return, the env step, the wall second and the CPU second
(from the start of the model's construction) at which it ended, the run's seconds and the
versions. Same
setup as rdqn's preset, in SB3's words: MLP 64-64 (ReLU), Adam lr 1e-3, gamma 0.99, Huber
loss (SB3's smooth L1), gradient norm clipped at 10, batch 32, one gradient step per env step
after 1,000 warm-up steps, uniform replay of 10,000 transitions (a time-limit cut still
bootstraps: ``handle_timeout_termination``), a hard target copy every 500 steps, epsilon 1 ->
0.01 over the first 10 % of the steps; one torch thread, the CPU.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import platform
import time

HYPERPARAMETERS = {
    "learning_rate": 1e-3,
    "buffer_size": 10_000,
    "learning_starts": 1_000,
    "batch_size": 32,
    "tau": 1.0,
    "gamma": 0.99,
    "train_freq": 1,
    "gradient_steps": 1,
    "target_update_interval": 500,
    "exploration_fraction": 0.1,
    "exploration_initial_eps": 1.0,
    "exploration_final_eps": 0.01,
    "max_grad_norm": 10.0,
}
NET_ARCH = [64, 64]


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for package in ("stable_baselines3", "torch", "gymnasium", "numpy"):
        out[package] = importlib.metadata.version(package)
    return out


def run(seed: int, steps: int) -> dict:
    import gymnasium as gym
    import torch
    from stable_baselines3 import DQN
    from stable_baselines3.common.callbacks import BaseCallback

    torch.set_num_threads(1)
    # A first model and a few updates import what SB3 and torch load lazily (the optimizer's
    # first step imports torch._dynamo: seconds), so that the clock starts with them loaded, as
    # rdqn's does in a worker forked from its warm zygote.
    warm_up = {**HYPERPARAMETERS, "learning_starts": 32, "batch_size": 32}
    DQN("MlpPolicy", gym.make("CartPole-v1"), device="cpu", seed=seed, **warm_up).learn(64)
    episodes: list[tuple[int, float, float, float]] = []
    started, cpu_started = time.perf_counter(), time.process_time()

    class Episodes(BaseCallback):
        """Records (env step, return, wall second, CPU second) at each episode's end (SB3's
        Monitor)."""

        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                if "episode" in info:
                    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
                    episodes.append((self.num_timesteps, float(info["episode"]["r"]), wall, cpu))
            return True

    model = DQN(
        "MlpPolicy",
        gym.make("CartPole-v1"),
        policy_kwargs={"net_arch": NET_ARCH},
        seed=seed,
        device="cpu",
        verbose=0,
        **HYPERPARAMETERS,
    )
    model.learn(total_timesteps=steps, callback=Episodes())
    return {
        "seed": seed,
        "env_steps": int(model.num_timesteps),
        "seconds": time.perf_counter() - started,
        "cpu_seconds": time.process_time() - cpu_started,
        "end_steps": [e[0] for e in episodes],
        "returns": [e[1] for e in episodes],
        "end_seconds": [e[2] for e in episodes],
        "end_cpu_seconds": [e[3] for e in episodes],
        "hyperparameters": {**HYPERPARAMETERS, "net_arch": NET_ARCH},
        "versions": versions(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--steps", type=int, default=100_000)
    args = parser.parse_args()
    print(json.dumps(run(args.seed, args.steps)), flush=True)


if __name__ == "__main__":
    main()
