"""rdqn.cli.main: a Ctrl-C before any command began, while the parser is built (it imports the
experiments: the longest moment of a refused command), exits 130 in one line."""

from __future__ import annotations

import pytest

import rdqn.cli as cli


def test_ctrl_c_while_the_parser_is_built_exits_130_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """It escaped as a traceback (1 in 26 random SIGINTs at start-up)."""

    def interrupted(prog: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "cached_parser", interrupted)
    assert cli.main(["presets"]) == 130
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("rdqn: interrupted")
    assert captured.err.count("\n") == 1
