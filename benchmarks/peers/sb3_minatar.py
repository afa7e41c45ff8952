"""Stable-Baselines3's DQN on MinAtar Breakout at the `minatar` preset's hyperparameters.

Runs in the SB3 venv (`bash benchmarks/peers/setup_sb3.sh` creates `.venv-sb3`), started by
`benchmarks/bench_minatar_loop.py` once per seed:

    .venv-sb3/bin/python -m benchmarks.peers.sb3_minatar --seed 0 --steps 100000

Prints one JSON line: the env steps, wall and CPU seconds of the run (from the model's
construction) and the versions. The env is the package's own (``MinAtar/Breakout-v1``: minimal
action set, sticky actions 0.1), driven by SB3 as any gymnasium env. Same setup as rdqn's preset,
in SB3's words: MinAtar's network (conv 3x3, 16 channels, ReLU, Linear 1024->128, ReLU, Linear
128->A) as a features extractor and an empty ``net_arch``, Adam lr 2.5e-4, gamma 0.99, Huber
loss, batch 32, one gradient step every 4 env steps after 1,000, uniform replay of 100,000, a hard
target copy every 1,000 env steps, epsilon 1 -> 0.01 over ``--explore`` steps; one torch thread,
the CPU. SB3 always clips the gradient norm: at 1e10 here, which never clips (rdqn's preset does
not clip), though SB3 still computes the norm.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import logging
import platform
import time

HYPERPARAMETERS = {
    "learning_rate": 2.5e-4,
    "buffer_size": 100_000,
    "learning_starts": 1_000,
    "batch_size": 32,
    "tau": 1.0,
    "gamma": 0.99,
    "train_freq": 4,
    "gradient_steps": 1,
    "target_update_interval": 1_000,
    "exploration_initial_eps": 1.0,
    "exploration_final_eps": 0.01,
    "max_grad_norm": 1e10,
}
ENV_ID = "MinAtar/Breakout-v1"


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for package in ("stable_baselines3", "torch", "gymnasium", "numpy", "minatar"):
        out[package] = importlib.metadata.version(package)
    return out


def run(seed: int, steps: int, explore: int) -> dict:
    import gymnasium as gym
    import torch
    from stable_baselines3 import DQN
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
    from torch import nn

    logging.disable(logging.WARNING)  # minatar warns when its display's libraries are absent
    from minatar.gym import register_envs

    register_envs()
    torch.set_num_threads(1)

    class MinAtarNet(BaseFeaturesExtractor):
        """Conv 3x3 (16) -> ReLU -> Linear 1024->128 -> ReLU on channel-last 10x10 frames."""

        def __init__(self, space: gym.spaces.Box) -> None:
            super().__init__(space, features_dim=128)
            self.conv = nn.Conv2d(space.shape[2], 16, kernel_size=3, stride=1)
            self.fc = nn.Linear(16 * 8 * 8, 128)

        def forward(self, obs: torch.Tensor) -> torch.Tensor:
            hidden = torch.relu(self.conv(obs.permute(0, 3, 1, 2).float()))
            return torch.relu(self.fc(hidden.flatten(1)))

    settings = {
        **HYPERPARAMETERS,
        "exploration_fraction": min(1.0, explore / steps),
        "policy_kwargs": {"features_extractor_class": MinAtarNet, "net_arch": []},
        "device": "cpu",
    }
    # A first model and a few updates import what SB3 and torch load lazily, as rdqn's warm-up.
    warm_up = {**settings, "learning_starts": 32, "buffer_size": 1_000}
    DQN("MlpPolicy", gym.make(ENV_ID), seed=seed, **warm_up).learn(128)
    started, cpu_started = time.perf_counter(), time.process_time()
    model = DQN("MlpPolicy", gym.make(ENV_ID), seed=seed, verbose=0, **settings)
    model.learn(total_timesteps=steps)
    return {
        "seed": seed,
        "env_steps": int(model.num_timesteps),
        "seconds": time.perf_counter() - started,
        "cpu_seconds": time.process_time() - cpu_started,
        "hyperparameters": {k: v for k, v in settings.items() if k != "policy_kwargs"},
        "versions": versions(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--explore", type=int, default=100_000)
    args = parser.parse_args()
    print(json.dumps(run(args.seed, args.steps, args.explore)), flush=True)


if __name__ == "__main__":
    main()
