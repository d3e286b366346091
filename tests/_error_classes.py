"""Every exception class earlyeval defines, found by importing each module (tests/core/test_error_tree.py holds them
to one tree; tests/test_api_reference.py holds the reference's Errors page to showing each)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import earlyeval

# modules that import an optional framework at import time (tested where it is installed)
OPTIONAL = ("earlyeval.integrations.", "earlyeval.scale.")
# not errors: the signals that end a mini-swe-agent run, which must be that framework's own InterruptAgentFlow
FLOW_SIGNALS = {"PredictedOutcome", "PredictedFailure", "PredictedSuccess"}


def exception_classes() -> list[type]:
    out = []
    for m in pkgutil.walk_packages(earlyeval.__path__, "earlyeval."):
        try:
            mod = importlib.import_module(m.name)
        except ImportError:
            assert m.name.startswith(OPTIONAL), m.name
            continue
        out += [
            c
            for c in vars(mod).values()
            if inspect.isclass(c) and issubclass(c, BaseException) and c.__module__ == mod.__name__
        ]
    return out
