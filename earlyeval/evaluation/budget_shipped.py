"""The budget model ``earlyeval train`` ships (``fit_shipped``) and its batch predictions (``predict_prefixes``,
the reference the live budget is tested against)."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, Callable

import numpy as np

from earlyeval.config.budget_config import BudgetConfig
from earlyeval.config.eval_config import EvalConfig
from earlyeval.evaluation.budget_calibration import (
    Group,
    Setup,
    calibration_folds,
    dim_folds,
    fit_calibrated,
    fold_scaffolds,
    inner_p_success,
    select_on_calibration,
    setup,
)
from earlyeval.evaluation.dataset import Dataset
from earlyeval.evaluation.fold_runner import FoldRunner
from earlyeval.features import fold_free
from earlyeval.fitting.budget_conformal import BudgetEstimator
from earlyeval.fitting.budget_quantiles import agent_guarantee
from earlyeval.fitting.budget_targets import budget_features, dim_targets, free_opening_agents
from earlyeval.model.spend import DIMENSIONS, SHIPPED_FORMAT, SHIPPED_VERSION, spend_feature_names

log = logging.getLogger(__name__)


def shipped_config(
    cfg: EvalConfig, bcfg: BudgetConfig | None = None
) -> tuple[EvalConfig, BudgetConfig]:
    """``budget_config`` for a given outcome config: its fold-free families, the budget's n_jobs and seed."""
    bcfg = bcfg or BudgetConfig()
    return replace(cfg, families=fold_free(cfg.families), n_jobs=bcfg.n_jobs, seed=bcfg.seed), bcfg


def fit_shipped(
    ds: Dataset,
    cfg: EvalConfig,
    bcfg: BudgetConfig | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any] | None:
    """The budget model ``earlyeval train`` ships (JSON-able; ``live.remaining_budget.LiveBudget`` reads it).

    It is what ``run_budget`` builds for a held-out agent, with no agent held out: every
    labelled agent group (the small ones as one group) is a calibration group, dealt into
    the same calibration folds (``calibration_folds``); per dimension that ``run_budget`` evaluates,
    the fold models, the CQR corrections from all out-of-fold scores (the same rule,
    ``BudgetConfig.calibration``: agent groups as the exchangeable units), the unit, B
    (``choose_budget``, the same B as in the report) and tau, selected by ``select_tau`` on
    the inner predictions of the large calibration agents (fold models, corrections without
    their fold, P(success) from the outcome model fitted without their fold: the fold-free
    families of `cfg`, as ``budget_config``).  No label outside the training data is used.
    None when no dimension has enough agent groups to be calibrated."""
    bcfg = bcfg or BudgetConfig()
    say = progress or (lambda m: log.info(m))
    su = setup(ds, cfg, bcfg)
    if not su.dims:
        say(
            "budget: no dimension has enough agent groups to be calibrated; no budget model shipped"
        )
        return None
    groups = su.groups
    folds = calibration_folds(groups, su.dims_of, fold_scaffolds(ds, cfg), bcfg)
    lo = max(cfg.min_halt_step, 1) - 1
    say(
        f"budget: {', '.join(su.dims)} on {len(groups)} agent group(s) in {len(folds)} calibration folds"
    )
    runner = FoldRunner(ds, cfg, None)
    p_in, exclusions = inner_p_success(runner, su, folds, frozenset())

    def one_dim(d: str) -> dict[str, Any]:
        tg, B = su.targets[d], su.budgets[d]
        fd = dim_folds(su, folds, d, bcfg)
        fit = fit_calibrated(
            su, tg, np.flatnonzero(tg.row_known), su.row_fold(fd), len(fd), B, bcfg
        )
        sel = select_on_calibration(su, tg, fit, p_in[fit.rows] * fit.pw_in, B, bcfg, lo)
        ccq = fit.ccq
        return {
            "estimator": BudgetEstimator(d, fit.unit, B, ccq, fit.names).get_state(),
            "tau": float(sel["tau"]),
            "tau_selection": sel,
            "budget_rule": f"{bcfg.budget_quantile:.0%} quantile of run totals over every labelled run whose {d} is known"
            + (" (rounded up)" if d == "steps" else " (2 significant digits)"),
            "runs_known": int(tg.run_known.sum()),
            "runs_excluded_unknown": tg.excluded_by_agent(ds),
            "calibration_folds": [[g.name for g in f if d in su.dims_of[g.name]] for f in fd],
            "quantile_models_fitted_on": [m.fit_agents_ for m in ccq.models_],
            "conformity_scores_from": ccq.calibration_agents_,
            "corrections_z": {str(k): v for k, v in ccq.corrections_.items()},
            "calibration": ccq.calibration,
            "unit_corrections_z": {str(k): v for k, v in ccq.unit_corrections_.items()},
            "coverage_guarantee": (
                {
                    str(lv): agent_guarantee(len(v), ccq.agent_quantile)
                    for lv, v in ccq.unit_corrections_.items()
                }
                if ccq.calibration == "agent"
                else None
            ),
            "n_calibration_runs": int(len(np.unique(su.prow[fit.rows][~np.isnan(ccq.oof_[:, 0])]))),
        }

    if bcfg.n_workers > 1 and len(su.dims) > 1:
        with ThreadPoolExecutor(
            max_workers=bcfg.n_workers
        ) as pool:  # see run_budget: single-threaded boosters
            dims_out = dict(zip(su.dims, pool.map(one_dim, su.dims)))
    else:
        dims_out = {d: one_dim(d) for d in su.dims}
    return _shipped_document(ds, cfg, bcfg, su, folds, exclusions, dims_out)


