"""Every exception class earlyeval defines sits under EarlyEvalError (one tree to catch), keeping the builtin
base it had (ValueError, RuntimeError, OSError) so that existing ``except ValueError`` callers still work."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import earlyeval
from earlyeval.core.errors import EarlyEvalError

# modules that import an optional framework at import time (tested where it is installed)
OPTIONAL = ("earlyeval.integrations.", "earlyeval.scale.")
# not errors: the signals that end a mini-swe-agent run, which must be that framework's own InterruptAgentFlow
FLOW_SIGNALS = {"PredictedOutcome", "PredictedFailure", "PredictedSuccess"}


def _exception_classes() -> list[type]:
    out = []
    for m in pkgutil.walk_packages(earlyeval.__path__, "earlyeval."):
        try:
            mod = importlib.import_module(m.name)
        except ImportError:
            assert m.name.startswith(OPTIONAL), m.name
            continue
        out += [c for c in vars(mod).values()
                if inspect.isclass(c) and issubclass(c, BaseException) and c.__module__ == mod.__name__]
    return out


def test_every_exception_class_is_an_earlyeval_error():
    classes = _exception_classes()
    assert len(classes) >= 15  # the walk reaches the modules that define them
    assert [c.__qualname__ for c in classes if not issubclass(c, EarlyEvalError) and c.__qualname__ not in FLOW_SIGNALS] == []


def test_the_builtin_bases_stay():
    from earlyeval.config.prices import PriceError
    from earlyeval.live.inputs import BadStep
    from earlyeval.modeling.lgbm_capi import LightGBMCError

    assert issubclass(PriceError, ValueError) and issubclass(BadStep, ValueError)
    assert issubclass(LightGBMCError, RuntimeError)
