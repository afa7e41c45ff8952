"""Moved to `harness.chromium`, which the tests share; kept for the benchmarks' imports."""

from harness.chromium import CHROMIUM, CHROMIUM_ARGS

__all__ = ["CHROMIUM", "CHROMIUM_ARGS"]
