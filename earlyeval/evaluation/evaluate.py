"""Leave-one-agent-out evaluation with honest thresholds: every held-out agent (or the group of small ones) is
predicted by a model, vocabulary, calibration and thresholds fitted without its runs; thresholds come from an
inner leave-one-agent-out over the training agents (``inner_exclusion``).  A block fitted on the agent's own
labels is reported beside it as ``oracle``, never the headline (docs/architecture.md, layer 7).
"""

from __future__ import annotations

import fnmatch
import logging
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

from earlyeval.config.eval_config import TAU_GRID, EvalConfig
from earlyeval.config.prices import price_runs
from earlyeval.evaluation.adapt import adapt_em
from earlyeval.evaluation.blocks import (
    agent_block,
    baseline_blocks,
    dollars_block,
    failure_only_thresholds,
    model_at_steps_saved,
    oracle_frontier_saved,
    pooled_baselines,
    pooled_block,
    sum_dollars,
)
from earlyeval.evaluation.dataset import CURRENT_POOL, Dataset
from earlyeval.evaluation.guard import guard_config, guarded
from earlyeval.evaluation.pass_predict import cold, repredictor
from earlyeval.evaluation.pass_sim import pass_block, pass_pooled
from earlyeval.evaluation.warm_start import warm_pooled, warm_start_block
from earlyeval.features import Featurizer, bind_values, build_family, fold_fitted, fold_free
from earlyeval.features.known import check_feature_settings
from earlyeval.fitting.estimator import OutcomeModel
from earlyeval.fitting.metrics import RunSet, runset_of_runs, spearman
from earlyeval.fitting.risk_control import guarantee_check, guarantee_tally
from earlyeval.fitting.thresholds import choose_thresholds, live_thresholds, select_thresholds
from earlyeval.model.outcome import split_proba

log = logging.getLogger(__name__)

GRID = TAU_GRID  # the threshold grid (config.eval_config: one definition)


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


def scaffold_of(ds: Dataset) -> dict[str, str]:
    """Each agent's scaffold (catalog ``scaffold``; the agent's own name when the catalog gives none)."""
    out: dict[str, str] = {}
    for t in ds.trajs:
        out.setdefault(t.agent, str(t.meta.get("scaffold") or t.agent))
    return out


def inner_exclusion(ds: Dataset, held_out: frozenset, inner: frozenset, mode: str) -> frozenset:
    """Agents left out of the model that predicts the inner held-out agents ``inner``.

    ``mode`` "agent": the inner agents alone.  "scaffold": every agent sharing a scaffold with
    one of them too, so that an inner agent is as new to its model as a new scaffold is to the
    shipped one (with "agent", Moatless 0617 would be judged by a model trained on its twin 0609,
    and thresholds chosen on such easy inner predictions are too aggressive for a new agent).
    When the scaffold leaves no agent to train on (every agent shares it), "agent" applies."""
    if mode not in ("agent", "scaffold"):
        raise ValueError(f"inner_holdout must be 'agent' or 'scaffold', not {mode!r}")
    if mode == "agent":
        return held_out | inner
    sc = scaffold_of(ds)
    mates = {a for a in sc if sc[a] in {sc[b] for b in inner}}
    wide = held_out | inner | frozenset(mates)
    return wide if set(sc) - wide else held_out | inner


def inner_plan(
    ds: Dataset, cfg: EvalConfig, held_out: frozenset, large: list[str]
) -> tuple[list[tuple[frozenset, list[str]]], str]:
    """The inner fits ``inner_sets`` makes: (agents left out of the model, the inner agents it predicts), and
    the method's name; no pair means the training agents' validation split (one fit, without ``held_out``)."""
    remaining = [b for b in large if b not in held_out]
    k = cfg.inner_folds
    mode = cfg.inner_holdout
    suffix = "" if mode == "agent" else " (each inner agent's whole scaffold left out)"
    if 2 <= len(remaining) <= k:
        return [
            (inner_exclusion(ds, held_out, frozenset([b]), mode), [b]) for b in remaining
        ], "inner-loao" + suffix
    if len(remaining) > k:
        # many agents (tau2): leave-one-GROUP-of-agents-out, k groups dealt round-robin by size
        order = sorted(remaining, key=lambda b: (-ds.n_runs(b), b))
        groups = [frozenset(order[i::k]) for i in range(k)]
        return (
            [(inner_exclusion(ds, held_out, g, mode), sorted(g)) for g in groups],
            f"inner leave-{k}-groups-of-agents-out" + suffix,
        )
    return [], "training agents' task-grouped validation split"


