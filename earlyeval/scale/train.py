"""The shipped model trained with LightGBM's own distributed training (``lightgbm.dask``).

``DaskOutcomeModel`` gives the same model directory as in-process, with a booster within ``TOLERANCE`` of the
in-process one (data-parallel LightGBM is not bit-equal); ``TrainRunner`` is ``earlyeval train`` on a cluster.
Why, and by how much: docs/scale.md.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable

import dask
import dask.array as da
import lightgbm as lgb
import numpy as np
from distributed import Client
from lightgbm.dask import DaskLGBMClassifier

from earlyeval.config.budget_config import BudgetConfig
from earlyeval.config.eval_config import EvalConfig
from earlyeval.evaluation.budget_shipped import fit_shipped
from earlyeval.evaluation.dataset import Dataset
from earlyeval.evaluation.fold_runner import Fitted, FoldRunner
from earlyeval.features import family_class
from earlyeval.fitting.estimator import OutcomeModel, Platt, fit_platt
from earlyeval.fitting.metrics import auroc
from earlyeval.scale.cluster import result_of, workers_of
from earlyeval.scale.features import PartsRef, part_bounds, parts_dataset
from earlyeval.scale.folds import FoldPlan, FoldResult, PrefetchedRunner, _inner

# how far the distributed booster's calibrated P(success) may be from the in-process one's, on the held-back
# (Platt) rows of the shipped fit: mean |dP|, the 99th percentile of |dP|, and |dAUROC| (prefix-weighted).
# Measured, 2 workers, both rank orders (docs/scale.md): full SWE-bench (38,469 prefixes): 0.032-0.035,
# 0.218-0.238, 0.0007-0.0028 (another LightGBM seed in-process: 0.027, 0.187, 0.0003); the tests' sample
# (36 files a run, 5,209 prefixes): 0.028-0.050, 0.161-0.344, 0.026-0.034 (another seed: 0.017, 0.088, 0.013).
# `train --scheduler local:2` over the parts, full SWE-bench, two starts: 0.029-0.045, 0.191-0.255, 0.0010-0.0025.
TOLERANCE = {"mean_abs_dp": 0.05, "p99_abs_dp": 0.30, "auroc": 0.01}
SAMPLE_TOLERANCE = {"mean_abs_dp": 0.08, "p99_abs_dp": 0.45, "auroc": 0.05}


def booster_gap(
    p_local: np.ndarray, p_dist: np.ndarray, y: np.ndarray, w: np.ndarray
) -> dict[str, float]:
    """How far two models' calibrated P(success) on the same rows are, in ``TOLERANCE``'s terms."""
    dp = np.abs(np.asarray(p_local, dtype=np.float64) - np.asarray(p_dist, dtype=np.float64))
    a, b = auroc(y, p_local, w), auroc(y, p_dist, w)
    return {
        "mean_abs_dp": float(dp.mean()),
        "p99_abs_dp": float(np.quantile(dp, 0.99)),
        "max_abs_dp": float(dp.max()),
        "auroc": abs(float(a) - float(b)) if a is not None and b is not None else float("nan"),
        "auroc_local": a,
        "auroc_dist": b,
    }


def within_tolerance(gap: dict[str, float], tolerance: dict[str, float] | None = None) -> bool:
    return all(gap[k] <= v for k, v in (TOLERANCE if tolerance is None else tolerance).items())


@dataclass(frozen=True)
class PartJob:
    """What a partition task of the shipped fit needs: the parts, the settings, the fold-fitted families' state."""

    ref: PartsRef
    cfg: EvalConfig
    states: list[tuple[str, dict[str, Any], dict[str, Any]]]


def part_matrix(job: PartJob, rows: np.ndarray) -> np.ndarray:
    """A task: the shipped fit's feature matrix of ``rows`` (sorted prefix rows of one part), computed on the
    worker from the parts it reads itself, by the in-process ``FoldRunner.features``."""
    ds = parts_dataset(job.ref)
    fams = [family_class(name).from_state(meta, arrays) for name, meta, arrays in job.states]
    runs = np.unique(ds.prefixes["run"].to_numpy()[rows])
    X, _ = FoldRunner(ds, job.cfg).features(fams, runs, rows)
    return X


def part_margins(booster: lgb.Booster, job: PartJob, rows: np.ndarray) -> np.ndarray:
    """A task: the booster's raw margins on ``rows`` (what Platt scaling needs, one float a row)."""
    return booster.predict(part_matrix(job, rows), raw_score=True)


