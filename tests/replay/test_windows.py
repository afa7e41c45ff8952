"""Windows: `gather_windows` index arithmetic and the acting-side `WindowBuilder`."""

from __future__ import annotations

import numpy as np
import pytest

from rdqn.replay import WindowBuilder, gather_windows


def frames_ring() -> np.ndarray:
    """Ring of 5 frames, frame s = [10 s, 10 s + 1]."""
    return np.array([[10 * s, 10 * s + 1] for s in range(5)], dtype=np.float32)


def test_gather_windows_hand_computed() -> None:
    """T = 3.
    row 0: last slot 4, lookback 2 -> slots [2, 3, 4], mask [T, T, T]
    row 1: last slot 0, lookback 1 -> [pad, slot 4 (ring wrap), slot 0], mask [F, T, T]
    row 2: last slot 3, lookback 0 -> [pad, pad, slot 3], mask [F, F, T]
    row 3: last slot 1, lookback 9 -> lookback beyond T - 1 reads just T frames: [4, 0, 1]
    """
    frames = frames_ring()
    windows, mask = gather_windows(frames, [4, 0, 3, 1], [2, 1, 0, 9], 3)
    assert windows.shape == (4, 3, 2) and windows.dtype == np.float32
    assert mask.shape == (4, 3) and mask.dtype == np.bool_
    expected = np.array(
        [
            [frames[2], frames[3], frames[4]],
            [[0, 0], frames[4], frames[0]],
            [[0, 0], [0, 0], frames[3]],
            [frames[4], frames[0], frames[1]],
        ],
        dtype=np.float32,
    )
    np.testing.assert_array_equal(windows, expected)
    np.testing.assert_array_equal(
        mask, [[True] * 3, [False, True, True], [False, False, True], [True] * 3]
    )


def test_gather_windows_multidimensional_frames_and_dtype() -> None:
    frames = np.arange(4 * 2 * 3, dtype=np.uint8).reshape(4, 2, 3)
    windows, mask = gather_windows(frames, [1], [1], 2)
    assert windows.shape == (1, 2, 2, 3) and windows.dtype == np.uint8
    np.testing.assert_array_equal(windows[0], frames[[0, 1]])
    assert mask.tolist() == [[True, True]]


def test_gather_windows_t1_is_the_frame_itself() -> None:
    frames = frames_ring()
    windows, mask = gather_windows(frames, [3, 0], [0, 5], 1)
    np.testing.assert_array_equal(windows[:, 0], frames[[3, 0]])
    assert mask.all()


def test_window_builder_left_pads_then_slides() -> None:
    """T = 3, episode o0, o1, o2, o3 (o_k = [k, -k]):
    t=0 [0, 0, o0] mask [F, F, T]; t=1 [0, o0, o1]; t=2 [o0, o1, o2]; t=3 [o1, o2, o3].
    After reset(p0) the previous episode's frames are gone: [0, 0, p0]."""
    builder = WindowBuilder(3, (2,))
    obs = [np.array([k, -k], dtype=np.float32) for k in range(1, 5)]
    zero = np.zeros(2, np.float32)
    builder.reset(obs[0])
    expected_windows = [
        ([zero, zero, obs[0]], [False, False, True]),
        ([zero, obs[0], obs[1]], [False, True, True]),
        ([obs[0], obs[1], obs[2]], [True, True, True]),
        ([obs[1], obs[2], obs[3]], [True, True, True]),
    ]
    for k, (frames, mask) in enumerate(expected_windows):
        if k:
            builder.append(obs[k])
        assert builder.steps == k + 1
        window, got_mask = builder.window_and_mask()
        assert window.shape == (3, 2) and window.dtype == np.float32
        np.testing.assert_array_equal(window, np.array(frames))
        np.testing.assert_array_equal(got_mask, mask)
        np.testing.assert_array_equal(builder.window(), window)
    p0 = np.array([100.0, 200.0], dtype=np.float32)
    builder.reset(p0)
    window, mask = builder.window_and_mask()
    np.testing.assert_array_equal(window, [zero, zero, p0])
    assert mask.tolist() == [False, False, True]
    assert builder.steps == 1


def test_window_builder_t1_plain_case() -> None:
    builder = WindowBuilder(1, (3,))
    builder.reset([1.0, 2.0, 3.0])
    builder.append([4.0, 5.0, 6.0])
    window, mask = builder.window_and_mask()
    assert window.shape == (1, 3)
    np.testing.assert_array_equal(window, [[4.0, 5.0, 6.0]])
    assert mask.tolist() == [True]


def test_window_builder_returns_independent_arrays() -> None:
    """A recorded window must not change when the builder moves on."""
    builder = WindowBuilder(2, (1,))
    builder.reset([1.0])
    first = builder.window()
    builder.append([2.0])
    builder.append([3.0])
    np.testing.assert_array_equal(first, [[0.0], [1.0]])


def test_window_builder_casts_like_storage() -> None:
    """float64 observations are rounded to float32 once, exactly as the buffer stores them."""
    value = np.array([0.1, 1 / 3], dtype=np.float64)
    builder = WindowBuilder(1, (2,))
    builder.reset(value)
    window = builder.window()
    assert window.dtype == np.float32
    np.testing.assert_array_equal(window[0], value.astype(np.float32))
    frames = WindowBuilder(2, (2,), dtype=np.uint8)
    frames.reset(np.array([3, 250], dtype=np.uint8))
    assert frames.window().dtype == np.uint8


@pytest.mark.parametrize("bad", [np.zeros(3), np.zeros((2, 1)), np.float32(1.0)])
def test_window_builder_rejects_wrong_obs_shape(bad: np.ndarray) -> None:
    builder = WindowBuilder(2, (2,))
    with pytest.raises(ValueError, match="obs"):
        builder.reset(bad)
    builder.reset(np.zeros(2))
    before = builder.window().copy()
    with pytest.raises(ValueError, match="obs"):
        builder.append(bad)
    np.testing.assert_array_equal(builder.window(), before)
    assert builder.steps == 1


@pytest.mark.parametrize("window", [0, -1, 2.0, "3"])
def test_window_builder_rejects_bad_window(window: object) -> None:
    with pytest.raises(ValueError, match="window"):
        WindowBuilder(window, (2,))  # type: ignore[arg-type]


def test_window_before_reset_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="reset"):
        WindowBuilder(2, (2,)).window()


@pytest.mark.parametrize(
    ("last", "lookback", "window", "match"),
    [
        ([5], [0], 2, r"last must be ring slots in \[0, 5\), got 5"),
        ([-1], [0], 2, "last must be"),
        ([0], [-1], 2, "lookback must be >= 0"),
        ([4], [5], 7, "would read before the ring"),
        ([0, 1], [0], 2, "one entry per window"),
        ([0], [0], 0, "window"),
    ],
)
def test_gather_windows_never_reads_outside_the_ring(
    last: list, lookback: list, window: int, match: str
) -> None:
    """Regression: a slot past the ring, or a lookback that reaches before it with a
    window longer than the ring, was read by the compiled gather out of bounds (lookback 9 with
    T = 3 only reads T frames, and stays allowed)."""
    with pytest.raises(ValueError, match=match):
        gather_windows(frames_ring(), last, lookback, window)
