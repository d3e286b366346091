"""Early stop under a budget B: per-run stop sets, their savings/costs, and the tau / step-cap selection rules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from earlyeval.fitting.budget_targets import DimTargets
from earlyeval.model.policy import first_halt_below


def halt_indices(ps: list[np.ndarray], taus: np.ndarray, lo: int) -> np.ndarray:
    """(runs, taus): the first prefix index i >= lo with p[i] < tau, len(p) when there is none.

    The one halting rule (``policy.first_halt_below``, the failure side on P(feasible)), 0-based."""
    h = first_halt_below(ps, np.asarray(taus, dtype=np.float64), lo + 1)
    n = np.asarray([len(p) for p in ps], dtype=np.int64)[:, None]
    return np.where(h > 0, h - 1, n)


def halt_index(p: np.ndarray, taus: np.ndarray, lo: int) -> np.ndarray:
    """Per tau, the first prefix index i >= lo with p[i] < tau; len(p) when there is none (one run)."""
    return halt_indices([p], taus, lo)[0]


@dataclass
class StopSet:
    """Runs for early-stop evaluation under a budget B.

    Regime "budget" (the headline): every run is capped at B, so a run succeeds
    under the budget iff it is feasible, and what a run costs is its spend up to
    the cap, min(total, B).  Halting after prefix t saves min(total, B) - spent_t
    (if positive); halting a feasible run is a false abort.  Regime "uncapped" is
    reported beside it: savings against the full totals of unresolved runs, and
    every halted resolved run counted as lost."""

    group: list[str]
    y: np.ndarray  # resolved
    feas: np.ndarray  # resolved within B
    T: np.ndarray
    p: list[np.ndarray]
    rem: list[np.ndarray]  # remaining usage after prefix t (index t-1)
    total: np.ndarray
    budget: float

    def __len__(self) -> int:
        return len(self.y)

    @property
    def capped(self) -> np.ndarray:
        return np.minimum(self.total, self.budget)

    def saved_capped(self, r: int, h: int) -> float:
        spent = self.total[r] - self.rem[r][h]
        return float(max(min(self.total[r], self.budget) - spent, 0.0))

    def steps_capped(self, r: int) -> int:
        """Steps a run takes under the cap: up to the step whose spend reaches B, else T."""
        cum = self.total[r] - np.r_[self.rem[r], 0.0]  # spend after prefixes 1..T
        over = np.flatnonzero(cum >= self.budget - 1e-12)
        return int(over[0] + 1) if len(over) else int(self.T[r])


def stop_stats(ss: StopSet, halt: np.ndarray) -> dict[str, Any]:
    """Early-stop metrics given each run's halting prefix index (len(p) = not halted)."""
    n = np.asarray([len(p) for p in ss.p])
    halted = halt < n
    R = len(ss)
    if R == 0:
        return {"n_runs": 0}
    saved_cap = np.asarray(
        [ss.saved_capped(r, h) if ok else 0.0 for r, (h, ok) in enumerate(zip(halt, halted))]
    )
    saved_unc = np.asarray(
        [ss.rem[r][h] if ok else 0.0 for r, (h, ok) in enumerate(zip(halt, halted))]
    )
    steps_cap = np.asarray([ss.steps_capped(r) for r in range(R)], dtype=np.float64)
    steps_saved_cap = np.where(halted, np.maximum(steps_cap - (halt + 1), 0), 0)
    infeas, feas, fail, succ = ss.feas == 0, ss.feas == 1, ss.y == 0, ss.y == 1
    den = ss.capped[infeas].sum()
    return {
        "n_runs": int(R),
        "halted_fraction": float(halted.mean()),
        "saved_on_failed": float(saved_cap[infeas].sum() / den) if den > 0 else None,
        "steps_saved_on_failed": float(steps_saved_cap[infeas].sum() / steps_cap[infeas].sum())
        if infeas.any()
        else None,
        "failed_runs_halted": float(halted[infeas].mean()) if infeas.any() else None,
        "false_abort_rate": float(halted[feas].mean()) if feas.any() else None,
        "success_rate_cost_pp": float(100.0 * (halted & feas).sum() / R),
        "uncapped": {
            "saved_on_unresolved": float(saved_unc[fail].sum() / ss.total[fail].sum())
            if ss.total[fail].sum() > 0
            else None,
            "false_abort_rate": float(halted[succ].mean()) if succ.any() else None,
            "resolve_rate_cost_pp": float(100.0 * (halted & succ).sum() / R),
        },
    }


def _group_costs(ss: StopSet, halts: np.ndarray) -> np.ndarray:
    """(n_candidates,) mean over groups of the success-within-budget cost in pp; halts is (runs, candidates)."""
    n = np.asarray([len(p) for p in ss.p])[:, None]
    lost = (halts < n) & (ss.feas[:, None] == 1)
    gs = np.asarray(ss.group)
    return np.mean([100.0 * lost[gs == g].mean(0) for g in sorted(set(ss.group))], axis=0)


