"""The browser that the benchmarks and the browser tests drive: Debian's Chromium, headless.

Playwright's own browser download is not available on these machines, so every launch uses
``executable_path=CHROMIUM`` with these flags; the last one sends every host name but
127.0.0.1 nowhere, so a page (or injected markup on it) cannot reach beyond this machine.
"""

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]
