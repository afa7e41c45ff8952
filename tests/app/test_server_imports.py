"""The web server never imports torch: pages, figures and the tree and by-hand examples need
numpy (and the compiled replay kernels at most); runs train in worker processes that do.

A fresh interpreter (this test process imported torch long ago) opens every page, starts the
demo and draws its live page until the run's first snapshot arrives, then reports what it holds;
another resumes stopped runs, one of them with an edited checkpoint, which its worker refuses.
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


def report_of(script: str, home: Path, *args: str) -> dict:
    """Run ``script`` in a fresh interpreter (this test process imported torch long ago), its
    runs in worker processes and its store in ``home``, with ``args`` (``sys.argv[1:]``); return
    the JSON its last line prints."""
    env = {**os.environ, "RDQN_HOME": str(home), "RDQN_EXECUTOR": "process"}
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
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


_RESUME = r"""
import json, sys

from rdqn.runs.store import RunStore, default_home
from rdqn.serve.executors import executor_from_env
from rdqn.serve.registry import RunRegistry

good, edited = sys.argv[1:]
store = RunStore(default_home() / "rdqn.db")
registry = RunRegistry(store, executor=executor_from_env(), idle_timeout=None)
before = store.get_run(edited)
resumed = registry.resume(good, queue=True)
refused = registry.resume(edited, queue=True)
ended = resumed.join(240) and refused.join(240)
unchanged = store.get_run(edited) == before
registry.shutdown()
print(json.dumps({"ended": ended, "resumed": resumed.status, "refused": refused.error,
                  "unchanged": unchanged, "torch": "torch" in sys.modules}))
"""


@pytest.mark.slow
def test_resuming_a_run_does_not_import_torch_in_the_server(tmp_path: Path) -> None:
    """A server's first Resume used to load torch (and the kernels) to restore the checkpoint
    into a throwaway trainer. The server checks what it can without them (`rdqn.runs.resume.
    resume_point`); the run's worker checks the rest before it takes the run, and refuses an
    edited checkpoint in the same one line as the command line, the run left as it was."""
    from rdqn.runs.checkpoints import load_checkpoint, save_checkpoint
    from rdqn.runs.lifecycle import RecordedRun
    from rdqn.runs.store import RunStore
    from tests.run_helpers import tiny

    with RunStore(tmp_path / "rdqn.db") as store:
        ids = []
        for _ in range(2):
            run = RecordedRun(tiny(400), store)
            run.open().run(steps=150)
            run.close("stopped", "stopped by its owner")
            ids.append(run.id)
        path = Path(store.get_run(ids[1]).checkpoint_path)
    state = load_checkpoint(path)
    weights = state["agent"]["online"]
    weights[next(iter(weights))].view(-1)[0] = float("nan")
    save_checkpoint(state, path)

    report = report_of(_RESUME, tmp_path, *ids)

    assert report["ended"] and report["resumed"] == "finished"
    assert report["refused"].startswith(f"cannot resume run {ids[1]}: checkpoint {path} is ")
    assert "must be finite" in report["refused"]
    assert report["unchanged"]
    assert not report["torch"], "the server imported torch"
