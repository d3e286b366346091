"""A fitted outcome model's prediction side: Platt maps on booster margins, with numpy and scipy.special only.

``model.OutcomeModel`` (the scikit-learn estimator, offline: it imports LightGBM's
sklearn API and scikit-learn) and ``OutcomePredictor`` (what a model directory loads,
on the live path) share everything here: the Platt map, the feature checks, the
calibrated probabilities and the saved state.  So a loaded model predicts with the
same code as the estimator that was fitted, and the live path never imports pandas
or scikit-learn (``lgbm_capi`` evaluates the boosters through LightGBM's C API).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from earlyeval.config.eval_config import (
    DEFAULT_LGBM,  # the shipped LightGBM settings (one definition)
)
from earlyeval.core.numerics import expit
from earlyeval.model.lgbm_capi import load_booster

# Fixed a priori, not tuned per agent: small trees, strong regularisation of leaf size.
# 120 trees at 0.1 on 63 bins give the same held-out AUROC as 250 at 0.05 on 255 bins
# (0.931 vs 0.931 mean over the six SWE-bench agents) at a third of the fit time.

CLASSES = np.array([0, 1])  # 0 = failure, 1 = success: predict_proba's columns


@dataclass
class Platt:
    """p = 1 / (1 + exp(a * f + b)) on the booster's raw margin f (log-odds)."""

    a: float
    b: float

    def __call__(self, f: np.ndarray) -> np.ndarray:
        p: np.ndarray = expit(-(self.a * f + self.b))
        return p


def column_names(X: Any) -> list[str] | None:
    """A DataFrame's column names when they are all strings (scikit-learn's rule), else None.
    Duck-typed (``columns``), so that checking a row never imports pandas."""
    cols = getattr(X, "columns", None)
    if cols is None:
        return None
    names = list(cols)
    return names if names and all(isinstance(c, str) for c in names) else None


def as_matrix(X: Any) -> np.ndarray:
    """X as a 2-d float array: float32/float64 kept as they are (no copy), other numbers cast to float64."""
    if hasattr(X, "tocsr") or hasattr(X, "todense"):
        raise TypeError(
            "Sparse data was passed, but dense data is required (LightGBM rows of a fixed width)"
        )
    arr = (
        X.to_numpy()
        if getattr(X, "columns", None) is not None and hasattr(X, "to_numpy")
        else np.asarray(X)
    )
    if arr.ndim != 2:
        raise ValueError(
            f"Expected a 2D array of features, got {arr.ndim}D (shape {arr.shape}). "
            "Reshape your data: x.reshape(1, -1) for a single row"
        )
    if arr.dtype.kind == "c":
        raise ValueError("Complex data not supported: features must be real numbers")
    if arr.dtype.kind not in "fiub":
        try:
            arr = arr.astype(np.float64)
        except TypeError as e:
            raise TypeError(f"features must be numbers, got dtype {arr.dtype} ({e})") from e
        except ValueError as e:
            raise ValueError(f"features must be numbers, got dtype {arr.dtype} ({e})") from e
    elif arr.dtype.kind != "f" or arr.dtype.itemsize not in (4, 8):
        arr = arr.astype(np.float64)
    return arr


def check_features(X: Any, names_in: list[str] | None, n_in: int, who: str) -> np.ndarray:
    """X as a matrix after checking it against what the model was fitted on: the width always, the
    column names when X has them (a DataFrame) and the model does.  A mismatch is a ValueError that says
    which names or how many columns, in scikit-learn's words."""
    names = column_names(X)
    if names is not None and names_in is not None and names != list(names_in):
        unseen = [n for n in names if n not in set(names_in)]
        missing = [n for n in names_in if n not in set(names)]
        msg = "The feature names should match those that were passed during fit.\n"
        if unseen:
            msg += "Feature names unseen at fit time:\n" + "".join(f"- {n}\n" for n in unseen[:10])
        if missing:
            msg += "Feature names seen at fit time, yet now missing:\n" + "".join(
                f"- {n}\n" for n in missing[:10]
            )
        if not unseen and not missing:
            msg += "Feature names must be in the same order as they were in fit.\n"
        raise ValueError(msg)
    arr = as_matrix(X)
    if arr.shape[1] != n_in:
        raise ValueError(
            f"X has {arr.shape[1]} features, but {who} is expecting {n_in} features as input."
        )
    return arr


