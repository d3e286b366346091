"""The outcome model: LightGBM on prefix features, Platt-calibrated.

``OutcomeModel`` is a small scikit-learn-style estimator: parameters in
``__init__``, ``fit`` learns, ``predict_proba`` returns (P(success), P(failure)).

Calibration: a task-grouped split of the training agents' prefixes (no task on
both sides); LightGBM is fitted on one part and Platt scaling on the other
(``fit_platt``: Platt's 1999 method on the booster's raw margins, sample weights
1/(T-1); our own fit, so no private scikit-learn attribute is read).

Two models or one?  LightGBM trained on flipped labels with identical settings
grows mirrored trees, so P(failure) = 1 - P(success) to float precision (we
measure it: ``twin="flipped"``; see ``mirror_gap``).  The default ``twin="mirror"``
says so plainly: one calibrated score, two cut-offs (tau_s, tau_f).
``twin="balanced"`` is the principled variant that does differ: the failure
model is trained with class-balanced weights, so its ranking among the
(majority) failures is learned with the minority success class up-weighted.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import lightgbm as lgb
import numpy as np
from scipy.optimize import minimize
from scipy.special import expit
from sklearn.model_selection import GroupShuffleSplit

# Fixed a priori, not tuned per agent: small trees, strong regularisation of leaf size.
# 120 trees at 0.1 on 63 bins give the same held-out AUROC as 250 at 0.05 on 255 bins
# (0.931 vs 0.931 mean over the six SWE-bench agents) at a third of the fit time.
DEFAULT_LGBM: dict[str, Any] = {
    "n_estimators": 120,
    "learning_rate": 0.1,
    "max_bin": 63,
    "num_leaves": 15,
    "min_child_samples": 40,
    "subsample": 0.8,
    "subsample_freq": 1,
    "colsample_bytree": 0.8,
    "reg_lambda": 1.0,
}


@dataclass
class Platt:
    """p = 1 / (1 + exp(a * f + b)) on the booster's raw margin f (log-odds)."""

    a: float
    b: float

    def __call__(self, f: np.ndarray) -> np.ndarray:
        return expit(-(self.a * f + self.b))


def fit_platt(margins: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None = None) -> Platt:
    """Platt (1999) scaling of raw margins: weighted log-loss of sigmoid(-(a f + b)) against
    Platt's smoothed targets (N+ + 1)/(N+ + 2) and 1/(N- + 2), minimised by L-BFGS-B.

    This is the method scikit-learn's ``CalibratedClassifierCV(method="sigmoid")``
    implements (same targets, start point, margin rescaling above |f| = 30 and
    tolerances); fitting it here means the saved (a, b) are ours, not read from a
    private attribute, and need no ``decision_function`` on the estimator."""
    f = np.asarray(margins, dtype=np.float64).ravel()
    y = np.asarray(y).ravel()
    w = np.ones_like(f) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64).ravel()
    if not (len(f) == len(y) == len(w)) or len(f) == 0:
        raise ValueError(f"fit_platt needs equal, non-empty margins, labels and weights ({len(f)}, {len(y)}, {len(w)})")
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
    res = minimize(loss_grad, ab0, method="L-BFGS-B", jac=True, options={"gtol": 1e-8, "ftol": 64 * np.finfo(float).eps})
    return Platt(float(res.x[0] / scale), float(res.x[1]))