def inner_sets(
    runner: FoldRunner, held_out: frozenset, large: list[str]
) -> tuple[dict[str, RunSet], str]:
    """Predictions of every other large agent from models that see neither it nor the held-out set
    (nor, with ``inner_holdout = "scaffold"``, any agent of its scaffold)."""
    plan, method = inner_plan(runner.ds, runner.cfg, held_out, large)
    if not plan:
        return runner.validation_sets(held_out), method
    return {b: runner.predict(ex, b) for ex, agents in plan for b in agents}, method


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


@dataclass
class LoaoResult:
    holdout: list[str]
    small: list[str]
    sets: dict[str, RunSet]  # held-out agent -> its predictions (from a model without it)
    thresholds: dict[str, dict[str, Any]]
    oracle_thresholds: dict[str, dict[str, Any]]
    loso: dict[str, Any]
    runner: FoldRunner
    # the other rule on the same inner predictions, reported beside the configured one
    alt_thresholds: dict[str, dict[str, Any]] = field(default_factory=dict)
    # with prior_guard: the task-level model's runner, and per held-out agent which model its fold ships
    runner_prior: FoldRunner | None = None
    model_choice: dict[str, dict[str, Any]] = field(default_factory=dict)
    # agent -> what predicted it
    folds: dict[str, tuple[FoldRunner, frozenset]] = field(default_factory=dict)
    # agent -> its fold's inner units' predictions (what its thresholds were chosen on), and the live pair
    inner: dict[str, dict[str, RunSet]] = field(default_factory=dict)
    live_thresholds: dict[str, dict[str, Any]] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict)  # derived pairs (task_skip_pair), made once


def other_rule(cfg: EvalConfig) -> EvalConfig:
    """``cfg`` with the other threshold rule (agent-quantile <-> worst-case), for the report's comparison."""
    return replace(
        cfg,
        threshold_rule="worst-case" if cfg.threshold_rule == "agent-quantile" else "agent-quantile",
    )


def in_process_runner(
    ds: Dataset, cfg: EvalConfig, progress: Callable[[str], None] | None = None, **_plan: Any
) -> FoldRunner:
    """A FoldRunner fitting in this process (``run_loao``'s default ``runners``; ``InProcess.runners``)."""
    return FoldRunner(ds, cfg, progress)


def agent_dates(ds: Dataset) -> dict[str, str]:
    """Each agent's date: the earliest date of its runs ("" when none is dated)."""
    out: dict[str, str] = {}
    for t in ds.trajs:
        d = str(t.meta.get("date") or "")
        if d and (t.agent not in out or d < out[t.agent] or not out[t.agent]):
            out[t.agent] = d
        out.setdefault(t.agent, d)
    return out


MIN_OLDER_AGENTS = (
    3  # the forward protocol holds out an agent only with at least this many older agents
)


def forward_groups(
    ds: Dataset, large: list[str], small: list[str]
) -> list[tuple[frozenset, list[str]]]:
    """The forward protocol's held-out units: each agent (the small ones one by one too) with every agent dated on
    or after it left out, so its model (and thresholds) know only the agents dated strictly before it; kept only
    with ``MIN_OLDER_AGENTS`` older large agents (what a user has when a new agent arrives)."""
    dates = agent_dates(ds)
    out = []
    for a in [*large, *small]:
        if not dates.get(a):
            continue
        newer = frozenset(b for b in dates if not dates[b] or dates[b] >= dates[a])
        if len([b for b in large if b not in newer]) >= MIN_OLDER_AGENTS:
            out.append((newer | {a}, [a]))
    return out


