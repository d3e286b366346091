"""``earlyeval evaluate``'s stage: the leave-one-agent-out report of a benchmark with its protocols, baselines
and ablations (``evaluation.protocols``), as ``loao.json`` holds it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from earlyeval.app.stages.common import too_little_data
from earlyeval.config.eval_config import EvalConfig
from earlyeval.evaluation.dataset import Dataset
from earlyeval.evaluation.evaluate import run_loao
from earlyeval.evaluation.fit_plan import FITS_PLANNED
from earlyeval.evaluation.protocols import (
    ablation_rows,
    add_protocols,
    evaluate_fits,
    full_report,
    with_loso,
)
from earlyeval.evaluation.settings import eval_config
from earlyeval.tables.prefixes import drop_report
from earlyeval.workflows.backend import Backend, InProcess

Ablations = list[tuple[str, dict[str, Any]]]


def evaluate_bench(
    bench: str,
    cfg: EvalConfig | None = None,
    root: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
    ablations: Ablations | None = None,
    ds: Dataset | None = None,
    backend: Backend | None = None,
) -> tuple[dict[str, Any], Any]:
    """The report and the headline's LOAO result (its held-out predictions).  ``backend``
    (``workflows.backend``; default this process): on a cluster, featurized by partition, every fold a task on
    it."""
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
    report = full_report(ds, cfg, res, progress)
    add_protocols(report, ds, cfg, progress, runners)
    report["seconds"] = round(time.time() - t0, 1)
    report["prefix_drops"] = drop_report(ds.trajs, cfg.min_steps).to_dict()
    report["ablations"] = ablation_rows(ds, cfg, ablations or [], progress, runners)
    return report, res
