"""earlyeval.core.numerics computes scipy.special's expit and logit by the same formulas, in float64 (the live
path uses it to stay clear of scipy).

The comparison with scipy is within ``MAX_ULP``, not bit for bit: numpy dispatches its own SIMD ``exp`` /
``log`` where the CPU has them (AVX-512: ``X86_V4``, ``AVX512_ICL``) and scipy calls the C library's, so the two
may differ in the last places on one CPU and agree on another.  Each is within a few ulp of the exact value and
the logistic does not amplify the relative error of ``exp`` (its factor is below 1), nor ``log`` away from
logit = 0 (the precise log1p form takes 0.3 <= p <= 0.65), so 4 ulp bounds the pair.  Bit-equality is kept
only for the same code on the same input (a scalar against its own array element).  The thresholds a monitor
compares these probabilities with sit at least ``MARGIN`` = 1e-6 from every fitted maximum (tests/README.md),
many orders above 4 ulp.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from earlyeval.core.numerics import expit, logit

MAX_ULP = 4
EDGES = np.array(
    [
        0.0,
        -0.0,
        1e-300,
        -1e-300,
        1e-17,
        0.3,
        0.65,
        0.5,
        1 - 1e-16,
        1.0,
        36.7,
        -36.7,
        709.0,
        -709.0,
        745.2,
        -745.2,
        1e308,
        -1e308,
        np.inf,
        -np.inf,
        np.nan,
    ]
)


def _logit_inputs() -> np.ndarray:
    rng = np.random.default_rng(1)
    return np.concatenate(
        [
            rng.uniform(0, 1, 400_000),
            rng.uniform(0.29, 0.66, 100_000),
            special.expit(rng.normal(0, 15, 100_000)),
            np.clip(EDGES, 0, 1),
            [-0.5, 1.5, np.nan],
        ]
    )


def assert_close(got: np.ndarray, want: np.ndarray) -> None:
    """Within a stated bound of scipy's, never bit for bit: a relative MAX_ULP * eps (NaN where scipy's is NaN,
    infinities equal; an underflow may be 0 on one side and a subnormal on the other, within the absolute floor),
    and every value within MAX_ULP units in the last place."""
    assert got.dtype == want.dtype == np.float64 and got.shape == want.shape
    np.testing.assert_allclose(
        got,
        want,
        rtol=MAX_ULP * np.finfo(np.float64).eps,
        atol=np.finfo(np.float64).tiny,
        equal_nan=True,
    )
    np.testing.assert_array_max_ulp(got, want, maxulp=MAX_ULP)


@pytest.mark.parametrize("scale", [0.1, 1.0, 8.0, 40.0, 800.0])
def test_expit_equals_scipy_within_4_ulp(scale):
    x = np.random.default_rng(int(scale * 10)).normal(0.0, scale, 400_000)
    x = np.concatenate([x, EDGES])
    assert_close(expit(x), special.expit(x))


def test_logit_equals_scipy_within_4_ulp_across_its_two_formulas():
    p = _logit_inputs()
    with np.errstate(invalid="ignore", divide="ignore"):
        want = special.logit(p)
    assert_close(logit(p), want)


def test_the_ulp_check_fails_on_a_wrong_formula():
    """The bound is tight enough to catch a real error: the plain log(p / (1 - p)) near p = 1/2 (the form scipy
    avoids there) and a logistic computed in float32 both fail it."""
    p = _logit_inputs()
    with np.errstate(invalid="ignore", divide="ignore"):
        want = special.logit(p)
        plain = np.log(p / (1 - p))
    with pytest.raises(AssertionError):
        assert_close(plain, want)
    x = np.random.default_rng(0).normal(0.0, 8.0, 10_000)
    with pytest.raises(AssertionError):
        assert_close((1 / (1 + np.exp(-x.astype(np.float32)))).astype(np.float64), special.expit(x))


def test_scalars_stay_scalars_and_float32_is_computed_in_float64():
    assert isinstance(expit(0.25), np.float64) and isinstance(logit(0.25), np.float64)
    np.testing.assert_array_max_ulp(expit(0.25), special.expit(0.25), maxulp=MAX_ULP)
    np.testing.assert_array_max_ulp(logit(0.25), special.logit(0.25), maxulp=MAX_ULP)
    x = np.array([0.25, 0.7, -3.0])
    # a 0-d input and an array may take other numpy loops (scalar vs SIMD): within the bound, not bit for bit
    np.testing.assert_array_max_ulp(expit(0.25), expit(x)[0], maxulp=MAX_ULP)
    np.testing.assert_array_max_ulp(logit(0.25), logit(x)[0], maxulp=MAX_ULP)
    x32 = np.array([0.7, -3.0], dtype=np.float32)
    assert expit(x32).dtype == np.float64
    # float32 is widened first: within the bound of the float64 result (a float32 exp would be ~1e9 ulp off)
    np.testing.assert_array_max_ulp(expit(x32), expit(x32.astype(np.float64)), maxulp=MAX_ULP)
    assert_close(expit(x32), special.expit(x32.astype(np.float64)))
    assert expit(np.zeros((2, 3))).shape == (2, 3)
