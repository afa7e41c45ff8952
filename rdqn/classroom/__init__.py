"""Classroom examples computed by the core: a sum tree drawn node by node (`tree_demo`) and one
prioritized DQN update worked by hand (`worked_example`)."""
