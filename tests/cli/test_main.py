"""rdqn.cli.main: a Ctrl-C before any command began, while the parser is built (it imports the
experiments: the longest moment of a refused command), exits 130 in one line; `rdqn.cli.run`
ends by os._exit, its output flushed, where a local Ray's start given up on still runs."""

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


@pytest.mark.parametrize(("given_up", "status"), [(True, 1), (False, 1), (True, 0)])
def test_a_ray_start_given_up_ends_the_process_at_once_with_its_status(
    monkeypatch: pytest.MonkeyPatch, given_up: bool, status: int
) -> None:
    """Ray's exit handler and the interpreter's end ran beside a ``ray.init`` still in Ray's
    C++ (SIGSEGV after the sweep's last line, 2 of 34 raylets killed as Ray started)."""
    ended: list[tuple[str, int]] = []
    monkeypatch.setattr(cli, "main", lambda prog: status)
    monkeypatch.setattr(cli, "start_given_up", lambda: given_up)
    monkeypatch.setattr(cli.os, "_exit", lambda code: ended.append(("_exit", code)))
    with pytest.raises(SystemExit) as done:  # os._exit, stubbed, returns: sys.exit follows
        cli.run()
    assert done.value.code == status
    assert ended == ([("_exit", status)] if given_up else [])
