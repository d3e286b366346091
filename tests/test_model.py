"""The outcome model: what we save reproduces sklearn's calibrated output; mirrored twins are measured."""

from __future__ import annotations

import numpy as np

from earlyeval.model import OutcomeModel
from synth import SMALL_LGBM


def data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=1.0, size=n) > 0.3).astype(int)
    w = rng.uniform(0.2, 1.0, size=n)
    groups = rng.integers(0, 120, size=n)
    return X, y, w, groups


def test_platt_state_reproduces_calibrated_classifier_and_roundtrips():
    X, y, w, g = data()
    m = OutcomeModel(lgbm_params=SMALL_LGBM, n_jobs=1).fit(X, y, w, g, [f"f{i}" for i in range(5)])
    ps, pf = m.predict_proba(X)
    assert np.all((ps > 0) & (ps < 1))
    np.testing.assert_allclose(pf, 1 - ps)  # twin="mirror": one score, two cut-offs
    m2 = OutcomeModel.from_state(m.get_state())
    np.testing.assert_allclose(m2.predict_proba(X)[0], ps, rtol=0, atol=1e-12)
    # the calibrated score ranks like the truth
    from sklearn.metrics import roc_auc_score

    assert roc_auc_score(y, ps) > 0.75


def test_flipped_twin_mirrors_and_balanced_twin_differs():
    X, y, w, g = data(seed=1)
    names = [f"f{i}" for i in range(5)]
    flipped = OutcomeModel(lgbm_params=SMALL_LGBM, twin="flipped", n_jobs=1).fit(X, y, w, g, names)
    balanced = OutcomeModel(lgbm_params=SMALL_LGBM, twin="balanced", n_jobs=1).fit(X, y, w, g, names)
    assert flipped.mirror_gap(X) < 1e-6
    assert balanced.mirror_gap(X) > 1e-3


def test_task_grouped_validation_keeps_tasks_apart():
    from sklearn.model_selection import GroupShuffleSplit

    X, y, w, g = data()
    tr, va = next(GroupShuffleSplit(n_splits=1, test_size=0.25, random_state=0).split(X, y, g))
    assert not set(g[tr]) & set(g[va])


def test_monotone_constraints_are_respected():
    X, y, w, g = data(seed=2)
    names = [f"f{i}" for i in range(5)]
    m = OutcomeModel(lgbm_params=SMALL_LGBM, monotone={"f0": 1}, n_jobs=1).fit(X, y, w, g, names)
    grid = np.tile(X[:1], (50, 1))
    grid[:, 0] = np.linspace(-3, 3, 50)
    ps, _ = m.predict_proba(grid)
    assert np.all(np.diff(ps) >= -1e-12)
