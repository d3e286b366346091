"""The stages behind the CLI verbs: ingest, train, evaluate, budget, route.

Each stage reads the previous stage's files and writes its own, so any stage
can be re-run alone.  Paths: ``data/<bench>/`` (normalized runs),
``features/<bench>/``, ``models/<bench>/``, ``reports/<bench>/``.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from earlyeval.budget.config import BudgetConfig
from earlyeval.config.catalog import data_root, load_catalog
from earlyeval.config.eval_config import EvalConfig
from earlyeval.config.prices import price_runs, pricing_summary
from earlyeval.config.workspace import models_dir, reports_dir
from earlyeval.core import atomic
from earlyeval.core.atomic import write_json
from earlyeval.core.errors import CatalogError, EarlyEvalError, IngestError
from earlyeval.core.trajectory import Trajectory
from earlyeval.evaluation.blocks import HEADLINE as HEADLINE_KEYS
from earlyeval.evaluation.budget import run_budget
from earlyeval.evaluation.budget_shipped import shipped_config
from earlyeval.evaluation.dataset import Dataset, load_dataset
from earlyeval.evaluation.evaluate import (
    FoldRunner,
    in_process_runner,
    inner_sets,
    loao_report,
    run_loao,
    runset,
)
from earlyeval.evaluation.fit_plan import FITS_PLANNED, planned_fits
from earlyeval.evaluation.guard import TASK_LEVEL, guard_config, guarded
from earlyeval.evaluation.learning_curve import learning_curve
from earlyeval.evaluation.loso import run_loso
from earlyeval.evaluation.settings import eval_config
from earlyeval.features import Featurizer, build_family, fold_free
from earlyeval.features.context import context_absent_counts
from earlyeval.fitting.thresholds import choose_thresholds, step1_halts
from earlyeval.model.modeldir import ModelBundle, save_model_dir
from earlyeval.model.outcome import split_proba
from earlyeval.model.overlap import content_record
from earlyeval.report.budget import budget_report, summary_lines
from earlyeval.report.budget_plots import plot_intervals, plot_late_recognition
from earlyeval.report.learning_curve_plot import plot_learning_curve
from earlyeval.report.routing import plot_pair, routing_table
from earlyeval.tables.prefixes import drop_report
from earlyeval.tables.store import bench_dir, write_tasks
from earlyeval.tables.tasks import load_tasks
from earlyeval.tables.validate import validate_task
from earlyeval.workflows.backend import Backend, InProcess
from earlyeval.workflows.routing import DEFAULT_VALUES_OF_SOLVE, simulate_pair
from earlyeval.workflows.routing_pair import build_pair, pair_blind, routing_predictions, task_key

log = logging.getLogger(__name__)

# written last by ingest_bench (and removed first): the ingest stage is complete (the Makefile depends on it)
INGEST_DONE = "ingest.done"


# ------------------------------------------------------------------ ingest


def ingest_bench(
    bench: str,
    root: str | Path | None = None,
    progress: bool = True,
    backend: Backend | None = None,
    max_files: int | None = None,
) -> dict[str, Path]:
    """``backend`` (``workflows.backend``): where the runs are read, in this process (the default) or on a cluster
    (parallel tasks, the trajectories written as a directory of parts: same rows, same order, same report).
    ``max_files``: a bounded, evenly spread sample of each run's files (tests)."""
    backend = backend or InProcess()
    cat = load_catalog(bench)
    r = data_root(root)
    if not r.exists():
        raise FileNotFoundError(f"data root {r} does not exist (set --data-root or EARLYEVAL_DATA)")
    out = bench_dir(bench)
    marker = out / INGEST_DONE
    ingested = backend.ingest(
        cat, r, out / "trajectories.parquet", max_files=max_files, progress=progress
    )
    # a cluster's records: what the report needs of each run
    trajs, reports = (
        ingested.records,
        ingested.reports,
    )
    tasks = load_tasks(cat, r) if cat.tasks else {}
    tasks_skipped = []
    for tid in list(tasks):
        try:
            validate_task(tasks[tid], str(cat.path))
        except IngestError as e:
            tasks_skipped.append(e.to_dict())
            del tasks[tid]
    # each output is replaced atomically; the completion marker (what `make` depends on) goes first and
    # comes back last, so a kill in between leaves the previous outputs whole and the stage marked undone
    marker.unlink(missing_ok=True)
    p_traj = ingested.commit(out / "trajectories.parquet")
    p_tasks = write_tasks(tasks.values(), out / "tasks.parquet")
    min_steps = cat.config.min_steps
    report = {
        "bench": bench,
        "data_root": str(r),
        "catalog": cat.path.name if cat.path.parent.name == "catalogs" else str(cat.path),
        "totals": {
            "runs": len(reports),
            "trajectories": sum(x.trajectories for x in reports),
            "resolved": sum(x.resolved for x in reports),
            "unresolved": sum(x.unresolved for x in reports),
            "unlabelled": sum(x.unlabelled for x in reports),
            "skipped_files": sum(len(x.skipped) for x in reports),
            "tasks": len(tasks),
            "tasks_skipped": len(tasks_skipped),
        },
        "tasks_skipped": tasks_skipped,
        "runs": [x.to_dict() for x in reports],
        "prefix_drops": {
            str(m): drop_report(trajs, m).to_dict() for m in sorted({min_steps, 10, 5, 3})
        },
    }
    p_rep = write_json(report, reports_dir(bench) / "ingest.json")
    atomic.write_text(marker, json.dumps({"trajectories": len(trajs), "tasks": len(tasks)}) + "\n")
    return {"trajectories": p_traj, "tasks": p_tasks, "report": p_rep, "done": marker}