def run_loao(
    ds: Dataset,
    cfg: EvalConfig,
    progress: Callable[[str], None] | None = None,
    with_loso: bool = True,
    with_small: bool = True,
    runners: Callable[..., FoldRunner] = in_process_runner,
    forward: bool = False,
) -> LoaoResult:
    """Every held-out unit predicted by a model without it, thresholds by ``cfg``'s rule over inner agents
    (the leave-one-scaffold-out protocol is ``loso.run_loso`` on the same runner: ``pipeline.with_loso``).

    ``runners(ds, cfg, progress, with_loso=, with_small=)``: the FoldRunner to use (a cluster's, whose fits
    ran as parallel tasks: earlyeval.scale.folds; ``with_loso`` says whether leave-one-scaffold-out follows on
    it, so that its fits are planned too); default a FoldRunner fitting in this process."""

    def make(c: EvalConfig) -> FoldRunner:
        return runners(ds, c, progress, with_loso=with_loso, with_small=with_small)

    runner = make(cfg)
    fallback = make(guard_config(cfg)) if cfg.prior_guard else None
    units = ds.holdout_units(cfg.holdout_min_runs)
    pool = [
        u.agents[0] for u in units if not u.small
    ]  # the large agents: every fold's inner units come from them
    small = [a for u in units if u.small for a in u.agents] if with_small else []
    groups = [(frozenset([a]), [a]) for a in pool] + ([(frozenset(small), small)] if small else [])
    if forward:  # each agent by the agents dated strictly before it (``forward_groups``)
        groups = forward_groups(ds, pool, small)
    held = {a for _, g in groups for a in g}
    res = LoaoResult(
        [a for a in pool if a in held], [a for a in small if a in held], {}, {}, {}, {}, runner
    )
    res.runner_prior = fallback
    for ex, agents in groups:
        _fold(res, cfg, runner, fallback, ex, agents, pool)
    return res


def _fold(
    res: LoaoResult,
    cfg: EvalConfig,
    runner: FoldRunner,
    fallback: FoldRunner | None,
    ex: frozenset,
    agents: list[str],
    pool: list[str],
) -> None:
    """One held-out unit of ``run_loao``: its (guarded) model, its inner units among ``pool`` and every threshold
    pair chosen on them (the rule's, the other rule's, the live default's), its agents' predictions."""
    methods: dict[str, str] = {}

    def inner_of(r: FoldRunner) -> dict[str, RunSet]:
        sets_, methods["m"] = inner_sets(r, ex, pool)
        return sets_

    r, inner, ch = guarded(runner, fallback, inner_of)
    th = choose_thresholds(inner, cfg, method=methods["m"])
    th_alt = choose_thresholds(inner, other_rule(cfg), method=methods["m"])
    th_live = live_thresholds(inner, cfg, method=methods["m"])
    for a in agents:
        res.sets[a], res.folds[a], res.inner[a] = r.predict(ex, a), (r, ex), inner
        res.thresholds[a], res.alt_thresholds[a], res.live_thresholds[a] = th, th_alt, th_live
        if ch:
            res.model_choice[a] = ch
        res.oracle_thresholds[a] = select_thresholds(
            {a: res.sets[a]}, cfg, method="oracle: held-out labels"
        )


def _agent_report(
    res: LoaoResult,
    a: str,
    cfg: EvalConfig,
    alt_cfg: EvalConfig,
    costs: dict[str, Any],
    light: bool,
    pass_features: bool,
) -> dict[str, Any]:
    """One held-out agent's block of loao.json: its fold's rule, the failure-only, other-rule and oracle
    variants, the simulated pass and (unless ``light``) baselines and warm start; what its fold trained on."""
    rs = res.sets[a]
    th = res.thresholds[a]
    base_th = (th["success"], th["failure"])
    blk = agent_block(rs, th, cfg)
    blk["guarantee_check"] = guarantee_check(rs, th, cfg.min_halt_step)
    fold = res.folds.get(a)
    blk["pass"] = pass_block(
        rs,
        base_th,
        cfg.min_halt_step,
        costs,
        repredict=repredictor(*fold, a) if fold and pass_features else None,
    )
    blk["small_n"] = a in res.small
    blk["dollars"] = dollars_block(rs, costs, th, cfg)
    blk.update(mode_blocks(res, a, cfg, costs))
    if a in res.alt_thresholds:
        blk["other_rule"] = agent_block(rs, res.alt_thresholds[a], alt_cfg)
    orc = agent_block(rs, res.oracle_thresholds[a], cfg)
    orc["note"] = "thresholds picked on this agent's own labels: an upper bound, never the headline"
    blk["oracle"] = orc
    blk["oracle_frontier_steps_saved"] = oracle_frontier_saved(rs, blk.get("halted_accuracy"), cfg)
    if not light:
        base = baseline_blocks(rs)
        for name, b in base.items():
            b["model_at_equal_steps_saved"] = model_at_steps_saved(
                rs, b.get("steps_saved") or 0.0, cfg
            )
        blk["baselines"] = base
        blk["warm_start"] = {
            f"{sh:.0%}": warm_start_block(rs, cfg, sh, base_th) for sh in cfg.warm_shares
        }
        # issue 14's checking rule (may only raise), beside the certifying default for comparison
        blk["warm_start_check"] = {
            f"{sh:.0%}": warm_start_block(rs, cfg, sh, base_th, rule="check")
            for sh in cfg.warm_shares
        }
    ex = res.folds[a][1] if a in res.folds else frozenset([a])
    ad = res.runner.adaptation.get((ex, a))
    if ad:
        blk["adaptation"] = ad
    fitted = res.runner.fit(ex)
    blk["trained_on"] = {
        "agents": fitted.train_agents,
        "runs": fitted.n_train_runs,
        "prefixes": fitted.n_train_prefixes,
    }
    if a in res.model_choice:
        blk["model_choice"] = res.model_choice[a]
    return blk


