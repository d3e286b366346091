"""The shipped model trained with LightGBM's own distributed training (``lightgbm.dask``).

``DaskOutcomeModel`` gives the same model directory as in-process, with a booster within ``TOLERANCE`` of the
in-process one (data-parallel LightGBM is not bit-equal); ``TrainRunner`` is ``earlyeval train`` on a cluster.
Why, and by how much: docs/scale.md.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import dask
import dask.array as da
import lightgbm as lgb
import numpy as np
from distributed import Client
from lightgbm.dask import DaskLGBMClassifier

from earlyeval.evaluation.dataset import Dataset
from earlyeval.config.eval_config import EvalConfig
from earlyeval.evaluation.evaluate import Fitted
from earlyeval.fitting.metrics import auroc
from earlyeval.fitting.estimator import OutcomeModel
from earlyeval.scale.cluster import workers_of
from earlyeval.scale.folds import FoldPlan, FoldResult, PrefetchedRunner, _inner

# how far the distributed booster's calibrated P(success) may be from the in-process one's, on the held-back
# (Platt) rows of the shipped fit: mean |dP|, the 99th percentile of |dP|, and |dAUROC| (prefix-weighted).
# Measured, 2 workers, both rank orders (docs/scale.md): full SWE-bench (38,469 prefixes): 0.032-0.035,
# 0.218-0.238, 0.0007-0.0028 (another LightGBM seed in-process: 0.027, 0.187, 0.0003); the tests' sample
# (36 files a run, 5,209 prefixes): 0.028-0.050, 0.161-0.344, 0.026-0.034 (another seed: 0.017, 0.088, 0.013).
TOLERANCE = {"mean_abs_dp": 0.05, "p99_abs_dp": 0.30, "auroc": 0.01}
SAMPLE_TOLERANCE = {"mean_abs_dp": 0.08, "p99_abs_dp": 0.45, "auroc": 0.05}


def booster_gap(p_local: np.ndarray, p_dist: np.ndarray, y: np.ndarray, w: np.ndarray) -> dict[str, float]:
    """How far two models' calibrated P(success) on the same rows are, in ``TOLERANCE``'s terms."""
    dp = np.abs(np.asarray(p_local, dtype=np.float64) - np.asarray(p_dist, dtype=np.float64))
    a, b = auroc(y, p_local, w), auroc(y, p_dist, w)
    return {"mean_abs_dp": float(dp.mean()), "p99_abs_dp": float(np.quantile(dp, 0.99)), "max_abs_dp": float(dp.max()),
            "auroc": abs(float(a) - float(b)) if a is not None and b is not None else float("nan"),
            "auroc_local": a, "auroc_dist": b}


def within_tolerance(gap: dict[str, float], tolerance: dict[str, float] | None = None) -> bool:
    return all(gap[k] <= v for k, v in (TOLERANCE if tolerance is None else tolerance).items())


class DaskOutcomeModel(OutcomeModel):
    """``OutcomeModel`` whose boosters LightGBM trains on the cluster of ``client`` (see the module doc)."""

    def __init__(self, lgbm_params: dict[str, Any] | None = None, val_share: float = 0.25, twin: str = "mirror",
                 monotone: dict[str, int] | None = None, seed: int = 0, n_jobs: int = 2, client: Client | None = None):
        super().__init__(lgbm_params=lgbm_params, val_share=val_share, twin=twin, monotone=monotone, seed=seed, n_jobs=n_jobs)
        self.client = client

    def _train_booster(self, clf: lgb.LGBMClassifier, X: np.ndarray, y: np.ndarray, w: np.ndarray) -> lgb.Booster:
        if self.client is None:
            raise ValueError("DaskOutcomeModel needs a dask.distributed client")
        params = clf.get_params()
        params.pop("n_jobs", None)  # lightgbm.dask gives each worker its own thread count
        dclf = DaskLGBMClassifier(client=self.client, **params)
        dX, dy, dw = placed(self.client, X, y, w)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            dclf.fit(dX, dy, sample_weight=dw)
        return dclf.to_local().booster_

    def to_local(self) -> OutcomeModel:
        """The fitted model as a plain ``OutcomeModel`` (no client): what ``save_model_dir`` writes."""
        params = {k: v for k, v in self.get_params().items() if k != "client"}
        local = OutcomeModel(**params)
        for k, v in vars(self).items():
            if k.endswith("_") and not k.startswith("_"):
                setattr(local, k, v)
        return local


def placed(client: Client, X: np.ndarray, *cols: np.ndarray) -> list[Any]:
    """``X`` and the row-aligned ``cols`` as dask arrays whose row blocks live one per worker, in address order."""
    workers = workers_of(client)
    bounds = np.linspace(0, len(X), len(workers) + 1).astype(int)
    blocks: list[list[Any]] = [[] for _ in range(1 + len(cols))]
    for w, a, b in zip(workers, bounds[:-1], bounds[1:]):
        if b <= a:
            continue
        for k, arr in enumerate((X, *cols)):
            part = np.ascontiguousarray(arr[a:b])
            fut = client.scatter(part, workers=[w], hash=False)
            blocks[k].append(da.from_delayed(dask.delayed(fut), shape=part.shape, dtype=part.dtype))
    return [da.concatenate(bs, axis=0) for bs in blocks]


class TrainRunner(PrefetchedRunner):
    """The runner of ``earlyeval train`` on a cluster: inner folds prefetched, the full fit distributed."""

    def __init__(self, ds: Dataset, cfg: EvalConfig, progress: Callable[[str], None] | None,
                 results: dict[frozenset, FoldResult], client: Client):
        super().__init__(ds, cfg, progress, results)
        self.client = client

    def new_model(self, exclude: frozenset) -> OutcomeModel:
        if exclude:
            return super().new_model(exclude)
        return DaskOutcomeModel(lgbm_params=self.cfg.lgbm_params, twin=self.cfg.twin, monotone=self.cfg.monotone,
                                seed=self.cfg.seed, n_jobs=self.cfg.n_jobs, client=self.client)

    def fit(self, exclude: frozenset) -> Fitted:
        if exclude or exclude in self._fits:
            return super().fit(exclude)
        fitted = super(PrefetchedRunner, self).fit(exclude)  # FoldRunner.fit, with new_model's DaskOutcomeModel
        if isinstance(fitted.model, DaskOutcomeModel):
            fitted.model = fitted.model.to_local()
        return fitted


def train_plan(ds: Dataset, cfg: EvalConfig) -> FoldPlan:
    """The inner folds ``train_bench`` asks for (``inner_sets`` over every large agent, none held out)."""
    plan = FoldPlan()
    _inner(plan, ds, cfg, frozenset(), ds.large_agents(cfg.holdout_min_runs))
    plan.predict.pop(frozenset(), None)  # the validation-split fallback reads the shipped fit itself (distributed)
    return plan


__all__ = ["DaskOutcomeModel", "SAMPLE_TOLERANCE", "TOLERANCE", "TrainRunner", "booster_gap", "placed", "train_plan", "within_tolerance"]