# ------------------------------------------------------------------- train


def train_bench(
    bench: str,
    out: Path | None = None,
    cfg: EvalConfig | None = None,
    root: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
    budget: bool = True,
    ds: Dataset | None = None,
    backend: Backend | None = None,
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
    if progress:
        progress(f"{FITS_PLANNED}{planned_fits(ds, cfg, train=True)}")
    try:  # a catalog too small for the inner folds or the calibration: one line naming it, as evaluate's
        _, full, th, step1 = _fit_shipped(ds, cfg, backend, progress)
        extra, budget_summary = (
            _shipped_budget(ds, cfg, progress, backend) if budget else ({}, None)
        )
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
) -> tuple[FoldRunner, Any, dict[str, Any], Any]:
    """``train_bench``'s fits: the (guarded) runner, its fit on every labelled agent, the thresholds chosen over
    the inner folds, and the step-1 check (which refuses thresholds that halt most runs at once)."""

    def make(c: EvalConfig) -> FoldRunner:
        return backend.train_runner(ds, c, progress)

    large = ds.large_agents(cfg.holdout_min_runs)
    methods: dict[str, str] = {}

    def inner_of(r: FoldRunner) -> dict[str, Any]:
        sets, methods["m"] = inner_sets(r, frozenset(), large)
        return sets

    fallback = make(guard_config(cfg)) if cfg.prior_guard else None
    runner, held, choice = guarded(make(cfg), fallback, inner_of)
    th = choose_thresholds(held, cfg, method=methods["m"] + " over the training agents")
    if choice:
        th["model_choice"] = choice
    full = runner.fit(frozenset())
    return runner, full, th, check_step1(runner, full, th, cfg.min_halt_step)


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


# ------------------------------------------------------------------ budget


def budget_config(bench: str, **overrides: Any) -> tuple[EvalConfig, BudgetConfig]:
    """The outcome model's settings for `bench` restricted to its fold-free families.

    The text family is refitted per fold (about two minutes a fit on tau2 on two
    cores); the LOAO here needs one outcome fit per (held-out agent, agent fold),
    so the budget evaluation uses the fold-free families only."""
    bcfg = BudgetConfig(
        **{k: v for k, v in overrides.items() if k in BudgetConfig.__dataclass_fields__}
    )
    cfg = eval_config(bench, n_jobs=bcfg.n_jobs, seed=bcfg.seed)
    cfg = cfg.replace(families=fold_free(cfg.families))
    return cfg, bcfg


def budget_bench(
    bench: str,
    root: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
    ds: Dataset | None = None,
) -> dict[str, Path]:
    """`earlyeval budget`: LOAO budget evaluation -> reports/<bench>/budget.json and two PNGs."""
    cfg, bcfg = budget_config(bench)
    ds = ds or load_dataset(
        bench, cfg.families, Path(root) if root else None, progress=progress is not None
    )
    try:
        run = run_budget(ds, cfg, bcfg, progress)
    except ValueError as e:  # e.g. two agents: one held out, one calibration fold, nothing left to fit P(success) on
        raise too_little_data(ds, bench, e) from None
    rep = budget_report(run)
    out = reports_dir(bench)
    paths = {"report": write_json(rep, out / "budget.json")}
    paths["intervals_png"] = plot_intervals(run, out / "budget_intervals.png")
    paths["late_png"] = plot_late_recognition(rep, out / "budget_late_recognition.png")
    if progress:
        for line in summary_lines(rep):
            progress(line)
    return paths


