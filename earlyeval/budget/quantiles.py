"""The budget estimators: LightGBM quantile regression, its cross-conformal (CQR) wrapper, and the
per-dimension ``BudgetEstimator`` a model directory carries.  The one budget module that imports lightgbm."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import lightgbm as lgb
import numpy as np

from ..metrics import weighted_quantile
from .config import ALPHAS, BUDGET_LGBM, LEVELS
from .cqr import corrected_quantiles, cqr_scores, fix_crossing, from_z, pair_for, within
from .targets import pace


class QuantileRegressor:
    """One LightGBM quantile booster per alpha, predictions sorted so they never cross.

    Serializable as JSON + LightGBM model text (``get_state``/``from_state``).
    ``fit_agents_`` records which agents' rows it was fitted on (leakage audits)."""

    def __init__(self, alphas: tuple = ALPHAS, lgbm_params: dict[str, Any] | None = None, seed: int = 0, n_jobs: int = 1):
        self.alphas = tuple(float(a) for a in alphas)
        self.lgbm_params = dict(BUDGET_LGBM if lgbm_params is None else lgbm_params)
        self.seed = seed
        self.n_jobs = n_jobs

    def _params(self, alpha: float) -> dict[str, Any]:
        p = dict(self.lgbm_params)
        return {
            "objective": "quantile", "alpha": alpha, "learning_rate": p.get("learning_rate", 0.1),
            "num_leaves": p.get("num_leaves", 15), "min_data_in_leaf": p.get("min_child_samples", 40),
            "feature_fraction": p.get("colsample_bytree", 1.0), "lambda_l2": p.get("reg_lambda", 0.0),
            "max_bin": p.get("max_bin", 255), "seed": self.seed, "deterministic": True, "force_row_wise": True,
            "num_threads": self.n_jobs, "verbose": -1,
        }

    def fit(self, X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None = None,
            agents: np.ndarray | None = None, feature_names: list[str] | None = None) -> "QuantileRegressor":
        self.fit_agents_ = sorted(set(agents.tolist())) if agents is not None else []
        self.feature_names_ = list(feature_names) if feature_names else [f"f{i}" for i in range(X.shape[1])]
        self.n_rows_ = int(len(y))
        data = lgb.Dataset(X, label=y, weight=sample_weight, params={"max_bin": self.lgbm_params.get("max_bin", 255), "verbose": -1},
                           free_raw_data=False)
        n = int(self.lgbm_params.get("n_estimators", 100))
        self.boosters_ = [lgb.train(self._params(a), data, num_boost_round=n) for a in self.alphas]
        return self

    def predict_raw(self, X: np.ndarray) -> np.ndarray:
        """Per-alpha predictions as the boosters give them (may cross)."""
        if len(X) == 0:
            return np.zeros((0, len(self.alphas)))
        return np.column_stack([b.predict(X, num_threads=self.n_jobs) for b in self.boosters_])

    def predict(self, X: np.ndarray) -> np.ndarray:
        return fix_crossing(self.predict_raw(X))

    def get_state(self) -> dict[str, Any]:
        return {"alphas": list(self.alphas), "lgbm_params": self.lgbm_params, "seed": self.seed,
                "feature_names": self.feature_names_, "fit_agents": self.fit_agents_, "n_rows": self.n_rows_,
                "boosters": [b.model_to_string() for b in self.boosters_]}

    @classmethod
    def from_state(cls, d: dict[str, Any], n_jobs: int = 1) -> "QuantileRegressor":
        m = cls(tuple(d["alphas"]), d["lgbm_params"], d.get("seed", 0), n_jobs)
        m.boosters_ = [lgb.Booster(model_str=s) for s in d["boosters"]]
        m.feature_names_ = list(d["feature_names"])
        m.fit_agents_ = list(d.get("fit_agents", []))
        m.n_rows_ = int(d.get("n_rows", 0))
        return m


def conformal_quantile(scores: np.ndarray, weights: np.ndarray, level: float, n_units: int) -> float:
    """Weighted level*(1 + 1/n) quantile of the scores (the split-conformal correction)."""
    if len(scores) == 0:
        return float("nan")
    q = weighted_quantile(scores, min(1.0, level * (1.0 + 1.0 / max(n_units, 1))), weights)
    return float(q)


