#!/usr/bin/env bash
# Creates the SB3 venv (.venv-sb3 at the repository root) that bench_whole_loop.py runs
# Stable-Baselines3's DQN in, then trains it for a few hundred steps as a check.
# Usage: bash benchmarks/peers/setup_sb3.sh      (PYTHON=python3.11 to choose the interpreter)
set -euo pipefail
cd "$(dirname "$0")/../.."

PYTHON="${PYTHON:-python3}"
VENV=.venv-sb3

if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --disable-pip-version-check -q \
    --extra-index-url https://download.pytorch.org/whl/cpu -r benchmarks/peers/requirements-sb3.txt
"$VENV/bin/python" -m benchmarks.peers.sb3_dqn --seed 0 --steps 300 > /dev/null
echo "SB3 venv ready: python -m benchmarks.bench_whole_loop now runs SB3's DQN beside rdqn"