# ---------------------------------------------------------------- evaluate


def evaluate_bench(
    bench: str,
    cfg: EvalConfig | None = None,
    root: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
    ablations: list[tuple[str, dict[str, Any]]] | None = None,
    ds: Dataset | None = None,
    backend: Backend | None = None,
) -> tuple[dict[str, Any], LoaoLike]:
    """``backend`` (``workflows.backend``; default this process): on a cluster, featurized by partition, every fold
    a task on it."""
    backend = backend or InProcess()
    cfg = cfg or eval_config(bench)
    needed = sorted(
        set(cfg.families) | {f for _, o in (ablations or []) for f in o.get("families", [])}
    )
    if ds is None:
        ds = backend.dataset(bench, needed, root)
    if progress:
        progress(f"{FITS_PLANNED}{evaluate_fits(ds, cfg, ablations)}")
    runners = backend.runners(ds)
    t0 = time.time()
    try:
        res = with_loso(ds, cfg, run_loao(ds, cfg, progress, runners=runners))
    except ValueError as e:  # a fit on too few runs (scikit-learn's "0 sample(s)", a one-class split): the catalog said
        raise too_little_data(ds, bench, e) from None
    report = loao_report(ds, cfg, res)
    add_protocols(report, ds, cfg, progress, runners)
    report["seconds"] = round(time.time() - t0, 1)
    report["prefix_drops"] = drop_report(ds.trajs, cfg.min_steps).to_dict()
    report["ablations"] = []
    for name, over in ablations or []:
        c2 = cfg.replace(**over)
        r2 = run_loao(ds, c2, progress, with_loso=False, with_small=False, runners=runners)
        rep2 = loao_report(ds, c2, r2, light=True, pass_features=False)
        report["ablations"].append(ablation_row(name, over, rep2))
    return report, res


LoaoLike = Any


def too_little_data(ds: Dataset, bench: str, e: Exception, verb: str = "evaluate") -> CatalogError:
    """The one-line error of an evaluation (or a ``train``) that cannot fit on what the catalog gives, naming it."""
    y = [t.outcome for t in ds.trajs if t.outcome is not None]
    where = getattr(getattr(ds, "catalog", None), "path", None) or bench
    return CatalogError(
        str(where),
        "runs",
        f"too little data to {verb} {bench}: {len(y)} labelled runs of "
        f"{len(set(t.agent for t in ds.trajs))} agents, {sum(y)} successes ({type(e).__name__}: "
        f"{str(e).splitlines()[0] if str(e) else ''}); add runs or agents to the catalog",
    )


def with_loso(ds: Dataset, cfg: EvalConfig, res: Any) -> Any:
    """``res`` with its leave-one-scaffold-out protocol (``loso.run_loso``) on the same fitted runner."""
    res.loso = run_loso(ds, cfg, res.runner, res.holdout, res.runner_prior)
    return res


def protocol_report(
    ds: Dataset,
    cfg: EvalConfig,
    progress: Callable[[str], None] | None,
    runners: Callable[..., FoldRunner] = in_process_runner,
) -> dict[str, Any]:
    """One protocol's blocks: LOAO per agent and pooled, and leave-one-scaffold-out per scaffold."""
    return protocol_block(
        loao_report(
            ds, cfg, with_loso(ds, cfg, run_loao(ds, cfg, progress, runners=runners)), light=True
        )
    )


PROTOCOLS_DOC = {
    "as_of": "every run's task prior (and peer_prior) counts only public submissions / agents dated strictly before "
    "the run's own date, training and held-out runs alike (the headline: top-level agents/pooled)",
    "current_pool": "every run's task prior counts today's full public pool (minus its own scaffold x model)",
    "no_prior": "no public history at all: the prior (and peer_prior) families left out (a benchmark without a leaderboard)",
}
HISTORY = ("prior", "peer_prior")  # the families that read other agents' (dated) results
# the families with task-level features (the prior-only baseline)
TASK_FAMILIES = (
    "prior",
    "gold",
    "peer_prior",
)
GAIN_KEYS = (
    "auroc_success",
    "halted_accuracy",
    "outcome_accuracy",
    "steps_saved",
    "steps_saved_task_skip",
    "steps_saved_in_run",
)


