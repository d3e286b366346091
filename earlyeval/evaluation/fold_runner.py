"""The fold runner of the leave-one-agent-out evaluation: fits (and caches) a model, vocabulary and
fold-fitted families per set of agents left out, and predicts a held-out agent's runs as a ``RunSet``
(``runset``: prefix predictions grouped by run, each gated by the success evidence rule)."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

from earlyeval.config.eval_config import EvalConfig
from earlyeval.evaluation.adapt import adapt_em
from earlyeval.evaluation.dataset import CURRENT_POOL, Dataset
from earlyeval.evaluation.pass_predict import cold
from earlyeval.features import Featurizer, bind_values, build_family, fold_fitted, fold_free
from earlyeval.features.known import check_feature_settings
from earlyeval.fitting.estimator import OutcomeModel
from earlyeval.fitting.metrics import RunSet, runset_of_runs
from earlyeval.model.outcome import split_proba


@dataclass
class Fitted:
    model: OutcomeModel
    text: Any | None
    feature_names: list[str]
    train_agents: list[str]
    n_train_runs: int
    n_train_prefixes: int
    train_rows: np.ndarray | None = None
    # text, peer_prior ... fitted on this fold, cfg order
    fold_families: list[Any] = field(default_factory=list)


class FoldRunner:
    """Fits and caches models keyed by the set of agents left out."""

    def __init__(self, ds: Dataset, cfg: EvalConfig, progress: Callable[[str], None] | None = None):
        check_feature_settings(cfg)  # a feature name no family makes: refused before any fit
        self.ds = ds
        self.cfg = cfg
        self._fits: dict[frozenset, Fitted] = {}
        self._preds: dict[tuple[frozenset, str], RunSet] = {}
        self.adaptation: dict[tuple[frozenset, str], dict[str, Any]] = {}
        self.token_cache = ds.token_cache()
        self.progress = progress
        self.run_agent = np.asarray([t.agent for t in ds.trajs])
        self.prefix_run = ds.prefixes["run"].to_numpy()
        self.prefix_T = ds.prefixes["T"].to_numpy()
        # the contexts fold-fitted families see: dated (as_of), or all with no cutoff (current pool)
        self.contexts = (
            ds.contexts
            if cfg.prior_pool == "as_of"
            else [replace(c, as_of="") for c in ds.contexts]
        )

    def _kept(self, names: list[str]) -> list[int]:
        cfg = self.cfg
        return [
            j
            for j, n in enumerate(names)
            if not any(fnmatch.fnmatch(n, pat) for pat in cfg.drop_features)
        ]

    def _static(self, rows: np.ndarray) -> tuple[np.ndarray, list[str]]:
        mats, names = [], []
        for fam in fold_free(self.cfg.families):
            block = CURRENT_POOL if fam == "prior" and self.cfg.prior_pool == "current" else fam
            if block not in self.ds.blocks:
                raise KeyError(
                    f"fold-free family '{fam}' is in the config but the dataset has no '{block}' block "
                    f"(load_dataset was given {sorted(self.ds.blocks)})"
                )
            keep = self._kept(self.ds.block_names[block])
            mats.append(self.ds.blocks[block][rows][:, keep])
            names += [self.ds.block_names[block][j] for j in keep]
        return (np.hstack(mats) if mats else np.zeros((len(rows), 0), np.float32)), names

    def _fold_block(self, fam: Any, runs: np.ndarray) -> np.ndarray:
        """Rows t = 1..T-1 of each run, run by run (as `rows` is ordered), of one fold-fitted family."""
        if getattr(fam, "constant_per_run", False):
            # start() + values() once per run, repeated over its prefixes: update() is a no-op for such a
            # family, so this is the streaming loop without the per-step calls (tested equal to it)
            fnames = list(fam.names)
            vals = [
                np.asarray(
                    bind_values(fam.name, fnames, fam.values(fam.start(self.contexts[i]))),
                    dtype=np.float32,
                )
                for i in runs
            ]
            reps = [max(len(self.ds.trajs[i].steps) - 1, 0) for i in runs]
            if not vals:
                return np.zeros((0, len(fam.names)), np.float32)
            return np.repeat(np.vstack(vals), reps, axis=0)
        fz = Featurizer([fam])
        return fz.prefix_matrix([self.ds.trajs[i] for i in runs], [self.contexts[i] for i in runs])

    def features(
        self, fitted: "Fitted | list[Any] | None", runs: np.ndarray, rows: np.ndarray
    ) -> tuple[np.ndarray, list[str]]:
        """Fold-free blocks (precomputed) then the fold's fitted families, in cfg order (``only_features``: the
        other columns masked to NaN)."""
        X, names = self._features(fitted, runs, rows)
        if self.cfg.only_features:
            off = [
                j
                for j, n in enumerate(names)
                if not any(fnmatch.fnmatch(n, p) for p in self.cfg.only_features)
            ]
            if off:
                X = np.array(
                    X, dtype=np.float32 if X.dtype == np.float32 else np.float64, copy=True
                )
                X[:, off] = np.nan
        return X, names

    def _features(
        self, fitted: "Fitted | list[Any] | None", runs: np.ndarray, rows: np.ndarray
    ) -> tuple[np.ndarray, list[str]]:
        fams = (
            fitted.fold_families
            if isinstance(fitted, Fitted)
            else ([] if fitted is None else list(fitted))
        )
        X, names = self._static(rows)
        for fam in fams:
            B = self._fold_block(fam, runs)
            if len(B) != len(rows):
                raise AssertionError(f"{fam.name}: {len(B)} rows for {len(rows)} prefixes")
            keep = self._kept(fam.names)
            X = np.hstack([X, B[:, keep]])
            names = names + [fam.names[j] for j in keep]
        return X, names

    def feature_names(self, fams: list[Any]) -> list[str]:
        """The columns ``features`` gives with the fold-fitted ``fams``, without reading a block."""
        names: list[str] = []
        for fam in fold_free(self.cfg.families):
            bn = self.ds.block_names[
                CURRENT_POOL if fam == "prior" and self.cfg.prior_pool == "current" else fam
            ]
            names += [bn[j] for j in self._kept(bn)]
        return names + [f.names[j] for f in fams for j in self._kept(f.names)]

    def proba(self, fitted: "Fitted", runs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``fitted``'s [P(failure), P(success)] of ``rows`` (a cluster's runner computes them on the workers)."""
        X, _ = self.features(fitted, runs, rows)
        return fitted.model.predict_proba(X)

    def rows_of(self, runs: np.ndarray, min_steps: int) -> np.ndarray:
        mask = np.isin(self.prefix_run, runs) & (self.prefix_T >= max(min_steps, 2))
        return np.flatnonzero(mask)

    def fit(self, exclude: frozenset) -> Fitted:
        if exclude in self._fits:
            return self._fits[exclude]
        if self.progress:
            self.progress(f"fit without {sorted(exclude)}")
        train_runs, long_runs, rows = self.fit_rows(exclude)
        text, fold_fams = self.fold_families(train_runs)
        X, names = self.features(fold_fams, long_runs, rows)
        pf = self.ds.prefixes.iloc[rows]
        model = self.new_model(exclude)
        model.fit(
            X,
            pf["y"].to_numpy(),
            sample_weight=pf["weight"].to_numpy(),
            groups=pf["task_id"].to_numpy(),
            feature_names=names,
        )
        f = Fitted(
            model,
            text,
            names,
            sorted(set(self.run_agent[train_runs])),
            len(long_runs),
            len(rows),
            rows,
            fold_fams,
        )
        self._fits[exclude] = f
        return f

    def fit_rows(self, exclude: frozenset) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What a fit without ``exclude`` trains on: its runs, those long enough to fit on, and their prefix rows."""
        train_runs = np.flatnonzero(~np.isin(self.run_agent, list(exclude)))
        long_runs = np.asarray(
            [i for i in train_runs if len(self.ds.trajs[i].steps) >= max(self.cfg.min_steps, 2)],
            dtype=np.int64,
        )
        return train_runs, long_runs, self.rows_of(long_runs, self.cfg.min_steps)

    def fold_families(self, train_runs: np.ndarray) -> tuple[Any, list[Any]]:
        """The fold-fitted families (and the text one, or None), fitted on the training runs only: the agents
        left out never reach a vocabulary or a table."""
        text = None
        fold_fams = []
        train_trajs = [self.ds.trajs[i] for i in train_runs]
        train_ctxs = [self.contexts[i] for i in train_runs]
        for name in fold_fitted(self.cfg.families):
            fam = build_family(
                name,
                text_params={**self.cfg.text_params, "cache": self.token_cache},
                seed=self.cfg.seed,
                peer_params=self.cfg.peer_params,
            )
            fam.fit(train_trajs, train_ctxs)
            fold_fams.append(fam)
            if name == "text":
                text = fam
        return text, fold_fams

    def new_model(self, exclude: frozenset) -> OutcomeModel:
        """The estimator the fit without ``exclude`` trains (a cluster's runner trains the shipped model,
        nothing left out, with lightgbm.dask: earlyeval.scale.train)."""
        return OutcomeModel(
            lgbm_params=self.cfg.lgbm_params,
            twin=self.cfg.twin,
            monotone=self.cfg.monotone,
            seed=self.cfg.seed,
            n_jobs=self.cfg.n_jobs,
        )

    def predict(self, exclude: frozenset, agent: str) -> RunSet:
        key = (exclude, agent)
        if key in self._preds:
            return self._preds[key]
        if agent not in exclude:
            raise ValueError(f"refusing to evaluate {agent} with a model trained on it")
        fitted = self.fit(exclude)
        runs = np.flatnonzero(self.run_agent == agent)
        rows = self.rows_of(runs, 2)
        X, names = self.features(fitted, runs, rows)
        # static: the first run of its agent
        ps, pf = split_proba(fitted.model.predict_proba(cold(X, names)))
        rs = runset(self.ds, runs, rows, ps, pf, self.cfg)
        if self.cfg.adapt == "em":
            rs, info = adapt_em(rs, fitted.model.base_rate_)
            self.adaptation[key] = info
        self._preds[key] = rs
        return rs

    def validation_sets(self, exclude: frozenset) -> dict[str, RunSet]:
        """Per training agent, its runs in the model's own task-grouped calibration split.

        The fallback for threshold selection when fewer than two training agents
        are large enough for an inner leave-one-agent-out (e.g. Toolathlon's two agents).
        """
        fitted = self.fit(exclude)
        rows = fitted.train_rows[fitted.model.val_index_]
        runs = np.unique(self.prefix_run[rows])
        out: dict[str, RunSet] = {}
        for agent in sorted(set(self.run_agent[runs])):
            ar = runs[self.run_agent[runs] == agent]
            arows = self.rows_of(ar, self.cfg.min_steps)
            X, names = self.features(fitted, ar, arows)
            ps, pf = split_proba(fitted.model.predict_proba(cold(X, names)))
            out[agent] = runset(self.ds, ar, arows, ps, pf, self.cfg)
        return out


def runset(
    ds: Dataset,
    runs: np.ndarray,
    rows: np.ndarray,
    ps: np.ndarray,
    pf: np.ndarray,
    cfg: EvalConfig,
) -> RunSet:
    """Group prefix predictions by run (prefix rows are stored run by run, t ascending), each prefix gated by
    ``cfg``'s success evidence rule and task-skip policy."""
    prow = ds.prefixes["run"].to_numpy()[rows]
    by_run: dict[int, list[int]] = {}
    for k, r in enumerate(prow):
        by_run.setdefault(int(r), []).append(k)
    ks = [by_run.get(int(r), []) for r in runs]
    gates = ds.gates(cfg.success_evidence)
    return runset_of_runs(
        [ds.trajs[r] for r in runs],
        [ps[k] for k in ks],
        [pf[k] for k in ks],
        cfg.success_evidence,
        cfg.task_skips,
        gates=[gates[r] for r in runs],
    )