def live_pair(res: LoaoResult, a: str) -> dict[str, Any]:
    """The live default's thresholds of ``a``'s fold (chosen for halt_on: failure), or the benchmark pair with
    success off for a result made without them."""
    return res.live_thresholds.get(a) or failure_only_thresholds(res.thresholds[a])


def task_skip_pair(res: LoaoResult, a: str, cfg: EvalConfig) -> dict[str, Any]:
    """``a``'s fold's thresholds chosen, by the same rule on the same inner units, with task skips allowed."""
    key = f"task_skips:{a}"
    if key not in res.cache:
        inner = {b: rs.with_task_skips(True) for b, rs in res.inner.get(a, {}).items()}
        res.cache[key] = choose_thresholds(inner, cfg, method="inner units, task skips on")
    return res.cache[key]


def mode_blocks(res: LoaoResult, a: str, cfg: EvalConfig, costs: dict[str, Any]) -> dict[str, Any]:
    """The live default (failure only, its own thresholds and guarantee) and the task-skip policy (on, its own
    thresholds), each apart from the benchmark-mode headline; the task-skip block's savings and shift are
    what the policy adds, never part of the headline."""
    rs = res.sets[a]
    live = live_pair(res, a)
    fo = agent_block(rs, live, cfg)
    fo["dollars"] = dollars_block(rs, costs, live, cfg)
    out = {"failure_only": fo}
    if res.inner.get(a):
        skip = task_skip_pair(res, a, cfg)
        out["task_skips"] = agent_block(rs.with_task_skips(True), skip, cfg)
    return out


def _pooled_report(
    res: LoaoResult, cfg: EvalConfig, alt_cfg: EvalConfig, agents_out: dict[str, Any]
) -> dict[str, Any]:
    """The large held-out agents' runs pooled, each under its own fold's thresholds (and the variants')."""
    items = [(res.sets[a], res.thresholds[a]) for a in res.holdout]
    pooled = pooled_block(items, cfg)
    pooled["failure_only"] = pooled_block(
        [(res.sets[a], live_pair(res, a)) for a in res.holdout], cfg
    )
    if all(res.inner.get(a) for a in res.holdout):
        pooled["task_skips"] = pooled_block(
            [(res.sets[a].with_task_skips(True), task_skip_pair(res, a, cfg)) for a in res.holdout],
            cfg,
        )
    pooled["dollars"] = sum_dollars([agents_out[a]["dollars"] for a in res.holdout])
    pooled["failure_only"]["dollars"] = sum_dollars(
        [agents_out[a]["failure_only"]["dollars"] for a in res.holdout]
    )
    if all(a in res.alt_thresholds for a in res.holdout):
        pooled["other_rule"] = pooled_block(
            [(res.sets[a], res.alt_thresholds[a]) for a in res.holdout], alt_cfg
        )
    steps = {a: float(res.sets[a].T.sum()) for a in res.holdout}
    orc_saved = sum(agents_out[a]["oracle_frontier_steps_saved"] * steps[a] for a in res.holdout)
    rule_saved = sum((agents_out[a].get("steps_saved") or 0.0) * steps[a] for a in res.holdout)
    pooled["share_of_oracle_savings"] = rule_saved / orc_saved if orc_saved > 0 else None
    pooled["guarantee_held"] = guarantee_tally(
        [agents_out[a].get("guarantee_check") for a in res.holdout]
    )
    return pooled


