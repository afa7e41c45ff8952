"""rdqn.dashboard.watch: the player's document carries the episode, and nothing else varies."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from rdqn.dashboard import watch
from rdqn.dashboard.watch import ACTION_LABELS, player_html
from rdqn.envs.poses import POSE_KINDS
from rdqn.training.episodes import PlayedEpisode


def episode(env_id: str = "CartPole-v1") -> PlayedEpisode:
    return PlayedEpisode(
        env_id=env_id,
        env_steps=2_000,
        seed=7,
        poses=np.float32([[0.0, 0.01], [0.02, -0.03], [0.05, 0.2]]),
        actions=np.int8([1, 0]),
        rewards=np.float32([1.0, 1.0]),
        terminated=True,
    )


def sent(html: str) -> dict:
    return json.loads(re.search(r"const E = (\{.*?\});\n", html).group(1).replace("<\\/", "</"))


def test_the_player_carries_the_episode() -> None:
    data = sent(player_html(episode()))
    assert data["kind"] == "cartpole" and data["poses"][2] == [np.float32(0.05), np.float32(0.2)]
    assert data["actions"] == [1, 0] and data["return"] == 2.0 and data["length"] == 2
    assert data["action_labels"] == ["← push left", "push right →"]
    assert not data["projector"] and sent(player_html(episode(), projector=True))["projector"]


def test_the_same_episode_gives_the_same_document() -> None:
    """The browser keeps the iframe, and its animation, while the document is the same."""
    assert player_html(episode()) == player_html(episode())


def test_no_value_can_end_the_script(monkeypatch: pytest.MonkeyPatch) -> None:
    payload = watch.episode_payload
    monkeypatch.setattr(
        watch,
        "episode_payload",
        lambda e, projector: {**payload(e, projector=projector), "env_id": "</script><b>x"},
    )
    html = player_html(episode())
    assert html.count("</script>") == 1 and sent(html)["env_id"] == "</script><b>x"


def test_every_pictured_env_has_action_labels() -> None:
    assert set(ACTION_LABELS) == set(POSE_KINDS)
