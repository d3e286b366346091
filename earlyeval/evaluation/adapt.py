"""Adapting a trained predictor to a new agent.

Label-free, EM under label shift on the predictions only; or a warm start, Platt and thresholds refitted on a
small completed share of the tasks. Both: docs/architecture.md, "Adapting to a new agent".
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from earlyeval.fitting.metrics import RunSet

EPS = 1e-6


def prior_shift(p: np.ndarray, train_prior: float, new_prior: float) -> np.ndarray:
    """Posterior under a new class prior (Bayes' rule with the prior ratio)."""
    p = np.clip(p, EPS, 1 - EPS)
    a = p * (new_prior / train_prior)
    b = (1 - p) * ((1 - new_prior) / (1 - train_prior))
    return a / (a + b)


def em_prior(
    p_runs: np.ndarray, train_prior: float, max_iter: int = 200, tol: float = 1e-8
) -> float:
    """Saerens EM estimate of the success rate of a set of runs, from their posteriors only."""
    if len(p_runs) == 0:
        return train_prior
    pi = train_prior
    for _ in range(max_iter):
        new = float(np.mean(prior_shift(p_runs, train_prior, pi)))
        new = min(max(new, 1e-3), 1 - 1e-3)
        if abs(new - pi) < tol:
            pi = new
            break
        pi = new
    return pi


def run_level_scores(rs: RunSet, t_max: int = 1) -> np.ndarray:
    """One posterior per run for prior estimation: the mean P(success) over its first t_max prefixes.

    Early prefixes are used because they exist for every run whatever its length
    and, being far from the end, say little that depends on the run's length.
    """
    out = []
    for a in rs.p_s:
        out.append(float(np.mean(a[:t_max])) if len(a) else np.nan)
    x = np.asarray(out)
    return x[~np.isnan(x)]


def adapt_em(rs: RunSet, train_prior: float, t_max: int = 1) -> tuple[RunSet, dict[str, Any]]:
    """Prior-shift every prefix posterior of a RunSet by the EM estimate; mirror P(failure) accordingly."""
    scores = run_level_scores(rs, t_max)
    pi = em_prior(scores, train_prior)
    p_s = [prior_shift(a, train_prior, pi) for a in rs.p_s]
    p_f = [prior_shift(b, 1 - train_prior, 1 - pi) for b in rs.p_f]
    out = replace(rs, p_s=p_s, p_f=p_f)
    return out, {"train_prior": train_prior, "estimated_prior": pi, "runs": int(len(scores))}


def warm_split(n: int, share: float, seed: int) -> np.ndarray:
    """Boolean mask of the runs the user completes first (a seeded random share, at least 2)."""
    rng = np.random.default_rng(seed)
    k = max(2, int(round(share * n)))
    mask = np.zeros(n, dtype=bool)
    mask[rng.choice(n, size=min(k, n), replace=False)] = True
    return mask
