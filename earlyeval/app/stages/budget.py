"""``earlyeval budget``'s stage: the remaining-budget LOAO evaluation written as ``reports/<bench>/budget.json``
and its two figures."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from earlyeval.app.stages.common import too_little_data
from earlyeval.config.budget_config import BudgetConfig
from earlyeval.config.eval_config import EvalConfig
from earlyeval.config.workspace import reports_dir
from earlyeval.core.atomic import write_json
from earlyeval.evaluation.budget_loao import run_budget
from earlyeval.evaluation.dataset import Dataset, load_dataset
from earlyeval.evaluation.settings import eval_config
from earlyeval.features import fold_free
from earlyeval.report.budget import budget_report, summary_lines
from earlyeval.report.budget_plots import plot_intervals, plot_late_recognition


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
