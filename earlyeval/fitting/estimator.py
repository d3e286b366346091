"""The outcome model: LightGBM on prefix features, Platt-calibrated.

``OutcomeModel`` is a scikit-learn estimator; its prediction side is ``model.outcome`` (numpy only), what a
model directory loads. The calibration split, the Platt fit and the twin modes (one score with two cut-offs,
or a second booster): docs/architecture.md, "The outcome model".
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import lightgbm as lgb
import numpy as np
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.model_selection import GroupShuffleSplit
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, check_X_y

from earlyeval.core.numerics import expit
from earlyeval.model.outcome import (
    CLASSES,
    DEFAULT_LGBM,
    CalibratedOutcome,
    OutcomePredictor,
    Platt,
    as_matrix,
    column_names,
)
from earlyeval.model.threads import limit_lightgbm

# scikit-learn 1.6 renamed check_X_y's force_all_finite to ensure_all_finite
_FINITE = (
    "ensure_all_finite"
    if "ensure_all_finite" in check_X_y.__code__.co_varnames
    else "force_all_finite"
)

__all__ = ["DEFAULT_LGBM", "OutcomeModel", "OutcomePredictor", "Platt", "fit_platt"]


def fit_platt(margins: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None = None) -> Platt:
    """Platt (1999) scaling of raw margins: weighted log-loss of sigmoid(-(a f + b)) against
    Platt's smoothed targets (N+ + 1)/(N+ + 2) and 1/(N- + 2), minimised by L-BFGS-B.

    This is the method scikit-learn's ``CalibratedClassifierCV(method="sigmoid")``
    implements (same targets, start point, margin rescaling above |f| = 30 and
    tolerances); fitting it here means the saved (a, b) are ours, not read from a
    private attribute, and need no ``decision_function`` on the estimator."""
    f = np.asarray(margins, dtype=np.float64).ravel()
    y = np.asarray(y).ravel()
    w = (
        np.ones_like(f)
        if sample_weight is None
        else np.asarray(sample_weight, dtype=np.float64).ravel()
    )
    if not (len(f) == len(y) == len(w)) or len(f) == 0:
        raise ValueError(
            f"fit_platt needs equal, non-empty margins, labels and weights ({len(f)}, {len(y)}, {len(w)})"
        )
    scale = 1.0
    top = float(np.max(np.abs(f)))
    if top >= 30.0:  # large margins make the loss flat in a: fit on rescaled margins
        scale = top
        f = f / scale
    neg = y <= 0
    prior0, prior1 = float(w[neg].sum()), float(w[~neg].sum())
    t = np.where(neg, 1.0 / (prior0 + 2.0), (prior1 + 1.0) / (prior1 + 2.0))

    def loss_grad(ab: np.ndarray) -> tuple[float, np.ndarray]:
        raw = -(ab[0] * f + ab[1])
        loss = float(np.sum(w * (np.logaddexp(0.0, raw) - t * raw)))
        g = w * (expit(raw) - t)
        return loss, np.array([-g @ f, -g.sum()], dtype=np.float64)

    ab0 = np.array([0.0, math.log((prior0 + 1.0) / (prior1 + 1.0))])
    res = minimize(
        loss_grad,
        ab0,
        method="L-BFGS-B",
        jac=True,
        options={"gtol": 1e-8, "ftol": 64 * np.finfo(float).eps},
    )
    return Platt(float(res.x[0] / scale), float(res.x[1]))


class OutcomeModel(CalibratedOutcome, ClassifierMixin, BaseEstimator):
    """LightGBM on prefix features, Platt-calibrated on a task-grouped split (see the module doc).

    ``lgbm_params=None`` means ``DEFAULT_LGBM``; ``monotone``: feature name -> +1 / -1, the direction
    for P(success); ``twin``: "mirror", "flipped" or "balanced"."""

    def __init__(
        self,
        lgbm_params: dict[str, Any] | None = None,
        val_share: float = 0.25,
        twin: str = "mirror",
        monotone: dict[str, int] | None = None,
        seed: int = 0,
        n_jobs: int = 2,
    ):
        self.lgbm_params = lgbm_params
        self.val_share = val_share
        self.twin = twin
        self.monotone = monotone
        self.seed = seed
        self.n_jobs = n_jobs

    def __sklearn_tags__(self) -> Any:  # scikit-learn >= 1.6
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # LightGBM's missing-value handling
        tags.classifier_tags.multi_class = False
        return tags

    def _more_tags(self) -> dict[str, Any]:  # scikit-learn < 1.6
        return {"allow_nan": True, "binary_only": True}

    # ----------------------------------------------------------------- fit
    def _classifier(self, feature_names: list[str] | None, sign: int) -> lgb.LGBMClassifier:
        params = dict(DEFAULT_LGBM if self.lgbm_params is None else self.lgbm_params)
        cons = (
            [sign * int(self.monotone.get(n, 0)) for n in feature_names]
            if self.monotone and feature_names
            else []
        )
        if any(
            cons
        ):  # a catalog's constraints on features this model lacks leave it unconstrained, as without them
            params["monotone_constraints"] = cons
            params["monotone_constraints_method"] = "advanced"
        return lgb.LGBMClassifier(
            **params,
            random_state=self.seed,
            n_jobs=self.n_jobs,
            deterministic=True,
            force_row_wise=True,
            verbose=-1,
        )

    def fit(
        self,
        X: Any,
        y: Any,
        *,
        sample_weight: Any = None,
        groups: Any = None,
        feature_names: list[str] | None = None,
    ) -> "OutcomeModel":
        """Fit on rows X (a DataFrame, whose columns name the features, or a matrix with ``feature_names``),
        binary outcomes y (1 success), ``sample_weight`` (default 1; rescaled to mean 1) and ``groups``
        (rows of one group, a task, stay on one side of the calibration split; default: each row its own)."""
        names = column_names(X)
        if names is not None and feature_names is not None and list(feature_names) != names:
            raise ValueError("feature_names differ from the DataFrame's columns")
        names = (
            names
            if names is not None
            else (list(feature_names) if feature_names is not None else None)
        )
        Xm, y = check_X_y(
            as_matrix(X) if X is not None else X, y, dtype=None, **{_FINITE: "allow-nan"}
        )
        if names is not None and len(names) != Xm.shape[1]:
            raise ValueError(f"{len(names)} feature names for {Xm.shape[1]} columns")
        classes, y, w, tr, va, targets = self._split(Xm, y, sample_weight, groups)
        boosters: dict[str, Any] = {}
        platt: dict[str, Platt] = {}
        for name, (yy, ww, sign) in targets.items():
            booster = self._train_booster(self._classifier(names, sign), Xm[tr], yy[tr], ww[tr])
            boosters[name] = booster
            platt[name] = fit_platt(booster.predict(Xm[va], raw_score=True), yy[va], w[va])
        return self._fitted(boosters, platt, names, Xm.shape[1], classes, y, w, va)

    def _split(self, Xm: Any, y: np.ndarray, sample_weight: Any, groups: Any) -> tuple[Any, ...]:
        """The checked labels (1 success) and weights (mean 1), the task-grouped split (fit rows, held-back
        rows) and each booster's (labels, weights, sign); ``Xm`` only gives the split its row count."""
        if self.twin not in ("mirror", "flipped", "balanced"):
            raise ValueError(f"twin must be mirror, flipped or balanced, not {self.twin!r}")
        check_classification_targets(y)
        labels = np.unique(y)
        if type_of_target(y) != "binary" or len(labels) != 2:
            raise ValueError(
                f"Only binary classification is supported: two outcomes, failure and success; got labels {labels[:5].tolist()}"
            )
        classes = labels if set(labels.tolist()) != {0, 1} else CLASSES.copy()
        y = (y == classes[1]).astype(int)  # 1 = success (the larger label)
        w = (
            np.ones(len(y))
            if sample_weight is None
            else np.asarray(sample_weight, dtype=np.float64)
        )
        if w.shape != y.shape:
            raise ValueError(
                f"sample_weight must have one weight per row ({len(y)}), got shape {w.shape}"
            )
        if not np.all(np.isfinite(w)) or np.any(w < 0) or not w.sum() > 0:
            raise ValueError(
                "sample_weight must be finite and non-negative, and not all weights may be zero"
            )
        w = w / w.mean()
        g = np.arange(len(y)) if groups is None else np.asarray(groups)
        for attr in (
            "boosters_",
            "platt_",
            "feature_names_in_",
            "n_features_in_",
            "base_rate_",
            "val_index_",
        ):
            self.__dict__.pop(attr, None)
        gss = GroupShuffleSplit(n_splits=1, test_size=self.val_share, random_state=self.seed)
        tr, va = next(gss.split(Xm, y, g))
        if len(np.unique(y[va])) < 2 or len(np.unique(y[tr])) < 2:
            raise ValueError(
                "the task-grouped split left one class only; need both outcomes in training and validation"
            )
        targets = {"success": (y, w, +1)}
        if self.twin in ("flipped", "balanced"):
            wf = w.copy()
            if self.twin == "balanced":
                pos = np.average(1 - y, weights=w)
                wf = np.where(y == 0, w * 0.5 / pos, w * 0.5 / (1 - pos))
            targets["failure"] = (1 - y, wf, -1)
        return classes, y, w, tr, va, targets

    def _fitted(
        self,
        boosters: dict[str, Any],
        platt: dict[str, Platt],
        names: list[str] | None,
        n_features: int,
        classes: np.ndarray,
        y: np.ndarray,
        w: np.ndarray,
        va: np.ndarray,
    ) -> "OutcomeModel":
        self.boosters_ = boosters
        self.platt_ = platt
        if names is not None:
            self.feature_names_in_ = np.asarray(names, dtype=object)
        self.n_features_in_ = n_features
        self.classes_ = classes
        self.base_rate_ = float(np.average(y, weights=w))
        self.val_index_ = (
            va  # rows used for Platt scaling (whole tasks), kept for threshold fallback
        )
        return self

    def _train_booster(
        self, clf: lgb.LGBMClassifier, X: np.ndarray, y: np.ndarray, w: np.ndarray
    ) -> lgb.Booster:
        """The booster of ``clf`` trained on the fit part of the split (``scale.train.DaskOutcomeModel``
        trains the same classifier with lightgbm.dask)."""
        # the cores other processes leave free, at most n_jobs: the same trees (model.threads)
        limit_lightgbm(self.n_jobs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            clf.fit(X, y, sample_weight=w)
        return clf.booster_

    # ------------------------------------------------------------- predict
    def predict_proba(self, X: Any) -> np.ndarray:
        """(n, 2): [P(failure), P(success)] per row; a NotFittedError before ``fit``."""
        check_is_fitted(self, "boosters_")
        return super().predict_proba(X)

    def feature_importance(self, top: int = 20) -> list[tuple[str, float]]:
        check_is_fitted(self, "boosters_")
        b = self.boosters_["success"]
        gain = b.feature_importance(importance_type="gain")
        order = np.argsort(-gain)[:top]
        total = gain.sum() or 1.0
        names = list(getattr(self, "feature_names_in_", [f"x{i}" for i in range(len(gain))]))
        return [(names[i], float(gain[i] / total)) for i in order]

    # -------------------------------------------------------- serialization
    def get_state(self) -> dict[str, Any]:
        check_is_fitted(self, "boosters_")
        return super().get_state()

    @staticmethod
    def from_state(d: dict[str, Any], n_jobs: int = 1) -> OutcomePredictor:
        """The saved model back, as an ``OutcomePredictor`` (predicts, does not refit)."""
        return OutcomePredictor.from_state(d, n_jobs=n_jobs)
