"""Moved to `harness.dashboard_server`, which the tests share; kept for the benchmarks' imports."""

from harness.dashboard_server import ROOT, free_port, start_dashboard

__all__ = ["ROOT", "free_port", "start_dashboard"]
