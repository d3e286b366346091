"""``earlyeval train``'s stage: the shipped model fitted on every labelled agent, its thresholds chosen over the
inner folds, the budget estimators beside it, written as a safe model directory."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Callable

import numpy as np

from earlyeval.app.stages.common import too_little_data
from earlyeval.config.eval_config import EvalConfig
from earlyeval.config.workspace import models_dir
from earlyeval.core.errors import EarlyEvalError
from earlyeval.core.trajectory import Trajectory
from earlyeval.evaluation.budget_shipped import shipped_config
from earlyeval.evaluation.dataset import Dataset
from earlyeval.evaluation.evaluate import run_loao
from earlyeval.evaluation.fit_plan import FITS_PLANNED, planned_fits
from earlyeval.evaluation.fold_runner import FoldRunner, runset
from earlyeval.evaluation.forecast import forecast, unknown_forecast
from earlyeval.evaluation.forecast_cache import (
    forecast_key,
    read_forecast_cache,
    write_forecast_cache,
)
from earlyeval.evaluation.guard import guard_config, guarded
from earlyeval.evaluation.holdout_groups import inner_sets
from earlyeval.evaluation.settings import eval_config
from earlyeval.features import Featurizer, build_family, fold_free
from earlyeval.features.context import context_absent_counts
from earlyeval.fitting.thresholds import choose_thresholds, live_thresholds, step1_halts
from earlyeval.model.modeldir import ModelBundle, save_model_dir
from earlyeval.model.outcome import split_proba
from earlyeval.model.overlap import content_record
from earlyeval.workflows.backend import Backend, InProcess


def train_bench(
    bench: str,
    out: Path | None = None,
    cfg: EvalConfig | None = None,
    root: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
    budget: bool = True,
    ds: Dataset | None = None,
    backend: Backend | None = None,
    with_forecast: bool = True,
) -> dict[str, Path]:
    """Fit the shipped model on every labelled agent; thresholds by leave-one-agent-out over them.

    With ``budget`` (the default) the model dir also carries the budget estimators
    (``extra_budget.json``: ``evaluation.budget_shipped.fit_shipped``, every labelled agent a calibration agent).
    ``backend`` (``workflows.backend``; default this process): on a cluster, featurized by partition, the inner
    folds as tasks, the shipped booster trained with lightgbm.dask (within ``scale.train.TOLERANCE``)."""
    cfg = cfg or eval_config(bench)
    backend = backend or InProcess()
    if ds is None:
        ds = backend.dataset(bench, cfg.families, root)
    if progress:  # the shipped fits, and the forecast's leave-one-agent-out unless it is cached
        fresh = with_forecast and read_forecast_cache(ds.bench, forecast_key(ds, cfg)) is None
        total = planned_fits(ds, cfg, train=True) + (
            planned_fits(ds, cfg, with_loso=False) if fresh else 0
        )
        progress(f"{FITS_PLANNED}{total}")
    try:  # a catalog too small for the inner folds or the calibration: one line naming it, as evaluate's
        _, full, th, step1, live = _fit_shipped(ds, cfg, backend, progress)
        extra, budget_summary = (
            _shipped_budget(ds, cfg, progress, backend) if budget else ({}, None)
        )
        fc = train_forecast(ds, cfg, backend, progress) if with_forecast else None
    except ValueError as e:
        if isinstance(e, EarlyEvalError):
            raise
        raise too_little_data(ds, bench, e, "train") from None
    # the order FoldRunner builds its matrix in: fold-free blocks, then the fold-fitted families (text,
    # peer_prior) fitted on every labelled agent, in cfg order
    families = [build_family(name, prior_table=ds.prior_table) for name in fold_free(cfg.families)]
    families += full.fold_families
    fz = Featurizer(families)
    if fz.names != full.feature_names:
        raise AssertionError("the shipped featurizer's columns differ from the model's")
    counts = Counter(t.agent for t in ds.trajs)
    bundle = ModelBundle(
        featurizer=fz,
        model=full.model,
        thresholds={
            "success": th["success"],
            "failure": th["failure"],
            "min_halt_step": cfg.min_halt_step,
            "success_evidence": cfg.success_evidence,
            "task_skips": cfg.task_skips,
            "live_failure": live["failure"],
            # what a monitor does by default: "shadow" when the forecast halts below its target
            "default_mode": (fc or {}).get("default_mode", "halt"),
        },
        training={
            "benchmarks": [bench],
            "agents": dict(counts),
            # who and what was trained on, for `earlyeval score`'s overlap warning (sorted: deterministic)
            "agent_identity": training_identity(ds.trajs),
            "run_ids": sorted(t.run_id for t in ds.trajs),
            # what was trained on by content (fingerprints of task + steps; native formats and model names):
            # `earlyeval score` recognises a copied or renamed training run by it (model.overlap)
            "content": content_record(ds.trajs, {r.name: r.format for r in ds.catalog.runs}),
            "runs": int(sum(counts.values())),
            "runs_used": full.n_train_runs,
            "prefixes": full.n_train_prefixes,
            "min_steps": cfg.min_steps,
            "threshold_selection": th,
            "live_threshold_selection": live,
            # will it pay: the benchmark's own leave-one-agent-out (None: train --no-forecast)
            "forecast": fc,
            "step1_halts": step1,
            "config": cfg.to_dict(),
            "budget": budget_summary,
            # per family, how many training runs lacked its inputs: the Monitor halts on such a state only
            # when the model was trained on it (monitor.context_state)
            "context_runs": len(ds.trajs),
            "context_absent_runs": context_absent_counts(fz, ds.contexts),
        },
        extra=extra,
    )
    path = save_model_dir(bundle, out or models_dir(bench))
    return {"model": path}


def _fit_shipped(
    ds: Dataset, cfg: EvalConfig, backend: Backend, progress: Callable[[str], None] | None
) -> tuple[FoldRunner, Any, dict[str, Any], Any, dict[str, Any]]:
    """``train_bench``'s fits: the (guarded) runner, its fit on every labelled agent, the thresholds chosen over
    the inner folds, the step-1 check (which refuses thresholds that halt most runs at once) and the live
    default's thresholds (halt_on: failure, chosen for that mode)."""

    def make(c: EvalConfig) -> FoldRunner:
        return backend.train_runner(ds, c, progress)

    large = ds.large_agents(cfg.holdout_min_runs)
    methods: dict[str, str] = {}

    def inner_of(r: FoldRunner) -> dict[str, Any]:
        sets, methods["m"] = inner_sets(r, frozenset(), large)
        return sets

    fallback = make(guard_config(cfg)) if cfg.prior_guard else None
    runner, held, choice = guarded(make(cfg), fallback, inner_of)
    method = methods["m"] + " over the training agents"
    th = choose_thresholds(held, cfg, method=method)
    live = live_thresholds(held, cfg, method=method)
    if choice:
        th["model_choice"] = choice
    full = runner.fit(frozenset())
    return runner, full, th, check_step1(runner, full, th, cfg.min_halt_step), live


