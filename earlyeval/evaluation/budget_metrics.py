"""The numbers of budget.json, measured on a ``BudgetRun`` (``report.budget`` formats them): per dimension and
set of held-out rows, coverage, widths, feasibility F1s, late recognition, early stop and the online intervals."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from earlyeval.config.budget_config import SMALL
from earlyeval.evaluation.budget_loao import BudgetRun, DimResult
from earlyeval.evaluation.budget_online import NOTE, ONLINE_MIN_RUNS, ONLINE_SEED, online_block
from earlyeval.fitting.budget_stopping import (
    cap_halts,
    halt_index,
    make_stopset,
    one_run,
    select_tau,
    stop_stats,
)
from earlyeval.fitting.budget_targets import run_slices
from earlyeval.fitting.metrics import (
    auroc,
    class_f1,
    interval_coverage,
    interval_width,
    macro_f1,
    weighted_quantile,
)
from earlyeval.model.cqr import from_z, pair_for

BINS = np.r_[np.round(np.arange(0.0, 1.01, 0.1), 2), np.inf]
METHODS = ("model", "linear")


@dataclass
class View:
    """The held-out rows of one dimension restricted to a set of runs, with everything metrics need."""

    rows: np.ndarray
    runs: list[int]
    w: np.ndarray  # 1/(T-1)
    t: np.ndarray
    y: np.ndarray  # per row, the run's outcome
    feasible: np.ndarray  # per row, the run's feasibility
    remaining: np.ndarray
    spent: np.ndarray
    p_feas: dict[str, np.ndarray]
    # (method, level) -> (lo, hi) in budget units
    bounds: dict[tuple[str, float], tuple[np.ndarray, np.ndarray]]
    mid: dict[str, np.ndarray]
    run_key: np.ndarray  # per row, its run


def make_view(run: BudgetRun, R: DimResult, rows: np.ndarray) -> View:
    ds, b = run.ds, run.bcfg
    pf = ds.prefixes
    tg = run.targets[R.dim]
    prow = pf["run"].to_numpy()[rows]
    y_run = np.asarray([int(t.outcome) for t in ds.trajs])
    feas_run = (y_run == 1) & (np.nan_to_num(tg.totals, nan=np.inf) <= R.budget)
    rate = R.rate[rows]
    ps = run.p_success[rows]
    bounds, mid = {}, {}
    med = list(b.alphas).index(0.5)
    for i, lv in enumerate(b.levels):
        lo_i, hi_i = pair_for(lv, b.alphas)
        bounds[("model", lv)] = (from_z(R.q[rows, lo_i], rate), from_z(R.q[rows, hi_i], rate))
        Q = R.Q_lin[rows, i]
        bounds[("linear", lv)] = (
            from_z(R.zhat_lin[rows] - Q, rate),
            from_z(R.zhat_lin[rows] + Q, rate),
        )
    mid["model"] = from_z(R.q[rows, med], rate)
    mid["linear"] = from_z(R.zhat_lin[rows], rate)
    return View(
        rows,
        list(dict.fromkeys(prow.tolist())),
        pf["weight"].to_numpy()[rows],
        pf["t"].to_numpy()[rows],
        y_run[prow],
        feas_run[prow].astype(int),
        tg.remaining[rows],
        tg.spent[rows],
        {"model": ps * R.p_within[rows], "linear": ps * R.p_within_lin[rows], "outcome_only": ps},
        bounds,
        mid,
        prow,
    )


def _round(d: Any) -> Any:
    if isinstance(d, dict):
        return {k: _round(v) for k, v in d.items()}
    return rounded(d)


def rounded(x: Any) -> Any:
    """A float as budget.json holds it: 4 decimals, nan as None (anything else as is)."""
    if isinstance(x, (float, np.floating)):
        return None if np.isnan(x) else round(float(x), 4)
    return x


def feasibility_block(v: View, p: np.ndarray, thr: float) -> dict[str, Any]:
    """BAGEN's feasibility scores: macro-F1 and Fail-F1 at the first turn and over all turns."""
    pred = (p >= thr).astype(int)
    first = v.t == 1
    out = {
        "macro_f1_first_turn": macro_f1(v.feasible[first], pred[first]),
        "macro_f1_all_turns": macro_f1(v.feasible, pred, v.w),
        "fail_f1_first_turn": class_f1(v.feasible[first], pred[first], 0),
        "fail_f1_all_turns": class_f1(v.feasible, pred, 0, v.w),
    }
    out["auroc_all_turns"] = auroc(v.feasible, p, v.w)
    return {k: rounded(x) for k, x in out.items()}