def _saved_failed(ss: StopSet, halts: np.ndarray) -> np.ndarray:
    """(n_candidates,) capped budget saved on infeasible runs, as a share of their capped spend."""
    n = np.asarray([len(p) for p in ss.p])
    infeas = np.flatnonzero(ss.feas == 0)
    den = ss.capped[infeas].sum()
    out = np.zeros(halts.shape[1])
    for r in infeas:
        if n[r] == 0:
            continue
        h = np.minimum(halts[r], n[r] - 1)
        spent = ss.total[r] - ss.rem[r][h]
        out += np.where(halts[r] < n[r], np.maximum(min(ss.total[r], ss.budget) - spent, 0.0), 0.0)
    return out / den if den > 0 else out


def select_tau(ss: StopSet, taus: tuple, max_cost_pp: float, lo: int) -> dict[str, Any]:
    """Max capped budget saved on infeasible runs s.t. mean-over-groups cost <= max_cost_pp; ties: lower tau."""
    tv = np.asarray(taus, dtype=np.float64)
    if len(ss) == 0:
        return {"tau": 0.0, "selected_on": [], "note": "no inner runs: never halt"}
    halts = halt_indices(list(ss.p), tv, lo)
    cost = _group_costs(ss, halts)
    saved = _saved_failed(ss, halts)
    score = np.where(cost <= max_cost_pp + 1e-9, saved, -1.0)
    i = int(np.flatnonzero(score == score.max())[0])
    return {
        "tau": float(tv[i]),
        "selection_saved_on_failed": float(saved[i]),
        "selection_cost_pp": float(cost[i]),
        "selected_on": sorted(set(ss.group)),
        "max_cost_pp": max_cost_pp,
    }


def cap_halts(ss: StopSet, k: int) -> np.ndarray:
    """Step cap k: halt after prefix k (index k-1) when the run is longer than k."""
    n = np.asarray([len(p) for p in ss.p])
    return np.where(ss.T > k, np.minimum(k - 1, n), n)


def select_cap(ss: StopSet, max_cost_pp: float, max_k: int) -> dict[str, Any]:
    """The smallest-cost-feasible step cap that saves most on failed runs of the inner runs."""
    if len(ss) == 0:
        return {"k": None}
    ks = np.arange(1, max(max_k, 1) + 1)
    halts = np.column_stack([cap_halts(ss, int(k)) for k in ks])
    cost = _group_costs(ss, halts)
    saved = _saved_failed(ss, halts)
    score = np.where(cost <= max_cost_pp + 1e-9, saved, -1.0)
    i = int(np.flatnonzero(score == score.max())[-1])  # ties: the larger (more conservative) cap
    if score[i] <= 0:
        return {"k": None, "note": "no cap meets the cost bound with any saving"}
    return {
        "k": int(ks[i]),
        "selection_saved_on_failed": float(saved[i]),
        "selection_cost_pp": float(cost[i]),
    }


def make_stopset(
    tg: DimTargets,
    rows: np.ndarray,
    prow: np.ndarray,
    p_rows: np.ndarray,
    row_group: np.ndarray,
    y_run: np.ndarray,
    T_run: np.ndarray,
    slices: dict[int, tuple[int, int]],
    require: np.ndarray,
    budget: float,
) -> StopSet:
    """Group prefix rows (a subset of the prefix table, run-contiguous) into per-run arrays.

    `p_rows`, `row_group` and `require` are aligned with `rows`."""
    pr = prow[rows]
    starts = (
        np.flatnonzero(np.r_[True, pr[1:] != pr[:-1]]) if len(pr) else np.zeros(0, dtype=np.int64)
    )
    ends = np.r_[starts[1:], len(pr)]
    grp, ys, Ts, ps, rems, tots = [], [], [], [], [], []
    for s0, e0 in zip(starts, ends):
        r = int(pr[s0])
        a, b = slices[r]
        if e0 - s0 != b - a:
            raise ValueError(f"run {r}: only some of its prefixes were given")
        idx = np.arange(s0, e0)
        if not np.all(require[idx]):
            continue
        grp.append(str(row_group[s0]))
        ys.append(y_run[r])
        Ts.append(T_run[r])
        ps.append(np.asarray(p_rows[idx], dtype=np.float64))
        rems.append(tg.remaining[a:b])
        tots.append(tg.totals[r])
    y = np.asarray(ys, dtype=np.int64)
    tot = np.asarray(tots, dtype=np.float64)
    feas = ((y == 1) & (tot <= budget)).astype(np.int64)
    return StopSet(grp, y, feas, np.asarray(Ts), ps, rems, tot, budget)


def one_run(ss: StopSet, i: int) -> StopSet:
    return StopSet(
        [ss.group[i]],
        ss.y[i : i + 1],
        ss.feas[i : i + 1],
        ss.T[i : i + 1],
        [ss.p[i]],
        [ss.rem[i]],
        ss.total[i : i + 1],
        ss.budget,
    )
