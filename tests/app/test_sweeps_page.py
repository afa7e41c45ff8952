"""AppTest of the Sweeps page: a recorded sweep's heatmap against its results worked out here
from the stored episodes, the axis and measure choices, the picked cell's curves; a sweep filed
by hand (every number in tests/dashboard/sweep_cases.py); the start form's refusals (one error
naming the entry, nothing filed) and a sweep started from the page, owned by its browser."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from rdqn.dashboard import state
from rdqn.figures.sweeps import decimals_for
from rdqn.runs.store import RunStore
from rdqn.serve.executors import ProcessExecutor
from rdqn.serve.registry import RunRegistry
from rdqn.sweeps import SweepSpec, list_sweeps, run_sweep, summary, sweep_trials
from rdqn.sweeps.records import save_spec
from tests.dashboard.sweep_cases import AUC_MEAN, STEPS_MEAN, hand_sweep
from tests.run_helpers import wait_for

APP = Path(__file__).resolve().parents[2] / "app.py"
GRID = {"train.epsilon_end": [0.05, 1.0], "env.kwargs": [{"n": 4}, {"n": 8}]}
"""Two axes that change the returns from the first steps on (a chain of 4 is found by chance,
one of 8 rarely; epsilon 1 stays random), so that no two cells have one value."""
WINDOW = 20


@pytest.fixture(scope="module")
def recorded(
    tmp_path_factory: pytest.TempPathFactory, process_executor: ProcessExecutor
) -> tuple[Path, SweepSpec]:
    """A tiny sweep recorded once per module by `run_sweep`: chain-lesson, 2 x 2 cells, 2
    seeds, 300 env steps, one trial at a time."""
    home = tmp_path_factory.mktemp("sweep-home")
    spec = SweepSpec.from_grid("chain-lesson", GRID, seeds=2, steps=300)
    with RunStore(home / "rdqn.db") as store:
        runs = RunRegistry(store, executor=process_executor, max_active=1, idle_timeout=None)
        try:
            result = run_sweep(spec, store, registry=runs, progress=False)
        finally:
            runs.shutdown()
        assert result.complete, result.trials
    return home, spec


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The private RDQN_HOME that tests/app/conftest.py set up for this test."""
    return tmp_path


def with_recorded(home: Path, recorded: tuple[Path, SweepSpec]) -> SweepSpec:
    source, spec = recorded
    shutil.copytree(source, home, dirs_exist_ok=True)
    return spec


def open_page(query: str | None = None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=60)
    if query:
        at.query_params["sweep"] = query
    at.run()
    at.switch_page("pages/sweeps.py").run()
    assert not at.exception, at.exception
    return at


def charts(at: AppTest) -> list[dict[str, Any]]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def heatmap(at: AppTest) -> dict[str, Any]:
    (heat,) = [c for c in charts(at) if c["data"][0]["type"] == "heatmap"]
    return heat


def array(value: Any) -> np.ndarray:
    """A figure's array as Plotly's JSON holds it: a list, or base64 with its dtype and shape."""
    if isinstance(value, dict) and "bdata" in value:
        data = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        shape = tuple(int(n) for n in str(value.get("shape", data.size)).split(","))
        return data.reshape(shape).astype(np.float64)
    return np.asarray(value, dtype=np.float64)


def z(figure: dict[str, Any]) -> np.ndarray:
    return array(figure["data"][0]["z"])


def auc_by_hand(ends: list[int], returns: list[float], budget: int) -> float:
    """(1/T) * sum_k R_k (s_{k+1} - s_k), R_k the mean of the last 20 returns at episode k."""
    area = 0.0
    for k, end in enumerate(ends):
        recent = returns[max(0, k + 1 - WINDOW) : k + 1]
        following = ends[k + 1] if k + 1 < len(ends) else budget
        area += sum(recent) / len(recent) * (following - end)
    return area / budget


def mean_auc_by_hand(store: RunStore, spec: SweepSpec, cell: dict[str, Any]) -> float:
    trials = sweep_trials(store, spec)
    values = []
    for trial in spec.trials():
        if trial.overrides != cell:
            continue
        run_id = trials.set_index("key").loc[trial.key, "run_id"]
        episodes = store.metrics.episodes(run_id)
        values.append(auc_by_hand(episodes["env_steps"].tolist(), episodes["return"].tolist(), 300))
    return float(np.mean(values))


