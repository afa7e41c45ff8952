"""rdqn.figures.memories: the explorer's charts draw the memories' own numbers."""

from __future__ import annotations

import numpy as np
import pytest

from rdqn.figures.memories import replays_by_age_figure, surprise_figure, surprise_measure
from rdqn.training.memories import memories
from rdqn.training.trainer import Trainer
from tests.run_helpers import tiny


@pytest.fixture(scope="module", params=["proportional", "uniform"])
def view(request: pytest.FixtureRequest):  # noqa: ANN201
    trainer = Trainer(tiny(300, **{"replay.scheme": request.param}))
    while not trainer.done:
        trainer.step()
    return memories(trainer, points=200)


def test_surprise_has_a_panel_per_coordinate_with_the_exact_values(view) -> None:  # noqa: ANN001
    fig = surprise_figure(view)
    angle, position = fig.data
    assert (angle.name, position.name) == ("pole angle", "cart position")
    np.testing.assert_array_equal(angle.x, view.drawn.poses[:, 1])
    np.testing.assert_array_equal(position.x, view.drawn.poses[:, 0])
    values, label = surprise_measure(view)
    np.testing.assert_array_equal(angle.y, values)
    assert ("stored priority" in label) == (view.scheme != "uniform")
    np.testing.assert_array_equal(angle.customdata[:, 0], view.drawn.slots)
    ringed = np.asarray(angle.marker.line.width) > 0
    assert set(view.drawn.slots[ringed]) == set(view.lists["last batch"].slots)


def test_replays_by_age_draws_the_counts_and_uniform_expectation(view) -> None:  # noqa: ANN001
    points, expected = replays_by_age_figure(view).data
    np.testing.assert_array_equal(points.x, view.drawn.ages)
    np.testing.assert_array_equal(points.y, view.drawn.replayed)
    np.testing.assert_array_equal(expected.y, view.expected_replays)
    assert expected.name == "uniform replay, expected"


def test_nothing_stored_yet() -> None:
    assert surprise_figure(None).layout.annotations[0].text == "no data yet"
    assert replays_by_age_figure(None).layout.annotations[0].text == "no data yet"
