"""Tests for rdqn.learn.nets: architecture of record (docs/design.md, "Networks"), shapes, init,
helpers."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from rdqn.learn.nets import (
    STATE_SIZE,
    ConvQNet,
    LinearQNet,
    MLPQNet,
    RecurrentQNet,
    build_q_network,
    count_parameters,
    parameter_bytes,
)


def seeded(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize(("d", "a"), [(2, 2), (4, 3), (9, 3), (1, 1), (30, 5)])
def test_recurrent_parameter_count_matches_formula(d: int, a: int) -> None:
    """512(d+130) + 512*258 + 8256 + 65A, with PyTorch's two LSTM bias vectors."""
    net = RecurrentQNet(d, a, generator=seeded(0))
    assert count_parameters(net) == 512 * (d + 130) + 512 * 258 + 8256 + 65 * a


def test_parameter_count_by_hand_for_d4_a3() -> None:
    lstm1 = 4 * 128 * 4 + 4 * 128 * 128 + 2 * 4 * 128
    lstm2 = 4 * 128 * 128 + 4 * 128 * 128 + 2 * 4 * 128
    head = (128 * 64 + 64) + (64 * 3 + 3)
    assert count_parameters(RecurrentQNet(4, 3)) == lstm1 + lstm2 + head == 209_155


def test_two_separate_single_layer_batch_first_lstms() -> None:
    net = RecurrentQNet(5, 2)
    lstms = [m for m in net.modules() if isinstance(m, nn.LSTM)]
    assert lstms == [net.lstm1, net.lstm2]
    for lstm, in_size in zip(lstms, (5, 128), strict=True):
        assert lstm.num_layers == 1
        assert lstm.batch_first
        assert (lstm.input_size, lstm.hidden_size) == (in_size, 128)
    assert (net.head.fc.in_features, net.head.fc.out_features) == (128, 64)
    assert (net.head.out.in_features, net.head.out.out_features) == (64, 2)
    assert not any(isinstance(m, nn.Softmax | nn.LogSoftmax) for m in net.modules())


def test_recurrent_output_shape_and_no_softmax() -> None:
    net = RecurrentQNet(3, 4, generator=seeded(1))
    with torch.no_grad():
        nn.init.constant_(net.head.out.bias, -2.0)
        q = net(torch.randn(6, 8, 3, generator=seeded(2)))
    assert q.shape == (6, 4)
    assert (q < 0).any()
    assert not torch.allclose(q.sum(dim=1), torch.ones(6))


def test_recurrent_every_call_starts_from_zero_hidden_state() -> None:
    """No state carried across calls or across samples of a batch: a window's Q-values depend on
    that window alone."""
    net = RecurrentQNet(3, 2, generator=seeded(3))
    gen = seeded(4)
    window = torch.randn(1, 5, 3, generator=gen)
    with torch.no_grad():
        first = net(window)
        net(torch.randn(7, 5, 3, generator=gen) * 10)
        again = net(window)
        in_batch = net(torch.cat([torch.randn(3, 5, 3, generator=gen), window]))[-1:]
    torch.testing.assert_close(first, again, rtol=0, atol=0)
    torch.testing.assert_close(first, in_batch)


def test_recurrent_uses_the_whole_window() -> None:
    net = RecurrentQNet(2, 2, generator=seeded(5))
    window = torch.randn(1, 4, 2, generator=seeded(6))
    changed = window.clone()
    changed[0, 0] += 1.0
    with torch.no_grad():
        assert not torch.allclose(net(window), net(changed))


def suffix_mask(lengths: list[int], steps: int) -> torch.Tensor:
    """(B, T) masks whose last ``lengths[b]`` frames are real (a left-padded window)."""
    return torch.arange(steps) >= (steps - torch.tensor(lengths)).unsqueeze(1)


def test_a_windows_padding_does_not_change_its_q_values() -> None:
    """Left padding (zeros early in an episode, or a predecessor replay no longer holds) is not
    read: whatever the padded frames hold, the Q-values are those of the real frames alone, run
    from a zero state at the first one. Before, the LSTMs ran over the padding, so a start state
    near (0, 0) looked like padding and padding looked like a state."""
    net = RecurrentQNet(2, 3, generator=seeded(7))
    gen = seeded(8)
    lengths = [1, 2, 4, 3, 6]
    windows = torch.randn(len(lengths), 6, 2, generator=gen)
    mask = suffix_mask(lengths, 6)
    other_padding = torch.where(mask.unsqueeze(2), windows, torch.randn(5, 6, 2, generator=gen))
    with torch.no_grad():
        q = net(windows, mask)
        torch.testing.assert_close(net(other_padding, mask), q, rtol=0, atol=0)
        for b, length in enumerate(lengths):  # the real frames alone, as a window of their own
            torch.testing.assert_close(net(windows[b : b + 1, 6 - length :]), q[b : b + 1])
        assert not torch.allclose(net(other_padding), net(windows))  # unmasked, it reads them