@dataclass
class OutcomeModel:
    lgbm_params: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_LGBM))
    val_share: float = 0.25
    twin: str = "mirror"  # mirror | flipped | balanced
    monotone: dict[str, int] | None = None  # feature name -> +1 / -1 (direction for P(success))
    seed: int = 0
    n_jobs: int = 2

    def __post_init__(self) -> None:
        self.boosters_: dict[str, lgb.Booster] = {}
        self.platt_: dict[str, Platt] = {}
        self.feature_names_: list[str] = []
        self.base_rate_: float = float("nan")

    # ----------------------------------------------------------------- fit
    def _classifier(self, feature_names: list[str], sign: int) -> lgb.LGBMClassifier:
        params = dict(self.lgbm_params)
        cons = [sign * int(self.monotone.get(n, 0)) for n in feature_names] if self.monotone else []
        if any(cons):  # a catalog's constraints on features this model lacks leave it unconstrained, as without them
            params["monotone_constraints"] = cons
            params["monotone_constraints_method"] = "advanced"
        return lgb.LGBMClassifier(
            **params, random_state=self.seed, n_jobs=self.n_jobs, deterministic=True, force_row_wise=True, verbose=-1
        )

    def fit(self, X: np.ndarray, y: np.ndarray, w: np.ndarray, groups: np.ndarray, feature_names: list[str]) -> "OutcomeModel":
        y = np.asarray(y).astype(int)
        w = np.asarray(w, dtype=np.float64)
        w = w / w.mean()
        self.feature_names_ = list(feature_names)
        gss = GroupShuffleSplit(n_splits=1, test_size=self.val_share, random_state=self.seed)
        tr, va = next(gss.split(X, y, groups))
        self.val_index_ = va  # rows used for Platt scaling (whole tasks), kept for threshold fallback
        if len(np.unique(y[va])) < 2 or len(np.unique(y[tr])) < 2:
            raise ValueError("the task-grouped split left one class only; need both outcomes in training and validation")
        self.base_rate_ = float(np.average(y, weights=w))
        targets = {"success": (y, w, +1)}
        if self.twin in ("flipped", "balanced"):
            wf = w.copy()
            if self.twin == "balanced":
                pos = np.average(1 - y, weights=w)
                wf = np.where(y == 0, w * 0.5 / pos, w * 0.5 / (1 - pos))
            targets["failure"] = (1 - y, wf, -1)
        elif self.twin != "mirror":
            raise ValueError(f"twin must be mirror, flipped or balanced, not {self.twin!r}")
        for name, (yy, ww, sign) in targets.items():
            clf = self._classifier(self.feature_names_, sign)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                clf.fit(X[tr], yy[tr], sample_weight=ww[tr])
            booster = clf.booster_
            self.boosters_[name] = booster
            self.platt_[name] = fit_platt(booster.predict(X[va], raw_score=True), yy[va], w[va])
        return self

    # ------------------------------------------------------------- predict
    def predict_proba(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ps = self.platt_["success"](self.boosters_["success"].predict(X, raw_score=True, num_threads=self.n_jobs))
        if "failure" in self.boosters_:
            pf = self.platt_["failure"](self.boosters_["failure"].predict(X, raw_score=True, num_threads=self.n_jobs))
        else:
            pf = 1.0 - ps
        return ps, pf

    def mirror_gap(self, X: np.ndarray) -> float:
        """max |P(failure) - (1 - P(success))| on X; 0 by construction for twin='mirror'."""
        ps, pf = self.predict_proba(X)
        return float(np.max(np.abs(pf - (1.0 - ps)))) if len(ps) else 0.0

    def feature_importance(self, top: int = 20) -> list[tuple[str, float]]:
        b = self.boosters_["success"]
        gain = b.feature_importance(importance_type="gain")
        order = np.argsort(-gain)[:top]
        total = gain.sum() or 1.0
        return [(self.feature_names_[i], float(gain[i] / total)) for i in order]

    # -------------------------------------------------------- serialization
    def get_state(self) -> dict[str, Any]:
        return {
            "boosters": {k: b.model_to_string() for k, b in self.boosters_.items()},
            "platt": {k: {"a": p.a, "b": p.b} for k, p in self.platt_.items()},
            "feature_names": self.feature_names_,
            "twin": self.twin,
            "lgbm_params": self.lgbm_params,
            "monotone": self.monotone,
            "base_rate": self.base_rate_,
            "seed": self.seed,
        }

    @classmethod
    def from_state(cls, d: dict[str, Any], n_jobs: int = 1) -> "OutcomeModel":
        m = cls(lgbm_params=d["lgbm_params"], twin=d["twin"], monotone=d.get("monotone"), seed=d.get("seed", 0), n_jobs=n_jobs)
        m.boosters_ = {k: lgb.Booster(model_str=s) for k, s in d["boosters"].items()}
        m.platt_ = {k: Platt(v["a"], v["b"]) for k, v in d["platt"].items()}
        m.feature_names_ = list(d["feature_names"])
        m.base_rate_ = float(d.get("base_rate", float("nan")))
        return m
