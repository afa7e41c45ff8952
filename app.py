"""rdqn dashboard: `streamlit run app.py`.

Streamlit runs this file twice over, in two roles:

- **The server** (`app`): `streamlit run` finds an `st.App` here and serves it, with
  `PresenceMiddleware` in front, which notes each browser's requests and connections
  (`rdqn.dashboard.classroom.presence`): a browser reloading faster than its page can run is still
  there, and keeps its runs; `EndedConnectionMiddleware` logs in one line, not as a
  traceback, the error Streamlit raises when a browser goes away while it writes to it. The
  worker zygote starts warming up at once (`prepare_early`). When the server shuts down, it
  stops the runs.
- **The page frame** (`frame`, on every page run): page config, navigation over `pages/`, the
  one state initializer, then the page.
"""

import asyncio
import sqlite3
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, nullcontext
from pathlib import Path

import streamlit as st


def frame() -> None:
    """One page run. The navigation goes out before the dashboard is imported: a server's first
    page run spends several seconds importing it, and until the navigation arrives the browser
    lists Streamlit's guess at the pages (the files' names, "app" first) over a blank page."""
    st.set_page_config(
        page_title="rdqn · prioritized replay explorer",
        page_icon=str(Path(__file__).parent / "assets" / "favicon.png"),
        layout="wide",
    )
    pages = {
        "Learn": [
            st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
            st.Page("pages/live.py", title="Live training", icon=":material/monitoring:"),
            st.Page("pages/internals.py", title="Replay internals", icon=":material/insights:"),
            st.Page("pages/sum_tree.py", title="Sum tree", icon=":material/account_tree:"),
            st.Page("pages/by_hand.py", title="One update by hand", icon=":material/calculate:"),
        ],
        "Study": [
            st.Page("pages/compare.py", title="Compare schemes", icon=":material/compare_arrows:"),
            st.Page("pages/runs.py", title="Saved runs", icon=":material/history:"),
            st.Page("pages/experiments.py", title="Experiments", icon=":material/science:"),
            st.Page("pages/sweeps.py", title="Sweeps", icon=":material/grid_on:"),
        ],
    }
    from rdqn.dashboard.admin import is_admin  # light: no pandas, no Plotly

    if is_admin():
        pages["Teach"] = [
            st.Page("pages/console.py", title="Teacher's console", icon=":material/groups:")
        ]
    navigation = st.navigation(pages)

    # The server's first page run imports the dashboard (and with it pandas and Plotly); later
    # runs find them imported. pandas must not load lazily later: Plotly takes it from
    # sys.modules without the import lock, and another session's figure would then meet a
    # half-imported pandas.
    first_run = "rdqn.dashboard.state" not in sys.modules
    with st.spinner("Starting the dashboard (once)…") if first_run else nullcontext():
        from rdqn.dashboard.display import projector_toggle
        from rdqn.dashboard.fragments import page_run
        from rdqn.dashboard.state import init_state, keep_session_runs_alive, session, store_failed
        from rdqn.runs.store import StoreError

    init_state()  # first: a page the store stops (session() opens it) still finds its keys
    session()
    with page_run():  # its fragments' charts go whole (rdqn.dashboard.fragments)
        keep_session_runs_alive()
        st.session_state["app.frame"] = True
        projector_toggle()
        try:
            navigation.run()
        except (StoreError, sqlite3.DatabaseError) as err:  # the store failed mid-page
            store_failed(err)


if __name__ == "__main__":  # a page run (Streamlit runs the script as __main__)
    frame()
else:  # `streamlit run app.py` imports this file for its server
    from starlette.middleware import Middleware

    from rdqn.dashboard.classroom.presence import PresenceMiddleware
    from rdqn.dashboard.connections import EndedConnectionMiddleware
    from rdqn.serve.executors import close_early, prepare_early

    prepare_early()  # the zygote warms up while the first page is served

    @asynccontextmanager
    async def _stop_runs_at_exit(_: object) -> AsyncIterator[None]:
        """When the server shuts down, stop its runs ("stopped: the server shut down"): on
        SIGTERM the server ends without the interpreter's exit functions."""
        yield
        serving = sys.modules.get("rdqn.serve.registry")  # None: no page ever ran
        if serving is not None:
            await asyncio.to_thread(serving.shutdown_all)
        close_early()  # the zygote started for a first run that never came

    app = st.App(
        "app.py",
        middleware=[Middleware(PresenceMiddleware), Middleware(EndedConnectionMiddleware)],
        lifespan=_stop_runs_at_exit,
    )
