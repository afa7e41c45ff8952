"""Tests for rdqn.dashboard.state: what a student is shown of a server-side message."""

from __future__ import annotations

from pathlib import Path

import pytest

from rdqn.dashboard.state import without_paths

HOME = Path("/srv/My Class/rdqn")


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (
            "the run store /srv/My Class/rdqn/rdqn.db is read-only: runs can be listed",
            "the run store $RDQN_HOME/rdqn.db is read-only: runs can be listed",
        ),
        (
            "checkpoint /srv/other class/a b/1.pt is damaged (digest mismatch); the run stays",
            "checkpoint [a path on the server] is damaged (digest mismatch); the run stays",
        ),
        ("cannot open '/opt/x y/c.db': no", "cannot open '[a path on the server]': no"),
        ("/tmp/x, then /usr/lib/a.so.", "[a path on the server], then [a path on the server]"),
        ("at /srv/x and more / here, 1/2", "at [a path on the server] and more / here, 1/2"),
        ("see $RDQN_HOME/rdqn.db", "see $RDQN_HOME/rdqn.db"),
    ],
)
def test_a_student_sees_no_server_path(text: str, shown: str) -> None:
    assert without_paths(text, HOME) == shown
