"""Replay peers: the cycle protocol, NumPy references, and the peer-venv driver."""
