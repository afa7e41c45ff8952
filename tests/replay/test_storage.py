"""RingStorage: FIFO bookkeeping (slots, generations, episode steps) and windows after a wrap."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable

import numpy as np
import pytest

from rdqn.replay import RingStorage


def o(k: int) -> np.ndarray:
    return np.array([k, 100 + k], dtype=np.float32)


def write_episode(storage: RingStorage, first: int, length: int, *, end: str = "") -> None:
    """Steps o_first .. o_{first+length-1}, each storing next_obs o_{k+1}."""
    for k in range(first, first + length):
        last = k == first + length - 1
        storage.write(
            o(k), k, float(k), o(k + 1), last and end == "terminated", last and end == "truncated"
        )


def test_fifo_slots_generations_and_episode_steps() -> None:
    storage = RingStorage(4, (2,), np.float32)
    assert storage.size == 0 and storage.cursor == 0 and storage.oldest_generation == 0
    write_episode(storage, 0, 2, end="terminated")  # episode steps 0, 1
    write_episode(storage, 10, 3, end="truncated")  # 0, 1, 2 (the third write wraps to slot 0)
    storage.write(o(20), 0, 0.0, o(21), False, False)  # 0
    storage.new_episode()
    storage.write(o(30), 0, 0.0, o(31), False, False)  # 0 again after new_episode()
    assert storage.writes == 7 and storage.size == 4 and storage.cursor == 3
    assert storage.oldest_generation == 3
    # slots 0..3 now hold generations 4, 5, 6, 3
    np.testing.assert_array_equal(storage.generation, [4, 5, 6, 3])
    np.testing.assert_array_equal(storage.episode_step, [2, 0, 0, 1])
    np.testing.assert_array_equal(storage.obs[:, 0], [12, 20, 30, 11])
    np.testing.assert_array_equal(storage.next_obs[:, 0], [13, 21, 31, 12])
    np.testing.assert_array_equal(storage.truncated, [True, False, False, False])
    assert not storage.terminated.any()  # the terminated step (gen 1) was overwritten


def test_windows_after_wrap_hand_computed() -> None:
    """Capacity 4, one episode o0..o5 (6 writes), T = 3. Slots hold generations [4, 5, 2, 3],
    oldest stored generation 2, so o0 and o1 are gone:

        slot 2 (t=2): W = [pad, pad, o2]  (o0, o1 overwritten)   W' = [pad, o2, o3]
        slot 3 (t=3): W = [pad, o2, o3]   (o1 overwritten)       W' = [o2, o3, o4]
        slot 0 (t=4): W = [o2, o3, o4]                           W' = [o3, o4, o5]
        slot 1 (t=5): W = [o3, o4, o5]  (ring wrap: slots 3, 0, 1) W' = [o4, o5, o6]
    """
    storage = RingStorage(4, (2,), np.float32)
    write_episode(storage, 0, 6)
    w, w_next, mask, next_mask = storage.windows(np.array([2, 3, 0, 1]), 3)
    pad = np.zeros(2, np.float32)
    np.testing.assert_array_equal(w[0], [pad, pad, o(2)])
    np.testing.assert_array_equal(w[1], [pad, o(2), o(3)])
    np.testing.assert_array_equal(w[2], [o(2), o(3), o(4)])
    np.testing.assert_array_equal(w[3], [o(3), o(4), o(5)])
    np.testing.assert_array_equal(
        mask, [[False, False, True], [False, True, True], [True] * 3, [True] * 3]
    )
    np.testing.assert_array_equal(w_next[0], [pad, o(2), o(3)])
    np.testing.assert_array_equal(w_next[1], [o(2), o(3), o(4)])
    np.testing.assert_array_equal(w_next[2], [o(3), o(4), o(5)])
    np.testing.assert_array_equal(w_next[3], [o(4), o(5), o(6)])
    np.testing.assert_array_equal(next_mask, [[False, True, True]] + [[True] * 3] * 3)


def test_windows_stop_at_episode_start() -> None:
    """Episode A = o0, o1 (terminated), episode B = o10, o11, o12; T = 4.
    B's step 1 (slot 3) must read [pad, pad, o10, o11], never o1 or o0."""
    storage = RingStorage(8, (2,), np.float32)
    write_episode(storage, 0, 2, end="terminated")
    write_episode(storage, 10, 3)
    w, w_next, mask, next_mask = storage.windows(np.array([3, 2]), 4)
    pad = np.zeros(2, np.float32)
    np.testing.assert_array_equal(w[0], [pad, pad, o(10), o(11)])
    assert mask[0].tolist() == [False, False, True, True]
    np.testing.assert_array_equal(w[1], [pad, pad, pad, o(10)])
    np.testing.assert_array_equal(w_next[1], [pad, pad, o(10), o(11)])
    assert next_mask[1].tolist() == [False, False, True, True]


