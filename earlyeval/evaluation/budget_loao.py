"""Leave-one-agent-out budget evaluation (``run_budget``): per held-out group and dimension, the held-out
predictions of the conformalized model, of the linear baseline and of the online re-conformalization,
and the thresholds chosen without the held-out agent."""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from earlyeval.config.budget_config import SMALL, BudgetConfig
from earlyeval.config.eval_config import EvalConfig
from earlyeval.evaluation.budget_calibration import (
    CalFit,
    Group,
    Setup,
    calibration_folds,
    dim_folds,
    fill_ps,
    fit_calibrated,
    fold_scaffolds,
    inner_p_success,
    select_on_calibration,
    setup,
)
from earlyeval.evaluation.budget_online import online_quantiles, run_order
from earlyeval.evaluation.dataset import Dataset
from earlyeval.evaluation.fold_runner import FoldRunner
from earlyeval.fitting.budget_baseline import LinearExtrapolation, residual_cdf
from earlyeval.fitting.budget_conformal import BudgetEstimator
from earlyeval.fitting.budget_quantiles import agent_guarantee, conformal_quantile
from earlyeval.fitting.budget_stopping import make_stopset, select_cap
from earlyeval.fitting.budget_targets import DimTargets
from earlyeval.model.cqr import corrected_quantiles, to_z, within

log = logging.getLogger(__name__)


