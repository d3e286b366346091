"""The halting rule, numpy only: shared by the offline metrics (``metrics``) and the live ``Monitor``.

Halt a run at the first prefix t >= ``min_t`` with P(success) >= tau_s or P(failure) >= tau_f;
when both cross at once, the outcome whose probability clears its threshold by more wins.
"""

from __future__ import annotations

import numpy as np


def first_crossing(p: np.ndarray, taus: np.ndarray) -> np.ndarray:
    """For each tau, the first prefix index i (0-based, i.e. t = i+1) with p[i] >= tau; len(p) if none."""
    if len(p) == 0:
        return np.zeros(len(taus), dtype=np.int64)
    run_max = np.maximum.accumulate(p)
    return np.searchsorted(run_max, taus, side="left")


def halting(p_s: np.ndarray, p_f: np.ndarray, tau_s: float, tau_f: float, min_t: int = 1) -> tuple[int, int]:
    """(t_halt, predicted) for one run; t_halt = 0 means not halted."""
    n = len(p_s)
    lo = max(min_t, 1) - 1
    for i in range(lo, n):
        s_hit, f_hit = p_s[i] >= tau_s, p_f[i] >= tau_f
        if s_hit or f_hit:
            if s_hit and f_hit:
                return i + 1, int(p_s[i] - tau_s >= p_f[i] - tau_f)
            return i + 1, int(s_hit)
    return 0, -1