def interval_block(
    v: View, method: str, level: float, B: float, p_feas: np.ndarray, thr: float
) -> dict[str, Any]:
    """Plain coverage over every prefix, and BAGEN's interval scores on feasible runs predicted feasible."""
    lo, hi = v.bounds[(method, level)]
    W = np.sum(v.w)
    out: dict[str, Any] = {
        "coverage": interval_coverage(v.remaining, lo, hi, v.w),
        "truth_above_interval": float(np.sum(v.w * (v.remaining > hi)) / W),  # optimistic misses
        "truth_below_interval": float(np.sum(v.w * (v.remaining < lo)) / W),
        "width_over_B_median": interval_width(lo, hi, B, v.w),
        "width_over_B_mean": interval_width(lo, hi, B, v.w, stat="mean"),
    }
    sel = (v.feasible == 1) & (p_feas >= thr)
    out["bagen_rows"] = int(sel.sum())
    if sel.any():
        y, l, h, w = v.remaining[sel], lo[sel], hi[sel], v.w[sel]
        miss = (y < l) | (y > h)
        mid = (l + h) / 2
        rel = np.abs(mid - y) / np.maximum(y, 1e-12)
        rel_med = np.abs(v.mid[method][sel] - y) / np.maximum(y, 1e-12)
        out.update(
            {
                "median_prediction_rel_error_median": weighted_quantile(rel_med, 0.5, w),
                "bagen_coverage": interval_coverage(y, l, h, w),
                "bagen_width_over_B_median": interval_width(l, h, B, w),
                "bagen_midpoint_rel_error_median": weighted_quantile(rel, 0.5, w),
                "bagen_midpoint_rel_error_mean": float(np.sum(w * rel) / np.sum(w)),
                "bagen_optimism": float(np.sum(w * (miss & (h < y))) / np.sum(w * miss))
                if miss.any()
                else None,
            }
        )
    return {k: rounded(x) for k, x in out.items()}


def late_recognition(v: View, p: np.ndarray, B: float) -> dict[str, Any]:
    """Mean P(feasible) on failed runs per 10 % bin of budget used (each run counts once per bin)."""
    fail = v.y == 0
    used = v.spent / B
    b = np.clip(np.searchsorted(BINS, used, side="right") - 1, 0, len(BINS) - 2)
    table = []
    for k in range(len(BINS) - 1):
        m = fail & (b == k)
        if not m.any():
            table.append({"bin": _bin_label(k), "mean_p_feasible": None, "n_runs": 0})
            continue
        _, inv = np.unique(v.run_key[m], return_inverse=True)
        per_run = np.bincount(inv, weights=p[m]) / np.bincount(inv)
        table.append(
            {
                "bin": _bin_label(k),
                "mean_p_feasible": rounded(float(per_run.mean())),
                "n_runs": int(len(per_run)),
            }
        )
    first_below = next(
        (
            row["bin"]
            for row in table
            if row["mean_p_feasible"] is not None and row["mean_p_feasible"] < 0.5
        ),
        None,
    )
    # per run: P(feasible) < 0.5 at some prefix with less than 60 % of the budget used
    _, inv = np.unique(v.run_key[fail], return_inverse=True)
    early = ((p[fail] < 0.5) & (used[fail] < 0.6)).astype(float)
    rec = (
        np.bincount(inv, weights=early, minlength=inv.max() + 1 if len(inv) else 0) > 0
        if len(inv)
        else np.zeros(0, bool)
    )
    return {
        "bins": table,
        "first_bin_below_0.5": first_below,
        "failed_runs_recognized_before_60pct": rounded(float(rec.mean())) if len(rec) else None,
        "n_failed_runs": int(len(rec)),
    }


def _bin_label(k: int) -> str:
    lo = BINS[k]
    return f">={lo:.0%}" if np.isinf(BINS[k + 1]) else f"{lo:.0%}-{BINS[k + 1]:.0%}"


def _width_at_coverage(
    v: View, R: DimResult, target: float | None, B: float
) -> dict[str, Any] | None:
    """Diagnostic (uses held-out labels, never a decision): the linear baseline's median width/B when its
    symmetric z-interval is widened or narrowed until its coverage equals `target`."""
    if target is None:
        return None
    zhat, rate = R.zhat_lin[v.rows], R.rate[v.rows]
    # true z >= 0, so [max(zhat - Q, 0), zhat + Q] covers it iff |z - zhat| <= Q: the Q reaching `target`
    # coverage is a weighted quantile of |z - zhat|
    Q = weighted_quantile(np.abs(R.z[v.rows] - zhat), target, v.w)
    if Q is None:
        return None
    lo, hi = from_z(zhat - Q, rate), from_z(zhat + Q, rate)
    return {
        "coverage": rounded(interval_coverage(v.remaining, lo, hi, v.w)),
        "width_over_B_median": rounded(interval_width(lo, hi, B, v.w)),
    }