def _shipped_document(
    ds: Dataset,
    cfg: EvalConfig,
    bcfg: BudgetConfig,
    su: Setup,
    folds: list[list[Group]],
    exclusions: list[list[str]],
    dims_out: dict[str, Any],
) -> dict[str, Any]:
    """The shipped budget file around its fitted dimensions: settings, groups, folds, what tau was selected on."""
    free = free_opening_agents(ds, bcfg.free_opening_formats)
    return {
        "format": SHIPPED_FORMAT,
        "version": SHIPPED_VERSION,
        "alphas": list(bcfg.alphas),
        "levels": list(bcfg.levels),
        "min_halt_step": int(cfg.min_halt_step),
        # the unmetered opening turn counts 0 (run_usage) when every training agent's runs are of such a format
        "free_opening": bool(free) and set(ds.agents) <= free,
        "free_opening_formats": list(bcfg.free_opening_formats),
        "dimensions": dims_out,
        "skipped_dimensions": {
            d: f"fewer than {bcfg.min_groups + 1} agent groups with known {d}"
            for d in DIMENSIONS
            if d not in su.dims
        },
        "p_success_for_tau": {
            "families": list(cfg.families),
            "fitted_without": exclusions,
            "note": "tau is selected on P(success) of the fold-free outcome model fitted without each "
            "calibration fold; live, P(feasible) uses the shipped outcome model's P(success)",
        },
        "groups": [{"name": g.name, "agents": g.agents, "small": g.small} for g in su.groups],
        "folds": [[g.name for g in f] for f in folds],
        "config": bcfg.to_dict(),
        # no wall-clock value: this dict is a hashed model file, identical for identical trainings
    }


def predict_prefixes(
    shipped: dict[str, Any], ds: Dataset, p_success: np.ndarray, families: list[str]
) -> dict[str, dict[str, np.ndarray]]:
    """Batch predictions of a shipped budget model on every prefix row of `ds` (nan where the run's
    usage is unknown): the same design and code as ``run_budget``'s held-out predictions.  `families`
    are the outcome config's (their fold-free blocks are the static features); `p_success` is aligned
    with ``ds.prefixes``.  The reference the Monitor's live budget is tested against."""
    N = len(ds.prefixes)
    free = (
        free_opening_agents(ds, tuple(shipped.get("free_opening_formats", ())))
        if shipped.get("free_opening")
        else set()
    )
    fams = fold_free(families)
    X_static = np.hstack([ds.blocks[f] for f in fams]) if fams else np.zeros((N, 0), np.float32)
    tt = ds.prefixes["t"].to_numpy().astype(np.float64)
    out: dict[str, dict[str, np.ndarray]] = {}
    for d, spec in shipped["dimensions"].items():
        est = BudgetEstimator.from_state(spec["estimator"])
        tg = dim_targets(ds, d, free)
        rows = np.flatnonzero(tg.row_known)
        Xb, _ = budget_features(tg, rows, tt[rows], est.unit)
        names = [n for f in fams for n in ds.block_names[f]] + spend_feature_names(d)
        if names != est.feature_names:
            raise ValueError(f"{d}: the dataset's features differ from the estimator's")
        X = np.hstack([X_static[rows], Xb])
        res = {k: np.full(N, np.nan) for k in ("spent", "p_within_budget", "p_feasible")}
        iv = est.intervals(X, tg.spent[rows], tt[rows])
        for k, v in iv.items():
            res[k] = np.full(N, np.nan)
            res[k][rows] = v
        res["spent"][rows] = tg.spent[rows]
        res["p_within_budget"][rows] = est.prob_within(X, tg.spent[rows], tt[rows])
        res["p_feasible"][rows] = p_success[rows] * res["p_within_budget"][rows]
        res["X"] = np.full((N, X.shape[1]), np.nan, np.float32)
        res["X"][rows] = X
        out[d] = res
    return out
