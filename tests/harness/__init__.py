"""What the tests and the benchmarks drive the dashboard with, from the outside.

    cached_references  the references to cached elements a tab receives, and those that page
                       runs send into a fragment's part of the page
    dashboard_server   `streamlit run app.py` on a free port of 127.0.0.1, ready once it
                       answers its health check
    chromium           the browser they drive: Debian's Chromium, headless, loopback only
    live_page          what the live page shows: the run its status line names
    streamlit_client   a browser without a browser: one Streamlit session over the server's
                       WebSocket, drawing nothing (load measurements; exact replayed messages)

Shared by `tests/` and `benchmarks/`, so that neither imports the other. Not part of the `rdqn`
package (the wheel holds `rdqn` and `dashboard` only): it runs from a checkout.
"""
