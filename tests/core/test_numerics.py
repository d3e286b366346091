"""earlyeval.core.numerics computes scipy.special's expit and logit bit for bit in float64 (the live path uses it
to stay clear of scipy; offline code uses it too, so a report made before the swap is byte-identical after)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from earlyeval.core.numerics import expit, logit

EDGES = np.array([0.0, -0.0, 1e-300, -1e-300, 1e-17, 0.3, 0.65, 0.5, 1 - 1e-16, 1.0, 36.7, -36.7, 709.0, -709.0,
                  745.2, -745.2, 1e308, -1e308, np.inf, -np.inf, np.nan])


@pytest.mark.parametrize("scale", [0.1, 1.0, 8.0, 40.0, 800.0])
def test_expit_equals_scipy_bit_for_bit(scale):
    x = np.random.default_rng(int(scale * 10)).normal(0.0, scale, 400_000)
    x = np.concatenate([x, EDGES])
    assert expit(x).tobytes() == special.expit(x).tobytes()


def test_logit_equals_scipy_bit_for_bit_across_its_two_formulas():
    rng = np.random.default_rng(1)
    p = np.concatenate([rng.uniform(0, 1, 400_000), rng.uniform(0.29, 0.66, 100_000), special.expit(rng.normal(0, 15, 100_000)),
                        np.clip(EDGES, 0, 1), [-0.5, 1.5, np.nan]])
    with np.errstate(invalid="ignore", divide="ignore"):
        want = special.logit(p)
    assert logit(p).tobytes() == want.tobytes()


def test_scalars_stay_scalars_and_float32_is_computed_in_float64():
    assert isinstance(expit(0.25), np.float64) and expit(0.25) == special.expit(0.25)
    assert isinstance(logit(0.25), np.float64) and logit(0.25) == special.logit(0.25)
    x32 = np.array([0.7, -3.0], dtype=np.float32)
    assert expit(x32).dtype == np.float64 and expit(x32).tobytes() == special.expit(x32.astype(np.float64)).tobytes()
    assert expit(np.zeros((2, 3))).shape == (2, 3)
