"""The single-row C fast path equals Booster.predict on awkward rows: NaN, zeros, categories.

Two C entry points (SingleRowFast and PredictForMat) are compared within _bounds.py's tolerance; the same entry
point on the same rows (the Booster fallback, CBooster's ctypes call of PredictForMat) stays bit for bit."""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
import pytest
from _bounds import assert_same_number

from earlyeval.model.fastpredict import SingleRowPredictor


def _data(seed: int = 0, n: int = 600):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6)).astype(np.float32)
    X[:, 3] = rng.integers(0, 7, n)  # a categorical column
    X[rng.random(n) < 0.15, 0] = np.nan  # missing values
    X[rng.random(n) < 0.3, 1] = 0.0  # many zeros
    y = ((np.nan_to_num(X[:, 0]) + X[:, 1] > 0) ^ (X[:, 3] % 3 == 0)).astype(int)
    return X, y


@pytest.fixture(scope="module", params=["plain", "zero_as_missing", "categorical"])
def booster(request):
    X, y = _data()
    params = {
        "objective": "binary",
        "num_leaves": 15,
        "min_data_in_leaf": 5,
        "verbose": -1,
        "num_threads": 1,
        "seed": 1,
    }
    cat = "auto"
    if request.param == "zero_as_missing":
        params["zero_as_missing"] = True
    if request.param == "categorical":
        cat = [3]
    b = lgb.train(params, lgb.Dataset(X, y, categorical_feature=cat), num_boost_round=40)
    return request.param, b


def _awkward_rows(seed: int = 1) -> np.ndarray:
    X, _ = _data(seed, 300)
    extra = np.array(
        [
            [np.nan] * 6,
            [0.0] * 6,
            [-0.0, 1e-40, np.nan, -1, np.inf, -np.inf],  # tiny, negative category, infinities
            [1, 2, np.nan, 99, 0, 0],  # unseen category
            [np.nan, 0, 0, 2.7, 0, 0],  # a fractional category (LightGBM truncates)
        ],
        dtype=np.float32,
    )
    return np.vstack([X, extra])


def test_c_api_raw_margin_equals_booster_predict(booster):
    kind, b = booster
    if kind == "categorical":
        # categorical splits really present
        assert any(t.get("num_cat", 0) for t in b.dump_model()["tree_info"])
    rows = _awkward_rows()
    ref = b.predict(rows, raw_score=True)
    p = SingleRowPredictor(b)
    assert p.kind == "c-api"
    got = np.array([p(r) for r in rows])
    # another C entry point into LightGBM's tree code: within a bound (_bounds.py)
    assert_same_number(got, ref)


def test_contributions_equal_pred_contrib(booster):
    _, b = booster
    rows = _awkward_rows()[:50]
    ref = b.predict(rows, pred_contrib=True)
    p = SingleRowPredictor(b, contrib=True)
    got = np.array([p.contributions(r) for r in rows])
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)
    with pytest.raises(ValueError):
        SingleRowPredictor(b).contributions(rows[0])


def test_float64_rows_are_cast_to_float32_like_the_batch_matrix(booster):
    _, b = booster
    x64 = np.array([0.1234567890123, 1e-3, 0.7, 2.0, -0.3, 0.05])
    p = SingleRowPredictor(b)
    assert_same_number(p(x64), b.predict(x64.astype(np.float32)[None, :], raw_score=True)[0])
    assert p(x64) == p(x64.astype(np.float32))  # same code, same float32 row: bit for bit


def test_fallback_without_c_api_is_booster_predict(booster):
    _, b = booster
    rows = _awkward_rows()[:40]
    p = SingleRowPredictor(b, use_c_api=False)
    assert p.kind == "booster"
    np.testing.assert_array_equal(np.array([p(r) for r in rows]), b.predict(rows, raw_score=True))


def test_wrong_width_is_refused(booster):
    _, b = booster
    with pytest.raises(ValueError):
        SingleRowPredictor(b, n_features=5)


def test_without_lib_lightgbm_the_public_predict_is_the_fallback(booster, monkeypatch, caplog):
    """The fence: if lib_lightgbm's C entry points cannot be used, predictions stay exact via Booster.predict."""
    import earlyeval.model.lgbm_capi as capi
    from earlyeval.model.fastpredict import FastPathUnavailable, c_booster

    _, b = booster
    rows = _awkward_rows()[:40]

    def unavailable():
        raise capi.LibraryUnavailable(
            "lib_lightgbm lacks LGBM_BoosterPredictForMatSingleRowFastInit"
        )

    monkeypatch.setattr(capi, "library", unavailable)
    with pytest.raises(FastPathUnavailable, match="SingleRowFastInit"):
        c_booster(b)
    p = SingleRowPredictor(b)
    assert p.kind == "booster"
    assert "fast path unavailable" in caplog.text
    np.testing.assert_array_equal(np.array([p(r) for r in rows]), b.predict(rows, raw_score=True))
    # modeldir's fallback: lightgbm's own
    assert type(capi.load_booster(b.model_to_string())).__name__ == "Booster"


def test_c_booster_is_lightgbms_booster_bit_for_bit(booster):
    """lgbm_capi.CBooster (the live path's, no lightgbm import) == lightgbm.Booster: predictions, contributions, text."""
    from earlyeval.model.lgbm_capi import CBooster

    _, b = booster
    cb = CBooster(b.model_to_string())
    rows = _awkward_rows()
    for kw in ({"raw_score": True}, {}, {"pred_contrib": True}):
        np.testing.assert_array_equal(cb.predict(rows, **kw), b.predict(rows, **kw))
        np.testing.assert_array_equal(
            cb.predict(rows.astype(np.float64), **kw), b.predict(rows.astype(np.float64), **kw)
        )
    assert cb.num_feature() == b.num_feature() and cb.feature_name() == b.feature_name()
    assert cb.model_to_string() == b.model_to_string()
    p = SingleRowPredictor(cb)
    assert p.kind == "c-api"
    assert_same_number(np.array([p(r) for r in rows]), b.predict(rows, raw_score=True))
