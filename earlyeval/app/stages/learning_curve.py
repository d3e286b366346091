"""``earlyeval learning-curve``'s stage: held-out AUROC and savings against the number of training agents,
written as ``reports/<bench>/learning_curve.json`` and its figure."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from earlyeval.config.workspace import reports_dir
from earlyeval.core.atomic import write_json
from earlyeval.evaluation.dataset import load_dataset
from earlyeval.evaluation.learning_curve import learning_curve
from earlyeval.evaluation.settings import eval_config
from earlyeval.report.learning_curve_plot import plot_learning_curve


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
