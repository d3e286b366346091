"""Tolerances for comparing two implementations of one number (tests/README.md, "Tests that hold on every CPU").

Two code paths that compute the same value (LightGBM's single-row C entry point and ``Booster.predict``; a
stacked K-class booster and K separate ones; a gather-then-gemv and a gemv over a gathered view) may sum in
another order or through another SIMD/BLAS kernel on another CPU, so they are compared within a bound, never
bit for bit.  1e-12 is a few thousand ulp of the O(1) margins and projections compared here, far above any
reordering error of a few hundred float64 terms, and far below ``MARGIN`` = 1e-6, the least distance between a
fitted threshold and a per-run maximum: no halt decision can hinge on it.
"""

from __future__ import annotations

import numpy as np

RTOL = 1e-12
ATOL = 1e-12


def assert_same_number(got, want) -> None:
    """``got`` and ``want`` agree within RTOL / ATOL, with NaN in the same places."""
    np.testing.assert_allclose(
        np.asarray(got, dtype=np.float64),
        np.asarray(want, dtype=np.float64),
        rtol=RTOL,
        atol=ATOL,
        equal_nan=True,
    )
