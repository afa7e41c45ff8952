"""rdqn: prioritized experience replay for deep Q-learning, as a library and a dashboard."""

__version__ = "0.1.0"
