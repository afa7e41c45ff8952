"""`python -m rdqn ...`, the same as the installed `rdqn` command: see `rdqn.cli`."""

import sys

if __name__ == "__main__":
    try:
        from rdqn.cli import run
    except KeyboardInterrupt:  # Ctrl-C while Python loads the command: nothing has started
        print("rdqn: interrupted", file=sys.stderr)
        sys.exit(130)
    run(prog="python -m rdqn")