def part_proba(
    model: OutcomeModel, job: PartJob, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """A task: the fitted model's P(failure) and P(success) of ``rows``, as two vectors."""
    P = model.predict_proba(part_matrix(job, rows))
    return np.ascontiguousarray(P[:, 0]), np.ascontiguousarray(P[:, 1])


class Partitioned:
    """The shipped fit's rows over the feature parts: a dask array whose blocks are computed where they are
    trained on, and per-part tasks whose results are vectors. The driver never holds a block."""

    def __init__(self, client: Client, job: PartJob):
        self.client, self.job = client, job
        self.bounds = part_bounds(job.ref)
        self._job = client.scatter(job, broadcast=True, hash=False)

    def pieces(self, rows: np.ndarray) -> list[np.ndarray]:
        """``rows`` (sorted) split at the parts' boundaries, empty pieces left out."""
        cuts = np.searchsorted(rows, self.bounds[1:-1])
        return [r for r in np.split(rows, cuts) if len(r)]

    def matrix(self, rows: np.ndarray, n_cols: int) -> da.Array:
        return da.concatenate(
            [
                da.from_delayed(
                    dask.delayed(part_matrix, pure=False)(self._job, r),
                    shape=(len(r), n_cols),
                    dtype=np.float32,
                )
                for r in self.pieces(rows)
            ]
        )

    def vector(self, v: np.ndarray, rows: np.ndarray) -> da.Array:
        """``v`` (one value per row of ``rows``) chunked as ``matrix(rows)`` is."""
        return da.from_array(np.asarray(v), chunks=(tuple(len(r) for r in self.pieces(rows)),))

    def map(self, fn: Callable[..., Any], obj: Any, rows: np.ndarray, what: str) -> list[Any]:
        """``fn(obj, job, piece)`` on the workers for each piece of ``rows``, the results in row order."""
        ref = self.client.scatter(obj, broadcast=True, hash=False)
        futs = [self.client.submit(fn, ref, self._job, r, pure=False) for r in self.pieces(rows)]
        try:
            return [result_of(f, what) for f in futs]
        except BaseException:
            self.client.cancel(futs)
            raise


class DaskOutcomeModel(OutcomeModel):
    """``OutcomeModel`` whose boosters LightGBM trains on the cluster of ``client`` (see the module doc)."""

    def __init__(
        self,
        lgbm_params: dict[str, Any] | None = None,
        val_share: float = 0.25,
        twin: str = "mirror",
        monotone: dict[str, int] | None = None,
        seed: int = 0,
        n_jobs: int = 2,
        client: Client | None = None,
    ):
        super().__init__(
            lgbm_params=lgbm_params,
            val_share=val_share,
            twin=twin,
            monotone=monotone,
            seed=seed,
            n_jobs=n_jobs,
        )
        self.client = client

    def fit_parts(
        self,
        part: Partitioned,
        rows: np.ndarray,
        y: np.ndarray,
        sample_weight: np.ndarray,
        groups: np.ndarray,
        feature_names: list[str],
    ) -> "DaskOutcomeModel":
        """``fit`` on the prefix ``rows`` of ``part`` (sorted), whose labels, weights and groups are given: the
        same split and Platt scaling, the boosters trained on the partitions, the margins computed by the workers."""
        y = np.asarray(y)
        classes, y, w, tr, va, targets = self._split(
            np.empty((len(y), 1), np.int8), y, sample_weight, groups
        )
        boosters: dict[str, Any] = {}
        platt: dict[str, Platt] = {}
        n = len(feature_names)
        for name, (yy, ww, sign) in targets.items():
            clf = self._classifier(feature_names, sign)
            boosters[name] = self._fit_dask(
                clf,
                part.matrix(rows[tr], n),
                part.vector(yy[tr], rows[tr]),
                part.vector(ww[tr], rows[tr]),
            )
            margins = np.concatenate(
                part.map(part_margins, boosters[name], rows[va], f"margins of {name}")
            )
            platt[name] = fit_platt(margins, yy[va], w[va])
        return self._fitted(boosters, platt, list(feature_names), n, classes, y, w, va)

    def _train_booster(
        self, clf: lgb.LGBMClassifier, X: np.ndarray, y: np.ndarray, w: np.ndarray
    ) -> lgb.Booster:
        """``fit`` on a matrix in this process: its rows scattered to the workers (``placed``)."""
        return self._fit_dask(clf, *placed(self._client(), X, y, w))

    def _client(self) -> Client:
        if self.client is None:
            raise ValueError("DaskOutcomeModel needs a dask.distributed client")
        return self.client

    def _fit_dask(
        self, clf: lgb.LGBMClassifier, dX: da.Array, dy: da.Array, dw: da.Array
    ) -> lgb.Booster:
        params = clf.get_params()
        params.pop("n_jobs", None)  # lightgbm.dask gives each worker its own thread count
        dclf = DaskLGBMClassifier(client=self._client(), **params)
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
    """``X`` and the row-aligned ``cols`` as dask arrays whose row blocks live one per worker, in address order
    (a matrix already in this process; ``train --scheduler`` never makes one: ``Partitioned``)."""
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
    """The runner of ``earlyeval train`` on a cluster: inner folds prefetched (tasks reading the parts), the
    full fit over the partitions (``Partitioned``), its predictions made by the workers."""

    def __init__(
        self,
        ds: Dataset,
        cfg: EvalConfig,
        progress: Callable[[str], None] | None,
        results: dict[frozenset, FoldResult],
        client: Client,
        ref: PartsRef,
    ):
        super().__init__(ds, cfg, progress, results)
        self.client, self.ref = client, ref
        self._jobs: dict[int, PartJob] = {}

    def fit(self, exclude: frozenset) -> Fitted:
        if exclude or exclude in self._fits:
            return super().fit(exclude)
        if self.progress:
            self.progress("fit without []")
        self._fits[exclude] = self._shipped()
        return self._fits[exclude]

    def _shipped(self) -> Fitted:
        """``FoldRunner.fit`` with nothing left out, its matrix never made here."""
        cfg = self.cfg
        train_runs, long_runs, rows = self.fit_rows(frozenset())
        text, fams = self.fold_families(train_runs)
        job = PartJob(self.ref, cfg, [(f.name, *f.get_state()) for f in fams])
        part = Partitioned(self.client, job)
        pf = self.ds.prefixes.iloc[rows]
        names = self.feature_names(fams)
        model = DaskOutcomeModel(
            lgbm_params=cfg.lgbm_params,
            twin=cfg.twin,
            monotone=cfg.monotone,
            seed=cfg.seed,
            n_jobs=cfg.n_jobs,
            client=self.client,
        )
        model.fit_parts(
            part, rows, pf["y"].to_numpy(), pf["weight"].to_numpy(), pf["task_id"].to_numpy(), names
        )
        fitted = Fitted(
            model.to_local(),
            text,
            names,
            sorted(set(self.run_agent[train_runs])),
            len(long_runs),
            len(rows),
            rows,
            fams,
        )
        self._jobs[id(fitted)] = job
        return fitted

    def proba(self, fitted: Fitted, runs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The shipped fit's predictions computed by the workers, per part (only the two vectors come back)."""
        job = self._jobs.get(id(fitted))
        if job is None:
            return super().proba(fitted, runs, rows)
        if np.any(np.diff(rows) < 0):
            raise ValueError("the shipped fit predicts prefix rows in their order (sorted)")
        out = Partitioned(self.client, job).map(
            part_proba, fitted.model, rows, "the shipped fit's predictions"
        )
        return np.column_stack(
            [np.concatenate([a for a, _ in out]), np.concatenate([b for _, b in out])]
        )


def fit_budget_of_parts(
    ref: PartsRef, cfg: EvalConfig, bcfg: BudgetConfig
) -> dict[str, Any] | None:
    """A task: ``budget_shipped.fit_shipped`` on the dataset this worker reads from the parts."""
    return fit_shipped(parts_dataset(ref), cfg, bcfg)


def train_plan(ds: Dataset, cfg: EvalConfig) -> FoldPlan:
    """The inner folds ``train_bench`` asks for (``inner_sets`` over every large agent, none held out)."""
    plan = FoldPlan()
    _inner(plan, ds, cfg, frozenset(), ds.large_agents(cfg.holdout_min_runs))
    # the validation-split fallback reads the shipped fit itself (distributed)
    plan.predict.pop(frozenset(), None)
    return plan


__all__ = [
    "DaskOutcomeModel",
    "PartJob",
    "Partitioned",
    "SAMPLE_TOLERANCE",
    "TOLERANCE",
    "TrainRunner",
    "booster_gap",
    "placed",
    "train_plan",
    "within_tolerance",
]
