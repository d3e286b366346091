"""Adapters that put an earlyeval monitor into real agent loops.

Only :mod:`earlyeval.integrations.base` is imported here; each framework
adapter (``mini_swe_agent``, ``swe_agent``, ``openhands``, ``inspect_ai``) is a
submodule that imports its framework when it is itself imported, so
``import earlyeval`` never needs an optional framework.  See docs/integrations.md.
"""

from earlyeval.integrations.base import (
    PREDICTED_FAILURE,
    PREDICTED_SUCCESS,
    EarlyStopper,
    HaltedRun,
    StepMonitor,
    ToolCall,
    exit_status_for,
)

__all__ = [
    "PREDICTED_FAILURE",
    "PREDICTED_SUCCESS",
    "EarlyStopper",
    "HaltedRun",
    "StepMonitor",
    "ToolCall",
    "exit_status_for",
]
