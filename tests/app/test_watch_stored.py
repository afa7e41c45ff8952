"""AppTest: a run this server no longer trains (a saved run, after a restart) can still be
watched: ``?run=`` shows its latest greedy episode, its greedy-return curve and its greedy
evaluations, from the store."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from rdqn.dashboard import state
from rdqn.presets import preset
from rdqn.training.greedy import play_greedy

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def test_a_saved_run_is_watched_from_its_store() -> None:
    config = preset("per-notebook")
    run_store = state.store()
    run_id = run_store.create_run(
        config=config.to_dict(), env_id="CartPole-v1", scheme="proportional", seed=0
    )
    push_right = np.float32([0.0, 1.0])
    episode = play_greedy(
        lambda window, mask: push_right, "CartPole-v1", {}, 1, seed=4, env_steps=900
    )
    run_store.write_metrics(
        run_id,
        episodes=[{"episode": 1, "env_steps": 20, "return": 20.0}],
        greedy=[
            {"played": 0, "env_steps": 0, "return": 9.0, "length": 9},
            {"played": 1, "env_steps": 900, "return": episode.episode_return, "length": 9},
        ],
        watched=episode,
        evaluations=[
            {"env_steps": 500, "episode": k, "seed": 10_000 + k, "return": r, "length": 9}
            for k, r in enumerate([10.0, 30.0])
        ],
    )
    run_store.set_status(run_id, "finished")
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["run"] = run_id
    at.run()
    at.switch_page("pages/live.py").run()
    assert not at.exception
    assert any(s.value == "Watch it play" for s in at.subheader)
    (metric,) = [m for m in at.metric if m.label == "Greedy return"]
    assert metric.value == f"{episode.episode_return:,.1f}"
    assert any("at step 900" in c.value for c in at.caption)
    (reward,) = [json.loads(chart.proto.spec)["data"] for chart in at.get("plotly_chart")]
    (greedy,) = [trace for trace in reward if trace["name"] == "greedy return (watched)"]
    assert plotly_values(greedy["x"]).tolist() == [0, 900]
    assert plotly_values(greedy["y"]).tolist() == [9.0, episode.episode_return]
    (evaluation,) = [t for t in reward if t["name"] == "greedy evaluation (held-out seeds)"]
    assert plotly_values(evaluation["x"]).tolist() == [500]
    assert plotly_values(evaluation["y"]).tolist() == [20.0]  # (10 + 30) / 2


def plotly_values(encoded: dict | list) -> np.ndarray:
    """A trace's values, which Plotly may send base64-encoded."""
    if isinstance(encoded, list):
        return np.asarray(encoded)
    return np.frombuffer(base64.b64decode(encoded["bdata"]), dtype=encoded["dtype"])
