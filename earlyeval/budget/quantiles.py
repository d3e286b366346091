"""The budget estimators: LightGBM quantile regression, its cross-conformal (CQR) wrapper, and the
per-dimension ``BudgetEstimator`` a model directory carries.  The one budget module that imports lightgbm."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightgbm as lgb
import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.utils import Tags
from sklearn.utils.validation import check_is_fitted, validate_data

from earlyeval.budget.config import ALPHAS, BUDGET_LGBM, LEVELS
from earlyeval.core import atomic
from earlyeval.fitting.metrics import weighted_quantile
from earlyeval.model.budget import pace
from earlyeval.model.cqr import (
    corrected_quantiles,
    cqr_scores,
    fix_crossing,
    from_z,
    pair_for,
    within,
)


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
            sample_weight = _weights(sample_weight, len(y))
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


def _weights(w: Any, n: int) -> np.ndarray:
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


# agent: agent_conformal_quantile (default); pooled: conformal_quantile over rows
CALIBRATIONS = (
    "agent",
    "pooled",
)
# the arrays corrections_without() needs, saved beside the JSON state (npz, no pickle)
CALIBRATION_ARRAYS = (
    "oof",
    "z",
    "calibration_mask",
    "score_weight",
    "fold",
    "units",
    "calibration_units",
)


class CrossConformalQuantiles(BaseEstimator):
    """Quantile boosters fitted per agent fold, CQR-corrected with out-of-fold scores.

    ``fit(X, y, *, sample_weight, groups, fold, score_weight, units, calibration_units)``: rows of training
    agents only; `fold` is each row's agent fold (-1: training only; default: the groups, sorted, dealt
    round-robin into ``n_folds``, or the rows when there are no groups).  Fold model k is fitted on rows
    outside fold k (weight `sample_weight` > 0) and scores the rows of fold k.  The correction per level:
    ``calibration="agent"`` (default), ``agent_conformal_quantile`` -- per calibration unit (default: the
    groups; the budget passes agent groups), the `score_weight`-weighted level quantile of its scores,
    then the ``agent_rank(n, agent_quantile)``-th smallest over the n units, so that the agent, not the run,
    is the exchangeable unit; ``"pooled"``: the weighted level (1 + 1/n) quantile of all scores, n = the
    distinct `units` (runs).
    ``fit_agents_``/``calibration_agents_`` record what each stage saw.  ``predict`` is the
    uncorrected mean of the fold models' sorted quantiles, ``(n, len(alphas))``.

    State: ``get_state()`` is JSON (what extra_budget.json ships: models and corrections);
    ``get_arrays()`` the calibration arrays ``corrections_without`` needs.  ``save``/``load`` write and
    read both (JSON + npz, no pickle); ``from_state(state, arrays)`` without arrays gives a model that
    predicts but refuses ``corrections_without``."""

    def __init__(
        self,
        alphas: tuple = ALPHAS,
        levels: tuple = LEVELS,
        lgbm_params: dict[str, Any] | None = None,
        seed: int = 0,
        n_jobs: int = 1,
        n_folds: int = 3,
        calibration: str = "agent",
        agent_quantile: float = 0.5,
    ):
        self.alphas = alphas
        self.levels = levels
        self.lgbm_params = lgbm_params
        self.seed = seed
        self.n_jobs = n_jobs
        self.n_folds = n_folds
        self.calibration = calibration
        self.agent_quantile = agent_quantile

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.allow_nan = True
        return tags

    def _default_fold(self, n: int, groups: np.ndarray | None) -> np.ndarray:
        k = max(int(self.n_folds), 2)
        if groups is None:
            return np.arange(n) % k
        names = sorted(set(groups.tolist()))
        of = {g: i % k for i, g in enumerate(names)}
        return np.asarray([of[g] for g in groups.tolist()], dtype=np.int64)

    def fit(
        self,
        X: Any,
        y: Any,
        *,
        sample_weight: np.ndarray | None = None,
        groups: np.ndarray | None = None,
        fold: np.ndarray | None = None,
        score_weight: np.ndarray | None = None,
        units: np.ndarray | None = None,
        calibration_units: np.ndarray | None = None,
        feature_names: list[str] | None = None,
    ) -> "CrossConformalQuantiles":
        if self.calibration not in CALIBRATIONS:
            raise ValueError(f"calibration must be one of {CALIBRATIONS}, not {self.calibration!r}")
        if not 0.0 < float(self.agent_quantile) < 1.0:
            raise ValueError(f"agent_quantile must be in (0, 1), not {self.agent_quantile!r}")
        X, z = validate_data(
            self,
            X,
            y,
            dtype=[np.float64, np.float32],
            ensure_all_finite="allow-nan",
            y_numeric=True,
        )
        n = len(z)
        fit_weight = np.ones(n) if sample_weight is None else _weights(sample_weight, n)
        score_weight = (
            fit_weight if score_weight is None else np.asarray(score_weight, dtype=np.float64)
        )
        groups = None if groups is None else np.asarray(groups)
        agents = groups if groups is not None else np.zeros(n, dtype=np.int64)
        fold = self._default_fold(n, groups) if fold is None else np.asarray(fold)
        units = np.arange(n) if units is None else np.asarray(units)
        cal_units = (agents if calibration_units is None else np.asarray(calibration_units)).astype(
            str
        )
        for name, arr in (
            ("groups", agents),
            ("fold", fold),
            ("score_weight", score_weight),
            ("units", units),
            ("calibration_units", cal_units),
        ):
            if len(arr) != n:
                raise ValueError(f"{name} has {len(arr)} entries for {n} rows")
        cols = getattr(self, "feature_names_in_", None)
        names = (
            list(feature_names)
            if feature_names
            else ([str(c) for c in cols] if cols is not None else None)
        )
        alphas = tuple(self.alphas)
        folds = sorted(int(k) for k in np.unique(fold) if k >= 0)
        models: list[QuantileRegressor] = []
        model_folds: list[int] = []
        oof = np.full((n, len(alphas)), np.nan)
        for k in folds:
            tr = (fold != k) & (fit_weight > 0)
            if not tr.any():
                continue
            m = QuantileRegressor(alphas, self.lgbm_params, self.seed, self.n_jobs)
            m.fit(
                X[tr], z[tr], sample_weight=fit_weight[tr], groups=agents[tr], feature_names=names
            )
            models.append(m)
            model_folds.append(k)
            cal = fold == k
            oof[cal] = m.predict(X[cal])
        if not models:
            raise ValueError(
                f"CrossConformalQuantiles needs rows in at least two folds to fit (n_samples = {n}, "
                f"folds {folds})"
            )
        self.models_, self.model_folds_, self.oof_ = models, model_folds, oof
        self.calibrate(z, score_weight, fold, agents, units, cal_units)
        return self

    def calibrate(
        self,
        z: np.ndarray,
        score_weight: np.ndarray,
        fold: np.ndarray,
        agents: np.ndarray,
        units: np.ndarray,
        calibration_units: np.ndarray | None = None,
    ) -> "CrossConformalQuantiles":
        """Corrections from the out-of-fold predictions; keeps what ``corrections_without`` needs."""
        ok = ~np.isnan(self.oof_[:, 0]) & (score_weight > 0)
        self.calibration_agents_ = sorted(set(agents[ok].tolist()))
        self.n_calibration_rows_ = int(ok.sum())
        self.z_, self.calibration_mask_, self.score_weight_, self.fold_, self.units_ = (
            z,
            ok,
            score_weight,
            fold,
            units,
        )
        self.calibration_units_ = np.asarray(
            agents if calibration_units is None else calibration_units
        ).astype(str)
        self.scores_ = self._scores(z)
        self.corrections_ = self.corrections(ok)
        self.unit_corrections_ = self.per_unit(ok)
        return self

    def _scores(self, z: np.ndarray) -> dict[float, np.ndarray]:
        return {
            lv: cqr_scores(
                self.oof_[:, pair_for(lv, self.alphas)[0]],
                self.oof_[:, pair_for(lv, self.alphas)[1]],
                z,
            )
            for lv in self.levels
        }

    def corrections(self, mask: np.ndarray) -> dict[float, float]:
        """Per level, the conformal correction from the calibration rows in `mask`."""
        if not hasattr(self, "scores_"):
            raise NotFittedError(
                "this CrossConformalQuantiles was loaded without its calibration arrays "
                "(extra_budget.json ships none): load it with CrossConformalQuantiles.load"
            )
        if self.calibration == "agent":  # exchangeable units: agent groups
            u = self.calibration_units_[mask]
            return {
                lv: agent_conformal_quantile(
                    self.scores_[lv][mask], self.score_weight_[mask], u, lv, self.agent_quantile
                )[0]
                for lv in self.levels
            }
        n = len(np.unique(self.units_[mask]))  # exchangeable units: runs
        return {
            lv: conformal_quantile(self.scores_[lv][mask], self.score_weight_[mask], lv, n)
            for lv in self.levels
        }

    def per_unit(self, mask: np.ndarray) -> dict[float, dict[str, float]]:
        """Per level, each calibration unit's own correction (the one giving it exactly that level): the audit."""
        u = self.calibration_units_[mask]
        return {
            lv: agent_conformal_quantile(
                self.scores_[lv][mask], self.score_weight_[mask], u, lv, self.agent_quantile
            )[1]
            for lv in self.levels
        }

    def corrections_without(self, k: int) -> dict[float, float]:
        """Corrections from every fold but k (to threshold fold k's own predictions honestly)."""
        check_is_fitted(self, "corrections_")
        if not hasattr(self, "fold_"):
            self.corrections(np.zeros(0, bool))  # raises the not-fitted error that names the fix
        m = self.calibration_mask_ & (self.fold_ != k)
        return self.corrections(m) if m.any() else dict(self.corrections_)

    def predict(self, X: Any) -> np.ndarray:
        """Mean of the fold models' sorted quantiles (z scale), uncorrected."""
        check_is_fitted(self, "models_")
        X = validate_data(
            self,
            X,
            reset=False,
            dtype=[np.float64, np.float32],
            ensure_all_finite="allow-nan",
            ensure_min_samples=0,
        )
        return fix_crossing(np.mean([m.predict(X) for m in self.models_], axis=0))

    # ------------------------------------------------------------------ state
    def get_state(self) -> dict[str, Any]:
        """JSON-able: models and corrections (the shipped form; what ``predict`` needs)."""
        check_is_fitted(self, "corrections_")
        return {
            "alphas": list(self.alphas),
            "levels": list(self.levels),
            "seed": self.seed,
            "calibration": self.calibration,
            "agent_quantile": float(self.agent_quantile),
            "corrections": {str(k): v for k, v in self.corrections_.items()},
            "unit_corrections": {str(k): v for k, v in self.unit_corrections_.items()},
            "calibration_agents": self.calibration_agents_,
            "models": [m.get_state() for m in self.models_],
        }

    def get_arrays(self) -> dict[str, np.ndarray]:
        """The calibration arrays (``CALIBRATION_ARRAYS``): out-of-fold predictions, mask, weights, folds, units."""
        check_is_fitted(self, "calibration_mask_")
        return {
            "oof": self.oof_,
            "z": self.z_,
            "calibration_mask": self.calibration_mask_,
            "score_weight": self.score_weight_,
            "fold": self.fold_,
            "units": self.units_,
            "calibration_units": self.calibration_units_,
        }

    @classmethod
    def from_state(
        cls, d: dict[str, Any], arrays: dict[str, np.ndarray] | None = None, n_jobs: int = 1
    ) -> "CrossConformalQuantiles":
        """Rebuild from ``get_state()`` (and ``get_arrays()``, for ``corrections_without``)."""
        m = cls(
            tuple(d["alphas"]),
            tuple(d["levels"]),
            None,
            d.get("seed", 0),
            n_jobs,
            calibration=d.get("calibration", "pooled"),
            agent_quantile=float(d.get("agent_quantile", 0.5)),
        )
        m.models_ = [QuantileRegressor.from_state(s, n_jobs) for s in d["models"]]
        m.model_folds_ = list(d.get("model_folds", range(len(m.models_))))
        m.corrections_ = {float(k): float(v) for k, v in d["corrections"].items()}
        m.unit_corrections_ = {float(k): dict(v) for k, v in d.get("unit_corrections", {}).items()}
        m.calibration_agents_ = list(d.get("calibration_agents", []))
        if m.models_:
            m.n_features_in_ = m.models_[0].n_features_in_
        if arrays is not None:
            missing = [k for k in CALIBRATION_ARRAYS if k not in arrays]
            if missing:
                raise ValueError(f"calibration arrays lack {missing}")
            a = {k: np.asarray(arrays[k]) for k in CALIBRATION_ARRAYS}
            n = len(a["oof"])
            if a["oof"].shape != (n, len(m.alphas)) or any(
                len(a[k]) != n for k in CALIBRATION_ARRAYS
            ):
                raise ValueError(
                    f"calibration arrays disagree in shape: { {k: a[k].shape for k in a} }"
                )
            m.oof_, m.z_ = a["oof"].astype(np.float64), a["z"].astype(np.float64)
            m.calibration_mask_ = a["calibration_mask"].astype(bool)
            m.score_weight_, m.fold_, m.units_ = (
                a["score_weight"].astype(np.float64),
                a["fold"],
                a["units"],
            )
            m.calibration_units_ = a["calibration_units"].astype(str)
            m.n_calibration_rows_ = int(m.calibration_mask_.sum())
            m.scores_ = m._scores(m.z_)
        return m

    def save(self, path: str | Path) -> Path:
        """`path`.json (``get_state``) and `path`.npz (``get_arrays``), each written atomically."""
        p = Path(path)
        buf = io.BytesIO()
        np.savez(buf, **self.get_arrays())
        atomic.write_bytes(p.with_suffix(".npz"), buf.getvalue())
        atomic.write_text(p.with_suffix(".json"), json.dumps(self.get_state()))
        return p.with_suffix(".json")

    @classmethod
    def load(cls, path: str | Path, n_jobs: int = 1) -> "CrossConformalQuantiles":
        """Read what ``save`` wrote; object arrays are refused (``allow_pickle=False``)."""
        p = Path(path)
        state = json.loads(p.with_suffix(".json").read_text())
        with np.load(p.with_suffix(".npz"), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        return cls.from_state(state, arrays, n_jobs)


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

    def prob_within(
        self, X: np.ndarray, spent: np.ndarray, t: np.ndarray, budget: float | None = None
    ) -> np.ndarray:
        B = self.budget if budget is None else budget
        rate = pace(spent, t, self.unit)
        q = corrected_quantiles(self.model.predict(X), self.model.corrections_, self.model.alphas)
        return within(q, self.model.alphas, B - spent, rate)

    def get_state(self) -> dict[str, Any]:
        return {
            "dim": self.dim,
            "unit": self.unit,
            "budget": self.budget,
            "feature_names": self.feature_names,
            "model": self.model.get_state(),
        }

    @classmethod
    def from_state(cls, d: dict[str, Any]) -> "BudgetEstimator":
        return cls(
            d["dim"],
            float(d["unit"]),
            float(d["budget"]),
            CrossConformalQuantiles.from_state(d["model"]),
            list(d["feature_names"]),
        )
