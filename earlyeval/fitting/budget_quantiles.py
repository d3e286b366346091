"""The budget's quantile estimators: ``QuantileRegressor`` (one LightGBM quantile booster per alpha) and the
split-conformal corrections the CQR wrapper (``fitting.budget_conformal``) applies: pooled over rows, or per
agent (``agent_conformal_quantile``: the agent is the exchangeable unit).  Imports lightgbm."""

from __future__ import annotations

from typing import Any

import lightgbm as lgb
import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import Tags
from sklearn.utils.validation import check_is_fitted, validate_data

from earlyeval.config.budget_config import ALPHAS, BUDGET_LGBM
from earlyeval.fitting.metrics import weighted_quantile
from earlyeval.model.cqr import fix_crossing


class QuantileRegressor(BaseEstimator):
    """One LightGBM quantile booster per alpha, predictions sorted so they never cross.

    scikit-learn conventions: parameters in ``__init__`` (stored as given), fitted state suffixed ``_``
    and created by ``fit`` only (``NotFittedError`` before), ``clone`` works.  ``predict`` returns
    ``(n, len(alphas))``: one column per alpha, sorted.  ``groups`` (the agent of each row) is recorded
    as ``fit_agents_`` for the leakage audits.  Feature names come from a DataFrame's columns or
    ``feature_names``; LightGBM itself sees positional columns (the shipped model text depends on it).
    Serializable without pickle: ``get_state``/``from_state`` (JSON + LightGBM model text)."""

    def __init__(
        self,
        alphas: tuple = ALPHAS,
        lgbm_params: dict[str, Any] | None = None,
        seed: int = 0,
        n_jobs: int = 1,
    ):
        self.alphas = alphas
        self.lgbm_params = lgbm_params
        self.seed = seed
        self.n_jobs = n_jobs

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.allow_nan = (
            True  # LightGBM's missing-value handling; the budget features carry NaN
        )
        return tags

    def _alphas(self) -> tuple[float, ...]:
        return tuple(float(a) for a in self.alphas)

    def _lgbm(self) -> dict[str, Any]:
        return dict(BUDGET_LGBM if self.lgbm_params is None else self.lgbm_params)

    def _params(self, alpha: float) -> dict[str, Any]:
        p = self._lgbm()
        return {
            "objective": "quantile",
            "alpha": alpha,
            "learning_rate": p.get("learning_rate", 0.1),
            "num_leaves": p.get("num_leaves", 15),
            "min_data_in_leaf": p.get("min_child_samples", 40),
            "feature_fraction": p.get("colsample_bytree", 1.0),
            "lambda_l2": p.get("reg_lambda", 0.0),
            "max_bin": p.get("max_bin", 255),
            "seed": self.seed,
            "deterministic": True,
            "force_row_wise": True,
            "num_threads": self.n_jobs,
            "verbose": -1,
        }

    def fit(
        self,
        X: Any,
        y: Any,
        *,
        sample_weight: np.ndarray | None = None,
        groups: np.ndarray | None = None,
        feature_names: list[str] | None = None,
    ) -> "QuantileRegressor":
        """Fit one booster per alpha; `groups`: the agent of each row (recorded, never a feature)."""
        names = list(feature_names) if feature_names else None
        X, y = validate_data(
            self,
            X,
            y,
            dtype=[np.float64, np.float32],
            ensure_all_finite="allow-nan",
            y_numeric=True,
        )
        if sample_weight is not None:
            sample_weight = checked_weights(sample_weight, len(y))
        if names is not None and len(names) != X.shape[1]:
            raise ValueError(f"{len(names)} feature names for {X.shape[1]} columns")
        params = self._lgbm()
        self.fit_agents_ = sorted(set(np.asarray(groups).tolist())) if groups is not None else []
        cols = getattr(self, "feature_names_in_", None)
        self.feature_names_ = names or (
            [str(c) for c in cols] if cols is not None else [f"f{i}" for i in range(X.shape[1])]
        )
        self.n_rows_ = int(len(y))
        data = lgb.Dataset(
            X,
            label=y,
            weight=sample_weight,
            params={"max_bin": params.get("max_bin", 255), "verbose": -1},
            free_raw_data=False,
        )
        n = int(params.get("n_estimators", 100))
        self.boosters_ = [
            lgb.train(self._params(a), data, num_boost_round=n) for a in self._alphas()
        ]
        return self

    def predict_raw(self, X: Any) -> np.ndarray:
        """Per-alpha predictions as the boosters give them (may cross)."""
        check_is_fitted(self, "boosters_")
        X = validate_data(
            self,
            X,
            reset=False,
            dtype=[np.float64, np.float32],
            ensure_all_finite="allow-nan",
            ensure_min_samples=0,
        )
        if len(X) == 0:
            return np.zeros((0, len(self.boosters_)))
        return np.column_stack([b.predict(X, num_threads=self.n_jobs) for b in self.boosters_])

    def predict(self, X: Any) -> np.ndarray:
        return fix_crossing(self.predict_raw(X))

    def get_state(self) -> dict[str, Any]:
        """JSON-able state (the boosters as LightGBM model text); the shipped extra_budget.json holds it."""
        check_is_fitted(self, "boosters_")
        return {
            "alphas": list(self._alphas()),
            "lgbm_params": self._lgbm(),
            "seed": self.seed,
            "feature_names": self.feature_names_,
            "fit_agents": self.fit_agents_,
            "n_rows": self.n_rows_,
            "boosters": [b.model_to_string() for b in self.boosters_],
        }

    @classmethod
    def from_state(cls, d: dict[str, Any], n_jobs: int = 1) -> "QuantileRegressor":
        m = cls(tuple(d["alphas"]), d["lgbm_params"], d.get("seed", 0), n_jobs)
        m.boosters_ = [lgb.Booster(model_str=s) for s in d["boosters"]]
        m.feature_names_ = list(d["feature_names"])
        m.n_features_in_ = len(m.feature_names_)
        m.fit_agents_ = list(d.get("fit_agents", []))
        m.n_rows_ = int(d.get("n_rows", 0))
        return m


