"""Every exception class earlyeval defines sits under EarlyEvalError (one tree to catch), keeping the builtin
base it had (ValueError, RuntimeError, OSError) so that existing ``except ValueError`` callers still work."""

from __future__ import annotations

from _error_classes import FLOW_SIGNALS, exception_classes

from earlyeval.core.errors import EarlyEvalError


def test_every_exception_class_is_an_earlyeval_error():
    classes = exception_classes()
    assert len(classes) >= 15  # the walk reaches the modules that define them
    assert [
        c.__qualname__
        for c in classes
        if not issubclass(c, EarlyEvalError) and c.__qualname__ not in FLOW_SIGNALS
    ] == []


def test_the_builtin_bases_stay():
    from earlyeval.config.prices import PriceError
    from earlyeval.live.inputs import BadStep
    from earlyeval.model.lgbm_capi import LightGBMCError

    assert issubclass(PriceError, ValueError) and issubclass(BadStep, ValueError)
    assert issubclass(LightGBMCError, RuntimeError)


def test_an_error_crosses_a_process_boundary_intact():
    """A worker's ModelDirError (``--scheduler``) reaches the driver as itself: pickle rebuilds it from its fields
    (its ``__init__`` takes three, ``args`` holds one), so the verb prints its one line."""
    import pickle

    from earlyeval.core.errors import IngestError, ModelDirError

    for e in (
        ModelDirError("m/manifest.json", "manifest_hash", "changed"),
        IngestError("a.json", "steps", "empty"),
    ):
        back = pickle.loads(pickle.dumps(e))
        assert type(back) is type(e) and str(back) == str(e) and back.__dict__ == e.__dict__
