"""earlyeval: predict how an agent run will end, and how much it will still cost, from its first steps."""

from .trajectory import Action, Step, Task, Trajectory

__version__ = "0.1.0"
__all__ = ["Action", "Step", "Task", "Trajectory", "__version__"]