def split_proba(P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(P(success), P(failure)) as two contiguous vectors, from ``predict_proba``'s (n, 2) [failure, success]."""
    return np.ascontiguousarray(P[:, 1]), np.ascontiguousarray(P[:, 0])


class CalibratedOutcome:
    """Prediction and state over the fitted attributes ``boosters_`` (name -> booster), ``platt_``,
    ``feature_names_in_``, ``n_features_in_``, ``base_rate_`` and the parameters ``twin``, ``lgbm_params``,
    ``monotone``, ``seed``, ``n_jobs``.  ``predict_proba`` columns are ``classes_`` = [0 failure, 1 success].

    With ``twin="mirror"`` (the default) P(failure) is 1 - P(success) and rows sum to 1; with "flipped" or
    "balanced" column 0 is the separately calibrated failure model, so a row sums to 1 only approximately."""

    # set by the subclass: fitted (OutcomeModel.fit) or loaded (OutcomePredictor)
    boosters_: dict[
        str, Any
    ]  # a LightGBM booster (lightgbm.Booster or lgbm_capi.CBooster) per side
    platt_: dict[str, Platt]
    n_features_in_: int
    base_rate_: float
    classes_: np.ndarray
    twin: str
    lgbm_params: dict[str, Any] | None
    monotone: dict[str, int] | None
    seed: int
    n_jobs: int

    def _features(self, X: Any) -> np.ndarray:
        return check_features(
            X, getattr(self, "feature_names_in_", None), self.n_features_in_, type(self).__name__
        )

    def predict_proba(self, X: Any) -> np.ndarray:
        """(n, 2): [P(failure), P(success)] per row, Platt-calibrated."""
        Xm = self._features(X)
        ps = self.platt_["success"](
            self.boosters_["success"].predict(Xm, raw_score=True, num_threads=self.n_jobs)
        )
        if "failure" in self.boosters_:
            pf = self.platt_["failure"](
                self.boosters_["failure"].predict(Xm, raw_score=True, num_threads=self.n_jobs)
            )
        else:
            pf = 1.0 - ps
        return np.column_stack([pf, ps])

    def predict_success(self, X: Any) -> np.ndarray:
        """P(success) per row, a 1-d vector (``predict_proba(X)[:, 1]``)."""
        return split_proba(self.predict_proba(X))[0]

    def predict(self, X: Any) -> np.ndarray:
        """The more probable outcome per row (1 success, 0 failure)."""
        P = self.predict_proba(X)
        out: np.ndarray = self.classes_[np.argmax(P, axis=1)]
        return out

    def mirror_gap(self, X: Any) -> float:
        """max |P(failure) - (1 - P(success))| on X; 0 by construction for twin='mirror'."""
        ps, pf = split_proba(self.predict_proba(X))
        return float(np.max(np.abs(pf - (1.0 - ps)))) if len(ps) else 0.0

    @property
    def booster_(self) -> Any:
        """The success booster (the only one unless twin is "flipped" or "balanced")."""
        return self.boosters_["success"]

    def get_state(self) -> dict[str, Any]:
        """The saved form (``modeldir``): booster texts, Platt (a, b), feature names and the parameters."""
        names = getattr(self, "feature_names_in_", None)
        if names is None:
            raise ValueError(
                "a model saved to a model directory needs feature names: fit it on a DataFrame or pass feature_names"
            )
        return {
            "boosters": {k: b.model_to_string() for k, b in self.boosters_.items()},
            "platt": {k: {"a": p.a, "b": p.b} for k, p in self.platt_.items()},
            "feature_names": list(names),
            "twin": self.twin,
            "lgbm_params": dict(DEFAULT_LGBM) if self.lgbm_params is None else self.lgbm_params,
            "monotone": self.monotone,
            "base_rate": self.base_rate_,
            "seed": self.seed,
        }


class OutcomePredictor(CalibratedOutcome):
    """A fitted ``OutcomeModel`` rebuilt from its saved state (what ``modeldir.load_model_dir`` returns).

    Predicts exactly as the estimator did (same code, same boosters: ``lgbm_capi.CBooster``, or
    ``lightgbm.Booster`` when lib_lightgbm's C API cannot be used).  It cannot be refitted: fit an
    ``OutcomeModel`` for that."""

    def __init__(
        self,
        *,
        boosters: dict[str, Any],
        platt: dict[str, Platt],
        feature_names: list[str],
        twin: str = "mirror",
        lgbm_params: dict[str, Any] | None = None,
        monotone: dict[str, int] | None = None,
        seed: int = 0,
        base_rate: float = float("nan"),
        n_jobs: int = 1,
    ):
        self.twin = twin
        self.lgbm_params = lgbm_params
        self.monotone = monotone
        self.seed = seed
        self.n_jobs = n_jobs
        self.boosters_ = dict(boosters)
        self.platt_ = dict(platt)
        self.feature_names_in_ = list(feature_names)
        self.n_features_in_ = len(self.feature_names_in_)
        self.base_rate_ = float(base_rate)
        self.classes_ = CLASSES.copy()

    @classmethod
    def from_state(cls, d: dict[str, Any], n_jobs: int = 1) -> "OutcomePredictor":
        """The inverse of ``get_state``; booster texts are parsed by ``lgbm_capi.load_booster``."""
        return cls(
            boosters={
                k: load_booster(s) if isinstance(s, str) else s for k, s in d["boosters"].items()
            },
            platt={k: Platt(float(v["a"]), float(v["b"])) for k, v in d["platt"].items()},
            feature_names=list(d["feature_names"]),
            twin=d["twin"],
            lgbm_params=d["lgbm_params"],
            monotone=d.get("monotone"),
            seed=d.get("seed", 0),
            base_rate=float(d.get("base_rate", float("nan"))),
            n_jobs=n_jobs,
        )
