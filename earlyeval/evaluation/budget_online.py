"""Online re-conformalization of the budget intervals (reported BESIDE the label-free LOAO numbers).

A held-out agent's runs finish in a seeded order; once 20 have finished, the CQR correction comes from its
finished runs' realized budgets (no outcome label read) instead of the calibration agents'. The rule and why it is
not the headline: docs/architecture.md, "The remaining budget, in detail".
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from earlyeval.fitting.budget_quantiles import conformal_quantile
from earlyeval.fitting.metrics import interval_coverage, interval_width
from earlyeval.model.cqr import corrected_quantiles, cqr_scores, from_z, pair_for

ONLINE_MIN_RUNS = (
    20  # k: A's own scores replace the calibration agents' once k of A's runs have finished
)
ONLINE_SEED = 0
NOTE = (
    "online re-conformalization: run i of the held-out agent uses a CQR correction from the realized budgets "
    f"(no outcome labels) of that agent's runs finished before i (seeded random order) once >= {ONLINE_MIN_RUNS} "
    "have finished, the calibration agents' correction before; it uses the new agent's finished runs and is "
    "NOT the label-free headline (coverage/width there are the LOAO numbers)"
)


def run_order(runs: np.ndarray, agent: str, seed: int = ONLINE_SEED) -> np.ndarray:
    """The seeded random order in which `agent`'s runs finish (independent of the order `runs` is given in)."""
    rs = np.unique(np.asarray(runs, dtype=np.int64))
    return np.random.default_rng([int(seed), zlib.crc32(agent.encode())]).permutation(rs)


def online_corrections(
    scores: np.ndarray,
    w: np.ndarray,
    run_of_row: np.ndarray,
    order: np.ndarray,
    fallback: float,
    level: float,
    min_runs: int = ONLINE_MIN_RUNS,
) -> tuple[np.ndarray, np.ndarray]:
    """Per run of `order` (position i): its correction and how many own finished runs it used (0: fallback).

    Only rows of runs at positions < i enter run i's correction."""
    pos = {int(r): i for i, r in enumerate(order)}
    row_pos = np.asarray([pos.get(int(r), -1) for r in run_of_row])
    Q = np.full(len(order), float(fallback))
    n_own = np.zeros(len(order), dtype=np.int64)
    for i in range(max(min_runs, 1), len(order)):
        m = (row_pos >= 0) & (row_pos < i)
        Q[i] = conformal_quantile(scores[m], w[m], level, i)
        n_own[i] = i
    return Q, n_own


def online_quantiles(
    q_raw: np.ndarray,
    z: np.ndarray,
    w: np.ndarray,
    run_of_row: np.ndarray,
    agent_of_row: np.ndarray,
    fallback: dict[float, float],
    alphas: tuple,
    levels: tuple,
    orders: dict[str, np.ndarray],
    min_runs: int = ONLINE_MIN_RUNS,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Online-corrected quantiles of held-out prefix rows.

    q_raw: (n, len(alphas)) uncorrected sorted quantiles (z scale); z: realized z of each row; w: prefix
    weights; orders: per agent, its runs in finishing order.  Each agent is its own stream.  Returns
    (q_online (n, A), correction (n, L), own finished runs used (n,))."""
    n = len(z)
    Qrow = np.full((n, len(levels)), np.nan)
    nown = np.zeros(n, dtype=np.int64)
    for a in np.unique(agent_of_row):
        ra = np.flatnonzero(agent_of_row == a)
        present = set(run_of_row[ra].tolist())
        order = np.asarray([r for r in orders[str(a)] if int(r) in present], dtype=np.int64)
        idx = {int(r): i for i, r in enumerate(order)}
        rpos = np.asarray([idx[int(r)] for r in run_of_row[ra]])
        for li, lv in enumerate(levels):
            i, j = pair_for(lv, alphas)
            s = cqr_scores(q_raw[ra, i], q_raw[ra, j], z[ra])
            Q, used = online_corrections(
                s, w[ra], run_of_row[ra], order, fallback[lv], lv, min_runs
            )
            Qrow[ra, li] = Q[rpos]
            nown[ra] = used[rpos]
    q = (
        corrected_quantiles(q_raw, {lv: Qrow[:, li] for li, lv in enumerate(levels)}, alphas)
        if n
        else q_raw.copy()
    )
    return q, Qrow, nown


def online_block(
    q: np.ndarray,
    nown: np.ndarray,
    rate: np.ndarray,
    remaining: np.ndarray,
    w: np.ndarray,
    run_of_row: np.ndarray,
    alphas: tuple,
    levels: tuple,
    B: float,
) -> dict[str, Any]:
    """Coverage and width/B of the online intervals on a set of held-out rows (all runs, and runs after the switch)."""
    if len(q) == 0:
        return {"n_runs": 0}
    own = nown > 0
    out: dict[str, Any] = {
        "n_runs": int(len(np.unique(run_of_row))),
        "runs_with_own_correction": int(len(np.unique(run_of_row[own]))),
        "coverage": {},
        "width_over_B_median": {},
        "coverage_runs_with_own_correction": {},
    }
    for lv in levels:
        i, j = pair_for(lv, alphas)
        lo, hi = from_z(q[:, i], rate), from_z(q[:, j], rate)
        out["coverage"][str(lv)] = _r(interval_coverage(remaining, lo, hi, w))
        out["width_over_B_median"][str(lv)] = _r(interval_width(lo, hi, B, w))
        out["coverage_runs_with_own_correction"][str(lv)] = (
            _r(interval_coverage(remaining[own], lo[own], hi[own], w[own])) if own.any() else None
        )
    return out


def _r(x: Any) -> Any:
    return None if x is None or np.isnan(x) else round(float(x), 4)