@pytest.mark.slow
def test_the_heatmap_of_a_recorded_sweep_holds_its_mean_auc_per_cell(
    home: Path, recorded: tuple[Path, SweepSpec]
) -> None:
    spec = with_recorded(home, recorded)
    at = open_page()
    assert at.selectbox(key="sweeps.id").value == spec.id
    assert at.query_params["sweep"] == spec.id
    assert [m.value for m in at.metric][:4] == ["8/8", "0/8", "0/8", "0/8"]
    figure = heatmap(at)
    # The spec comes back from its file with its fields sorted: env.kwargs across, epsilon down.
    assert figure["layout"]["xaxis"]["title"]["text"] == "env.kwargs"
    assert figure["layout"]["yaxis"]["title"]["text"] == "train.epsilon_end"
    assert figure["data"][0]["x"] == ['{"n": 4}', '{"n": 8}']
    assert figure["data"][0]["y"] == ["0.05", "1"]
    with RunStore(home / "rdqn.db") as store:
        by_hand = np.array(
            [
                [mean_auc_by_hand(store, spec, {"train.epsilon_end": e, "env.kwargs": n})
                 for n in GRID["env.kwargs"]]
                for e in GRID["train.epsilon_end"]
            ]
        )  # fmt: skip
        table = summary(store, spec.id)
    np.testing.assert_allclose(z(figure), by_hand, rtol=1e-12)
    assert len({round(v, 9) for v in by_hand.ravel()}) == 4  # the axes tell the cells apart
    first = table.iloc[0]  # n 4, epsilon .05: row 0, column 0
    places = decimals_for(first["auc_mean"])
    assert figure["data"][0]["text"][0][0] == (
        f"{first['auc_mean']:.{places}f} ± {first['auc_std']:.{places}f}<br>(2/2 seeds)"
    )


@pytest.mark.slow
def test_axis_and_measure_choices_redraw_the_heatmap(
    home: Path, recorded: tuple[Path, SweepSpec]
) -> None:
    spec = with_recorded(home, recorded)
    at = open_page()
    before = z(heatmap(at))  # rows: epsilon .05, 1; columns: n 4, 8
    at.selectbox(key=f"sweeps.x.{spec.id}").set_value("train.epsilon_end").run()
    assert not at.exception
    assert at.selectbox(key=f"sweeps.y.{spec.id}").value == "env.kwargs"
    swapped = heatmap(at)
    assert swapped["layout"]["xaxis"]["title"]["text"] == "train.epsilon_end"
    np.testing.assert_array_equal(z(swapped), before.T)

    at.selectbox(key=f"sweeps.y.{spec.id}").set_value("—").run()  # one row, the other held
    assert not at.exception
    held = at.selectbox(key=f"sweeps.fixed.{spec.id}.env.kwargs")
    assert held.value == {"n": 4}
    np.testing.assert_array_equal(z(heatmap(at)), before[:, [0]].T)
    held.set_value({"n": 8}).run()
    np.testing.assert_array_equal(z(heatmap(at)), before[:, [1]].T)

    at.selectbox(key=f"sweeps.fixed.{spec.id}.env.kwargs").set_value({"n": 4})
    at.selectbox(key="sweeps.measure").set_value("steps").run()
    with RunStore(home / "rdqn.db") as store:
        table = summary(store, spec.id)
    wanted = table[[kw == {"n": 4} for kw in table["env.kwargs"]]]["steps_to_threshold_mean"]
    np.testing.assert_allclose(z(heatmap(at))[0], wanted.to_numpy(), equal_nan=True)
    assert np.isfinite(wanted.to_numpy()).any()  # a chain of 4 is solved within 300 steps
    assert heatmap(at)["data"][0]["reversescale"] is True  # fewer steps: the better end


