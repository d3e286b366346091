"""earlyeval: predict how an agent run will end, and how much it will still cost, from its first steps."""

from typing import TYPE_CHECKING, Any

from earlyeval.core.decision import Decision
from earlyeval.core.errors import EarlyEvalError
from earlyeval.core.trajectory import Action, Step, Task, Trajectory
from earlyeval.core.version import __version__

if TYPE_CHECKING:  # pragma: no cover
    from earlyeval.config.monitor_config import MonitorConfig
    from earlyeval.ingest.one_run import read_run
    from earlyeval.integrations.base import EarlyStopper, ToolCall
    from earlyeval.live.benchpass import Pass
    from earlyeval.live.monitor import Monitor
    from earlyeval.workflows.score_api import score

__all__ = [
    "Action",
    "Decision",
    "EarlyEvalError",
    "EarlyStopper",
    "Monitor",
    "MonitorConfig",
    "Pass",
    "Step",
    "Task",
    "ToolCall",
    "Trajectory",
    "__version__",
    "read_run",
    "score",
]


def __getattr__(name: str) -> Any:
    # PEP 562: `import earlyeval` (and so every `import earlyeval.<module>`) stays free of the live stack;
    # the Monitor and what it loads are imported only when asked for
    if name == "Monitor":
        from earlyeval.live.monitor import Monitor

        return Monitor
    if name == "MonitorConfig":  # a Monitor's settings, as one checked record
        from earlyeval.config.monitor_config import MonitorConfig

        return MonitorConfig
    if name == "Pass":  # a benchmark pass of one agent (docs/monitor.md)
        from earlyeval.live.benchpass import Pass

        return Pass
    if name in (
        "EarlyStopper",
        "ToolCall",
    ):  # the agent-loop hook: earlyeval.integrations, imported when asked for
        from earlyeval.integrations import base

        return getattr(base, name)
    # one run file as a Trajectory (the ingest readers: no pyarrow, no model)
    if name == "read_run":
        from earlyeval.ingest.one_run import read_run

        return read_run
    if (
        name == "score"
    ):  # the batch entry point: a DataFrame of the runs (pulls in the offline stack)
        from earlyeval.workflows.score_api import score

        return score
    raise AttributeError(f"module 'earlyeval' has no attribute {name!r}")
