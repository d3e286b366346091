"""Conformalized-quantile maths on the z scale (numpy only): z <-> budget units, crossing, CQR scores and
widening, the piecewise-linear CDF through the quantiles.

``z = log1p(remaining / rate)`` with ``rate = targets.pace(...)``: remaining budget in units of the run's own pace."""

from __future__ import annotations

import numpy as np


def to_z(remaining: np.ndarray, rate: np.ndarray) -> np.ndarray:
    z: np.ndarray = np.log1p(np.maximum(remaining, 0.0) / rate)
    return z


def from_z(z: np.ndarray, rate: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.maximum(np.expm1(np.maximum(z, 0.0)), 0.0) * (
        rate if np.ndim(z) == 1 else rate[:, None]
    )
    return out


def fix_crossing(q: np.ndarray) -> np.ndarray:
    """Sort quantile predictions along the last axis (Chernozhukov et al.'s rearrangement)."""
    return np.sort(q, axis=-1)


def cqr_scores(q_lo: np.ndarray, q_hi: np.ndarray, z: np.ndarray) -> np.ndarray:
    """CQR conformity score: how far z falls outside [q_lo, q_hi] (negative inside)."""
    score: np.ndarray = np.maximum(q_lo - z, z - q_hi)
    return score


def pair_for(level: float, alphas: tuple[float, ...]) -> tuple[int, int]:
    """Indices of the (lo, hi) alphas of a central level, e.g. 0.9 -> (0.05, 0.95)."""
    lo, hi = (1 - level) / 2, (1 + level) / 2
    a = np.asarray(alphas)
    i, j = int(np.argmin(np.abs(a - lo))), int(np.argmin(np.abs(a - hi)))
    if abs(a[i] - lo) > 1e-9 or abs(a[j] - hi) > 1e-9:
        raise ValueError(f"alphas {alphas} lack the pair for level {level}")
    return i, j


def corrected_quantiles(
    q: np.ndarray, corrections: dict[float, float], alphas: tuple[float, ...]
) -> np.ndarray:
    """Widen each level's (lo, hi) pair by its CQR correction, then re-sort (a negative Q may cross)."""
    out = q.copy()
    for level, Q in corrections.items():
        i, j = pair_for(level, alphas)
        out[:, i] = q[:, i] - Q
        out[:, j] = q[:, j] + Q
    return fix_crossing(out)


def quantile_cdf(points: np.ndarray, alphas: tuple[float, ...], z: np.ndarray) -> np.ndarray:
    """P(Z <= z) from sorted quantile points: piecewise linear, linear tails to 0 and 1."""
    a = np.asarray(alphas, dtype=np.float64)
    P = np.asarray(points, dtype=np.float64)
    lo_ext = P[:, :1] - (P[:, 1:2] - P[:, :1]) * a[0] / max(a[1] - a[0], 1e-12)
    hi_ext = P[:, -1:] + (P[:, -1:] - P[:, -2:-1]) * (1 - a[-1]) / max(a[-1] - a[-2], 1e-12)
    xs = np.hstack([lo_ext, P, hi_ext])
    ps = np.r_[0.0, a, 1.0]
    out = np.empty(len(z))
    for i in range(len(z)):
        x = xs[i]
        if x[-1] - x[0] <= 0:
            out[i] = float(z[i] >= x[0])
            continue
        out[i] = np.interp(z[i], x, ps, left=0.0, right=1.0)
    return out


def within(
    q_corr: np.ndarray, alphas: tuple[float, ...], room: np.ndarray, rate: np.ndarray
) -> np.ndarray:
    """P(remaining <= room) from corrected z-quantiles; 0 when the budget is already spent."""
    zx = np.log1p(np.maximum(room, 0.0) / rate)
    p = quantile_cdf(q_corr, alphas, zx)
    return np.where(room < 0, 0.0, p)