def protocol_block(rep: dict[str, Any]) -> dict[str, Any]:
    """The per-agent and pooled metric blocks of a loao report (what every protocol carries)."""
    keep = (
        "thresholds",
        "small_n",
        "total_steps",
        "failure_only",
        "dollars",
        "other_rule",
        "pass",
        "guarantee_check",
        *HEADLINE_KEYS,
    )
    return {
        "agents": {a: {k: b.get(k) for k in keep if k in b} for a, b in rep["agents"].items()},
        "pooled": rep["pooled"],
        "holdout_agents": rep["holdout_agents"],
        "pass_pooled": rep.get("pass_pooled"),
        "mean_abs_resolve_rate_shift_pp": rep.get("mean_abs_resolve_rate_shift_pp"),
        "leave_one_scaffold_out": rep.get("leave_one_scaffold_out", {}),
    }


def add_protocols(
    report: dict[str, Any],
    ds: Dataset,
    cfg: EvalConfig,
    progress: Callable[[str], None] | None,
    runners: Callable[..., FoldRunner] = in_process_runner,
) -> None:
    """``protocols`` (as_of = the report's headline, current_pool, no_prior) and the prior-only baseline.

    current_pool only exists where a history family (prior, peer_prior) is used; no_prior drops them.  The prior-only baseline is
    the same model family and threshold rule on the task-level features alone (as_of); its halts can only
    be task skips, since its features do not change along a run."""
    prot: dict[str, Any] = {"doc": PROTOCOLS_DOC, "as_of": protocol_block(report)}
    extra = protocol_configs(cfg)
    for name in ("current_pool", "no_prior"):
        if name in extra:
            prot[name] = protocol_report(ds, extra[name], progress, runners)
    report["protocols"] = prot
    if "prior_only" in extra:
        # the model's own families and columns, the model reading the task-level ones only: the prior guard's fallback
        c = extra["prior_only"]
        task_fams = [f for f in cfg.families if f in TASK_FAMILIES]
        base = protocol_report(ds, c, progress, runners)
        gain = {
            a: {k: _diff(report["agents"][a].get(k), b.get(k)) for k in GAIN_KEYS}
            for a, b in base["agents"].items()
            if a in report["agents"]
        }
        report["baselines"]["prior_only"] = {
            **base["pooled"],
            "agents": base["agents"],
            "features": list(TASK_LEVEL),
            "families": task_fams,
            "note": "same model family, columns and threshold rule (inner LOAO, as_of), reading the task-level features only",
            "model_gain": {
                "pooled": {
                    k: _diff(report["pooled"].get(k), base["pooled"].get(k)) for k in GAIN_KEYS
                },
                "agents": gain,
                "leave_one_scaffold_out": {
                    sc: {
                        k: _diff(
                            report.get("leave_one_scaffold_out", {})
                            .get(sc, {})
                            .get("pooled", {})
                            .get(k),
                            b["pooled"].get(k),
                        )
                        for k in GAIN_KEYS
                    }
                    for sc, b in base["leave_one_scaffold_out"].items()
                },
            },
            "leave_one_scaffold_out": base["leave_one_scaffold_out"],
        }


def protocol_configs(cfg: EvalConfig) -> dict[str, EvalConfig]:
    """The configurations ``add_protocols`` evaluates beside as_of: current_pool and no_prior (where a history
    family is used) and the prior-only baseline (where a task-level family is)."""
    out: dict[str, EvalConfig] = {}
    if set(HISTORY) & set(cfg.families):
        out["current_pool"] = cfg.replace(prior_pool="current")
        rest = [f for f in cfg.families if f not in HISTORY]
        if rest:
            out["no_prior"] = cfg.replace(families=rest)
    if any(f in TASK_FAMILIES for f in cfg.families):
        out["prior_only"] = guard_config(cfg)
    return out


def evaluate_fits(
    ds: Dataset, cfg: EvalConfig, ablations: list[tuple[str, dict[str, Any]]] | None = None
) -> int:
    """How many models ``evaluate_bench`` fits (``planned_fits`` of each LOAO it runs): the bar's total."""
    n = planned_fits(ds, cfg) + sum(planned_fits(ds, c) for c in protocol_configs(cfg).values())
    return n + sum(
        planned_fits(ds, cfg.replace(**over), with_loso=False, with_small=False)
        for _, over in ablations or []
    )


def _diff(a: Any, b: Any) -> float | None:
    return None if a is None or b is None else float(a) - float(b)


ABLATION_KEYS = (
    "auroc_success",
    "halted_accuracy",
    "outcome_accuracy",
    "steps_saved",
    "steps_saved_task_skip",
    "steps_saved_in_run",
    "resolve_rate_shift_pp",
    "economic_consistency",
)