@pytest.mark.slow
def test_a_picked_cell_shows_every_seeds_curve_and_their_mean(
    home: Path, recorded: tuple[Path, SweepSpec]
) -> None:
    spec = with_recorded(home, recorded)
    at = open_page()
    assert "Click a cell" in at.caption[-1].value
    (heat_only,) = charts(at)
    key = heat_only["data"][1]["customdata"][3]  # the marker of row 1, column 1
    assert key == 'env.kwargs={"n":8} train.epsilon_end=1.0'
    at.session_state["sweeps.cell"] = (spec.id, key)  # what a click on that marker keeps
    at.run()
    assert not at.exception
    heat, curves = charts(at)
    (frame,) = heat["layout"]["shapes"]
    assert (frame["x0"], frame["y0"]) == (0.5, 0.5)  # the picked cell is framed
    names = [trace["name"] for trace in curves["data"]]
    assert names == ["seed 0", "seed 1", "mean of 2 seeds"]
    assert 'env.kwargs = {"n": 8}, train.epsilon_end = 1' in at.markdown[-1].value.replace("\\", "")
    with RunStore(home / "rdqn.db") as store:
        cell = {"train.epsilon_end": 1.0, "env.kwargs": {"n": 8}}
        wanted = mean_auc_by_hand(store, spec, cell)
    mean = curves["data"][-1]
    x, y = array(mean["x"]), array(mean["y"])
    assert np.sum(y[:-1] * np.diff(x)) / 300 == pytest.approx(wanted)  # its area: the cell's AUC


def test_a_picked_cell_draws_its_seeds_greedy_evaluations(
    home: Path, recorded: tuple[Path, SweepSpec]
) -> None:
    """Seed 0 evaluated R̄ 2 (returns 1 and 3) at step 100, seed 1 R̄ 7 (5 and 9): the cell's
    mean is 4.5, its band 2 to 7; a cell with no evaluations draws no such chart."""
    spec = with_recorded(home, recorded)
    key = 'env.kwargs={"n":8} train.epsilon_end=1.0'
    with RunStore(home / "rdqn.db") as store:
        trials = sweep_trials(store, spec).set_index("key")
        run_ids = [trials.loc[t.key, "run_id"] for t in spec.trials() if t.cell == key]
        for run_id, returns in zip(run_ids, ([1.0, 3.0], [5.0, 9.0]), strict=True):
            rows = [
                {"env_steps": 100, "episode": k, "seed": 10_000 + k, "return": r, "length": 1}
                for k, r in enumerate(returns)
            ]
            store.write_metrics(run_id, evaluations=rows)
    at = open_page()
    at.session_state["sweeps.cell"] = (spec.id, key)
    at.run()
    assert not at.exception
    _, _, evaluation = charts(at)
    high, low, line = evaluation["data"]
    assert array(line["y"]).tolist() == [4.5] and line["name"].endswith("(2 seeds)")
    assert (array(low["y"]).tolist(), array(high["y"]).tolist()) == ([2.0], [7.0])
    at.session_state["sweeps.cell"] = (spec.id, 'env.kwargs={"n":8} train.epsilon_end=0.05')
    at.run()
    assert len(charts(at)) == 2


def test_a_sweep_filed_by_hand_shows_its_numbers_and_its_failures(home: Path) -> None:
    with RunStore(home / "rdqn.db") as store:
        spec = hand_sweep(store)
    at = open_page()
    shown = {m.label: m.value for m in at.metric}
    assert shown == {
        "finished": "5/8", "training": "0/8", "waiting": "0/8", "failed": "1/8",
        "stopped": "1/8", "not run": "1/8",
    }  # fmt: skip
    figure = heatmap(at)
    assert figure["data"][0]["x"] == ["0", "1"]
    assert figure["data"][0]["y"] == ["proportional", "rank"]
    wanted = [[AUC_MEAN[a, s] for a in (0.0, 1.0)] for s in ("proportional", "rank")]
    np.testing.assert_allclose(z(figure), wanted, equal_nan=True)
    assert figure["data"][0]["text"][0][0] == "0.860 ± 0.156<br>(2/2 seeds)"
    at.selectbox(key="sweeps.measure").set_value("steps").run()
    threshold = at.number_input(key=f"sweeps.threshold.{spec.id}")
    assert threshold.value == 0.8  # the chain's
    steps = [[STEPS_MEAN[a, s] for a in (0.0, 1.0)] for s in ("proportional", "rank")]
    np.testing.assert_allclose(z(heatmap(at)), steps, equal_nan=True)
    threshold.set_value(1.5).run()  # above every return: no seed reaches it
    texts = heatmap(at)["data"][0]["text"]
    assert texts == [["—<br>(0/2 reached)", "—<br>(0/1 reached)"],
                     ["—<br>(0/2 reached)", "—<br>(0/2 finished)"]]  # fmt: skip
    assert heatmap(at)["data"][0]["showscale"] is False  # no value: a grey grid
    (failed,) = [e for e in at.expander if e.label == "Failed trials (1)"]
    assert "boom: diverged" in failed.markdown[0].value.replace("\\", "")
    assert at.button(key="sweeps.rest").label == "Run its 3 unfinished trials"
    assert spec.id in at.selectbox(key="sweeps.id").options[0]