def checked_weights(w: Any, n: int) -> np.ndarray:
    """Sample weights as float64 (n,), checked: a wrong length is a named error, not a LightGBM crash."""
    w = np.asarray(w, dtype=np.float64)
    if w.shape != (n,):
        raise ValueError(f"sample_weight has shape {w.shape} for {n} rows")
    if not np.any(w > 0):
        raise ValueError("sample_weight is zero everywhere: there is nothing to fit")
    return w


def conformal_quantile(
    scores: np.ndarray, weights: np.ndarray, level: float, n_units: int
) -> float:
    """Weighted level*(1 + 1/n) quantile of the scores (the split-conformal correction)."""
    if len(scores) == 0:
        return float("nan")
    q = weighted_quantile(scores, min(1.0, level * (1.0 + 1.0 / max(n_units, 1))), weights)
    return float(q)


def agent_rank(n: int, agent_quantile: float) -> int:
    """k = ceil(agent_quantile (n + 1)): the rank, among n calibration agents' corrections, that a new agent's
    own correction stays at or below with probability >= k / (n + 1) when the n + 1 agents are exchangeable."""
    return int(np.ceil(agent_quantile * (n + 1) - 1e-9))


def agent_conformal_quantile(
    scores: np.ndarray, weights: np.ndarray, units: np.ndarray, level: float, agent_quantile: float
) -> tuple[float, dict[str, float]]:
    """Agent-level split conformal: per calibration unit (an agent group), the weighted `level` quantile of its
    own scores -- the correction under which that unit's coverage would be exactly `level` -- then the
    k-th smallest of the n units' (``agent_rank``; the largest when k > n, which then holds with probability
    n / (n + 1) only: ``agent_guarantee``).  Returns it and the per-unit corrections."""
    per: dict[str, float] = {}
    for u in sorted(set(np.asarray(units).tolist())):
        m = units == u
        q = weighted_quantile(scores[m], level, weights[m])
        if q is not None:
            per[str(u)] = float(q)
    if not per:
        return float("nan"), per
    vals = sorted(per.values())
    k = min(max(agent_rank(len(per), agent_quantile), 1), len(vals))
    return float(vals[k - 1]), per


def agent_guarantee(n: int, agent_quantile: float) -> float:
    """P(a new agent's coverage >= the level) that the agent-level correction guarantees with n calibration units."""
    return min(max(agent_rank(n, agent_quantile), 1), n) / (n + 1) if n else 0.0