def test_a_mask_of_real_frames_only_is_the_unmasked_network() -> None:
    net = RecurrentQNet(3, 2, generator=seeded(9))
    windows = torch.randn(4, 5, 3, generator=seeded(10))
    with torch.no_grad():
        full = torch.ones(4, 5, dtype=torch.bool)
        torch.testing.assert_close(net(windows, full), net(windows), rtol=0, atol=0)


@pytest.mark.parametrize(
    ("mask", "said"),
    [
        ([[True, False, True]], "suffix"),
        ([[False, False, False]], "at least one real frame"),
    ],
)
def test_a_mask_that_is_not_a_suffix_of_real_frames_is_refused(mask: list, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        RecurrentQNet(2, 2)(torch.zeros(1, 3, 2), torch.tensor(mask))


def test_an_unroll_from_zeros_ends_where_a_window_does_and_carries_its_state() -> None:
    """`unroll` from a zero state reads a window as `forward` does (its last Q-values); split
    in two, the second half read from the first half's state gives the same Q-values; a
    sequence padded on the right keeps its steps' Q-values."""
    net = RecurrentQNet(3, 2, generator=torch.Generator().manual_seed(0))
    steps = torch.randn(4, 6, 3, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        q, state = net.unroll(steps)
        assert q.shape == (4, 6, 2) and state.shape == (4, STATE_SIZE)
        torch.testing.assert_close(q[:, -1], net(steps))
        first, middle = net.unroll(steps[:, :2])
        second, end = net.unroll(steps[:, 2:], middle)
        torch.testing.assert_close(torch.cat([first, second], dim=1), q)
        torch.testing.assert_close(end, state)
        padded = torch.cat([steps[:, :4], torch.full((4, 2, 3), 99.0)], dim=1)
        torch.testing.assert_close(net.unroll(padded)[0][:, :4], q[:, :4])
    with pytest.raises(ValueError, match=r"state must have shape \(4, 512\)"):
        net.unroll(steps, torch.zeros(4, 3))
    with pytest.raises(ValueError, match=r"steps of shape \(B, L, d\)"):
        net.unroll(steps[0])


def test_recurrent_rejects_non_window_input() -> None:
    with pytest.raises(ValueError, match=r"\(B, T, d\)"):
        RecurrentQNet(2, 2)(torch.zeros(3, 2))


def test_mlp_architecture_and_count() -> None:
    net = MLPQNet(4, 2)
    linears = [m for m in net.modules() if isinstance(m, nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(4, 64), (64, 64), (64, 2)]
    assert count_parameters(net) == (4 * 64 + 64) + (64 * 64 + 64) + (64 * 2 + 2)


def test_mlp_custom_hidden_widths() -> None:
    net = MLPQNet(3, 2, hidden=(16, 8, 4))
    linears = [m for m in net.modules() if isinstance(m, nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [
        (3, 16),
        (16, 8),
        (8, 4),
        (4, 2),
    ]
    with pytest.raises(ValueError, match="hidden"):
        MLPQNet(3, 2, hidden=())


def test_mlp_reads_last_window_step_and_plain_batches() -> None:
    net = MLPQNet(3, 2, generator=seeded(7))
    windows = torch.randn(5, 4, 3, generator=seeded(8))
    with torch.no_grad():
        from_windows = net(windows)
        from_last = net(windows[:, -1, :])
        from_t1 = net(windows[:, -1:, :])
    assert from_windows.shape == (5, 2)
    torch.testing.assert_close(from_windows, from_last, rtol=0, atol=0)
    torch.testing.assert_close(from_t1, from_last, rtol=0, atol=0)
    with pytest.raises(ValueError, match=r"\(B, d\)"):
        net(torch.zeros(3))


@pytest.mark.parametrize("kind", ["recurrent", "mlp"])
def test_dueling_head_combines_value_and_centered_advantage(kind: str) -> None:
    """Q = V + A - mean(A).

    Zeroed last-layer weights with biases b (advantage) and v (value) give Q = v + b - mean(b).
    """
    net = build_q_network(kind, 3, 3, dueling=True, generator=seeded(9))
    with torch.no_grad():
        net.head.out.weight.zero_()
        net.head.out.bias.copy_(torch.tensor([1.0, 2.0, 6.0]))
        net.head.value.weight.zero_()
        net.head.value.bias.fill_(0.5)
        q = net(torch.randn(2, 4, 3, generator=seeded(10)))
    expected = torch.tensor([0.5 + 1 - 3, 0.5 + 2 - 3, 0.5 + 6 - 3]).expand(2, 3)
    torch.testing.assert_close(q, expected)
    plain = build_q_network(kind, 3, 3)
    assert count_parameters(net) == count_parameters(plain) + 65


@pytest.mark.parametrize("cls", [RecurrentQNet, MLPQNet, ConvQNet])
def test_same_generator_seed_gives_identical_weights(cls: type[nn.Module]) -> None:
    global_state = torch.random.get_rng_state()
    d = 200 if cls is ConvQNet else 4
    first, second = cls(d, 3, generator=seeded(11)), cls(d, 3, generator=seeded(11))
    other = cls(d, 3, generator=seeded(12))
    assert torch.equal(global_state, torch.random.get_rng_state())
    for p, q, r in zip(first.parameters(), second.parameters(), other.parameters(), strict=True):
        assert torch.equal(p, q)
        assert not torch.equal(p, r)


def test_init_follows_pytorch_default_bounds() -> None:
    net = RecurrentQNet(4, 3, generator=seeded(13))
    for p in net.lstm1.parameters():
        assert p.abs().max() <= 1 / 128**0.5
    assert net.head.fc.weight.abs().max() <= 1 / 128**0.5
    assert net.head.out.bias.abs().max() <= 1 / 64**0.5
    assert net.head.fc.weight.std() > 0.5 / (3 * 128) ** 0.5


def test_build_q_network_dispatch_and_unknown_kind() -> None:
    assert isinstance(build_q_network("recurrent", 2, 2), RecurrentQNet)
    assert isinstance(build_q_network("mlp", 2, 2), MLPQNet)
    assert isinstance(build_q_network("conv", 400, 3), ConvQNet)
    with pytest.raises(ValueError, match=r"\('recurrent', 'mlp', 'conv', 'linear'\), got 'gru'"):
        build_q_network("gru", 2, 2)


@pytest.mark.parametrize("cls", [RecurrentQNet, MLPQNet])
@pytest.mark.parametrize(
    ("obs_dim", "n_actions", "match"),
    [(0, 2, "obs_dim.*0"), (2, 0, "n_actions.*0"), (-1, 2, "obs_dim.*-1"), (2.5, 2, "obs_dim")],
)
def test_dimension_validation(
    cls: type[nn.Module], obs_dim: int, n_actions: int, match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        cls(obs_dim, n_actions)


def test_parameter_bytes_is_four_bytes_per_float32_parameter() -> None:
    net = RecurrentQNet(2, 2)
    assert parameter_bytes(net) == 4 * count_parameters(net) == 4 * 208_066
    assert parameter_bytes(net.double()) == 8 * 208_066


def test_linear_net_is_a_zero_initialised_q_table_on_one_hot_inputs() -> None:
    net = build_q_network("linear", 3, 2)
    assert isinstance(net, LinearQNet)
    assert count_parameters(net) == 3 * 2
    one_hot = torch.eye(3).unsqueeze(1)  # (3 states, T=1, d=3)
    assert torch.equal(net(one_hot), torch.zeros(3, 2))
    with torch.no_grad():
        net.out.weight.copy_(torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    # Q(s, a) = W[a, s]: the weight matrix is the transposed Q-table.
    assert torch.equal(net(one_hot), net.out.weight.T)


def test_conv_net_is_minatar_s_with_its_parameter_count_by_hand() -> None:
    """Breakout (4 channels, 3 actions): conv 4*16*9 + 16 = 592, linear 1024*128 + 128 =
    131,200, out 128*3 + 3 = 387: 132,179 = 144*4 + 16 + 131,200 + 129*3."""
    net = ConvQNet(400, 3, generator=seeded(0))
    assert (net.conv.in_channels, net.conv.out_channels, net.conv.kernel_size) == (4, 16, (3, 3))
    assert (net.conv.stride, net.conv.padding) == ((1, 1), (0, 0))
    assert (net.head.fc.in_features, net.head.fc.out_features) == (1024, 128)
    assert count_parameters(net) == 592 + 131_200 + 387 == 144 * 4 + 16 + 131_200 + 129 * 3
    assert net.conv.weight.abs().max() <= 1 / 36**0.5  # PyTorch's default bound, fan_in 4*9
    assert net.conv.bias.abs().max() <= 1 / 36**0.5


def test_conv_net_reads_channel_last_frames_and_the_last_window_step() -> None:
    """A flattened (10, 10, n) frame is read as its channels: the net on a frame equals a plain
    conv on the frame moved channel-first; of a window only the last step counts."""
    net = ConvQNet(600, 4, generator=seeded(1))
    frames = (torch.rand(5, 10, 10, 6, generator=seeded(2)) > 0.8).float()
    flat = frames.reshape(5, 600)
    hidden = torch.relu(net.conv(frames.permute(0, 3, 1, 2))).flatten(1)
    expected = net.head.out(torch.relu(net.head.fc(hidden)))
    torch.testing.assert_close(net(flat), expected)
    window = torch.stack([torch.zeros_like(flat), flat], dim=1)
    torch.testing.assert_close(net(window), expected)
    assert net(flat).shape == (5, 4)


def test_conv_net_refuses_what_is_not_a_ten_by_ten_frame() -> None:
    with pytest.raises(ValueError, match=r"10x10 frames .* got 4"):
        ConvQNet(4, 2)
    with pytest.raises(ValueError, match=r"expects inputs of shape \(B, d\)"):
        ConvQNet(100, 2)(torch.zeros(1, 1, 1, 100))