@dataclass
class DimResult:
    """Held-out predictions of one dimension, per prefix row (nan where not predicted)."""

    dim: str
    budget: float
    z: np.ndarray  # true z under the fold's pace
    rate: np.ndarray
    q: np.ndarray  # (N, len(alphas)) corrected, sorted model quantiles (z scale)
    zhat_lin: np.ndarray
    Q_lin: np.ndarray  # (N, len(levels)) linear baseline's correction at each row's fold
    p_within: np.ndarray
    p_within_lin: np.ndarray
    outer: np.ndarray  # (N,) index of the outer group that predicted the row, -1 = none
    taus: dict[str, dict[str, Any]] = field(default_factory=dict)  # group -> method -> selection
    # group -> audit of what was seen
    folds: dict[str, dict[str, Any]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    estimators: dict[str, BudgetEstimator] = field(default_factory=dict)
    # online re-conformalization (``evaluation.budget_online``; beside the label-free q, never replacing it)
    q_online: np.ndarray | None = None  # (N, len(alphas))
    Q_online: np.ndarray | None = None  # (N, len(levels)) correction each row was evaluated with
    n_own_online: np.ndarray | None = (
        None  # (N,) held-out agent's finished runs in that correction (0: calibration agents')
    )


@dataclass
class BudgetRun:
    ds: Dataset
    cfg: EvalConfig
    bcfg: BudgetConfig
    groups: list[Group]
    targets: dict[str, DimTargets]
    budgets: dict[str, float]
    p_success: np.ndarray  # (N,) held-out P(success)
    dims: dict[str, DimResult]
    seconds: float = 0.0


def run_budget(
    ds: Dataset,
    cfg: EvalConfig,
    bcfg: BudgetConfig | None = None,
    progress: Callable[[str], None] | None = None,
    only: list[str] | None = None,
) -> BudgetRun:
    """Leave-one-agent-out budget evaluation (see the package docstring for every choice).

    `only` restricts the held-out groups evaluated (debugging); folds still use every other group."""
    bcfg = bcfg or BudgetConfig()
    t_start = time.time()
    su = setup(ds, cfg, bcfg)
    N = len(ds.prefixes)
    ev = _Evaluation(
        runner=FoldRunner(ds, cfg, None),
        su=su,
        bcfg=bcfg,
        lo=max(cfg.min_halt_step, 1) - 1,
        say=progress or (lambda m: log.info(m)),
        orders={a: run_order(np.flatnonzero(su.run_agent == a), a) for a in ds.agents},
        scaffolds=fold_scaffolds(ds, cfg),
        p_out=np.full(N, np.nan),
        res={d: _empty_result(d, su.budgets[d], N, bcfg) for d in su.dims},
    )
    todo = [(gi, G) for gi, G in enumerate(su.groups) if only is None or G.name in only]
    if bcfg.n_workers > 1 and len(todo) > 1:
        # LightGBM releases the GIL (ctypes) and each booster is single-threaded, so two held-out
        # groups run side by side without OpenMP oversubscription; results do not depend on the order
        with ThreadPoolExecutor(max_workers=bcfg.n_workers) as pool:
            for fut in [pool.submit(evaluate_group, ev, gi, G) for gi, G in todo]:
                fut.result()
    else:
        for gi, G in todo:
            evaluate_group(ev, gi, G)
    return BudgetRun(
        ds,
        cfg,
        bcfg,
        su.groups,
        su.targets,
        su.budgets,
        ev.p_out,
        ev.res,
        round(time.time() - t_start, 1),
    )


@dataclass
class _Evaluation:
    """The state one ``run_budget`` call shares between its held-out groups (each writes only its own rows and keys)."""

    runner: FoldRunner
    su: Setup
    bcfg: BudgetConfig
    lo: int  # first prefix index the halting rule may stop at
    say: Callable[[str], None]
    orders: dict[str, np.ndarray]  # per agent, the order its runs finish in (online mode)
    # agent -> scaffold, kept in one calibration fold (calibration.fold_scaffolds)
    scaffolds: dict[str, str] | None
    p_out: np.ndarray  # (N,) held-out P(success)
    res: dict[str, DimResult]


@dataclass
class _Fold:
    """One held-out group's calibration set-up, shared by its dimensions."""

    gi: int
    group: Group
    train_groups: list[Group]
    folds: list[list[Group]]
    row_fold: np.ndarray
    p_in: np.ndarray  # inner P(success) of the calibration agents
    ps_exclusions: list[list[str]]
    held: np.ndarray  # (N,) rows of the held-out group
    by_scaffold: bool = False  # the folds keep each scaffold together (calibration.agent_folds)


def _empty_result(d: str, B: float, N: int, bcfg: BudgetConfig) -> DimResult:
    A_, L_ = len(bcfg.alphas), len(bcfg.levels)
    R = DimResult(
        d,
        B,
        *(np.full(N, np.nan) for _ in range(2)),
        np.full((N, A_), np.nan),
        np.full(N, np.nan),
        np.full((N, L_), np.nan),
        np.full(N, np.nan),
        np.full(N, np.nan),
        np.full(N, -1, dtype=np.int64),
    )
    R.q_online, R.Q_online = np.full((N, A_), np.nan), np.full((N, L_), np.nan)
    R.n_own_online = np.full(N, -1, dtype=np.int64)
    return R


def evaluate_group(ev: _Evaluation, gi: int, G: Group) -> None:
    """Everything for one held-out group: its P(success), its agent folds, then every dimension."""
    su, bcfg = ev.su, ev.bcfg
    ev.say(f"budget: held out {G.name} ({gi + 1}/{len(su.groups)})")
    A = frozenset(G.agents)
    for a in G.agents:
        fill_ps(ev.runner, su, ev.p_out, A, a)
    train_groups = [g for g in su.groups if g.name != G.name]
    folds = calibration_folds(train_groups, su.dims_of, ev.scaffolds, bcfg)
    p_in, ps_exclusions = inner_p_success(ev.runner, su, folds, A)
    fo = _Fold(
        gi,
        G,
        train_groups,
        folds,
        su.row_fold(folds),
        p_in,
        ps_exclusions,
        np.isin(su.row_agent, G.agents),
        ev.scaffolds is not None,
    )
    for d in su.dims:
        evaluate_dim(ev, fo, d)


def evaluate_dim(ev: _Evaluation, fo: _Fold, d: str) -> None:
    """One held-out group, one dimension: the model's, the linear baseline's and the online predictions,
    the thresholds chosen on the calibration agents, and the audit of what each stage saw."""
    su, bcfg, G = ev.su, ev.bcfg, fo.group
    tg, R = su.targets[d], ev.res[d]
    dgroups = [g.name for g in fo.train_groups if d in su.dims_of[g.name]]
    rows_ho = np.flatnonzero(fo.held & tg.row_known)
    if len(rows_ho) == 0:
        return
    if len(dgroups) < bcfg.min_groups:
        R.skipped[G.name] = (
            f"only {len(dgroups)} training agent group(s) with known {d}: cannot calibrate without the held-out agent"
        )
        return
    B = su.budgets[d]
    folds = dim_folds(su, fo.folds, d, bcfg)
    fit = fit_calibrated(
        su, tg, np.flatnonzero(~fo.held & tg.row_known), su.row_fold(folds), len(folds), B, bcfg
    )
    rate_ho = _predict_held_out(ev, R, tg, fit, rows_ho, fo.gi, G, B)
    Q_lin, pwl_in = _linear_baseline(su, R, tg, fit, rows_ho, rate_ho, len(folds), B, bcfg)
    R.taus[G.name] = _thresholds(ev, tg, fit, fo.p_in[fit.rows], pwl_in, B)
    R.folds[G.name] = _audit(su, fo, d, fit, Q_lin, R.taus[G.name], bcfg, folds)


def _predict_held_out(
    ev: _Evaluation,
    R: DimResult,
    tg: DimTargets,
    fit: CalFit,
    rows_ho: np.ndarray,
    gi: int,
    G: Group,
    B: float,
) -> np.ndarray:
    """The conformalized model's and the online mode's predictions of the held-out rows; returns their pace."""
    su, bcfg, ccq = ev.su, ev.bcfg, fit.ccq
    X_ho, rate_ho, z_ho, _ = su.design(tg, rows_ho, fit.unit)
    q_raw = ccq.predict(X_ho)
    q_ho = corrected_quantiles(q_raw, ccq.corrections_, bcfg.alphas)
    # online mode: realized budgets of the held-out agent's finished runs only (never its outcome labels)
    R.q_online[rows_ho], R.Q_online[rows_ho], R.n_own_online[rows_ho] = online_quantiles(
        q_raw,
        z_ho,
        su.run_w[rows_ho],
        su.prow[rows_ho],
        su.row_agent[rows_ho],
        ccq.corrections_,
        bcfg.alphas,
        bcfg.levels,
        ev.orders,
    )
    room_ho = B - tg.spent[rows_ho]
    R.z[rows_ho], R.rate[rows_ho], R.q[rows_ho] = z_ho, rate_ho, q_ho
    R.p_within[rows_ho] = within(q_ho, bcfg.alphas, room_ho, rate_ho)
    R.outer[rows_ho] = gi
    R.estimators[G.name] = BudgetEstimator(tg.dim, fit.unit, B, ccq, fit.names)
    return rate_ho


def _linear_baseline(
    su: Setup,
    R: DimResult,
    tg: DimTargets,
    fit: CalFit,
    rows_ho: np.ndarray,
    rate_ho: np.ndarray,
    n_folds: int,
    B: float,
    bcfg: BudgetConfig,
) -> tuple[list[float], np.ndarray]:
    """Linear extrapolation, same folds, same conformal treatment (symmetric in z): writes its held-out
    predictions into R; returns its corrections and its inner P(remaining <= B - spent) on the calibration rows."""
    prow, tt, T_run, unit = su.prow, su.tt, su.T_run, fit.unit
    rows_tr, fold_tr, rate_tr, z_tr, sw = fit.rows, fit.fold, fit.rate, fit.z, fit.sw
    room_tr = B - tg.spent[rows_tr]
    zhat_in = np.full(len(rows_tr), np.nan)
    for k in range(n_folds):
        m = fold_tr == k
        if not m.any():
            continue
        lin = LinearExtrapolation().fit(T_run[np.unique(prow[rows_tr][~m])])
        zhat_in[m] = to_z(lin.predict(tt[rows_tr][m], tg.spent[rows_tr][m], unit), rate_tr[m])
    resid = z_tr - zhat_in
    ok_lin = ~np.isnan(resid) & (sw > 0)
    n_cal = len(np.unique(prow[rows_tr][ok_lin]))
    Q_lin = [conformal_quantile(np.abs(resid[ok_lin]), sw[ok_lin], lv, n_cal) for lv in bcfg.levels]
    lin_full = LinearExtrapolation().fit(T_run[fit.runs])
    zhat_ho = to_z(lin_full.predict(tt[rows_ho], tg.spent[rows_ho], unit), rate_ho)
    R.zhat_lin[rows_ho] = zhat_ho
    R.Q_lin[rows_ho] = np.asarray(Q_lin)[None, :]
    room_ho = B - tg.spent[rows_ho]
    zx_ho = np.log1p(np.maximum(room_ho, 0) / rate_ho)
    R.p_within_lin[rows_ho] = np.where(
        room_ho < 0, 0.0, residual_cdf(resid[ok_lin], sw[ok_lin], zx_ho - zhat_ho)
    )
    pwl_in = np.full(len(rows_tr), np.nan)
    zx_tr = np.log1p(np.maximum(room_tr, 0) / rate_tr)
    for k in range(n_folds):
        m = fold_tr == k
        other = ok_lin & (fold_tr != k)
        if m.any() and other.any():
            pwl_in[m] = np.where(
                room_tr[m] < 0, 0.0, residual_cdf(resid[other], sw[other], zx_tr[m] - zhat_in[m])
            )
    return Q_lin, pwl_in


def _thresholds(
    ev: _Evaluation,
    tg: DimTargets,
    fit: CalFit,
    p_in_rows: np.ndarray,
    pwl_in: np.ndarray,
    B: float,
) -> dict[str, Any]:
    """tau per method and the step cap, on the large calibration agents (never the held-out ones)."""
    su, bcfg = ev.su, ev.bcfg
    rows_tr = fit.rows
    sel: dict[str, Any] = {}
    for name, pw in (
        ("model", fit.pw_in),
        ("linear", pwl_in),
        ("outcome_only", np.ones(len(rows_tr))),
    ):
        sel[name] = select_on_calibration(su, tg, fit, p_in_rows * pw, B, bcfg, ev.lo)
    ss = make_stopset(
        tg,
        rows_tr,
        su.prow,
        np.ones(len(rows_tr)),
        su.row_group[rows_tr],
        su.y_run,
        su.T_run,
        su.slices,
        require=su.row_group[rows_tr] != SMALL,
        budget=B,
    )
    sel["step_cap"] = select_cap(ss, bcfg.max_cost_pp, int(su.T_run[fit.runs].max()))
    return sel


def _audit(
    su: Setup,
    fo: _Fold,
    d: str,
    fit: CalFit,
    Q_lin: list[float],
    sel: dict[str, Any],
    bcfg: BudgetConfig,
    folds: list[list[Group]],
) -> dict[str, Any]:
    """What every stage of one held-out group's evaluation saw (the leakage audit in the report)."""
    ccq = fit.ccq
    return {
        "held_out": fo.group.agents,
        "calibration_folds": [[g.name for g in f if d in su.dims_of[g.name]] for f in folds],
        "calibration_folds_by_scaffold": folds is fo.folds and fo.by_scaffold,
        "quantile_models_fitted_on": [m.fit_agents_ for m in ccq.models_],
        "conformity_scores_from": ccq.calibration_agents_,
        "thresholds_selected_on": sel["model"].get("selected_on", []),
        "p_success_fitted_without": {
            "held_out": sorted(fo.group.agents),
            "inner": fo.ps_exclusions,
        },
        "unit": fit.unit,
        "corrections_z": {str(k): v for k, v in ccq.corrections_.items()},
        "unit_corrections_z": {str(k): v for k, v in ccq.unit_corrections_.items()},
        "calibration": ccq.calibration,
        "coverage_guarantee": {
            str(lv): agent_guarantee(len(v), ccq.agent_quantile)
            for lv, v in ccq.unit_corrections_.items()
        }
        if ccq.calibration == "agent"
        else None,
        "corrections_z_linear": {str(lv): q for lv, q in zip(bcfg.levels, Q_lin)},
        "n_calibration_runs": int(len(np.unique(su.prow[fit.rows][~np.isnan(ccq.oof_[:, 0])]))),
        "n_training_runs": int(len(fit.runs)),
    }
