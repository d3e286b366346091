"""Core data model: trajectories, errors, rendering, decisions, atomic writes, JSON I/O (imports no other layer)."""
