"""Tests for rdqn.training.state: trainer state as data a weights-only checkpoint can hold."""

from __future__ import annotations

import io

import gymnasium as gym
import numpy as np
import torch

from rdqn.training.state import env_rng, from_checkpoint, to_checkpoint


def test_arrays_become_tensors_and_come_back_dtype_for_dtype() -> None:
    state = {
        "obs": np.arange(6, dtype=np.float32).reshape(3, 2),
        "flags": np.array([True, False]),
        "frames": np.arange(4, dtype=np.uint8),
        "steps": np.arange(3, dtype=np.int32),
        "shape": (3, 2),
        "history": [np.zeros(2), np.ones(3)],
        "scalar": np.float64(0.5),
        "rng": np.random.default_rng(0).bit_generator.state,
    }
    saved = to_checkpoint(state)
    assert isinstance(saved["obs"], torch.Tensor) and type(saved["scalar"]) is float
    buffer = io.BytesIO()
    torch.save(saved, buffer)
    buffer.seek(0)
    back = from_checkpoint(torch.load(buffer, weights_only=True))
    for key in ("obs", "flags", "frames", "steps"):
        assert back[key].dtype == state[key].dtype
        np.testing.assert_array_equal(back[key], state[key])
    assert back["shape"] == (3, 2) and back["scalar"] == 0.5 and back["rng"] == state["rng"]
    np.testing.assert_array_equal(back["history"][1], np.ones(3))


def test_a_saved_array_is_a_copy() -> None:
    array = np.zeros(3)
    saved = to_checkpoint(array)
    array[0] = 1.0
    assert saved[0].item() == 0.0


def test_env_rng_is_the_generator_behind_resets() -> None:
    env = gym.make("CartPole-v1")
    env.reset(seed=3)
    state = env_rng(env).bit_generator.state
    first, _ = env.reset()
    env_rng(env).bit_generator.state = state
    again, _ = env.reset()
    np.testing.assert_array_equal(first, again)
