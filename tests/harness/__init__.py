"""What the tests and the benchmarks drive the dashboard with, from the outside.

    cached_references  the references to cached elements a tab receives, and those that page
                       runs send into a fragment's part of the page
    dashboard_server   `streamlit run app.py` on a free port of 127.0.0.1, ready once it
                       answers its health check
    chromium           the browser they drive: Debian's Chromium, headless, loopback only
    live_page          what the live page shows: the run its status line names
    streamlit_client   a browser without a browser: one Streamlit session over the server's
                       WebSocket, drawing nothing (load measurements; exact replayed messages)

Shared by the tests and `benchmarks/`, which import it from here and nothing else of
`tests/`. Not part of the wheel, which holds the `rdqn` package only (the app included, as
`rdqn/dashboard/app`): the harness runs from a checkout.
"""
