"""The web server never imports torch: pages, figures and the tree and by-hand examples need
numpy (and the compiled replay kernels at most); runs train in worker processes that do.

A fresh interpreter (this test process imported torch long ago) opens every page, starts the
demo and draws its live page until the run's first snapshot arrives, then reports what it holds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_SERVE_EVERY_PAGE = r"""
import json, sys
from pathlib import Path
from streamlit.testing.v1 import AppTest

from rdqn.dashboard.state import registry
from tests.run_helpers import wait_for

at = AppTest.from_file("app.py", default_timeout=120)
at.run()
failures = []
for page in sorted(Path("pages").glob("*.py")):
    at.switch_page(str(page)).run()
    if at.exception:
        failures.append(f"{page}: {at.exception[0].message}")
at.switch_page("pages/home.py").run()
at.button(key="home.demo").click().run()
run_id = at.session_state["live.run_id"]
handle = registry().get(run_id)


def shown() -> bool:
    at.run()
    return handle.snapshot() is not None


wait_for(shown, 120, what="the demo's run sent no snapshot to the page", every=0.2)
registry().shutdown()
print(json.dumps({"failures": failures, "torch": "torch" in sys.modules}))
"""


def report_of(script: str, home: Path) -> dict:
    """Run ``script`` in a fresh interpreter (this test process imported torch long ago), its
    runs in worker processes and its store in ``home``; return the JSON its last line prints."""
    env = {**os.environ, "RDQN_HOME": str(home), "RDQN_EXECUTOR": "process"}
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_serving_every_page_and_a_run_does_not_import_torch(tmp_path: Path) -> None:
    report = report_of(_SERVE_EVERY_PAGE, tmp_path)
    assert report["failures"] == []
    assert not report["torch"], "the server imported torch"


_SERVE_HOME = r"""
import json, sys
from streamlit.testing.v1 import AppTest

from rdqn.dashboard.state import registry

at = AppTest.from_file("app.py", default_timeout=120)
at.run()
heavy = ("torch", "numba", "scipy")
loaded = [name for name in heavy if name in sys.modules]
registry().shutdown()
print(json.dumps({"exception": [e.message for e in at.exception], "loaded": loaded}))
"""


@pytest.mark.slow
def test_home_loads_no_torch_numba_or_scipy(tmp_path: Path) -> None:
    """A fresh server's first page, Home, needs none of them (they load with the pages and the
    runs that use them): each would cost the teacher waiting for Home a second or more."""
    assert report_of(_SERVE_HOME, tmp_path) == {"exception": [], "loaded": []}


_SERVER_START = r"""
import json, sys

import app  # as `streamlit run app.py` imports it: it starts the worker zygote
from rdqn.serve.executors import close_early

loaded = [name for name in ("pandas", "gymnasium", "torch", "numba") if name in sys.modules]
close_early()
print(json.dumps({"loaded": loaded}))
"""


@pytest.mark.slow
def test_the_server_starts_the_zygote_before_it_loads_pandas_or_gymnasium(tmp_path: Path) -> None:
    """`streamlit run` answers no request until it has imported app.py, which starts the worker
    zygote (`prepare_early`): that import loads neither the run store's pandas nor the config's
    gymnasium (about 0.3 s here, before the zygote could start); the first page run does."""
    assert report_of(_SERVER_START, tmp_path) == {"loaded": []}


_START_DEMO = r"""
import json, sys
from streamlit.testing.v1 import AppTest

from rdqn.dashboard.state import registry

at = AppTest.from_file("app.py", default_timeout=120)
at.run()
at.button(key="home.demo").click().run()
launched = registry().get(at.session_state["live.run_id"]) is not None
loaded = [name for name in ("torch", "numba", "scipy") if name in sys.modules]
registry().shutdown()
print(json.dumps({"exception": [e.message for e in at.exception], "launched": launched,
                  "loaded": loaded}))
"""


@pytest.mark.slow
def test_start_demo_loads_no_kernels_in_the_server(tmp_path: Path) -> None:
    """Home's *Start demo* checks the run's settings against the server's limits, its memory
    among them (`rdqn.replay.sizes`: arithmetic), and hands the run to a worker; the live page
    it opens draws the run. Loading the replay kernels' modules (numba, and SciPy through it)
    would add half a second to the first click on a fresh server."""
    report = report_of(_START_DEMO, tmp_path)
    assert report == {"exception": [], "launched": True, "loaded": []}