def early_stop_block(
    run: BudgetRun, R: DimResult, v: View, method: str, group_of_run: dict[int, str]
) -> dict[str, Any]:
    """Early stop on P(feasible) < tau (tau from the run's own outer fold) or a step cap."""
    ds = run.ds
    pf = ds.prefixes
    tg = run.targets[R.dim]
    slices = run_slices(pf["run"].to_numpy())
    lo = max(run.cfg.min_halt_step, 1) - 1
    y_run = np.asarray([int(t.outcome) for t in ds.trajs])
    T_run = np.asarray([len(t.steps) for t in ds.trajs])
    rows_all = v.rows
    p_rows = np.ones(len(rows_all)) if method.startswith("step_cap") else v.p_feas[method]
    ss = make_stopset(
        tg,
        rows_all,
        pf["run"].to_numpy(),
        p_rows,
        _row_groups(pf, rows_all, group_of_run),
        y_run,
        T_run,
        slices,
        np.ones(len(rows_all), bool),
        R.budget,
    )
    if method.startswith("step_cap"):
        if method == "step_cap":
            ks = [R.taus[g]["step_cap"].get("k") for g in ss.group]
            halt = np.asarray(
                [cap_halts(one_run(ss, i), k)[0] if k else len(ss.p[i]) for i, k in enumerate(ks)]
            )
            out = stop_stats(ss, halt)
            out["caps"] = {g: R.taus[g]["step_cap"].get("k") for g in sorted(set(ss.group))}
        else:
            k = int(method.rsplit("_", 1)[1])
            out = stop_stats(ss, cap_halts(ss, k))
            out["cap"] = k
        return _round(out)
    halt = np.asarray(
        [
            halt_index(p, np.asarray([R.taus[g][method]["tau"]]), lo)[0]
            for p, g in zip(ss.p, ss.group)
        ]
    )
    out = stop_stats(ss, halt)
    out["tau"] = {g: R.taus[g][method]["tau"] for g in sorted(set(ss.group))}
    # frontier diagnostic: one tau chosen on these held-out labels with the same rule (never the headline)
    orc = select_tau(ss, run.bcfg.taus, run.bcfg.max_cost_pp, lo)
    o = stop_stats(ss, np.asarray([halt_index(p, np.asarray([orc["tau"]]), lo)[0] for p in ss.p]))
    out["oracle_tau"] = {
        "tau": orc["tau"],
        "saved_on_failed": o.get("saved_on_failed"),
        "success_rate_cost_pp": o.get("success_rate_cost_pp"),
        "note": "tau picked on the held-out labels: an upper bound for this P(feasible), never the headline",
    }
    return _round(out)


def _row_groups(pf: Any, rows: np.ndarray, group_of_run: dict[int, str]) -> np.ndarray:
    return np.asarray([group_of_run[int(r)] for r in pf["run"].to_numpy()[rows]])


def dim_block(
    run: BudgetRun, R: DimResult, rows: np.ndarray, group_of_run: dict[int, str]
) -> dict[str, Any]:
    """Every BAGEN metric of one dimension on a set of held-out rows."""
    b = run.bcfg
    if len(rows) == 0:
        return {"n_runs": 0}
    v = make_view(run, R, rows)
    B = R.budget
    out: dict[str, Any] = {
        "n_runs": len(v.runs),
        "n_prefixes": int(len(rows)),
        "resolve_rate": rounded(float(np.mean([run.ds.trajs[r].outcome for r in v.runs]))),
        "feasible_rate": rounded(float(np.mean(v.feasible[v.t == 1])))
        if (v.t == 1).any()
        else None,
        "coverage": {
            m: {
                str(lv): rounded(interval_coverage(v.remaining, *v.bounds[(m, lv)], v.w))
                for lv in b.levels
            }
            for m in METHODS
        },
        "intervals": {
            m: {
                str(lv): interval_block(v, m, lv, B, v.p_feas[m], b.feasible_threshold)
                for lv in b.levels
            }
            for m in METHODS
        },
        "feasibility": {
            m: feasibility_block(v, v.p_feas[m], b.feasible_threshold)
            for m in ("model", "linear", "outcome_only")
        },
        "late_recognition": {
            m: late_recognition(v, v.p_feas[m], B) for m in ("model", "linear", "outcome_only")
        },
    }
    out["linear_at_model_coverage"] = {
        str(lv): _width_at_coverage(v, R, out["coverage"]["model"][str(lv)], B) for lv in b.levels
    }
    # systematic shift of this agent against the training agents: weighted median of z_true - z_predicted
    # (z = log1p(remaining / pace); +0.69 means the truth is about twice the predicted median)
    med = list(b.alphas).index(0.5)
    out["median_z_residual"] = {
        "model": rounded(weighted_quantile(R.z[rows] - R.q[rows, med], 0.5, v.w)),
        "linear": rounded(weighted_quantile(R.z[rows] - R.zhat_lin[rows], 0.5, v.w)),
    }
    caps = (
        sorted({int(np.ceil(f * run.budgets["steps"])) for f in (0.5, 0.75, 1.0)})
        if "steps" in run.budgets
        else []
    )
    methods = ["model", "linear", "outcome_only", "step_cap"] + [f"step_cap_{k}" for k in caps]
    out["early_stop"] = {m: early_stop_block(run, R, v, m, group_of_run) for m in methods}
    return out


