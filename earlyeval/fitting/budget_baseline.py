"""The linear-extrapolation baseline the budget report compares the model against, and its conformal CDF."""

from __future__ import annotations

from typing import Any

import numpy as np


class LinearExtrapolation:
    """Baseline: remaining = spend per step so far x (E[T | T > t] - t), T from training runs."""

    def fit(self, T: np.ndarray) -> "LinearExtrapolation":
        T = np.sort(np.asarray(T, dtype=np.float64))
        self.T_ = T
        top = int(T.max()) if len(T) else 1
        self.cond_median_ = np.empty(top + 1)
        for t in range(top + 1):
            later = T[T > t]
            self.cond_median_[t] = float(np.median(later)) if len(later) else t + 1.0
        return self

    def expected_T(self, t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=np.int64)
        inside = t < len(self.cond_median_)
        return np.where(
            inside, self.cond_median_[np.minimum(t, len(self.cond_median_) - 1)], t + 1.0
        )

    def predict(self, t: np.ndarray, spent: np.ndarray, unit: float) -> np.ndarray:
        rate = np.where(spent > 0, spent / np.maximum(t, 1), unit)
        return rate * np.maximum(self.expected_T(t) - t, 1.0)

    def get_state(self) -> dict[str, Any]:
        return {"conditional_median_T": self.cond_median_.tolist()}


def residual_cdf(resid: np.ndarray, w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Weighted empirical CDF of calibration residuals at x (conformal predictive distribution)."""
    if len(resid) == 0:
        return np.full(len(x), np.nan)
    o = np.argsort(resid, kind="stable")
    r, cw = resid[o], np.cumsum(w[o])
    k = np.searchsorted(r, x, side="right")
    return np.where(k > 0, cw[np.maximum(k - 1, 0)] / cw[-1], 0.0)
