"""The logistic function and its inverse in numpy, so that the live path need not import scipy (about 0.3 s
and 60 modules a process).  They compute what ``scipy.special.expit`` / ``logit`` compute, by the same
formulas in float64 (every input is widened first), within 4 ulp of scipy's (``tests/core/test_numerics.py``:
numpy may dispatch its own SIMD exp / log, so not bit for bit on every CPU); offline code uses them too, so
the live and offline probabilities stay one function."""

from __future__ import annotations

from typing import Any

import numpy as np


def expit(x: Any) -> Any:
    """1 / (1 + exp(-x)), elementwise in float64; exp overflowing to inf gives 0, as in scipy."""
    with np.errstate(over="ignore"):
        out = 1 / (1 + np.exp(-np.asarray(x, dtype=np.float64)))
    return out[()] if out.ndim == 0 else out


def logit(p: Any) -> Any:
    """log(p / (1 - p)), and near p = 1/2 log1p(2(p - 1/2)) - log1p(-2(p - 1/2)) (scipy's precise form)."""
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = 2 * (p - 0.5)
        out = np.where((p < 0.3) | (p > 0.65), np.log(p / (1 - p)), np.log1p(s) - np.log1p(-s))
    return out[()] if out.ndim == 0 else out