def test_window_shape_for_multidimensional_obs() -> None:
    storage = RingStorage(3, (2, 3), np.uint8)
    frame = np.arange(6, dtype=np.uint8)
    storage.write(frame, 0, 0.0, frame + 1, False, False)
    w, w_next, mask, next_mask = storage.windows(np.array([0]), 2)
    assert w.shape == w_next.shape == (1, 2, 2, 3) and w.dtype == np.uint8
    np.testing.assert_array_equal(w[0, 1], frame.reshape(2, 3))
    np.testing.assert_array_equal(w_next[0, 1], (frame + 1).reshape(2, 3))
    assert mask.tolist() == [[False, True]] and next_mask.tolist() == [[True, True]]


def test_nbytes_is_linear_in_capacity() -> None:
    small = RingStorage(100, (4,), np.float32).nbytes
    large = RingStorage(200, (4,), np.float32).nbytes
    assert large == 2 * small
    assert small >= 2 * 100 * 16  # o_t and o_{t+1} (or an equivalent) per slot


def test_state_dict_round_trip(assert_same_state: Callable) -> None:
    storage = RingStorage(4, (2,), np.float32)
    write_episode(storage, 0, 6, end="truncated")
    storage.write(o(50), 1, 1.0, o(51), False, False)
    state = storage.state_dict()
    copy = RingStorage(4, (2,), np.float32)
    copy.load_state_dict(state)
    assert_same_state(copy.state_dict(), state)
    for target in (storage, copy):
        target.write(o(60), 2, 2.0, o(61), False, False)
    assert_same_state(copy.state_dict(), storage.state_dict())
    np.testing.assert_array_equal(copy.episode_step[copy.cursor - 1], 1)


def test_load_state_dict_of_other_shape_is_rejected(assert_same_state: Callable) -> None:
    storage = RingStorage(4, (2,), np.float32)
    write_episode(storage, 0, 3)
    before = storage.state_dict()
    with pytest.raises(ValueError, match="obs"):
        storage.load_state_dict(RingStorage(4, (3,), np.float32).state_dict())
    with pytest.raises(ValueError, match="dtype"):
        storage.load_state_dict(RingStorage(4, (2,), np.uint8).state_dict())
    assert_same_state(storage.state_dict(), before)


@pytest.mark.parametrize("clone", [copy.deepcopy, lambda s: pickle.loads(pickle.dumps(s))])
def test_a_copy_gathers_what_it_stores(clone: Callable) -> None:
    """The named columns are rows of stacked arrays that the gather reads; a copy must keep them
    rows of its own stacks, not independent copies that writes would go to unseen."""
    storage = RingStorage(4, (2,), np.float32)
    write_episode(storage, 0, 2)
    twin = clone(storage)
    twin.write(o(7), 3, 7.0, o(8), True, False)
    windows, masks, integers, flags, rewards = twin.gather(np.array([2], np.int64), 1)
    np.testing.assert_array_equal(windows[:, 0, 0], [o(7), o(8)])
    assert integers[:, 0].tolist() == [3, 2] and flags[:, 0].tolist() == [True, False]
    assert rewards[0] == 7.0 and twin.sample_counts[2] == 1
    assert storage.size == 2 and storage.sample_counts[2] == 0  # the original is untouched


@pytest.mark.parametrize(("slots", "window"), [([0, 2], 2), ([-1], 2), ([0.5], 2), ([0], 0)])
def test_windows_of_slots_not_stored_are_refused(slots: list, window: int) -> None:
    """Regression: `windows` handed any slots to the compiled gather, which read and
    wrote past the storage's arrays for a slot past the ring."""
    storage = RingStorage(4, (2,), np.float32)
    write_episode(storage, 0, 2)
    with pytest.raises(ValueError, match="slots|window"):
        storage.windows(np.array(slots), window)
