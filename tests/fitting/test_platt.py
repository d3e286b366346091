"""Our Platt fit equals scikit-learn's sigmoid calibration, through public APIs only."""

from __future__ import annotations

import numpy as np
import pytest

from earlyeval.fitting.estimator import Platt, fit_platt


def _margins(seed: int, n: int = 800, scale: float = 1.0):
    rng = np.random.default_rng(seed)
    f = rng.normal(size=n) * 2.0 * scale
    y = (rng.random(n) < 1 / (1 + np.exp(-0.7 * f / scale + 0.3))).astype(int)
    w = rng.uniform(0.1, 2.0, size=n)
    return f, y, w


@pytest.mark.parametrize("seed", [0, 1])
def test_fit_platt_equals_calibrated_classifier_cv_on_a_booster(seed):
    """The reference is what earlier versions saved: sklearn's sigmoid calibration of a frozen LGBMClassifier."""
    # FrozenEstimator: scikit-learn >= 1.6 (reference only)
    frozen = pytest.importorskip("sklearn.frozen")
    import lightgbm as lgb
    from sklearn.calibration import CalibratedClassifierCV

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(1500, 5))
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=1500) > 0.3).astype(int)
    w = rng.uniform(0.2, 2.0, size=1500)
    clf = lgb.LGBMClassifier(n_estimators=60, num_leaves=7, verbose=-1, random_state=0).fit(
        X[:1000], y[:1000]
    )
    ref = CalibratedClassifierCV(frozen.FrozenEstimator(clf), method="sigmoid").fit(
        X[1000:], y[1000:], sample_weight=w[1000:]
    )
    ours = fit_platt(clf.booster_.predict(X[1000:], raw_score=True), y[1000:], w[1000:])
    # both stop at L-BFGS-B tolerance
    np.testing.assert_allclose(
        ours(clf.booster_.predict(X, raw_score=True)), ref.predict_proba(X)[:, 1], rtol=0, atol=1e-7
    )


def test_fit_platt_rescales_large_margins():
    """Past |f| = 30 the fit runs on f / max|f|; the result is the same sigmoid in the original units."""
    f, y, w = _margins(2)
    small, big = fit_platt(f, y, w), fit_platt(f * 40.0, y, w)
    grid = np.linspace(-5, 5, 21)
    np.testing.assert_allclose(big(grid * 40.0), small(grid), rtol=0, atol=1e-5)


def test_fit_platt_recovers_a_known_sigmoid():
    rng = np.random.default_rng(3)
    f = rng.normal(size=20000) * 3
    # p = 1/(1+exp(a f + b)) with a=1.5, b=-0.5
    y = (rng.random(f.size) < 1 / (1 + np.exp(1.5 * f - 0.5))).astype(int)
    p = fit_platt(f, y)
    assert p.a == pytest.approx(1.5, abs=0.08) and p.b == pytest.approx(-0.5, abs=0.06)
    assert isinstance(p, Platt)


def test_fit_platt_refuses_mismatched_input():
    with pytest.raises(ValueError, match="equal, non-empty"):
        fit_platt(np.zeros(3), np.zeros(2))
    with pytest.raises(ValueError, match="equal, non-empty"):
        fit_platt(np.zeros(0), np.zeros(0))