def ablation_row(name: str, over: dict[str, Any], rep: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "changes": {k: v for k, v in over.items()},
        "agents": {a: {k: b.get(k) for k in ABLATION_KEYS} for a, b in rep["agents"].items()},
        "pooled": {k: rep["pooled"].get(k) for k in ABLATION_KEYS},
        "mean_auroc": float(
            np.mean(
                [b["auroc_success"] for a, b in rep["agents"].items() if a in rep["holdout_agents"]]
            )
        ),
        "mean_abs_resolve_rate_shift_pp": rep.get("mean_abs_resolve_rate_shift_pp"),
    }


# ------------------------------------------------------------------- route


def route_bench(
    bench: str,
    cheap: str,
    strong: str,
    budget_usd: float | None = None,
    progress: Callable[[str], None] | None = None,
    *,
    root: str | Path | None = None,
    values_of_solve: Sequence[float] = DEFAULT_VALUES_OF_SOLVE,
    seed: int = 0,
    ds: Dataset | None = None,
    cfg: EvalConfig | None = None,
) -> dict[str, Path]:
    """Route one (cheap, strong) pair on a benchmark; merge into reports/<bench>/routing.json and draw a PNG."""
    cfg = cfg or eval_config(bench, seed=seed)
    ds = ds or load_dataset(bench, cfg.families, root, progress=progress is not None)
    for a in (cheap, strong):
        if a not in ds.agents:
            raise ValueError(f"unknown agent {a!r} on {bench}; agents: {', '.join(ds.agents)}")
    if cheap == strong:
        raise ValueError("cheap and strong must be two different agents")
    if progress:
        progress(f"routing {cheap} -> {strong}: fits without both agents, thresholds by inner LOAO")
    blind = pair_blind(ds, {cheap, strong})
    runner = FoldRunner(blind, cfg, progress)
    rs, th, info = routing_predictions(runner, cheap, strong)
    costs = price_runs(ds.trajs, ds.catalog)
    pair = build_pair(blind, costs, cheap, strong, rs)
    block = simulate_pair(
        pair,
        th["failure"],
        budget_usd=budget_usd,
        values_of_solve=values_of_solve,
        min_t=cfg.min_halt_step,
        seed=seed,
    )
    block["route_model"] = {
        **info,
        "prior": "every run's prior_solve_rate excludes both routed agents' public results",
    }
    block["thresholds"] = th
    shared = set(pair.task_ids)
    pair_trajs = [t for t in ds.trajs if t.agent in (cheap, strong) and task_key(t) in shared]
    block["pricing"] = pricing_summary(pair_trajs, costs, ds.catalog)
    block["notes"] = [
        "costs are the recorded runs' real costs (per-step sums, or instance totals pro-rata t/T when the format "
        "only has totals; catalog usd_per_step only where neither exists): see pricing",
        "stopped tasks count as unresolved; an escalated task is charged the cheap prefix plus the strong agent's "
        "whole recorded run and gets the strong run's recorded outcome",
        "halting happens only at t < T (prefixes 1..T-1); runs shorter than 2 steps always complete",
        "gap_closed = (rr - rr_always_cheap) / (rr_always_strong - rr_always_cheap); per 100 USD of extra cost over always-cheap",
    ]
    out = reports_dir(bench)
    path = out / "routing.json"
    report = _read_json(path) or {}
    report.update({"bench": bench, "version": 1})
    # every run's task prior (features and the prior-gated policies) counts only submissions dated before it
    block["protocol"] = "as_of"
    report.setdefault("pairs", {})[f"{cheap}->{strong}"] = block
    report["pricing"] = pricing_summary(ds.trajs, costs, ds.catalog)
    write_json(report, path)
    png = plot_pair(block, out / f"routing_{_safe(cheap)}_{_safe(strong)}.png")
    if progress:
        for line in routing_table(block).splitlines():
            progress(line)
    return {"routing": path, "plot": png}


def learning_curve_bench(
    bench: str,
    root: str | Path | None = None,
    subsets: int = 2,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Path]:
    """reports/<bench>/learning_curve.json and its PNG (evaluation.learning_curve), under the catalog's rule, as_of."""
    cfg = eval_config(bench, seed=seed)
    ds = load_dataset(bench, cfg.families, root, progress=progress is not None)
    lc = learning_curve(ds, cfg, subsets=subsets, progress=progress)
    out = reports_dir(bench)
    path = write_json({"bench": bench, "version": 1, **lc}, out / "learning_curve.json")
    png = plot_learning_curve(lc, out / "learning_curve.png")
    return {"learning_curve": path, "plot": png}


def _read_json(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError:
        log.warning("%s is not valid JSON; starting it afresh", path)
        return None


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name)