def _threshold_detail(cfg: EvalConfig) -> str:
    """How the thresholds were chosen, in words (loao.json's ``threshold_selection_detail``)."""
    return (
        "for each held-out agent A: every other large agent B is predicted by a model fitted without A and B"
        + (" and every other agent of B's scaffold" if cfg.inner_holdout == "scaffold" else "")
        + "; "
        + (
            f"rule agent-quantile: per side, tau is the (k+1)-th most cautious of the B's boldest thresholds whose share of "
            f"runs halted wrongly on that side is <= {cfg.risk_alpha:g} (k from delta {cfg.risk_delta:g}; the guarantee per "
            "held-out agent is in its threshold_selection block, how it held in guarantee_check)"
            if cfg.threshold_rule == "agent-quantile"
            else "rule worst-case: (tau_s, tau_f) maximize the steps saved over those predictions subject to "
            + (
                "outcome accuracy"
                if cfg.constraint == "accuracy"
                else "success recall and failure recall (accuracy whatever the resolve rate)"
            )
            + f" >= {cfg.target_accuracy} on every B"
        )
        + (
            ". Prior guard: each fold ships the model of the task-level features instead when it ranks the B better"
            if cfg.prior_guard
            else ""
        )
        + ". Small runs are held out together and use the same rule."
    )


def loao_report(
    ds: Dataset, cfg: EvalConfig, res: LoaoResult, light: bool = False, pass_features: bool = True
) -> dict[str, Any]:
    """The loao.json document; ``light`` skips baselines and warm start (ablation rows need neither);
    ``pass_features=False`` simulates the passes on the static predictions (cold; the ablation rows)."""
    # counted per block
    costs = price_runs([t for t in ds.trajs if t.agent in res.sets], ds.catalog, unpriced="skip")
    alt_cfg = other_rule(cfg)
    agents_out: dict[str, Any] = {
        a: _agent_report(res, a, cfg, alt_cfg, costs, light, pass_features) for a in res.sets
    }
    pooled = _pooled_report(res, cfg, alt_cfg, agents_out)
    oracle_pooled = pooled_block(
        [(res.sets[a], res.oracle_thresholds[a]) for a in res.holdout], cfg
    )
    # baselines pooled over the held-out agents
    baselines = {} if light else pooled_baselines(res.sets, res.holdout, agents_out)
    pred_rates = [agents_out[a]["predicted_resolve_rate"] for a in res.holdout]
    true_rates = [agents_out[a]["resolve_rate"] for a in res.holdout]
    mean_ps = [agents_out[a]["mean_p_success"] for a in res.holdout]
    fits = list(res.runner._fits.values())
    return {
        "bench": ds.bench,
        "version": 1,
        "config": cfg.to_dict(),
        "threshold_selection": cfg.threshold_selection,
        "threshold_selection_detail": _threshold_detail(cfg),
        "holdout_agents": res.holdout,
        "small_agents": res.small,
        "agents": agents_out,
        "pooled": pooled,
        "oracle_pooled": {
            **oracle_pooled,
            "note": "thresholds picked per agent on its own labels: upper bound only",
        },
        "spearman": spearman(pred_rates, true_rates),
        "spearman_mean_p_success": spearman(mean_ps, true_rates),
        "mean_abs_resolve_rate_shift_pp": float(
            np.mean([abs(agents_out[a]["resolve_rate_shift_pp"]) for a in res.holdout])
        )
        if res.holdout
        else None,
        "baselines": baselines,
        "leave_one_scaffold_out": res.loso,
        "models": {
            "twin": cfg.twin,
            "fits": len(fits),
            "mirror_gap": float(
                max(
                    (
                        np.max(np.abs(b - (1 - a)))
                        for rs in res.sets.values()
                        for a, b in zip(rs.p_s, rs.p_f)
                        if len(a)
                    ),
                    default=0.0,
                )
            ),
            "top_features": fits[0].model.feature_importance(15) if fits else [],
        },
        "pass_pooled": pass_pooled(agents_out, res.sets, res.holdout),
        "warm_start_pooled": {} if light else warm_pooled(agents_out, res.holdout),
        "warm_start_check_pooled": {}
        if light
        else warm_pooled(agents_out, res.holdout, "warm_start_check"),
    }
