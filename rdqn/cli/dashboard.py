"""``rdqn dashboard``: serve the Streamlit app on a port, as ``tensorboard --logdir`` or
``mlflow ui`` do.

    rdqn dashboard                                   # http://127.0.0.1:8501, store in ./.rdqn
    rdqn dashboard --home /srv/class --address 0.0.0.0 --port 8080   # a class on the LAN

The app is the one a checkout serves with ``streamlit run app.py``; an installed wheel carries a
copy of it (`rdqn.dashboard.assets.APP_ROOT`). The command checks its options, then becomes the
Streamlit server (the process is replaced, so Ctrl-C and SIGTERM reach the server itself), started
in the app's folder so that the app's ``.streamlit/config.toml`` applies; the run store's folder is
resolved first, so a relative ``--home`` means the folder the command was started in.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path
from typing import Any

from rdqn.cli.usage import UsageError
from rdqn.runs.store import default_home

__all__ = ["add_dashboard_parser", "cmd_dashboard", "server_command"]

EPILOG = """environment:
  RDQN_ADMIN_TOKEN   the teacher's admin token (at least 16 characters; docs/classroom.md)
  RDQN_MAX_RUNS      runs that train at once, more wait in a queue (default: the cores but one)
  RDQN_LIMIT_*       the server's limits on a run's settings (docs/classroom.md)"""


def add_dashboard_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "dashboard",
        help="serve the dashboard (Streamlit) on a port",
        description="Serve the dashboard: Home, the live page, lessons, sweeps, saved runs.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--home",
        default=argparse.SUPPRESS,  # the top-level --home stands unless this one is given
        help="run store folder (default: $RDQN_HOME or ./.rdqn)",
    )
    parser.add_argument("--port", type=int, default=8501, help="port (default 8501)")
    parser.add_argument(
        "--address",
        default="127.0.0.1",
        help="address to serve on (default 127.0.0.1, this machine only; 0.0.0.0 for a LAN)",
    )


def server_command(app_root: Path, port: int, address: str) -> list[str]:
    """The Streamlit server's command line for the app in ``app_root``."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app_root / "app.py"),
        "--server.port",
        str(port),
        "--server.address",
        address,
    ]


def _check_address(address: str, port: int) -> None:
    """Refuse, in one line, a port out of range or an address and port the server could not
    bind (a name that does not resolve, an address of another machine, a port in use)."""
    if not 1 <= port <= 65535:
        raise UsageError(f"--port must be between 1 and 65535, got {port}")
    try:
        family = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM)[0][0]
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((address, port))
    except OSError as err:
        raise UsageError(f"cannot serve on {address}:{port}: {err.strerror or err}") from None


def cmd_dashboard(args: argparse.Namespace) -> int:
    """Check the options, then replace this process with the Streamlit server."""
    from rdqn.dashboard.admin import ADMIN_TOKEN_ENV, MIN_TOKEN_CHARS, token_too_short
    from rdqn.dashboard.assets import APP_ROOT

    _check_address(args.address, args.port)
    if token_too_short():
        print(
            f"rdqn: warning: {ADMIN_TOKEN_ENV} has fewer than {MIN_TOKEN_CHARS} characters: "
            "the admin stays off (docs/classroom.md makes one)",
            file=sys.stderr,
        )
    home = (Path(args.home) if args.home else default_home()).expanduser().resolve()
    if home.exists() and not home.is_dir():
        raise UsageError(f"--home {home} is a file, not a folder")
    env = {**os.environ, "RDQN_HOME": str(home)}
    print(f"rdqn: serving the dashboard on http://{args.address}:{args.port} (store: {home})")
    sys.stdout.flush()
    command = server_command(APP_ROOT, args.port, args.address)
    os.chdir(APP_ROOT)
    os.execve(command[0], command, env)
    return 0  # not reached: the server took over the process
