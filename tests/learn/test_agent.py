"""Tests for rdqn.learn.agent: TD targets and losses by hand, gradients, target updates, I/O.

Hand-computed setup used throughout: one terminal and one nonterminal transition, both targets
calculated by hand. Zeroing the last layer's weights makes each network output its
last-layer bias whatever the window::

    online  Q(W, .)  = [0.5, -0.5]        target  Q_target(W', .) = [1.0, 2.0]     gamma = 0.9

    i  a  r   terminated truncated | y_i (max)        delta_i | y_i (Double: a' = argmax online = 0)
    0  0  1   no         no        | 1 + .9*2 = 2.8   2.3     | 1 + .9*1 = 1.9    1.4
    1  1  1   yes        no        | 1                1.5     | 1                 1.5
    2  0  -1  no         yes       | -1 + .9*2 = 0.8  0.3     | -1 + .9*1 = -0.1  -0.6
"""

from __future__ import annotations

import dataclasses
import re
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

from rdqn.learn.agent import DivergenceError, DQNAgent, LearnResult
from rdqn.learn.agent_config import AgentConfig, resolve_device
from rdqn.learn.targets import discounts

OBS_DIM, T = 3, 4


def make_batch(
    actions: list[int],
    rewards: list[float],
    terminated: list[bool],
    truncated: list[bool] | None = None,
    weights: list[float] | None = None,
    *,
    seed: int = 0,
    obs_shape: tuple[int, ...] = (OBS_DIM,),
) -> SimpleNamespace:
    rng = np.random.default_rng(seed)
    b = len(actions)
    return SimpleNamespace(
        obs=rng.standard_normal((b, T, *obs_shape), dtype=np.float32),
        actions=np.asarray(actions, dtype=np.int64),
        rewards=np.asarray(rewards, dtype=np.float32),
        next_obs=rng.standard_normal((b, T, *obs_shape), dtype=np.float32),
        terminated=np.asarray(terminated, dtype=bool),
        truncated=np.asarray(truncated if truncated is not None else [False] * b, dtype=bool),
        weights=np.asarray(weights if weights is not None else [1.0] * b, dtype=np.float32),
    )


def hand_batch(weights: list[float] | None = None) -> SimpleNamespace:
    return make_batch(
        actions=[0, 1, 0],
        rewards=[1.0, 1.0, -1.0],
        terminated=[False, True, False],
        truncated=[False, False, True],
        weights=weights,
    )


def constant_head(net: torch.nn.Module, values: list[float]) -> None:
    with torch.no_grad():
        net.head.out.weight.zero_()
        net.head.out.bias.copy_(torch.tensor(values))


def hand_agent(network: str = "mlp", **overrides: Any) -> DQNAgent:
    config = AgentConfig(network=network, gamma=0.9, device="cpu", **overrides)
    agent = DQNAgent(OBS_DIM, 2, config, seed=0)
    constant_head(agent.online, [0.5, -0.5])
    constant_head(agent.target, [1.0, 2.0])
    return agent


