"""What the LOAO evaluation and the shipped model share: held-out groups, agent folds, B, the prefix-row
set-up, inner P(success), the cross-conformal fit on calibration agents and the tau selection on them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from earlyeval.config.budget_config import SMALL, BudgetConfig
from earlyeval.config.eval_config import EvalConfig
from earlyeval.evaluation.dataset import Dataset, HoldoutUnit
from earlyeval.evaluation.fold_runner import FoldRunner
from earlyeval.evaluation.holdout_groups import scaffold_of
from earlyeval.features import fold_free
from earlyeval.fitting.budget_conformal import CrossConformalQuantiles
from earlyeval.fitting.budget_stopping import make_stopset, select_tau
from earlyeval.fitting.budget_targets import (
    DimTargets,
    budget_features,
    dim_targets,
    free_opening_agents,
    run_slices,
)
from earlyeval.model.cqr import corrected_quantiles, to_z, within
from earlyeval.model.spend import DIMENSIONS, pace

Group = HoldoutUnit  # a held-out unit: one large agent, or all small agents together


def holdout_groups(ds: Dataset, cfg: EvalConfig) -> list[HoldoutUnit]:
    """The held-out units of ``evaluate.run_loao`` (``Dataset.holdout_units``: the one definition)."""
    return ds.holdout_units(cfg.holdout_min_runs)


def agent_folds(
    groups: list[Group],
    k: int,
    dims_of: dict[str, set[str]],
    scaffold_of: dict[str, str] | None = None,
) -> list[list[Group]]:
    """Deal groups into k folds so that every dimension's groups are spread as evenly as possible.

    With ``scaffold_of`` (agent -> scaffold; given when the outcome rule's ``inner_holdout`` is "scaffold"),
    groups sharing a scaffold are dealt together, so that the fold model scoring a calibration agent saw no
    agent of its scaffold: each calibration agent is as new to its model as a new scaffold is to the shipped
    one, the unit ``CrossConformalQuantiles`` treats as exchangeable.  When that leaves fewer than two
    clusters, groups are dealt alone (``evaluate.inner_exclusion``'s fallback)."""
    clusters = _scaffold_clusters(groups, scaffold_of) if scaffold_of else [[g] for g in groups]
    if len(clusters) < 2:
        clusters = [[g] for g in groups]
    folds: list[list[Group]] = [[] for _ in range(max(min(k, len(clusters)), 1))]
    counts = [dict.fromkeys(DIMENSIONS, 0) for _ in folds]
    dims_c = [set().union(*(dims_of[g.name] for g in c)) for c in clusters]
    order = sorted(
        range(len(clusters)),
        key=lambda i: (-len(dims_c[i]), -len(clusters[i]), clusters[i][0].name),
    )
    for i in order:
        c = clusters[i]
        f = min(
            range(len(folds)),
            key=lambda j: (sum(counts[j][d] for g in c for d in dims_of[g.name]), len(folds[j]), j),
        )
        folds[f].extend(c)
        for g in c:
            for d in dims_of[g.name]:
                counts[f][d] += 1
    return [sorted(f, key=lambda g: g.name) for f in folds if f]


def _scaffold_clusters(groups: list[Group], scaffold_of: dict[str, str]) -> list[list[Group]]:
    """Groups joined when any of their agents share a scaffold (connected components), in group order."""
    parent = list(range(len(groups)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first: dict[str, int] = {}
    for i, g in enumerate(groups):
        for a in g.agents:
            sc = scaffold_of.get(a, a)
            if sc in first:
                parent[root(i)] = root(first[sc])
            else:
                first[sc] = i
    out: dict[int, list[Group]] = {}
    for i, g in enumerate(groups):
        out.setdefault(root(i), []).append(g)
    return list(out.values())


def fold_scaffolds(ds: Dataset, cfg: EvalConfig) -> dict[str, str] | None:
    """The agent -> scaffold map ``agent_folds`` keeps together, under the outcome rule's ``inner_holdout``."""
    return scaffold_of(ds) if cfg.inner_holdout == "scaffold" else None


def calibration_folds(
    groups: list[Group],
    dims_of: dict[str, set[str]],
    scaffolds: dict[str, str] | None,
    bcfg: BudgetConfig,
) -> list[list[Group]]:
    """The calibration folds of ``run_budget`` and ``fit_shipped``: with scaffolds, one per scaffold (up to
    ``max_scaffold_folds``); else ``max_folds`` agent folds."""
    k = bcfg.max_scaffold_folds if scaffolds else bcfg.max_folds
    return agent_folds(groups, min(k, len(groups)), dims_of, scaffolds)


def dim_folds(
    su: "Setup", folds: list[list[Group]], d: str, bcfg: BudgetConfig
) -> list[list[Group]]:
    """The folds one dimension is calibrated on: the shared ones, unless its calibration groups (those whose
    usage in `d` is known) all fall in one of them -- every agent logging `d` shares one scaffold (cost on
    SWE-bench without gemini: the Moatless versions) -- when they are dealt alone, as agent folds
    (``evaluate.inner_exclusion``'s fallback when a scaffold leaves nothing to train on)."""
    known = [[g for g in f if d in su.dims_of[g.name]] for f in folds]
    if sum(bool(f) for f in known) >= 2:
        return folds
    groups = [g for f in known for g in f]
    return agent_folds(groups, min(bcfg.max_folds, len(groups)), su.dims_of)


def choose_budget(tg: DimTargets, q: float) -> float:
    """B = the q-quantile of run totals (runs with T >= 2 whose usage is known), rounded to 2 significant digits."""
    tot = tg.totals[tg.run_known]
    if len(tot) == 0:
        return float("nan")
    b = float(np.quantile(tot, q))
    if tg.dim == "steps":
        return float(np.ceil(b))
    return float(f"{b:.2g}") if b > 0 else b


def _unit(per_step: np.ndarray) -> float:
    """Typical spend of one step on the training agents: median, else mean, else 1."""
    for v in (np.median(per_step), np.mean(per_step)):
        if v > 0:
            return float(v)
    return 1.0


def _fit_weights(prow: np.ndarray, m: int) -> np.ndarray:
    """Weights of the evenly spaced training prefixes (at most m per run, summing to 1 per run)."""
    w = np.zeros(len(prow))
    for r, (a, b) in run_slices(prow).items():
        n = b - a
        idx = np.unique(np.round(np.linspace(0, n - 1, min(m, n))).astype(int))
        w[a + idx] = 1.0 / len(idx)
    return w


@dataclass
class Setup:
    """What run_budget and fit_shipped share: groups, targets, dimensions, B, and the prefix-row arrays."""

    groups: list[Group]
    targets: dict[str, DimTargets]
    dims_of: dict[str, set[str]]
    dims: list[str]
    budgets: dict[str, float]
    prow: np.ndarray
    tt: np.ndarray  # prefix t as float64
    run_agent: np.ndarray
    row_agent: np.ndarray
    row_group: np.ndarray
    y_run: np.ndarray
    T_run: np.ndarray
    slices: dict[int, tuple[int, int]]
    X_static: np.ndarray
    static_names: list[str]
    fit_w: np.ndarray
    run_w: np.ndarray

    def design(
        self, tg: DimTargets, rows: np.ndarray, unit: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
        """Features, pace and target z of prefix rows of one dimension."""
        rate = pace(tg.spent[rows], self.tt[rows], unit)
        Xb, bn = budget_features(tg, rows, self.tt[rows], unit)
        return (
            np.hstack([self.X_static[rows], Xb]),
            rate,
            to_z(tg.remaining[rows], rate),
            self.static_names + bn,
        )

    def row_fold(self, folds: list[list[Group]]) -> np.ndarray:
        fold_of = {a: k for k, f in enumerate(folds) for g in f for a in g.agents}
        return np.asarray([fold_of.get(a, -1) for a in self.row_agent])


def setup(ds: Dataset, cfg: EvalConfig, bcfg: BudgetConfig) -> Setup:
    groups = holdout_groups(ds, cfg)
    pf = ds.prefixes
    N = len(pf)
    prow = pf["run"].to_numpy()
    run_agent = np.asarray([t.agent for t in ds.trajs])
    row_agent = run_agent[prow] if N else np.zeros(0, dtype=str)
    free = free_opening_agents(ds, bcfg.free_opening_formats)
    targets = {d: dim_targets(ds, d, free) for d in DIMENSIONS}
    dims_of = {
        g.name: {d for d in DIMENSIONS if targets[d].run_known[np.isin(run_agent, g.agents)].any()}
        for g in groups
    }
    # a dimension is evaluated (and shipped) when, with any one group held out, min_groups groups remain to calibrate it
    dims = [
        d for d in DIMENSIONS if sum(d in dims_of[g.name] for g in groups) >= bcfg.min_groups + 1
    ]
    budgets = {d: choose_budget(targets[d], bcfg.budget_quantile) for d in dims}
    fams = fold_free(cfg.families)
    group_of = {a: g.name for g in groups for a in g.agents}
    return Setup(
        groups=groups,
        targets=targets,
        dims_of=dims_of,
        dims=dims,
        budgets=budgets,
        prow=prow,
        tt=pf["t"].to_numpy().astype(np.float64),
        run_agent=run_agent,
        row_agent=row_agent,
        row_group=np.asarray([group_of[a] for a in row_agent]) if N else np.zeros(0, dtype=str),
        y_run=np.asarray([int(t.outcome) for t in ds.trajs]),
        T_run=np.asarray([len(t.steps) for t in ds.trajs]),
        slices=run_slices(prow),
        X_static=np.hstack([ds.blocks[f] for f in fams]) if fams else np.zeros((N, 0), np.float32),
        static_names=[n for f in fams for n in ds.block_names[f]],
        fit_w=_fit_weights(prow, bcfg.max_prefixes_per_run),
        run_w=pf["weight"].to_numpy(),
    )


def fill_ps(runner: FoldRunner, su: Setup, arr: np.ndarray, exclude: frozenset, agent: str) -> None:
    """Write P(success) of `agent`'s prefix rows from the outcome model fitted without `exclude`."""
    rs = runner.predict(exclude, agent)
    for r, p in zip(np.flatnonzero(su.run_agent == agent), rs.p_s):
        if int(r) in su.slices:
            a, b = su.slices[int(r)]
            arr[a:b] = p


def inner_p_success(
    runner: FoldRunner, su: Setup, folds: list[list[Group]], held: frozenset
) -> tuple[np.ndarray, list[list[str]]]:
    """P(success) of every calibration agent from the outcome model fitted without its fold (and without `held`)."""
    p_in = np.full(len(su.prow), np.nan)
    exclusions = []
    for f in folds:
        ex = held | {a for g in f for a in g.agents}
        exclusions.append(sorted(ex))
        for g in f:
            for a in g.agents:
                fill_ps(runner, su, p_in, frozenset(ex), a)
    return p_in, exclusions


@dataclass
class CalFit:
    """One dimension's conformalized quantiles fitted on calibration rows, and their inner predictions."""

    unit: float
    names: list[str]
    rows: np.ndarray  # calibration prefix rows (training agents, usage known)
    runs: np.ndarray
    rate: np.ndarray
    z: np.ndarray
    sw: np.ndarray  # score weights
    fold: np.ndarray  # agent fold of each row
    ccq: CrossConformalQuantiles
    pw_in: np.ndarray  # P(remaining <= B - spent) from fold models + corrections without their fold


def fit_calibrated(
    su: Setup,
    tg: DimTargets,
    rows_tr: np.ndarray,
    row_fold: np.ndarray,
    n_folds: int,
    B: float,
    bcfg: BudgetConfig,
) -> CalFit:
    """CQR on agent folds (module docstring): the unit, the fold models, the corrections, the inner P(within B)."""
    prow = su.prow
    tr_runs = np.unique(prow[rows_tr])
    unit = 1.0 if tg.dim == "steps" else _unit(np.concatenate([tg.usage[r] for r in tr_runs]))
    X_tr, rate_tr, z_tr, names = su.design(tg, rows_tr, unit)
    row_group = su.row_group
    gsize = {
        g: len(np.unique(prow[rows_tr][row_group[rows_tr] == g]))
        for g in np.unique(row_group[rows_tr])
    }
    sw = su.run_w[rows_tr] / (
        np.asarray([gsize[g] for g in row_group[rows_tr]])
        if bcfg.score_weighting == "agent"
        else 1.0
    )
    ccq = CrossConformalQuantiles(
        bcfg.alphas,
        bcfg.levels,
        bcfg.lgbm_params,
        bcfg.seed,
        bcfg.n_jobs,
        n_folds,
        calibration=bcfg.calibration,
        agent_quantile=bcfg.agent_quantile,
    )
    ccq.fit(
        X_tr,
        z_tr,
        sample_weight=su.fit_w[rows_tr],
        groups=su.row_agent[rows_tr],
        fold=row_fold[rows_tr],
        score_weight=sw,
        units=prow[rows_tr],
        calibration_units=row_group[rows_tr],
        feature_names=names,
    )
    # inner predictions of the calibration agents (fold models, corrections without their fold)
    fold_tr = row_fold[rows_tr]
    q_in = np.full((len(rows_tr), len(bcfg.alphas)), np.nan)
    for k in range(n_folds):
        m = (fold_tr == k) & ~np.isnan(ccq.oof_[:, 0])
        if m.any():
            q_in[m] = corrected_quantiles(ccq.oof_[m], ccq.corrections_without(k), bcfg.alphas)
    has_in = ~np.isnan(q_in[:, 0])
    room_tr = B - tg.spent[rows_tr]
    pw_in = np.full(len(rows_tr), np.nan)
    pw_in[has_in] = within(q_in[has_in], bcfg.alphas, room_tr[has_in], rate_tr[has_in])
    return CalFit(unit, names, rows_tr, tr_runs, rate_tr, z_tr, sw, fold_tr, ccq, pw_in)


def select_on_calibration(
    su: Setup,
    tg: DimTargets,
    fit: CalFit,
    p_rows: np.ndarray,
    B: float,
    bcfg: BudgetConfig,
    lo: int,
) -> dict[str, Any]:
    """tau on the large calibration agents' runs (a 25-run group would make one false abort worth 4 pp of
    the constraint, as in evaluate.run_loao); `p_rows` is P(feasible) on the calibration rows (nan: none)."""
    rows_tr = fit.rows
    large_tr = su.row_group[rows_tr] != SMALL
    ss = make_stopset(
        tg,
        rows_tr,
        su.prow,
        p_rows,
        su.row_group[rows_tr],
        su.y_run,
        su.T_run,
        su.slices,
        require=~np.isnan(p_rows) & large_tr,
        budget=B,
    )
    return select_tau(ss, bcfg.taus, bcfg.max_cost_pp, lo)