@dataclass
class DimensionMetrics:
    """One dimension of budget.json, measured: the runs it covers, its blocks per held-out agent, pooled over the
    large ones and of the small group, and the online intervals."""

    agents: dict[str, dict[str, Any]]
    pooled: dict[str, Any]
    small_group: dict[str, Any] | None
    online: dict[str, Any]
    runs_known: int
    runs_excluded_unknown: dict[str, int]
    free_opening_runs: int


def budget_metrics(run: BudgetRun) -> dict[str, DimensionMetrics]:
    """Every evaluated dimension's numbers, in ``run.dims`` order."""
    ds = run.ds
    prow = ds.prefixes["run"].to_numpy()
    run_agent = np.asarray([t.agent for t in ds.trajs])
    row_agent = run_agent[prow]
    group_of_agent = {a: g.name for g in run.groups for a in g.agents}
    group_of_run = {i: group_of_agent[a] for i, a in enumerate(run_agent)}
    return {
        d: _dimension_metrics(run, d, R, row_agent, group_of_agent, group_of_run)
        for d, R in run.dims.items()
    }


def _dimension_metrics(
    run: BudgetRun,
    d: str,
    R: DimResult,
    row_agent: np.ndarray,
    group_of_agent: dict[str, str],
    group_of_run: dict[int, str],
) -> DimensionMetrics:
    """One dimension: each held-out agent's rows (predicted by its own fold), the large ones pooled, the small group."""
    ds, tg = run.ds, run.targets[d]
    large = [g.name for g in run.groups if not g.small]
    small = next((g for g in run.groups if g.small), None)
    pred = R.outer >= 0
    agents_out = {}
    for a in ds.agents:
        rows = np.flatnonzero(pred & (row_agent == a))
        if len(rows):
            blk = dim_block(run, R, rows, group_of_run)
            blk["small_n"] = group_of_agent[a] == SMALL
            agents_out[a] = blk
    pooled_rows = np.flatnonzero(pred & np.isin(row_agent, large))
    pooled = dim_block(run, R, pooled_rows, group_of_run)
    small_group = (
        dim_block(run, R, np.flatnonzero(pred & np.isin(row_agent, small.agents)), group_of_run)
        if small
        else None
    )
    online = _online_report(run, R, pred, row_agent, large, group_of_agent)
    return DimensionMetrics(
        agents_out,
        pooled,
        small_group,
        online,
        int(tg.run_known.sum()),
        tg.excluded_by_agent(ds),
        tg.free_opening_runs,
    )


def _online_report(
    run: BudgetRun,
    R: DimResult,
    pred: np.ndarray,
    row_agent: np.ndarray,
    large: list[str],
    group_of_agent: dict[str, str],
) -> dict[str, Any]:
    """``evaluation.budget_online``'s intervals per held-out agent and pooled over the large ones (beside the label-free ones)."""
    b, tg = run.bcfg, run.targets[R.dim]
    prow = run.ds.prefixes["run"].to_numpy()
    w = run.ds.prefixes["weight"].to_numpy()

    def blk(rows: np.ndarray) -> dict[str, Any]:
        return online_block(
            R.q_online[rows],
            R.n_own_online[rows],
            R.rate[rows],
            tg.remaining[rows],
            w[rows],
            prow[rows],
            b.alphas,
            b.levels,
            R.budget,
        )

    agents = {
        a: dict(blk(np.flatnonzero(pred & (row_agent == a))), small_n=group_of_agent[a] == SMALL)
        for a in run.ds.agents
        if (pred & (row_agent == a)).any()
    }
    return {
        "note": NOTE,
        "min_runs": ONLINE_MIN_RUNS,
        "order_seed": ONLINE_SEED,
        "pooled": blk(np.flatnonzero(pred & np.isin(row_agent, large))),
        "agents": agents,
    }