def snapshot(module: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def assert_params_equal(module: torch.nn.Module, expected: list[torch.Tensor]) -> None:
    for p, q in zip(module.parameters(), expected, strict=True):
        assert torch.equal(p, q)


# ------------------------------------------------------------------ targets by hand
@pytest.mark.parametrize("network", ["mlp", "recurrent"])
def test_td_errors_terminal_nonterminal_truncated_by_hand(network: str) -> None:
    result = hand_agent(network).learn(hand_batch())
    assert isinstance(result, LearnResult)
    assert result.td_errors.dtype == np.float64 and result.td_errors.shape == (3,)
    np.testing.assert_allclose(result.td_errors, [2.3, 1.5, 0.3], atol=1e-6)
    assert result.q_mean == pytest.approx((0.5 - 0.5 + 0.5) / 3, abs=1e-6)


def test_double_dqn_target_by_hand() -> None:
    result = hand_agent(double_dqn=True).learn(hand_batch())
    np.testing.assert_allclose(result.td_errors, [1.4, 1.5, -0.6], atol=1e-6)


def test_gamma_zero_target_is_reward() -> None:
    agent = hand_agent()
    agent = DQNAgent(OBS_DIM, 2, dataclasses.replace(agent.config, gamma=0.0), seed=0)
    constant_head(agent.online, [0.5, -0.5])
    result = agent.learn(hand_batch())
    np.testing.assert_allclose(result.td_errors, [0.5, 1.5, -1.5], atol=1e-6)


# ------------------------------------------------------------------ losses and IS weights
HUBER = [2.3 - 0.5, 1.5 - 0.5, 0.5 * 0.3**2]  # |d| - 1/2 beyond 1, d^2 / 2 inside
SQUARED = [2.3**2, 1.5**2, 0.3**2]


@pytest.mark.parametrize(("loss", "per_sample"), [("huber", HUBER), ("mse", SQUARED)])
def test_unit_weights_give_unweighted_mean(loss: str, per_sample: list[float]) -> None:
    result = hand_agent(loss=loss).learn(hand_batch(weights=[1.0, 1.0, 1.0]))
    assert result.loss == pytest.approx(sum(per_sample) / 3, rel=1e-6)


@pytest.mark.parametrize(("loss", "per_sample"), [("huber", HUBER), ("mse", SQUARED)])
def test_is_weights_multiply_per_sample_loss_before_the_mean(
    loss: str, per_sample: list[float]
) -> None:
    """Schaul et al. 2015, Alg. 1 line 12: accumulate w_i * delta_i * grad Q; mean over B after."""
    w = [0.2, 1.0, 0.5]
    result = hand_agent(loss=loss).learn(hand_batch(weights=w))
    expected = sum(wi * li for wi, li in zip(w, per_sample, strict=True)) / 3
    assert result.loss == pytest.approx(expected, rel=1e-6)


def test_missing_weights_mean_unit_weights() -> None:
    batch = hand_batch()
    batch.weights = None
    assert hand_agent().learn(batch).loss == pytest.approx(sum(HUBER) / 3, rel=1e-6)


def test_zero_weight_sample_contributes_no_gradient() -> None:
    """Sample 1 is the only one taking action 1; with w_1 = 0 that action's row gets no gradient."""
    agent = hand_agent(grad_clip_norm=None)
    agent.learn(hand_batch(weights=[1.0, 0.0, 1.0]))
    assert agent.online.head.out.bias.grad[1] == 0.0
    assert agent.online.head.out.bias.grad[0] != 0.0


# ------------------------------------------------------------------ gradients
@pytest.mark.parametrize("network", ["mlp", "recurrent"])
def test_only_taken_action_rows_get_gradient(network: str) -> None:
    config = AgentConfig(network=network, grad_clip_norm=None, device="cpu")
    agent = DQNAgent(OBS_DIM, 3, config, seed=1)
    agent.learn(make_batch([0, 2, 0, 2], [1.0, 0.0, -1.0, 0.5], [False] * 4))
    out = agent.online.head.out
    assert torch.count_nonzero(out.weight.grad[1]) == 0 and out.bias.grad[1] == 0
    for row in (0, 2):
        assert torch.count_nonzero(out.weight.grad[row]) > 0 and out.bias.grad[row] != 0


def test_target_gets_no_gradient_and_is_untouched_without_sync() -> None:
    config = AgentConfig(network="mlp", target_update="hard", target_sync_every=100, device="cpu")
    agent = DQNAgent(OBS_DIM, 2, config, seed=2)
    target_before, online_before = snapshot(agent.target), snapshot(agent.online)
    agent.learn(hand_batch())
    for p in agent.target.parameters():
        assert p.grad is None and not p.requires_grad
    assert_params_equal(agent.target, target_before)
    assert any(
        not torch.equal(p, q) for p, q in zip(agent.online.parameters(), online_before, strict=True)
    )


def test_grad_norm_is_reported_before_clipping() -> None:
    batch = make_batch([0, 1, 1], [5.0, -3.0, 4.0], [False, True, False])
    free = DQNAgent(OBS_DIM, 2, AgentConfig(network="mlp", grad_clip_norm=None), seed=3)
    clipped = DQNAgent(OBS_DIM, 2, AgentConfig(network="mlp", grad_clip_norm=1e-3), seed=3)
    free_result, clipped_result = free.learn(batch), clipped.learn(batch)
    by_hand = torch.linalg.vector_norm(
        torch.stack([torch.linalg.vector_norm(p.grad) for p in free.online.parameters()])
    ).item()
    assert free_result.grad_norm == pytest.approx(by_hand, rel=1e-5)
    assert clipped_result.grad_norm == pytest.approx(by_hand, rel=1e-5)
    post_clip = torch.linalg.vector_norm(
        torch.stack([torch.linalg.vector_norm(p.grad) for p in clipped.online.parameters()])
    ).item()
    assert post_clip == pytest.approx(1e-3, rel=1e-3)


# ------------------------------------------------------------------ target updates
def test_initial_target_is_copy_of_online() -> None:
    agent = DQNAgent(OBS_DIM, 2, AgentConfig(device="cpu"), seed=4)
    assert_params_equal(agent.target, snapshot(agent.online))
    assert all(not p.requires_grad for p in agent.target.parameters())


@pytest.mark.parametrize("network", ["mlp", "recurrent"])
def test_soft_update_formula(network: str) -> None:
    agent = DQNAgent(OBS_DIM, 2, AgentConfig(network=network, tau=0.1), seed=5)
    agent.learn(hand_batch())  # makes online and target differ
    target_before = snapshot(agent.target)
    agent.learn(make_batch([1, 0], [0.3, 2.0], [False, False], seed=1))
    for new, theta, old in zip(
        agent.target.parameters(), agent.online.parameters(), target_before, strict=True
    ):
        torch.testing.assert_close(new, 0.1 * theta + 0.9 * old)


def test_hard_sync_copies_exactly_every_k_updates() -> None:
    config = AgentConfig(network="mlp", target_update="hard", target_sync_every=3)
    agent = DQNAgent(OBS_DIM, 2, config, seed=6)
    initial = snapshot(agent.target)
    batch = hand_batch()
    for _ in range(2):
        agent.learn(batch)
        assert_params_equal(agent.target, initial)
    agent.learn(batch)
    assert agent.updates == 3
    synced = snapshot(agent.online)
    assert_params_equal(agent.target, synced)
    agent.learn(batch)
    agent.learn(batch)
    assert_params_equal(agent.target, synced)
    agent.learn(batch)
    assert_params_equal(agent.target, snapshot(agent.online))


# ------------------------------------------------------------------ divergence
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_reward_raises_and_leaves_weights_unchanged(bad: float) -> None:
    agent = DQNAgent(OBS_DIM, 2, AgentConfig(network="recurrent"), seed=7)
    online, target = snapshot(agent.online), snapshot(agent.target)
    batch = hand_batch()
    batch.rewards[1] = bad
    with pytest.raises(DivergenceError, match="non-finite"):
        agent.learn(batch)
    assert_params_equal(agent.online, online)
    assert_params_equal(agent.target, target)
    assert agent.updates == 0
    assert not agent.optimizer.state
    assert isinstance(DivergenceError("x"), RuntimeError)


def test_non_finite_observation_raises() -> None:
    agent = DQNAgent(OBS_DIM, 2, AgentConfig(network="mlp"), seed=8)
    batch = hand_batch()
    batch.obs[0, -1, 0] = np.nan
    with pytest.raises(DivergenceError, match="TD errors"):
        agent.learn(batch)


# ------------------------------------------------------------------ acting and seeding
@pytest.mark.parametrize("network", ["mlp", "recurrent"])
def test_same_seed_same_weights_and_actions(network: str) -> None:
    config = AgentConfig(network=network)
    first, second = DQNAgent(OBS_DIM, 3, config, seed=9), DQNAgent(OBS_DIM, 3, config, seed=9)
    other = DQNAgent(OBS_DIM, 3, config, seed=10)
    assert_params_equal(second.online, snapshot(first.online))
    assert any(
        not torch.equal(p, q)
        for p, q in zip(first.online.parameters(), other.online.parameters(), strict=True)
    )
    windows = np.random.default_rng(0).standard_normal((40, T, OBS_DIM), dtype=np.float32)
    acts = [[agent.act(w, 0.5) for w in windows] for agent in (first, second)]
    assert acts[0] == acts[1]


def test_agent_construction_does_not_touch_global_rng() -> None:
    state = torch.random.get_rng_state()
    DQNAgent(OBS_DIM, 2, AgentConfig(), seed=11)
    assert torch.equal(state, torch.random.get_rng_state())


def test_greedy_act_is_argmax_and_full_exploration_is_uniform() -> None:
    agent = DQNAgent(OBS_DIM, 3, AgentConfig(network="mlp"), seed=12)
    window = np.ones((T, OBS_DIM), dtype=np.float32)
    q = agent.q_values(window)
    assert q.shape == (3,)
    assert agent.act(window, 0.0) == int(np.argmax(q))
    counts = np.bincount([agent.act(window, 1.0) for _ in range(3000)], minlength=3)
    # Binomial(3000, 1/3): sd ~ 26, so +-150 is ~6 sd.
    assert np.all(np.abs(counts - 1000) < 150)
    with pytest.raises(ValueError, match="epsilon"):
        agent.act(window, 1.5)
    with pytest.raises(ValueError, match="window"):
        agent.act(np.ones(OBS_DIM, dtype=np.float32), 0.0)


def test_multi_dimensional_observations_are_flattened() -> None:
    agent = DQNAgent(4, 2, AgentConfig(network="mlp"), seed=13)
    batch = make_batch([0, 1], [1.0, 0.0], [False, True], obs_shape=(2, 2))
    assert agent.learn(batch).td_errors.shape == (2,)
    assert agent.q_values(batch.obs[0]).shape == (2,)


def test_malformed_batches_are_rejected() -> None:
    agent = DQNAgent(OBS_DIM, 2, AgentConfig(network="mlp"), seed=14)
    with pytest.raises(ValueError, match="actions"):
        agent.learn(make_batch([0, 2], [0.0, 0.0], [False, False]))
    with pytest.raises(ValueError, match="prod"):
        agent.learn(make_batch([0, 1], [0.0, 0.0], [False, False], obs_shape=(OBS_DIM + 1,)))
    flat = make_batch([0, 1], [0.0, 0.0], [False, False])
    flat.obs = flat.obs[:, -1]
    with pytest.raises(ValueError, match=r"\(B, T"):
        agent.learn(flat)


def test_repeated_updates_fit_a_fixed_batch() -> None:
    agent = DQNAgent(OBS_DIM, 2, AgentConfig(network="mlp", lr=1e-2, gamma=0.0), seed=15)
    batch = hand_batch()
    first = agent.learn(batch).loss
    for _ in range(100):
        last = agent.learn(batch).loss
    assert last < 0.1 * first


# ------------------------------------------------------------------ config and device
def test_device_auto_resolves_to_available_backend() -> None:
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected
    agent = DQNAgent(OBS_DIM, 2, AgentConfig(network="mlp", device="auto"), seed=16)
    assert agent.device.type == expected
    assert next(agent.online.parameters()).device.type == expected


@pytest.mark.skipif(torch.cuda.is_available(), reason="only meaningful without CUDA")
def test_explicit_cuda_without_cuda_is_an_error() -> None:
    with pytest.raises(ValueError, match="cuda"):
        DQNAgent(OBS_DIM, 2, AgentConfig(device="cuda"), seed=0)


def test_invalid_seed_rejected() -> None:
    with pytest.raises(ValueError, match="seed"):
        DQNAgent(OBS_DIM, 2, AgentConfig(), seed=-1)


# ------------------------------------------------------------------ persistence
@pytest.mark.parametrize("network", ["mlp", "recurrent"])
def test_state_dict_round_trip_weights_only(network: str, tmp_path: Any) -> None:
    config = AgentConfig(network=network, double_dqn=True)
    source = DQNAgent(OBS_DIM, 2, config, seed=17)
    batch = hand_batch()
    source.learn(batch)
    source.learn(batch)
    source.act(batch.obs[0], 0.5)
    path = tmp_path / "agent.pt"
    torch.save(source.state_dict(), path)
    state = torch.load(path, weights_only=True)

    restored = DQNAgent(OBS_DIM, 2, config, seed=99)
    restored.load_state_dict(state)
    assert restored.updates == 2
    assert_params_equal(restored.online, snapshot(source.online))
    assert_params_equal(restored.target, snapshot(source.target))
    after_source, after_restored = source.learn(batch), restored.learn(batch)
    np.testing.assert_array_equal(after_source.td_errors, after_restored.td_errors)
    assert_params_equal(restored.online, snapshot(source.online))
    windows = np.random.default_rng(1).standard_normal((20, T, OBS_DIM), dtype=np.float32)
    assert [source.act(w, 0.5) for w in windows] == [restored.act(w, 0.5) for w in windows]


def test_load_state_dict_rejects_mismatched_shapes() -> None:
    state = DQNAgent(OBS_DIM, 2, AgentConfig(network="mlp"), seed=0).state_dict()
    with pytest.raises(ValueError, match="n_actions"):
        DQNAgent(OBS_DIM, 3, AgentConfig(network="mlp"), seed=0).load_state_dict(state)


def _trained_state(fused: bool, optimizer: str = "adam") -> tuple[AgentConfig, dict[str, Any]]:
    config = AgentConfig(network="mlp", fused_mlp=fused, optimizer=optimizer, device="cpu")
    agent = DQNAgent(OBS_DIM, 2, config, seed=3)
    agent.learn(hand_batch())
    agent.learn(hand_batch())
    return config, agent.state_dict()


def _nan_weight(state: dict[str, Any]) -> None:
    state["online"][next(iter(state["online"]))].view(-1)[0] = float("nan")


def _adam_state(key: str, value: Any) -> Any:
    def edit(state: dict[str, Any]) -> None:
        state["optimizer"]["state"][0][key] = value

    return edit


def _group(key: str, value: Any) -> Any:
    def edit(state: dict[str, Any]) -> None:
        state["optimizer"]["param_groups"][0][key] = value

    return edit


def _negative_exp_avg_sq(state: dict[str, Any]) -> None:
    state["optimizer"]["state"][1]["exp_avg_sq"].fill_(-1.0)


def _foreign_state_entry(state: dict[str, Any]) -> None:
    state["optimizer"]["state"][99] = {"step": torch.tensor(1.0)}


AGENT_STATES = {
    "NaN online weight": (_nan_weight, "online weight"),
    "NaN target weight": (
        lambda s: s["target"][list(s["target"])[-1]].fill_(float("inf")),
        "target weight",
    ),
    "missing weight": (lambda s: s["online"].popitem(), "online weights must be"),
    "NaN lr": (_group("lr", float("nan")), "'lr'] is nan"),
    "lr not the config's": (_group("lr", 1e30), "'lr'] is 1e+30"),
    "betas changed": (_group("betas", (0.5, 0.999)), "'betas'"),
    "another parameter list": (_group("params", [0, 1]), "'params'"),
    "exp_avg_sq < 0": (_negative_exp_avg_sq, "'exp_avg_sq'] has the value -1.0"),
    "NaN exp_avg": (_adam_state("exp_avg", torch.full((64, OBS_DIM), float("nan"))), "finite"),
    "exp_avg of another shape": (_adam_state("exp_avg", torch.zeros(3)), "shape"),
    "NaN step": (_adam_state("step", torch.tensor(float("nan"))), "'step'] is nan"),
    "step past updates": (_adam_state("step", torch.tensor(3.0)), "from 0 to the agent's 2"),
    "fractional step": (_adam_state("step", torch.tensor(1.5)), "whole number"),
    "unknown state": (_adam_state("velocity", torch.zeros(1)), "not optimizer state"),
    "state of no parameter": (_foreign_state_entry, "parameter 99"),
    "negative updates": (lambda s: s.update(updates=-7), "updates must be an integer >= 0"),
    "generator": (lambda s: s["explore_rng"].update(state="zzz"), "explore_rng"),
}


@pytest.mark.parametrize("case", list(AGENT_STATES))
@pytest.mark.parametrize("fused", [True, False], ids=["fused", "autograd"])
def test_load_state_dict_refuses_a_state_it_could_not_have_saved(fused: bool, case: str) -> None:
    """Regression: a NaN weight, a NaN learning rate, exp_avg_sq = -1 or a NaN Adam step loaded
    silently, and the resumed run failed at its next update ('failed': no longer resumable).
    Now the whole state is checked first; a refused one changes nothing."""
    config, state = _trained_state(fused)
    edit, said = AGENT_STATES[case]
    edit(state)
    agent = DQNAgent(OBS_DIM, 2, config, seed=5)
    before = agent.state_dict()
    with pytest.raises(ValueError, match=re.escape(said)):
        agent.load_state_dict(state)
    after = agent.state_dict()
    assert_params_equal(agent.online, list(before["online"].values()))
    assert after["updates"] == 0 and after["explore_rng"] == before["explore_rng"]
    assert after["optimizer"]["param_groups"] == before["optimizer"]["param_groups"]


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
@pytest.mark.parametrize("fused", [True, False], ids=["fused", "autograd"])
def test_a_saved_state_passes_its_own_checks(fused: bool, optimizer: str) -> None:
    config, state = _trained_state(fused, optimizer)
    agent = DQNAgent(OBS_DIM, 2, config, seed=5)
    agent.check_state(state)
    agent.load_state_dict(state)
    assert agent.updates == 2


def test_sgd_optimizer_takes_a_plain_gradient_step() -> None:
    """Tabular case: Q(s, a) = W[a, s]; MSE loss (Q - y)^2 on one sample, so
    W[a, s] <- W[a, s] - lr * 2 * (Q - y). With Q = 0, y = r = 1, lr = 0.25: W[a, s] = 0.5."""
    config = AgentConfig(
        network="linear",
        optimizer="sgd",
        lr=0.25,
        loss="mse",
        target_update="hard",
        target_sync_every=1,
        grad_clip_norm=None,
    )
    agent = DQNAgent(3, 2, config, seed=0)
    batch = SimpleNamespace(
        obs=np.eye(3, dtype=np.float32)[[1]][:, None, :],
        actions=np.array([1]),
        rewards=np.array([1.0], dtype=np.float32),
        next_obs=np.zeros((1, 1, 3), dtype=np.float32),
        terminated=np.array([True]),
        truncated=np.array([False]),
        weights=np.ones(1),
    )
    result = agent.learn(batch)
    assert result.td_errors[0] == pytest.approx(1.0)
    expected = torch.zeros(2, 3)
    expected[1, 1] = 0.5
    torch.testing.assert_close(agent.online.out.weight.detach(), expected)
    torch.testing.assert_close(agent.target.out.weight.detach(), expected)
    with pytest.raises(ValueError, match="optimizer must be one of"):
        AgentConfig(optimizer="rmsprop")


def test_td_terms_are_the_update_s_own_td_errors_without_the_update() -> None:
    """td_terms gives the TD errors an update would compute from the same nets, and changes
    nothing: the next update still reports them."""
    rng = np.random.default_rng(3)
    for double in (False, True):
        config = AgentConfig(double_dqn=double, fused_mlp=False)
        agent = DQNAgent(4, 2, config, seed=0)
        batch = SimpleNamespace(
            obs=rng.normal(size=(6, 1, 4)).astype(np.float32),
            actions=rng.integers(0, 2, 6),
            rewards=rng.normal(size=6).astype(np.float32),
            next_obs=rng.normal(size=(6, 1, 4)).astype(np.float32),
            terminated=np.array([True, False, False, True, False, False]),
            truncated=np.zeros(6, bool),
            weights=None,
        )
        terms = agent.td_terms(batch)
        np.testing.assert_allclose(
            terms.target,
            batch.rewards + discounts(config.gamma, batch.terminated) * terms.next_value,
            rtol=1e-6,
        )
        np.testing.assert_allclose(terms.td_error, terms.target - terms.q_taken, rtol=1e-12)
        result = agent.learn(batch)
        np.testing.assert_allclose(result.td_errors, terms.td_error, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ padding masks
def _padded(batch: SimpleNamespace, real: list[int], fill: float) -> SimpleNamespace:
    """``batch`` with the masks of windows whose last ``real[b]`` frames are real, and ``fill``
    in every padded frame (replay pads with zeros)."""
    mask = np.arange(T) >= (T - np.asarray(real))[:, None]
    padded = SimpleNamespace(**vars(batch))
    padded.obs = np.where(mask[:, :, None], batch.obs, fill).astype(np.float32)
    padded.next_obs = np.where(mask[:, :, None], batch.next_obs, fill).astype(np.float32)
    padded.obs_mask = mask
    padded.next_obs_mask = mask
    return padded


def test_the_recurrent_learner_reads_no_padding() -> None:
    """The batch's padding masks reach the recurrent network: td terms, the update, and the
    acting window's Q-values are the same whatever the padding holds (before, the masks were
    dropped and the LSTMs ran over the zero padding)."""
    batch = make_batch([0, 1, 1], [1.0, 0.0, 0.5], [False, False, True], seed=3)
    zeros, other = _padded(batch, [1, 2, 4], 0.0), _padded(batch, [1, 2, 4], 0.7)
    first, second = (DQNAgent(OBS_DIM, 2, AgentConfig(network="recurrent"), seed=12) for _ in "ab")
    for field in ("q_taken", "target", "td_error"):
        np.testing.assert_array_equal(
            getattr(first.td_terms(zeros), field), getattr(first.td_terms(other), field)
        )
    np.testing.assert_array_equal(first.learn(zeros).td_errors, second.learn(other).td_errors)
    assert_params_equal(first.online, snapshot(second.online))
    np.testing.assert_array_equal(
        first.q_values(zeros.obs[0], zeros.obs_mask[0]),
        first.q_values(other.obs[0], other.obs_mask[0]),
    )
    unmasked = SimpleNamespace(**{**vars(other), "obs_mask": None, "next_obs_mask": None})
    assert not np.array_equal(first.td_terms(unmasked).q_taken, first.td_terms(other).q_taken)
