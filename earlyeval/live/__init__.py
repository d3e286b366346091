"""The runtime: the Monitor that decides after each step of a live run, the cleaning of what an adapter hands
it, the replay of finished runs through it, and the live budget intervals.  It imports only the layers below
it (core, config, tables, features, model), never fitting, the budget maths, the offline evaluation or the reports."""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from earlyeval.live.monitor import Monitor

__all__ = ["Monitor"]


def __getattr__(name: str) -> Any:
    # PEP 562: `import earlyeval.live.remaining_budget` (or .inputs) does not load the Monitor and its model code
    if name == "Monitor":
        from earlyeval.live.monitor import Monitor

        return Monitor
    raise AttributeError(f"module 'earlyeval.live' has no attribute {name!r}")