class CrossConformalQuantiles:
    """Quantile boosters fitted per agent fold, CQR-corrected with out-of-fold scores.

    ``fit`` gets rows of training agents only, each with its fold (-1: training-only).
    Fold model k is fitted on rows outside fold k and scores the rows of fold k.
    ``fit_agents_``/``calibration_agents_`` record what each stage saw."""

    def __init__(self, alphas: tuple = ALPHAS, levels: tuple = LEVELS, lgbm_params: dict[str, Any] | None = None,
                 seed: int = 0, n_jobs: int = 1):
        self.alphas = tuple(alphas)
        self.levels = tuple(levels)
        self.lgbm_params = lgbm_params
        self.seed = seed
        self.n_jobs = n_jobs

    def fit(self, X: np.ndarray, z: np.ndarray, fit_weight: np.ndarray, score_weight: np.ndarray,
            fold: np.ndarray, agents: np.ndarray, runs: np.ndarray,
            feature_names: list[str] | None = None) -> "CrossConformalQuantiles":
        folds = sorted(int(k) for k in np.unique(fold) if k >= 0)
        self.models_: list[QuantileRegressor] = []
        self.model_folds_: list[int] = []
        self.oof_ = np.full((len(z), len(self.alphas)), np.nan)
        for k in folds:
            tr = (fold != k) & (fit_weight > 0)
            if not tr.any():
                continue
            m = QuantileRegressor(self.alphas, self.lgbm_params, self.seed, self.n_jobs)
            m.fit(X[tr], z[tr], fit_weight[tr], agents[tr], feature_names)
            self.models_.append(m)
            self.model_folds_.append(k)
            cal = fold == k
            self.oof_[cal] = m.predict(X[cal])
        self.calibrate(z, score_weight, fold, agents, runs)
        return self

    def calibrate(self, z: np.ndarray, score_weight: np.ndarray, fold: np.ndarray, agents: np.ndarray,
                  runs: np.ndarray) -> "CrossConformalQuantiles":
        """Corrections from the out-of-fold predictions; also per left-out fold (for inner thresholds)."""
        ok = ~np.isnan(self.oof_[:, 0]) & (score_weight > 0)
        self.calibration_agents_ = sorted(set(agents[ok].tolist()))
        self.n_calibration_rows_ = int(ok.sum())
        self.scores_ = {lv: cqr_scores(self.oof_[:, pair_for(lv, self.alphas)[0]], self.oof_[:, pair_for(lv, self.alphas)[1]], z)
                        for lv in self.levels}
        self._ok, self._w, self._fold, self._runs = ok, score_weight, fold, runs
        self.corrections_ = self.corrections(ok)
        return self

    def corrections(self, mask: np.ndarray) -> dict[float, float]:
        n = len(np.unique(self._runs[mask]))  # exchangeable units: runs
        return {lv: conformal_quantile(self.scores_[lv][mask], self._w[mask], lv, n) for lv in self.levels}

    def corrections_without(self, k: int) -> dict[float, float]:
        """Corrections from every fold but k (to threshold fold k's own predictions honestly)."""
        m = self._ok & (self._fold != k)
        return self.corrections(m) if m.any() else dict(self.corrections_)

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Mean of the fold models' sorted quantiles (z scale), uncorrected."""
        return fix_crossing(np.mean([m.predict(X) for m in self.models_], axis=0))

    def get_state(self) -> dict[str, Any]:
        return {"alphas": list(self.alphas), "levels": list(self.levels), "seed": self.seed,
                "corrections": {str(k): v for k, v in self.corrections_.items()},
                "calibration_agents": self.calibration_agents_, "models": [m.get_state() for m in self.models_]}

    @classmethod
    def from_state(cls, d: dict[str, Any], n_jobs: int = 1) -> "CrossConformalQuantiles":
        m = cls(tuple(d["alphas"]), tuple(d["levels"]), None, d.get("seed", 0), n_jobs)
        m.models_ = [QuantileRegressor.from_state(s, n_jobs) for s in d["models"]]
        m.corrections_ = {float(k): float(v) for k, v in d["corrections"].items()}
        m.calibration_agents_ = list(d.get("calibration_agents", []))
        return m


@dataclass
class BudgetEstimator:
    """What a model directory carries for one dimension: conformalized quantiles + scale."""

    dim: str
    unit: float
    budget: float
    model: CrossConformalQuantiles
    feature_names: list[str]

    def intervals(self, X: np.ndarray, spent: np.ndarray, t: np.ndarray) -> dict[str, np.ndarray]:
        rate = pace(spent, t, self.unit)
        q = corrected_quantiles(self.model.predict(X), self.model.corrections_, self.model.alphas)
        out = {"median": from_z(q[:, list(self.model.alphas).index(0.5)], rate)}
        for lv in self.model.levels:
            i, j = pair_for(lv, self.model.alphas)
            out[f"lo_{lv}"], out[f"hi_{lv}"] = from_z(q[:, i], rate), from_z(q[:, j], rate)
        return out

    def prob_within(self, X: np.ndarray, spent: np.ndarray, t: np.ndarray, budget: float | None = None) -> np.ndarray:
        B = self.budget if budget is None else budget
        rate = pace(spent, t, self.unit)
        q = corrected_quantiles(self.model.predict(X), self.model.corrections_, self.model.alphas)
        return within(q, self.model.alphas, B - spent, rate)

    def get_state(self) -> dict[str, Any]:
        return {"dim": self.dim, "unit": self.unit, "budget": self.budget, "feature_names": self.feature_names,
                "model": self.model.get_state()}

    @classmethod
    def from_state(cls, d: dict[str, Any]) -> "BudgetEstimator":
        return cls(d["dim"], float(d["unit"]), float(d["budget"]), CrossConformalQuantiles.from_state(d["model"]), list(d["feature_names"]))
