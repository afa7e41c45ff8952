"""`python -m rdqn ...`: see `rdqn.cli`."""

import sys

from rdqn.cli import main

if __name__ == "__main__":
    sys.exit(main())
