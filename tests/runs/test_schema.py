"""Tests for rdqn.runs.schema: metric rows become SQL parameters in column order."""

from __future__ import annotations

import numpy as np
import pytest

from rdqn.runs.schema import (
    EPISODE_COLUMNS,
    EPISODE_KEYS,
    INSERT_EPISODES,
    row_params,
)


def test_row_params_orders_converts_and_fills_missing_columns_with_none() -> None:
    row = {"wall_time": np.float32(1.5), "episode": np.int64(3), "return": 200}
    (params,) = row_params("r1", [row], EPISODE_COLUMNS, EPISODE_KEYS, "episode")
    assert params == ("r1", 3, None, None, 200.0, None, 1.5)
    assert [type(p) for p in params] == [str, int, type(None), type(None), float, type(None), float]
    assert INSERT_EPISODES.count("?") == len(params)


def test_row_params_names_unknown_columns_and_a_missing_key() -> None:
    with pytest.raises(ValueError, match=r"unknown episode column\(s\) \['score'\]"):
        row_params("r1", [{"episode": 1, "score": 2}], EPISODE_COLUMNS, EPISODE_KEYS, "episode")
    with pytest.raises(ValueError, match="every episode row needs 'episode'"):
        row_params("r1", [{"return": 2.0}], EPISODE_COLUMNS, EPISODE_KEYS, "episode")
