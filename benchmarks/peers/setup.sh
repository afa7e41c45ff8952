#!/usr/bin/env bash
# Creates the peer venv (.venv-peers at the repository root) that bench_replay.py uses for TorchRL,
# tianshou and cpprb, then checks every peer adapter against the NumPy oracle.
# Separate from the main environment (torch 2.14.1 there vs the project's 2.13.0); about 6 GB.
# Usage: bash benchmarks/peers/setup.sh      (PYTHON=python3.11 to choose the interpreter)
set -euo pipefail
cd "$(dirname "$0")/../.."

PYTHON="${PYTHON:-python3}"
VENV=.venv-peers

if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --disable-pip-version-check -q -r benchmarks/peers/requirements.txt
"$VENV/bin/python" -m benchmarks.peers.driver --check
echo "peer venv ready: python -m benchmarks.bench_replay now measures the peers beside rdqn"
