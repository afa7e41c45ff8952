"""`python -m rdqn ...`, the same as the installed `rdqn` command: see `rdqn.cli`."""

import sys

from rdqn.cli import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m rdqn"))