def train_forecast(
    ds: Dataset, cfg: EvalConfig, backend: Backend, progress: Callable[[str], None] | None
) -> dict[str, Any]:
    """``evaluation.forecast`` of a model trained with ``cfg`` on ``ds``: its leave-one-agent-out (no scaffold
    protocol), cached in the workspace by the data's and the settings' hashes (``forecast_cache``)."""
    key = forecast_key(ds, cfg)
    cached = read_forecast_cache(ds.bench, key)
    if cached is not None:
        return cached
    try:
        res = run_loao(ds, cfg, progress, with_loso=False, runners=backend.runners(ds))
    except (
        ValueError
    ) as e:  # too few runs or agents for a fold: the model still ships, in shadow mode
        if isinstance(e, EarlyEvalError):
            raise
        return {**unknown_forecast(f"its leave-one-agent-out could not run: {e}"), "key": key}
    fc = {**forecast(res, cfg), "key": key}
    write_forecast_cache(ds.bench, fc)
    return fc


def _shipped_budget(
    ds: Dataset, cfg: EvalConfig, progress: Callable[[str], None] | None, backend: Backend
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The budget estimators the model dir ships (its ``extra``, empty when no dimension could be fitted) and
    their summary for the manifest (B, tau and unit per dimension, the dimensions skipped)."""
    shipped = backend.shipped_budget(ds, *shipped_config(cfg), progress=progress)
    if shipped is None:
        return {}, None
    summary = {
        "dimensions": {
            d: {"B": v["estimator"]["budget"], "tau": v["tau"], "unit": v["estimator"]["unit"]}
            for d, v in shipped["dimensions"].items()
        },
        "skipped_dimensions": shipped["skipped_dimensions"],
    }
    return {"budget": shipped}, summary


def check_step1(
    runner: FoldRunner, full: Any, th: dict[str, Any], min_halt_step: int
) -> dict[str, Any]:
    """The shipped model's thresholds on its own training runs (in-sample): how many halt at step 1;
    ``thresholds.step1_halts`` refuses more than ``MAX_STEP1_HALT_SHARE`` of them, with the numbers."""
    runs = np.arange(len(runner.ds.trajs))
    rows = runner.rows_of(runs, 2)
    ps, pf = split_proba(runner.proba(full, runs, rows))
    return step1_halts(
        runset(runner.ds, runs, rows, ps, pf, runner.cfg),
        {"success": th["success"], "failure": th["failure"], "min_halt_step": min_halt_step},
    )


def training_identity(trajs: list[Trajectory]) -> dict[str, dict[str, list[str]]]:
    """Per training agent, the scaffolds and models its runs record (``meta.scaffold``/``meta.model``), sorted."""
    out: dict[str, dict[str, set[str]]] = {}
    for t in trajs:
        d = out.setdefault(t.agent, {"scaffold": set(), "model": set()})
        for k in ("scaffold", "model"):
            v = t.meta.get(k)
            if isinstance(v, str) and v:
                d[k].add(v)
    return {a: {k: sorted(v) for k, v in d.items()} for a, d in sorted(out.items())}