def test_a_link_opens_the_sweep_it_names(home: Path) -> None:
    with RunStore(home / "rdqn.db") as store:
        first = hand_sweep(store)
        other = SweepSpec.from_grid("chain-lesson", {"replay.alpha": [0.5]}, seeds=1, steps=50)
        save_spec(store, other)
    at = open_page(query=first.id)
    assert at.selectbox(key="sweeps.id").value == first.id
    at.selectbox(key="sweeps.id").set_value(other.id).run()
    assert not at.exception
    assert at.query_params["sweep"] == other.id
    assert [m.value for m in at.metric][-1] == "1/1"  # not run: 1 of 1


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ("0, 2", "grid entry replay.alpha=2: replay.alpha must be in [0, 1], got 2"),
        ("", "grid entry replay.alpha: an empty list; give at least one value"),
        (", ".join(str(k / 100) for k in range(13)), "would run 26 trials"),
    ],
)
def test_a_bad_or_large_grid_is_one_error_and_nothing_is_filed(
    home: Path, values: str, message: str
) -> None:
    at = open_page()
    at.text_input(key="sweeps.values1").set_value(values)
    at.selectbox(key="sweeps.axis2").set_value("—")
    at.button(key="sweeps.start").click().run()
    assert not at.exception
    (error,) = at.error
    assert error.value.replace("\\", "").startswith("Cannot start this sweep: ")
    assert message in error.value.replace("\\", "")
    with RunStore(home / "rdqn.db") as store:
        assert list_sweeps(store).empty and store.list_runs().empty


@pytest.mark.slow
def test_a_sweep_started_from_the_page_runs_as_its_browsers_runs(home: Path) -> None:
    at = open_page()
    assert at.expander[0].label == "Start a sweep"
    at.number_input(key="sweeps.steps.chain-lesson").set_value(300)
    at.number_input(key="sweeps.seeds").set_value(1)
    at.text_input(key="sweeps.values1").set_value("0, 1")
    at.selectbox(key="sweeps.axis2").set_value("—")
    at.button(key="sweeps.start").click().run()
    assert not at.exception
    assert not at.error
    sweep_id = at.selectbox(key="sweeps.id").value
    assert at.query_params["sweep"] == sweep_id
    wait_for(lambda: len(state.registry().runs()) == 2, 30, what="two trials in the registry")
    handles = state.registry().runs()
    assert handles[0].owner is not None and handles[1].owner == handles[0].owner  # the browser
    assert {h.group_id for h in handles} == {sweep_id}

    def finished() -> bool:
        at.run()
        assert not at.exception
        return [m.value for m in at.metric][0] == "2/2"

    wait_for(finished, 120, what=lambda: f"trials: {[m.value for m in at.metric]}", every=1.0)
    assert np.isfinite(z(heatmap(at))).all()


@pytest.mark.slow
def test_stop_records_every_trial_stopped_and_offers_to_go_on(home: Path) -> None:
    at = open_page()
    at.number_input(key="sweeps.steps.chain-lesson").set_value(50_000)
    at.number_input(key="sweeps.seeds").set_value(1)
    at.text_input(key="sweeps.values1").set_value("0, 1")
    at.selectbox(key="sweeps.axis2").set_value("—")
    at.button(key="sweeps.start").click().run()
    sweep_id = at.selectbox(key="sweeps.id").value

    def counts() -> dict[str, str]:
        at.run()
        assert not at.exception
        return {m.label: m.value for m in at.metric}

    wait_for(lambda: counts()["training"] != "0/2", 60, what=lambda: str(counts()), every=0.5)
    at.button(key="sweeps.stop").click().run()
    wait_for(lambda: counts().get("stopped") == "2/2", 60, what=lambda: str(counts()), every=0.5)
    with RunStore(home / "rdqn.db") as store:
        reasons = set(store.list_runs(group_id=sweep_id)["error"])
    assert reasons == {"stopped: by its owner on the Sweeps page"}

    def offered() -> bool:  # once the sweep's job has ended too (just after its trials)
        counts()
        return any(button.key == "sweeps.rest" for button in at.button)

    wait_for(offered, 30, what=lambda: str(counts()), every=0.5)
    assert at.button(key="sweeps.rest").label == "Run its 2 unfinished trials"
