"""AppTest of the "One update by hand" page: defaults, edits, sliders, the row's arithmetic, errors.

Targets of the default example (gamma 0.99): 1 + .99 * 2.5 = 3.475, 1 (row 2 is terminal),
0 + .99 * 1 = 0.99 and -1 + .99 * 0.2 = -0.802.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from rdqn.dashboard.text import plain

APP = Path(__file__).resolve().parents[2] / "app.py"
TARGETS = [3.475, 1.0, 0.99, -0.802]


@pytest.fixture
def at() -> AppTest:
    """The whole app (private RDQN_HOME from conftest), switched to the One update by hand page."""
    app = AppTest.from_file(str(APP), default_timeout=30)
    app.run()
    assert not app.exception
    app.switch_page("pages/by_hand.py")
    app.run()
    assert not app.exception
    return app


def results(at: AppTest) -> pd.DataFrame:
    """The step-by-step table (the one rendered dataframe with a `target` column)."""
    frames = [f.value for f in at.dataframe if "target" in f.value.columns]
    assert len(frames) == 1, f"expected one results table, got {len(frames)}"
    return frames[0]


def latex(at: AppTest) -> list[str]:
    return [element.value for element in at.latex]


def edit(at: AppTest, row: int, column: str, value: object) -> None:
    """Change one input cell, as an edit in the table would, and rerun."""
    base = at.session_state["hand.base"].astype({column: object})
    base.loc[row, column] = value
    at.session_state["hand.base"] = base
    at.run()


def test_defaults_render(at: AppTest) -> None:
    assert at.title[0].value == "One update by hand"
    assert not at.error
    table = results(at)
    np.testing.assert_allclose(table["target"], TARGETS)
    np.testing.assert_allclose(table["td_error"], [1.475, 0.5, -0.21, -1.602])
    assert at.metric[0].value == "0.446"  # tables and the loss: 3 decimals
    (bars,) = [json.loads(chart.proto.spec)["data"] for chart in at.get("plotly_chart")]
    assert [trace["name"] for trace in bars] == ["P(i)", "IS weight wᵢ"]
    np.testing.assert_allclose(_array(bars[0]["y"]), table["probability"])  # the table's numbers
    np.testing.assert_allclose(_array(bars[1]["y"]), table["weight"])
    # Row 2 (the terminal one) is shown by default, with its numbers substituted.
    assert any(r"y_{2} = 1 + 0.99 \times (1 - 1) \times 3 = 1" in text for text in latex(at))
    assert any(r"\delta_{2} = 1 - 0.5 = 0.5" in text for text in latex(at))


def _array(encoded: dict) -> np.ndarray:
    """A NumPy array as plotly's JSON carries it: base64 bytes and a dtype."""
    return np.frombuffer(base64.b64decode(encoded["bdata"]), dtype=encoded["dtype"])


def test_editing_a_reward_changes_the_target(at: AppTest) -> None:
    edit(at, 1, "reward", 2.0)
    assert not at.exception
    np.testing.assert_allclose(results(at)["target"], [2.0 + 0.99 * 2.5, *TARGETS[1:]])
    edit(at, 2, "reward", 5.0)
    assert results(at).loc[2, "target"] == pytest.approx(5.0)
    assert any(r"y_{2} = 5 + 0.99 \times (1 - 1) \times 3 = 5" in text for text in latex(at))


def test_terminated_drops_the_bootstrap_term(at: AppTest) -> None:
    edit(at, 1, "terminated", True)
    assert results(at).loc[1, "target"] == pytest.approx(1.0)
    edit(at, 2, "terminated", False)
    assert results(at).loc[2, "target"] == pytest.approx(1.0 + 0.99 * 3.0)


def test_sliders_and_loss_choice(at: AppTest) -> None:
    at.slider(key="hand.alpha").set_value(0.0).run()
    at.slider(key="hand.beta").set_value(1.0).run()
    table = results(at)
    np.testing.assert_allclose(table["probability"], [0.25] * 4)
    np.testing.assert_allclose(table["weight"], [1.0] * 4)

    at.slider(key="hand.gamma").set_value(0.5).run()
    assert results(at).loc[1, "target"] == pytest.approx(1.0 + 0.5 * 2.5)

    at.radio(key="hand.loss").set_value("mse").run()
    table = results(at)
    np.testing.assert_allclose(table["loss"], table["td_error"] ** 2)


def test_choosing_a_row_shows_its_arithmetic(at: AppTest) -> None:
    at.segmented_control(key="hand.row").set_value(4).run()
    assert not at.exception
    texts = latex(at)
    assert any(r"y_{4} = -1 + 0.99 \times (1 - 0) \times 0.2 = -0.802" in t for t in texts)
    assert any(r"L_{4} = 1.602 - 0.5 = 1.102" in t for t in texts)


def test_a_bad_cell_shows_an_error_not_an_exception(at: AppTest) -> None:
    edit(at, 2, "reward", "abc")
    assert not at.exception
    assert len(at.error) == 1
    assert plain("row 2, reward: 'abc' is not a number") in at.error[0].value
    assert not [f for f in at.dataframe if "target" in f.value.columns]

    edit(at, 2, "reward", None)
    assert not at.exception
    assert plain("row 2, reward: an empty cell is not a number") in at.error[0].value


def test_reset_restores_the_default_table(at: AppTest) -> None:
    edit(at, 3, "q", "oops")
    assert at.error
    at.button(key="hand.reset").click().run()
    assert not at.error
    np.testing.assert_allclose(results(at)["target"], TARGETS)


def test_settings_survive_a_visit_to_another_page(at: AppTest) -> None:
    at.slider(key="hand.alpha").set_value(0.0).run()
    edit(at, 1, "reward", 2.0)
    at.switch_page("pages/home.py").run()
    at.switch_page("pages/by_hand.py").run()
    assert not at.exception
    assert at.slider(key="hand.alpha").value == 0.0
    table = results(at)
    np.testing.assert_allclose(table["probability"], [0.25] * 4)
    assert table.loc[1, "target"] == pytest.approx(2.0 + 0.99 * 2.5)
