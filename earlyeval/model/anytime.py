"""Anytime-valid bounds on an error rate, for thresholds certified as a benchmark pass goes (issue 28 item 3).

A pass re-checks its thresholds after every graded audit run; a fixed-n test re-run that way would inflate its
error.  ``cs_bounds`` is a confidence sequence: the exact (Clopper-Pearson) interval at n observations, at level
``alpha_n = alpha * 6 / (pi^2 n^2)``.  Since sum_n alpha_n = alpha, a union bound gives, for i.i.d. Bernoulli(p)
observations, P(exists n >= 1: p outside the n-th interval) <= alpha: valid at every n at once, however often
it is looked at and whenever one stops.  Textbook and conservative (a betting confidence sequence is tighter);
pure ``math`` so that the live path stays light (no scipy; tests/live/test_live_imports.py).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Callable


def binom_cdf(k: int, n: int, p: float) -> float:
    """P(Bin(n, p) <= k), summed in log space (n is at most a pass's length: thousands)."""
    if k < 0:
        return 0.0
    if k >= n or p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    lp, lq = math.log(p), math.log1p(-p)
    terms = [
        math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp + (n - i) * lq
        for i in range(k + 1)
    ]
    m = max(terms)
    return min(1.0, math.exp(m) * math.fsum(math.exp(t - m) for t in terms))


def _solve(f: Callable[[float], float], lo: float = 0.0, hi: float = 1.0, iters: int = 60) -> float:
    """The root of a decreasing f on [lo, hi] by bisection (to ~1e-18)."""
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if f(mid) > 0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def cp_upper(k: int, n: int, a: float) -> float:
    """One-sided exact upper bound: the p with P(Bin(n, p) <= k) = a (1 when k = n)."""
    if k >= n:
        return 1.0
    return _solve(lambda p: binom_cdf(k, n, p) - a)


def cp_lower(k: int, n: int, a: float) -> float:
    """One-sided exact lower bound: the p with P(Bin(n, p) >= k) = a (0 when k = 0)."""
    if k <= 0:
        return 0.0
    return _solve(lambda p: a - (1.0 - binom_cdf(k - 1, n, p)))


def spent_level(alpha: float, n: int) -> float:
    """alpha_n = alpha * 6 / (pi^2 n^2): the share of alpha spent at the n-th observation (sums to alpha)."""
    return alpha * 6.0 / (math.pi**2 * n * n)


@lru_cache(maxsize=65536)
def cs_bounds(errors: int, n: int, alpha: float) -> tuple[float, float]:
    """(lower, upper) of the two-sided confidence sequence at n observations with ``errors`` errors: each side at
    alpha_n / 2, so P(the true rate ever leaves the interval) <= alpha.  (0, 1) with no observation."""
    if n <= 0:
        return 0.0, 1.0
    a = spent_level(alpha, n) / 2.0
    return cp_lower(errors, n, a), cp_upper(errors, n, a)


def cs_upper_at_most(errors: int, n: int, alpha: float, rate: float) -> bool:
    """Whether ``cs_bounds``' upper bound is <= rate, by one tail sum instead of a bisection: the exact upper
    bound p_u solves P(Bin(n, p_u) <= errors) = a, and that tail falls with p, so p_u <= rate iff it is <= a at rate."""
    if n <= 0 or errors >= n:
        return rate >= 1.0
    return binom_cdf(errors, n, rate) <= spent_level(alpha, n) / 2.0


def cs_lower_above(errors: int, n: int, alpha: float, rate: float) -> bool:
    """Whether ``cs_bounds``' lower bound is > rate (one tail sum, as ``cs_upper_at_most``)."""
    if n <= 0 or errors <= 0:
        return False
    return 1.0 - binom_cdf(errors - 1, n, rate) < spent_level(alpha, n) / 2.0
