"""The budget's cross-conformal wrapper ``CrossConformalQuantiles`` (quantile boosters per agent fold, CQR-corrected
with out-of-fold scores) and the per-dimension ``BudgetEstimator`` a model directory carries."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.utils import Tags
from sklearn.utils.validation import check_is_fitted, validate_data

from earlyeval.config.budget_config import ALPHAS, LEVELS
from earlyeval.core import atomic
from earlyeval.fitting.budget_quantiles import (
    QuantileRegressor,
    agent_conformal_quantile,
    checked_weights,
    conformal_quantile,
)
from earlyeval.model.cqr import (
    corrected_quantiles,
    cqr_scores,
    fix_crossing,
    from_z,
    pair_for,
    within,
)
from earlyeval.model.spend import pace

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
        fit_weight = np.ones(n) if sample_weight is None else checked_weights(sample_weight, n)
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
