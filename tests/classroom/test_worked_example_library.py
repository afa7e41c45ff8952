"""The *One update by hand* page's numbers are the library's: the same four transitions go
through rdqn's own `ProportionalSampler` and `DQNAgent.learn`, and every quantity the page
shows (probabilities, IS weights, TD errors, the weighted loss, the next draw's probabilities)
agrees with `worked_update`, for Huber and squared-error losses."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rdqn.classroom.worked_example import default_example, worked_update
from rdqn.learn.agent import DQNAgent
from rdqn.learn.agent_config import AgentConfig
from rdqn.replay.samplers import ProportionalSampler
from rdqn.replay.sampling_kernels import importance_weights_kernel


class Batch:
    def __init__(self, **fields: np.ndarray | None) -> None:
        self.__dict__.update(fields)


@pytest.mark.parametrize("loss", ["huber", "mse"])
def test_the_page_s_update_is_the_library_s_update(loss: str) -> None:
    example = default_example()
    example = type(example)(**{**example.__dict__, "loss": loss})
    page = worked_update(example).table
    b = example.rows

    # The memory: four slots whose priorities are the example's (p = |delta| + eps).
    sampler = ProportionalSampler(alpha=example.alpha, eps=example.eps)
    sampler.attach(b)
    for slot in range(b):
        sampler.on_add(slot)
    slots = np.arange(b)
    sampler.update_priorities(slots, np.asarray(example.priorities) - example.eps)
    probabilities = sampler.probabilities(b)
    np.testing.assert_allclose(probabilities, page["probability"], rtol=1e-12)

    weights = np.empty(b)
    importance_weights_kernel(
        probabilities, probabilities.min(), b, example.beta, 0, 0.0, weights
    )  # mode 0: the paper's global normalisation, as the page's
    np.testing.assert_allclose(weights, page["weight"], rtol=1e-12)

    # A tabular learner: state i (one-hot, 8 states) for s_i, state 4 + i for s'_i.
    config = AgentConfig(
        network="linear", optimizer="sgd", lr=0.01, gamma=example.gamma, loss=loss,
        target_update="hard", target_sync_every=1_000, grad_clip_norm=None, device="cpu",
    )  # fmt: skip
    agent = DQNAgent(2 * b, 2, config, seed=0)
    actions = np.array([0, 1, 0, 1])
    with torch.no_grad():
        online = torch.zeros(2, 2 * b)
        online[actions, slots] = torch.tensor(example.q_values, dtype=torch.float32)
        target = torch.zeros(2, 2 * b)
        target[:, b + slots] = torch.tensor(example.next_max_q, dtype=torch.float32)
        agent.online.out.weight.copy_(online)
        agent.target.out.weight.copy_(target)
    states = np.eye(2 * b, dtype=np.float32)
    result = agent.learn(
        Batch(
            obs=states[slots][:, None, :],
            actions=actions,
            rewards=np.asarray(example.rewards, np.float32),
            next_obs=states[b + slots][:, None, :],
            terminated=np.asarray(example.terminated),
            truncated=np.zeros(b, bool),
            weights=weights.astype(np.float32),
        )
    )
    np.testing.assert_allclose(result.td_errors, page["td_error"], rtol=1e-6)
    np.testing.assert_allclose(result.loss, page["weighted_loss"].mean(), rtol=1e-6)

    # The next draw: the library's new priorities from the same TD errors.
    sampler.update_priorities(slots, np.abs(result.td_errors))
    np.testing.assert_allclose(sampler.probabilities(b), page["new_probability"], rtol=1e-6)
