"""Budget awareness (ARCHITECTURE §5): remaining-budget intervals, feasibility under a
budget B, early stop on "impossible", measured leave-one-agent-out.

Targets.  For a run with per-step usage u_0..u_{T-1} in a dimension (steps: all 1;
output/input tokens; cost in USD) the prefix t (steps 0..t-1 seen, 1 <= t < T) has
``spent = sum(u[:t])`` and ``remaining = sum(u[t:])``.  A run whose usage is unknown
(None) on any step is left out of that dimension, never counted as 0.  One
documented exception: the opening turn of a tau2 dialogue is the scaffold's
hard-coded greeting (no LLM call, no tool call, no usage at all; see
``earlyeval.ingest.tau2``); it costs nothing, so it counts as 0 when every other
step is metered.  Only formats listed in ``BudgetConfig.free_opening_formats``.
A run whose usage is 0 on every step is unknown too (a counter that never
counted: tau2's gemma-3-27b-it logs completion_tokens = 0 on every turn that
wrote text), the rule the tau2 ingestor already applies to an all-zero cost.

Estimator.  LightGBM quantile regression (alphas 0.05/0.1/0.5/0.9/0.95) of
``z = log1p(remaining / rate)``, where ``rate = (spent + unit) / (t + 1)`` is the
run's own spend per step so far shrunk towards ``unit`` (the training agents'
median spend per step).  The target is then "remaining budget in units of this
run's own pace", which carries across agents whose token scales differ tenfold.
Quantile crossing is fixed by sorting.  Features: the outcome model's fold-free
blocks (Dataset.blocks) plus, for token/cost dimensions, spend so far, pace and
last-step spend relative to pace (computed here only).

Conformal calibration (CQR, Romano et al. 2019) on calibration AGENTS.  For a
held-out agent A, the other agents (the small runs as one group, as in
``evaluate.run_loao``) are dealt into K <= ``max_folds`` agent folds.  Fold model k
is fitted on the training agents outside fold k and scores the agents of fold k:
``s = max(q_lo - z, z - q_hi)``.  The correction Q_c is the weighted
``c (1 + 1/n)`` quantile of all those scores (n = calibration runs); A's
prediction is the mean of the fold models' quantiles, widened by Q_c.  A never
reaches a fit, a score or a threshold of its own evaluation.
Score weights: a prefix weighs 1/(T-1) and each calibration agent weighs the same
in total (``score_weighting="agent"``), because the unit we generalize to is a new
agent: with run weights the largest calibration agent would set Q alone.
Exact finite-sample validity at the agent level would need a (1 + 1/K) inflation
with K calibration agents (the maximum score for K < 10); we use the run-level
inflation and measure coverage on every held-out agent instead.

Feasibility.  A run is feasible iff it succeeds and its total <= B.  At prefix t,
``P(feasible) = P(success) * P(remaining <= B - spent)``; P(success) is the outcome
model fitted without A (``FoldRunner.predict``), the second factor the
conformalized distribution: the five corrected quantiles, sorted, linearly
interpolated in z (linear tails).  The two factors are treated as independent
(they are not: failing runs tend to be long), which the report's F1s measure.
Early stop: halt at the first t with P(feasible) < tau; tau maximizes the budget
saved on infeasible runs of the large calibration agents (inner predictions,
without A; small agents are left out of threshold selection as in
``evaluate.run_loao``) subject to a mean success-rate cost <= ``max_cost_pp`` over
them.  Costs and savings are counted under the budget (``StopSet``): a run that
would overrun B is stopped at B anyway, so only feasible runs can be lost.

B is a scenario parameter fixed per benchmark and dimension (a quantile of the
run totals), the same in every fold so that feasibility labels and pooled
numbers are comparable; it is not fitted to anything.

Online re-conformalization (``budget_online``, reported beside the label-free numbers under
``online``, never replacing them): the held-out agent's runs finish in a seeded random order and
run i's correction is recomputed from the realized budgets (no outcome labels) of that agent's
runs finished before i, once >= 20 have finished (the calibration agents' correction before).

Shipping.  ``fit_shipped`` is the same procedure with no agent held out (every
agent group a calibration group; the same folds, corrections, B and tau rule,
through the same functions ``run_budget`` calls: ``_fit_calibrated``,
``_inner_p_success``, ``_select_on_calibration``); ``earlyeval train`` stores it
as ``extra_budget.json`` and the Monitor evaluates it live (``budget_live``).
The spend features have one implementation, ``spend_features``, called on the
batch prefix table here and on the streaming spend (``SpendTracker``) there.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import lightgbm as lgb
import numpy as np

from .dataset import Dataset
from .features import fold_free
from .evaluate import EvalConfig, FoldRunner
from .metrics import auroc, class_f1, interval_coverage, interval_width, macro_f1, weighted_quantile
from .trajectory import Step, Trajectory

log = logging.getLogger(__name__)

DIMENSIONS: tuple[str, ...] = ("steps", "output_tokens", "input_tokens", "cost_usd")
ALPHAS: tuple[float, ...] = (0.05, 0.1, 0.5, 0.9, 0.95)
LEVELS: tuple[float, ...] = (0.8, 0.9)
BUDGET_LGBM: dict[str, Any] = {  # 40 x 0.2: same held-out pinball loss as 100 x 0.1 on tau2, 3x faster
    "n_estimators": 40,
    "learning_rate": 0.2,
    "num_leaves": 15,
    "min_child_samples": 40,
    "colsample_bytree": 0.8,
    "reg_lambda": 1.0,
    "max_bin": 63,
}
SMALL = "small-runs"  # name of the group of small agents held out together


@dataclass
class BudgetConfig:
    """Settings of the budget evaluation; defaults are the ones in the report."""

    alphas: tuple = ALPHAS
    levels: tuple = LEVELS
    lgbm_params: dict[str, Any] = field(default_factory=lambda: dict(BUDGET_LGBM))
    max_prefixes_per_run: int = 8  # evenly spaced training prefixes per run (weights stay 1/run)
    max_folds: int = 3
    score_weighting: str = "agent"  # agent | run
    budget_quantile: float = 0.75  # B = this quantile of run totals (per dimension)
    feasible_threshold: float = 0.5
    max_cost_pp: float = 2.0
    taus: tuple = tuple(np.round(np.arange(0.0, 0.605, 0.02), 2).tolist())
    free_opening_formats: tuple = ("tau2",)
    min_groups: int = 2  # a dimension needs this many agent groups to be calibrated honestly
    seed: int = 0
    n_jobs: int = 1  # LightGBM threads per booster: 2 threads on 2 busy cores is 10x slower than 1
    n_workers: int = 2  # held-out groups evaluated side by side (threads)
    n_example_runs: int = 4

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["taus"] = list(self.taus)
        return d


# ======================================================================= targets

def _unmetered_opening(step: Step) -> bool:
    return not step.actions and step.input_tokens is None and step.output_tokens is None and step.cost_usd is None


def run_usage(traj: Trajectory, dim: str, free_opening: bool = False) -> np.ndarray | None:
    """Per-step usage of one run in `dim`, or None when any step is unknown (never 0 for unknown)."""
    if dim == "steps":
        return np.ones(len(traj.steps))
    vals = [getattr(s, dim) for s in traj.steps]
    if free_opening and len(vals) > 1 and vals[0] is None and _unmetered_opening(traj.steps[0]):
        vals[0] = 0.0  # hard-coded greeting: no LLM call was made
    if not vals or any(v is None for v in vals):
        return None
    u = np.asarray(vals, dtype=np.float64)
    if not np.any(u > 0):
        return None  # a counter that never counted (e.g. completion_tokens 0 on every turn that wrote text)
    return u


@dataclass
class DimTargets:
    """Budget targets of one dimension, aligned with ``Dataset.prefixes`` rows."""

    dim: str
    run_known: np.ndarray  # (R,) usage known on every step
    totals: np.ndarray  # (R,) total usage, nan when unknown
    usage: list[np.ndarray | None]
    spent: np.ndarray  # (N,) usage of steps 0..t-1, nan when unknown
    last: np.ndarray  # (N,) usage of step t-1
    remaining: np.ndarray  # (N,) usage of steps t..T-1
    row_known: np.ndarray  # (N,)
    free_opening_runs: int = 0

    def excluded_by_agent(self, ds: Dataset) -> dict[str, int]:
        out: dict[str, int] = {}
        for i, t in enumerate(ds.trajs):
            if not self.run_known[i]:
                out[t.agent] = out.get(t.agent, 0) + 1
        return out


def free_opening_agents(ds: Dataset, formats: tuple) -> set[str]:
    return {r.agent for r in ds.catalog.runs if r.format in set(formats)}


def dim_targets(ds: Dataset, dim: str, free_agents: set[str] | None = None) -> DimTargets:
    free_agents = free_agents or set()
    R, N = len(ds.trajs), len(ds.prefixes)
    prow = ds.prefixes["run"].to_numpy()
    tt = ds.prefixes["t"].to_numpy()
    usage: list[np.ndarray | None] = []
    known = np.zeros(R, dtype=bool)
    totals = np.full(R, np.nan)
    n_free = 0
    for i, tr in enumerate(ds.trajs):
        u = run_usage(tr, dim, tr.agent in free_agents)
        usage.append(u)
        if u is not None:
            known[i] = True
            totals[i] = float(u.sum())
            if dim != "steps" and tr.steps and getattr(tr.steps[0], dim) is None:
                n_free += 1
    spent = np.full(N, np.nan)
    last = np.full(N, np.nan)
    rem = np.full(N, np.nan)
    for r, (a, b) in _run_slices(prow).items():
        u = usage[r]
        if u is None:
            continue
        cum = np.cumsum(u)
        t = tt[a:b]
        spent[a:b] = cum[t - 1]
        last[a:b] = u[t - 1]
        rem[a:b] = cum[-1] - cum[t - 1]
    return DimTargets(dim, known, totals, usage, spent, last, rem, known[prow] if N else np.zeros(0, bool), n_free)


def _run_slices(prow: np.ndarray) -> dict[int, tuple[int, int]]:
    """Row range of every run in the prefix table (rows are stored run by run)."""
    if len(prow) == 0:
        return {}
    starts = np.flatnonzero(np.r_[True, prow[1:] != prow[:-1]])
    ends = np.r_[starts[1:], len(prow)]
    return {int(prow[s]): (int(s), int(e)) for s, e in zip(starts, ends)}


def pace(spent: np.ndarray, t: np.ndarray, unit: float) -> np.ndarray:
    """Spend per step so far, shrunk towards `unit` by one pseudo-step (never 0)."""
    return (spent + unit) / (t + 1.0)


def spend_features(spent: np.ndarray, last: np.ndarray, t: Any, unit: Any) -> np.ndarray:
    """(n, 3) float32: log1p(spent / unit), log(pace / unit), log1p(last / pace).

    The ONE implementation of the budget features, called by the batch path
    (``budget_features``: n prefixes of one dimension) and by the streaming one
    (``budget_live.LiveBudget``: one prefix, n dimensions, `unit` per dimension).
    Every operation is elementwise, so a row gets the same float32 values
    whichever way the rows are stacked."""
    rate = pace(spent, t, unit)
    out = np.empty((len(spent), 3), dtype=np.float32)  # assigning float64 columns rounds as astype(float32) does
    out[:, 0] = np.log1p(spent / unit)
    out[:, 1] = np.log(rate / unit)
    out[:, 2] = np.log1p(last / rate)
    return out


def spend_feature_names(dim: str) -> list[str]:
    """Names of `spend_features` for a token/cost dimension (steps has none: its spend is t)."""
    return [] if dim == "steps" else [f"budget_{dim}_spent", f"budget_{dim}_pace", f"budget_{dim}_last_rel"]


def budget_features(tg: DimTargets, rows: np.ndarray, t: np.ndarray, unit: float) -> tuple[np.ndarray, list[str]]:
    """Spend so far, pace and last-step spend relative to pace (token/cost dims only)."""
    if tg.dim == "steps":
        return np.zeros((len(rows), 0), np.float32), []
    return spend_features(tg.spent[rows], tg.last[rows], t, unit), spend_feature_names(tg.dim)


class SpendTracker:
    """Streaming spend per dimension for one run: the prefix-level twin of ``run_usage`` + ``dim_targets``.

    After ``update`` with steps 0..t-1, ``spent(i)``/``last(i)`` equal ``DimTargets.spent``/``.last``
    at prefix t (same float64 additions, in the same order as ``np.cumsum``), and ``known(i)`` says
    whether the usage seen so far is known.  The rules are ``run_usage``'s, restricted to what a
    prefix shows: a dimension with an unknown (None) step stays unknown for the rest of the run;
    the unmetered opening turn counts 0 when ``free_opening``; a counter that has only ever said 0
    is unknown until it counts (``run_usage`` drops a run whose counter never counts).  Two cases
    only the finished run reveals differ from the batch: a prefix before a later unknown step
    (batch: the whole run is excluded; here: known so far), and a prefix whose metered steps all
    said 0 in a run that counts later (batch: known; here: unknown until the first count).  O(1)
    per step."""

    __slots__ = ("counted_", "dims", "free_opening", "last_", "metered_", "spent_", "t", "unknown_")

    def __init__(self, dims: tuple[str, ...] | list[str], free_opening: bool = False):
        self.dims = tuple(dims)
        self.free_opening = bool(free_opening)
        self.reset()

    def reset(self) -> None:
        n = len(self.dims)
        self.t = 0
        self.spent_ = [0.0] * n
        self.last_ = [float("nan")] * n
        self.unknown_ = [False] * n
        self.counted_ = [False] * n
        self.metered_ = [0] * n

    def update(self, step: Step) -> None:
        greeting = self.t == 0 and self.free_opening and _unmetered_opening(step)
        for i, d in enumerate(self.dims):
            if d == "steps":
                v = 1.0
            else:
                raw = getattr(step, d)
                if raw is None:
                    if not greeting:
                        self.unknown_[i] = True
                        continue
                    v = 0.0  # hard-coded greeting: no LLM call was made (not a metered step)
                else:
                    v = float(raw)
                    self.metered_[i] += 1
                    if v > 0:
                        self.counted_[i] = True
            self.spent_[i] += v
            self.last_[i] = v
        self.t += 1

    def known(self, i: int) -> bool:
        if self.unknown_[i] or self.t == 0:
            return False
        return self.dims[i] == "steps" or self.counted_[i] or self.metered_[i] == 0

    def spent(self, i: int) -> float:
        return self.spent_[i]

    def last(self, i: int) -> float:
        return self.last_[i]


def to_z(remaining: np.ndarray, rate: np.ndarray) -> np.ndarray:
    return np.log1p(np.maximum(remaining, 0.0) / rate)


def from_z(z: np.ndarray, rate: np.ndarray) -> np.ndarray:
    return np.maximum(np.expm1(np.maximum(z, 0.0)), 0.0) * (rate if np.ndim(z) == 1 else rate[:, None])


# ================================================================== estimators

def fix_crossing(q: np.ndarray) -> np.ndarray:
    """Sort quantile predictions along the last axis (Chernozhukov et al.'s rearrangement)."""
    return np.sort(q, axis=-1)


class QuantileRegressor:
    """One LightGBM quantile booster per alpha, predictions sorted so they never cross.

    Serializable as JSON + LightGBM model text (``get_state``/``from_state``).
    ``fit_agents_`` records which agents' rows it was fitted on (leakage audits)."""

    def __init__(self, alphas: tuple = ALPHAS, lgbm_params: dict[str, Any] | None = None, seed: int = 0, n_jobs: int = 1):
        self.alphas = tuple(float(a) for a in alphas)
        self.lgbm_params = dict(BUDGET_LGBM if lgbm_params is None else lgbm_params)
        self.seed = seed
        self.n_jobs = n_jobs

    def _params(self, alpha: float) -> dict[str, Any]:
        p = dict(self.lgbm_params)
        return {
            "objective": "quantile", "alpha": alpha, "learning_rate": p.get("learning_rate", 0.1),
            "num_leaves": p.get("num_leaves", 15), "min_data_in_leaf": p.get("min_child_samples", 40),
            "feature_fraction": p.get("colsample_bytree", 1.0), "lambda_l2": p.get("reg_lambda", 0.0),
            "max_bin": p.get("max_bin", 255), "seed": self.seed, "deterministic": True, "force_row_wise": True,
            "num_threads": self.n_jobs, "verbose": -1,
        }

    def fit(self, X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None = None,
            agents: np.ndarray | None = None, feature_names: list[str] | None = None) -> "QuantileRegressor":
        self.fit_agents_ = sorted(set(agents.tolist())) if agents is not None else []
        self.feature_names_ = list(feature_names) if feature_names else [f"f{i}" for i in range(X.shape[1])]
        self.n_rows_ = int(len(y))
        data = lgb.Dataset(X, label=y, weight=sample_weight, params={"max_bin": self.lgbm_params.get("max_bin", 255), "verbose": -1},
                           free_raw_data=False)
        n = int(self.lgbm_params.get("n_estimators", 100))
        self.boosters_ = [lgb.train(self._params(a), data, num_boost_round=n) for a in self.alphas]
        return self

    def predict_raw(self, X: np.ndarray) -> np.ndarray:
        """Per-alpha predictions as the boosters give them (may cross)."""
        if len(X) == 0:
            return np.zeros((0, len(self.alphas)))
        return np.column_stack([b.predict(X, num_threads=self.n_jobs) for b in self.boosters_])

    def predict(self, X: np.ndarray) -> np.ndarray:
        return fix_crossing(self.predict_raw(X))

    def get_state(self) -> dict[str, Any]:
        return {"alphas": list(self.alphas), "lgbm_params": self.lgbm_params, "seed": self.seed,
                "feature_names": self.feature_names_, "fit_agents": self.fit_agents_, "n_rows": self.n_rows_,
                "boosters": [b.model_to_string() for b in self.boosters_]}

    @classmethod
    def from_state(cls, d: dict[str, Any], n_jobs: int = 1) -> "QuantileRegressor":
        m = cls(tuple(d["alphas"]), d["lgbm_params"], d.get("seed", 0), n_jobs)
        m.boosters_ = [lgb.Booster(model_str=s) for s in d["boosters"]]
        m.feature_names_ = list(d["feature_names"])
        m.fit_agents_ = list(d.get("fit_agents", []))
        m.n_rows_ = int(d.get("n_rows", 0))
        return m


def cqr_scores(q_lo: np.ndarray, q_hi: np.ndarray, z: np.ndarray) -> np.ndarray:
    """CQR conformity score: how far z falls outside [q_lo, q_hi] (negative inside)."""
    return np.maximum(q_lo - z, z - q_hi)


def conformal_quantile(scores: np.ndarray, weights: np.ndarray, level: float, n_units: int) -> float:
    """Weighted level*(1 + 1/n) quantile of the scores (the split-conformal correction)."""
    if len(scores) == 0:
        return float("nan")
    q = weighted_quantile(scores, min(1.0, level * (1.0 + 1.0 / max(n_units, 1))), weights)
    return float(q)


def pair_for(level: float, alphas: tuple) -> tuple[int, int]:
    """Indices of the (lo, hi) alphas of a central level, e.g. 0.9 -> (0.05, 0.95)."""
    lo, hi = (1 - level) / 2, (1 + level) / 2
    a = np.asarray(alphas)
    i, j = int(np.argmin(np.abs(a - lo))), int(np.argmin(np.abs(a - hi)))
    if abs(a[i] - lo) > 1e-9 or abs(a[j] - hi) > 1e-9:
        raise ValueError(f"alphas {alphas} lack the pair for level {level}")
    return i, j


def corrected_quantiles(q: np.ndarray, corrections: dict[float, float], alphas: tuple) -> np.ndarray:
    """Widen each level's (lo, hi) pair by its CQR correction, then re-sort (a negative Q may cross)."""
    out = q.copy()
    for level, Q in corrections.items():
        i, j = pair_for(level, alphas)
        out[:, i] = q[:, i] - Q
        out[:, j] = q[:, j] + Q
    return fix_crossing(out)


def quantile_cdf(points: np.ndarray, alphas: tuple, z: np.ndarray) -> np.ndarray:
    """P(Z <= z) from sorted quantile points: piecewise linear, linear tails to 0 and 1."""
    a = np.asarray(alphas, dtype=np.float64)
    P = np.asarray(points, dtype=np.float64)
    lo_ext = P[:, :1] - (P[:, 1:2] - P[:, :1]) * a[0] / max(a[1] - a[0], 1e-12)
    hi_ext = P[:, -1:] + (P[:, -1:] - P[:, -2:-1]) * (1 - a[-1]) / max(a[-1] - a[-2], 1e-12)
    xs = np.hstack([lo_ext, P, hi_ext])
    ps = np.r_[0.0, a, 1.0]
    out = np.empty(len(z))
    for i in range(len(z)):
        x = xs[i]
        if x[-1] - x[0] <= 0:
            out[i] = float(z[i] >= x[0])
            continue
        out[i] = np.interp(z[i], x, ps, left=0.0, right=1.0)
    return out


class CrossConformalQuantiles:
    """Quantile boosters fitted per agent fold, CQR-corrected with out-of-fold scores.

    ``fit`` gets rows of training agents only, each with its fold (-1: training-only).
    Fold model k is fitted on rows outside fold k and scores the rows of fold k.
    ``fit_agents_``/``calibration_agents_`` record what each stage saw."""

    def __init__(self, alphas: tuple = ALPHAS, levels: tuple = LEVELS, lgbm_params: dict[str, Any] | None = None,
                 seed: int = 0, n_jobs: int = 1):
        self.alphas = tuple(alphas)
        self.levels = tuple(levels)
        self.lgbm_params = lgbm_params
        self.seed = seed
        self.n_jobs = n_jobs

    def fit(self, X: np.ndarray, z: np.ndarray, fit_weight: np.ndarray, score_weight: np.ndarray,
            fold: np.ndarray, agents: np.ndarray, runs: np.ndarray,
            feature_names: list[str] | None = None) -> "CrossConformalQuantiles":
        folds = sorted(int(k) for k in np.unique(fold) if k >= 0)
        self.models_: list[QuantileRegressor] = []
        self.model_folds_: list[int] = []
        self.oof_ = np.full((len(z), len(self.alphas)), np.nan)
        for k in folds:
            tr = (fold != k) & (fit_weight > 0)
            if not tr.any():
                continue
            m = QuantileRegressor(self.alphas, self.lgbm_params, self.seed, self.n_jobs)
            m.fit(X[tr], z[tr], fit_weight[tr], agents[tr], feature_names)
            self.models_.append(m)
            self.model_folds_.append(k)
            cal = fold == k
            self.oof_[cal] = m.predict(X[cal])
        self.calibrate(z, score_weight, fold, agents, runs)
        return self

    def calibrate(self, z: np.ndarray, score_weight: np.ndarray, fold: np.ndarray, agents: np.ndarray,
                  runs: np.ndarray) -> "CrossConformalQuantiles":
        """Corrections from the out-of-fold predictions; also per left-out fold (for inner thresholds)."""
        ok = ~np.isnan(self.oof_[:, 0]) & (score_weight > 0)
        self.calibration_agents_ = sorted(set(agents[ok].tolist()))
        self.n_calibration_rows_ = int(ok.sum())
        self.scores_ = {lv: cqr_scores(self.oof_[:, pair_for(lv, self.alphas)[0]], self.oof_[:, pair_for(lv, self.alphas)[1]], z)
                        for lv in self.levels}
        self._ok, self._w, self._fold, self._runs = ok, score_weight, fold, runs
        self.corrections_ = self.corrections(ok)
        return self

    def corrections(self, mask: np.ndarray) -> dict[float, float]:
        n = len(np.unique(self._runs[mask]))  # exchangeable units: runs
        return {lv: conformal_quantile(self.scores_[lv][mask], self._w[mask], lv, n) for lv in self.levels}

    def corrections_without(self, k: int) -> dict[float, float]:
        """Corrections from every fold but k (to threshold fold k's own predictions honestly)."""
        m = self._ok & (self._fold != k)
        return self.corrections(m) if m.any() else dict(self.corrections_)

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Mean of the fold models' sorted quantiles (z scale), uncorrected."""
        return fix_crossing(np.mean([m.predict(X) for m in self.models_], axis=0))

    def get_state(self) -> dict[str, Any]:
        return {"alphas": list(self.alphas), "levels": list(self.levels), "seed": self.seed,
                "corrections": {str(k): v for k, v in self.corrections_.items()},
                "calibration_agents": self.calibration_agents_, "models": [m.get_state() for m in self.models_]}

    @classmethod
    def from_state(cls, d: dict[str, Any], n_jobs: int = 1) -> "CrossConformalQuantiles":
        m = cls(tuple(d["alphas"]), tuple(d["levels"]), None, d.get("seed", 0), n_jobs)
        m.models_ = [QuantileRegressor.from_state(s, n_jobs) for s in d["models"]]
        m.corrections_ = {float(k): float(v) for k, v in d["corrections"].items()}
        m.calibration_agents_ = list(d.get("calibration_agents", []))
        return m


@dataclass
class BudgetEstimator:
    """What a model directory carries for one dimension: conformalized quantiles + scale."""

    dim: str
    unit: float
    budget: float
    model: CrossConformalQuantiles
    feature_names: list[str]

    def intervals(self, X: np.ndarray, spent: np.ndarray, t: np.ndarray) -> dict[str, np.ndarray]:
        rate = pace(spent, t, self.unit)
        q = corrected_quantiles(self.model.predict(X), self.model.corrections_, self.model.alphas)
        out = {"median": from_z(q[:, list(self.model.alphas).index(0.5)], rate)}
        for lv in self.model.levels:
            i, j = pair_for(lv, self.model.alphas)
            out[f"lo_{lv}"], out[f"hi_{lv}"] = from_z(q[:, i], rate), from_z(q[:, j], rate)
        return out

    def prob_within(self, X: np.ndarray, spent: np.ndarray, t: np.ndarray, budget: float | None = None) -> np.ndarray:
        B = self.budget if budget is None else budget
        rate = pace(spent, t, self.unit)
        q = corrected_quantiles(self.model.predict(X), self.model.corrections_, self.model.alphas)
        return _within(q, self.model.alphas, B - spent, rate)

    def get_state(self) -> dict[str, Any]:
        return {"dim": self.dim, "unit": self.unit, "budget": self.budget, "feature_names": self.feature_names,
                "model": self.model.get_state()}

    @classmethod
    def from_state(cls, d: dict[str, Any]) -> "BudgetEstimator":
        return cls(d["dim"], float(d["unit"]), float(d["budget"]), CrossConformalQuantiles.from_state(d["model"]), list(d["feature_names"]))


def _within(q_corr: np.ndarray, alphas: tuple, room: np.ndarray, rate: np.ndarray) -> np.ndarray:
    """P(remaining <= room) from corrected z-quantiles; 0 when the budget is already spent."""
    zx = np.log1p(np.maximum(room, 0.0) / rate)
    p = quantile_cdf(q_corr, alphas, zx)
    return np.where(room < 0, 0.0, p)


class LinearExtrapolation:
    """Baseline: remaining = spend per step so far x (E[T | T > t] - t), T from training runs."""

    def fit(self, T: np.ndarray) -> "LinearExtrapolation":
        T = np.sort(np.asarray(T, dtype=np.float64))
        self.T_ = T
        top = int(T.max()) if len(T) else 1
        self.cond_median_ = np.empty(top + 1)
        for t in range(top + 1):
            later = T[T > t]
            self.cond_median_[t] = float(np.median(later)) if len(later) else t + 1.0
        return self

    def expected_T(self, t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=np.int64)
        inside = t < len(self.cond_median_)
        return np.where(inside, self.cond_median_[np.minimum(t, len(self.cond_median_) - 1)], t + 1.0)

    def predict(self, t: np.ndarray, spent: np.ndarray, unit: float) -> np.ndarray:
        rate = np.where(spent > 0, spent / np.maximum(t, 1), unit)
        return rate * np.maximum(self.expected_T(t) - t, 1.0)

    def get_state(self) -> dict[str, Any]:
        return {"conditional_median_T": self.cond_median_.tolist()}


def residual_cdf(resid: np.ndarray, w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Weighted empirical CDF of calibration residuals at x (conformal predictive distribution)."""
    if len(resid) == 0:
        return np.full(len(x), np.nan)
    o = np.argsort(resid, kind="stable")
    r, cw = resid[o], np.cumsum(w[o])
    k = np.searchsorted(r, x, side="right")
    return np.where(k > 0, cw[np.maximum(k - 1, 0)] / cw[-1], 0.0)


# ============================================================ LOAO evaluation

@dataclass
class Group:
    """A held-out unit: one large agent, or all small agents together (as in evaluate.run_loao)."""

    name: str
    agents: list[str]
    small: bool = False


def holdout_groups(ds: Dataset, cfg: EvalConfig) -> list[Group]:
    """The same split as ``evaluate.run_loao``: ``Dataset.large_agents`` alone, the rest together."""
    large = ds.large_agents(cfg.holdout_min_runs)
    small = [a for a in ds.agents if a not in large]
    groups = [Group(a, [a]) for a in large]
    if small:
        groups.append(Group(SMALL, small, True))
    return groups


def agent_folds(groups: list[Group], k: int, dims_of: dict[str, set[str]]) -> list[list[Group]]:
    """Deal groups into k folds so that every dimension's groups are spread as evenly as possible."""
    folds: list[list[Group]] = [[] for _ in range(max(k, 1))]
    counts = [dict.fromkeys(DIMENSIONS, 0) for _ in folds]
    for g in sorted(groups, key=lambda g: (-len(dims_of[g.name]), g.name)):
        f = min(range(len(folds)), key=lambda i: (sum(counts[i][d] for d in dims_of[g.name]), len(folds[i]), i))
        folds[f].append(g)
        for d in dims_of[g.name]:
            counts[f][d] += 1
    return [f for f in folds if f]


def choose_budget(tg: DimTargets, q: float) -> float:
    """B = the q-quantile of run totals (runs with T >= 2 whose usage is known), rounded to 2 significant digits."""
    tot = tg.totals[tg.run_known]
    if len(tot) == 0:
        return float("nan")
    b = float(np.quantile(tot, q))
    if tg.dim == "steps":
        return float(np.ceil(b))
    return float(f"{b:.2g}") if b > 0 else b


def _halt_index(p: np.ndarray, taus: np.ndarray, lo: int) -> np.ndarray:
    """Per tau, the first prefix index i >= lo with p[i] < tau; len(p) when there is none."""
    n = len(p)
    if n <= lo:
        return np.full(len(taus), n, dtype=np.int64)
    m = np.minimum.accumulate(p[lo:])
    return lo + np.searchsorted(-m, -np.asarray(taus), side="right")


@dataclass
class StopSet:
    """Runs for early-stop evaluation under a budget B.

    Regime "budget" (the headline): every run is capped at B, so a run succeeds
    under the budget iff it is feasible, and what a run costs is its spend up to
    the cap, min(total, B).  Halting after prefix t saves min(total, B) - spent_t
    (if positive); halting a feasible run is a false abort.  Regime "uncapped" is
    reported beside it: savings against the full totals of unresolved runs, and
    every halted resolved run counted as lost."""

    group: list[str]
    y: np.ndarray  # resolved
    feas: np.ndarray  # resolved within B
    T: np.ndarray
    p: list[np.ndarray]
    rem: list[np.ndarray]  # remaining usage after prefix t (index t-1)
    total: np.ndarray
    budget: float

    def __len__(self) -> int:
        return len(self.y)

    @property
    def capped(self) -> np.ndarray:
        return np.minimum(self.total, self.budget)

    def saved_capped(self, r: int, h: int) -> float:
        spent = self.total[r] - self.rem[r][h]
        return float(max(min(self.total[r], self.budget) - spent, 0.0))

    def steps_capped(self, r: int) -> int:
        """Steps a run takes under the cap: up to the step whose spend reaches B, else T."""
        cum = self.total[r] - np.r_[self.rem[r], 0.0]  # spend after prefixes 1..T
        over = np.flatnonzero(cum >= self.budget - 1e-12)
        return int(over[0] + 1) if len(over) else int(self.T[r])


def stop_stats(ss: StopSet, halt: np.ndarray) -> dict[str, Any]:
    """Early-stop metrics given each run's halting prefix index (len(p) = not halted)."""
    n = np.asarray([len(p) for p in ss.p])
    halted = halt < n
    R = len(ss)
    if R == 0:
        return {"n_runs": 0}
    saved_cap = np.asarray([ss.saved_capped(r, h) if ok else 0.0 for r, (h, ok) in enumerate(zip(halt, halted))])
    saved_unc = np.asarray([ss.rem[r][h] if ok else 0.0 for r, (h, ok) in enumerate(zip(halt, halted))])
    steps_cap = np.asarray([ss.steps_capped(r) for r in range(R)], dtype=np.float64)
    steps_saved_cap = np.where(halted, np.maximum(steps_cap - (halt + 1), 0), 0)
    infeas, feas, fail, succ = ss.feas == 0, ss.feas == 1, ss.y == 0, ss.y == 1
    den = ss.capped[infeas].sum()
    return {
        "n_runs": int(R),
        "halted_fraction": float(halted.mean()),
        "saved_on_failed": float(saved_cap[infeas].sum() / den) if den > 0 else None,
        "steps_saved_on_failed": float(steps_saved_cap[infeas].sum() / steps_cap[infeas].sum()) if infeas.any() else None,
        "failed_runs_halted": float(halted[infeas].mean()) if infeas.any() else None,
        "false_abort_rate": float(halted[feas].mean()) if feas.any() else None,
        "success_rate_cost_pp": float(100.0 * (halted & feas).sum() / R),
        "uncapped": {
            "saved_on_unresolved": float(saved_unc[fail].sum() / ss.total[fail].sum()) if ss.total[fail].sum() > 0 else None,
            "false_abort_rate": float(halted[succ].mean()) if succ.any() else None,
            "resolve_rate_cost_pp": float(100.0 * (halted & succ).sum() / R),
        },
    }


def _group_costs(ss: StopSet, halts: np.ndarray) -> np.ndarray:
    """(n_candidates,) mean over groups of the success-within-budget cost in pp; halts is (runs, candidates)."""
    n = np.asarray([len(p) for p in ss.p])[:, None]
    lost = (halts < n) & (ss.feas[:, None] == 1)
    gs = np.asarray(ss.group)
    return np.mean([100.0 * lost[gs == g].mean(0) for g in sorted(set(ss.group))], axis=0)


def _saved_failed(ss: StopSet, halts: np.ndarray) -> np.ndarray:
    """(n_candidates,) capped budget saved on infeasible runs, as a share of their capped spend."""
    n = np.asarray([len(p) for p in ss.p])
    infeas = np.flatnonzero(ss.feas == 0)
    den = ss.capped[infeas].sum()
    out = np.zeros(halts.shape[1])
    for r in infeas:
        if n[r] == 0:
            continue
        h = np.minimum(halts[r], n[r] - 1)
        spent = ss.total[r] - ss.rem[r][h]
        out += np.where(halts[r] < n[r], np.maximum(min(ss.total[r], ss.budget) - spent, 0.0), 0.0)
    return out / den if den > 0 else out


def select_tau(ss: StopSet, taus: tuple, max_cost_pp: float, lo: int) -> dict[str, Any]:
    """Max capped budget saved on infeasible runs s.t. mean-over-groups cost <= max_cost_pp; ties: lower tau."""
    tv = np.asarray(taus, dtype=np.float64)
    if len(ss) == 0:
        return {"tau": 0.0, "selected_on": [], "note": "no inner runs: never halt"}
    halts = np.vstack([_halt_index(p, tv, lo) for p in ss.p])
    cost = _group_costs(ss, halts)
    saved = _saved_failed(ss, halts)
    score = np.where(cost <= max_cost_pp + 1e-9, saved, -1.0)
    i = int(np.flatnonzero(score == score.max())[0])
    return {"tau": float(tv[i]), "selection_saved_on_failed": float(saved[i]), "selection_cost_pp": float(cost[i]),
            "selected_on": sorted(set(ss.group)), "max_cost_pp": max_cost_pp}


def cap_halts(ss: StopSet, k: int) -> np.ndarray:
    """Step cap k: halt after prefix k (index k-1) when the run is longer than k."""
    n = np.asarray([len(p) for p in ss.p])
    return np.where(ss.T > k, np.minimum(k - 1, n), n)


def select_cap(ss: StopSet, max_cost_pp: float, max_k: int) -> dict[str, Any]:
    """The smallest-cost-feasible step cap that saves most on failed runs of the inner runs."""
    if len(ss) == 0:
        return {"k": None}
    ks = np.arange(1, max(max_k, 1) + 1)
    halts = np.column_stack([cap_halts(ss, int(k)) for k in ks])
    cost = _group_costs(ss, halts)
    saved = _saved_failed(ss, halts)
    score = np.where(cost <= max_cost_pp + 1e-9, saved, -1.0)
    i = int(np.flatnonzero(score == score.max())[-1])  # ties: the larger (more conservative) cap
    if score[i] <= 0:
        return {"k": None, "note": "no cap meets the cost bound with any saving"}
    return {"k": int(ks[i]), "selection_saved_on_failed": float(saved[i]), "selection_cost_pp": float(cost[i])}


@dataclass
class DimResult:
    """Held-out predictions of one dimension, per prefix row (nan where not predicted)."""

    dim: str
    budget: float
    z: np.ndarray  # true z under the fold's pace
    rate: np.ndarray
    q: np.ndarray  # (N, len(alphas)) corrected, sorted model quantiles (z scale)
    zhat_lin: np.ndarray
    Q_lin: np.ndarray  # (N, len(levels)) linear baseline's correction at each row's fold
    p_within: np.ndarray
    p_within_lin: np.ndarray
    outer: np.ndarray  # (N,) index of the outer group that predicted the row, -1 = none
    taus: dict[str, dict[str, Any]] = field(default_factory=dict)  # group -> method -> selection
    folds: dict[str, dict[str, Any]] = field(default_factory=dict)  # group -> audit of what was seen
    skipped: dict[str, str] = field(default_factory=dict)
    estimators: dict[str, BudgetEstimator] = field(default_factory=dict)
    # online re-conformalization (``budget_online``; beside the label-free q, never replacing it)
    q_online: np.ndarray | None = None  # (N, len(alphas))
    Q_online: np.ndarray | None = None  # (N, len(levels)) correction each row was evaluated with
    n_own_online: np.ndarray | None = None  # (N,) held-out agent's finished runs in that correction (0: calibration agents')


@dataclass
class BudgetRun:
    ds: Dataset
    cfg: EvalConfig
    bcfg: BudgetConfig
    groups: list[Group]
    targets: dict[str, DimTargets]
    budgets: dict[str, float]
    p_success: np.ndarray  # (N,) held-out P(success)
    dims: dict[str, DimResult]
    seconds: float = 0.0


def _unit(per_step: np.ndarray) -> float:
    """Typical spend of one step on the training agents: median, else mean, else 1."""
    for v in (np.median(per_step), np.mean(per_step)):
        if v > 0:
            return float(v)
    return 1.0


def _fit_weights(prow: np.ndarray, m: int) -> np.ndarray:
    """Weights of the evenly spaced training prefixes (at most m per run, summing to 1 per run)."""
    w = np.zeros(len(prow))
    for r, (a, b) in _run_slices(prow).items():
        n = b - a
        idx = np.unique(np.round(np.linspace(0, n - 1, min(m, n))).astype(int))
        w[a + idx] = 1.0 / len(idx)
    return w


@dataclass
class _Setup:
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

    def design(self, tg: DimTargets, rows: np.ndarray, unit: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
        """Features, pace and target z of prefix rows of one dimension."""
        rate = pace(tg.spent[rows], self.tt[rows], unit)
        Xb, bn = budget_features(tg, rows, self.tt[rows], unit)
        return np.hstack([self.X_static[rows], Xb]), rate, to_z(tg.remaining[rows], rate), self.static_names + bn

    def row_fold(self, folds: list[list[Group]]) -> np.ndarray:
        fold_of = {a: k for k, f in enumerate(folds) for g in f for a in g.agents}
        return np.asarray([fold_of.get(a, -1) for a in self.row_agent])


def _setup(ds: Dataset, cfg: EvalConfig, bcfg: BudgetConfig) -> _Setup:
    groups = holdout_groups(ds, cfg)
    pf = ds.prefixes
    N = len(pf)
    prow = pf["run"].to_numpy()
    run_agent = np.asarray([t.agent for t in ds.trajs])
    row_agent = run_agent[prow] if N else np.zeros(0, dtype=str)
    free = free_opening_agents(ds, bcfg.free_opening_formats)
    targets = {d: dim_targets(ds, d, free) for d in DIMENSIONS}
    dims_of = {g.name: {d for d in DIMENSIONS if targets[d].run_known[np.isin(run_agent, g.agents)].any()} for g in groups}
    # a dimension is evaluated (and shipped) when, with any one group held out, min_groups groups remain to calibrate it
    dims = [d for d in DIMENSIONS if sum(d in dims_of[g.name] for g in groups) >= bcfg.min_groups + 1]
    budgets = {d: choose_budget(targets[d], bcfg.budget_quantile) for d in dims}
    fams = fold_free(cfg.families)
    group_of = {a: g.name for g in groups for a in g.agents}
    return _Setup(
        groups=groups, targets=targets, dims_of=dims_of, dims=dims, budgets=budgets, prow=prow,
        tt=pf["t"].to_numpy().astype(np.float64), run_agent=run_agent, row_agent=row_agent,
        row_group=np.asarray([group_of[a] for a in row_agent]) if N else np.zeros(0, dtype=str),
        y_run=np.asarray([int(t.outcome) for t in ds.trajs]), T_run=np.asarray([len(t.steps) for t in ds.trajs]),
        slices=_run_slices(prow),
        X_static=np.hstack([ds.blocks[f] for f in fams]) if fams else np.zeros((N, 0), np.float32),
        static_names=[n for f in fams for n in ds.block_names[f]],
        fit_w=_fit_weights(prow, bcfg.max_prefixes_per_run), run_w=pf["weight"].to_numpy())


def _fill_ps(runner: FoldRunner, su: _Setup, arr: np.ndarray, exclude: frozenset, agent: str) -> None:
    """Write P(success) of `agent`'s prefix rows from the outcome model fitted without `exclude`."""
    rs = runner.predict(exclude, agent)
    for r, p in zip(np.flatnonzero(su.run_agent == agent), rs.p_s):
        if int(r) in su.slices:
            a, b = su.slices[int(r)]
            arr[a:b] = p


def _inner_p_success(runner: FoldRunner, su: _Setup, folds: list[list[Group]], held: frozenset) -> tuple[np.ndarray, list[list[str]]]:
    """P(success) of every calibration agent from the outcome model fitted without its fold (and without `held`)."""
    p_in = np.full(len(su.prow), np.nan)
    exclusions = []
    for f in folds:
        ex = held | {a for g in f for a in g.agents}
        exclusions.append(sorted(ex))
        for g in f:
            for a in g.agents:
                _fill_ps(runner, su, p_in, frozenset(ex), a)
    return p_in, exclusions


@dataclass
class _CalFit:
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


def _fit_calibrated(su: _Setup, tg: DimTargets, rows_tr: np.ndarray, row_fold: np.ndarray, n_folds: int, B: float,
                    bcfg: BudgetConfig) -> _CalFit:
    """CQR on agent folds (module docstring): the unit, the fold models, the corrections, the inner P(within B)."""
    prow = su.prow
    tr_runs = np.unique(prow[rows_tr])
    unit = 1.0 if tg.dim == "steps" else _unit(np.concatenate([tg.usage[r] for r in tr_runs]))
    X_tr, rate_tr, z_tr, names = su.design(tg, rows_tr, unit)
    row_group = su.row_group
    gsize = {g: len(np.unique(prow[rows_tr][row_group[rows_tr] == g])) for g in np.unique(row_group[rows_tr])}
    sw = su.run_w[rows_tr] / (np.asarray([gsize[g] for g in row_group[rows_tr]]) if bcfg.score_weighting == "agent" else 1.0)
    ccq = CrossConformalQuantiles(bcfg.alphas, bcfg.levels, bcfg.lgbm_params, bcfg.seed, bcfg.n_jobs)
    ccq.fit(X_tr, z_tr, su.fit_w[rows_tr], sw, row_fold[rows_tr], su.row_agent[rows_tr], prow[rows_tr], names)
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
    pw_in[has_in] = _within(q_in[has_in], bcfg.alphas, room_tr[has_in], rate_tr[has_in])
    return _CalFit(unit, names, rows_tr, tr_runs, rate_tr, z_tr, sw, fold_tr, ccq, pw_in)


def _select_on_calibration(su: _Setup, tg: DimTargets, fit: _CalFit, p_rows: np.ndarray, B: float, bcfg: BudgetConfig,
                           lo: int) -> dict[str, Any]:
    """tau on the large calibration agents' runs (a 25-run group would make one false abort worth 4 pp of
    the constraint, as in evaluate.run_loao); `p_rows` is P(feasible) on the calibration rows (nan: none)."""
    rows_tr = fit.rows
    large_tr = su.row_group[rows_tr] != SMALL
    ss = _stopset(tg, rows_tr, su.prow, p_rows, su.row_group[rows_tr], su.y_run, su.T_run, su.slices,
                  require=~np.isnan(p_rows) & large_tr, budget=B)
    return select_tau(ss, bcfg.taus, bcfg.max_cost_pp, lo)


def run_budget(ds: Dataset, cfg: EvalConfig, bcfg: BudgetConfig | None = None,
               progress: Callable[[str], None] | None = None, only: list[str] | None = None) -> BudgetRun:
    """Leave-one-agent-out budget evaluation (see the module docstring for every choice).

    `only` restricts the held-out groups evaluated (debugging); folds still use every other group."""
    bcfg = bcfg or BudgetConfig()
    t_start = time.time()
    say = progress or (lambda m: log.info(m))
    runner = FoldRunner(ds, cfg, None)
    su = _setup(ds, cfg, bcfg)
    groups, targets, dims_of, dims, budgets = su.groups, su.targets, su.dims_of, su.dims, su.budgets
    N = len(ds.prefixes)
    prow, tt, row_agent, row_group = su.prow, su.tt, su.row_agent, su.row_group
    y_run, T_run, slices = su.y_run, su.T_run, su.slices
    A_ = len(bcfg.alphas)
    lo = max(cfg.min_halt_step, 1) - 1
    res = {d: DimResult(d, budgets[d], *(np.full(N, np.nan) for _ in range(2)), np.full((N, A_), np.nan),
                        np.full(N, np.nan), np.full((N, len(bcfg.levels)), np.nan), np.full(N, np.nan), np.full(N, np.nan),
                        np.full(N, -1, dtype=np.int64)) for d in dims}
    for R in res.values():
        R.q_online, R.Q_online = np.full((N, A_), np.nan), np.full((N, len(bcfg.levels)), np.nan)
        R.n_own_online = np.full(N, -1, dtype=np.int64)
    from .budget_online import online_quantiles, run_order

    orders = {a: run_order(np.flatnonzero(su.run_agent == a), a) for a in ds.agents}
    p_out = np.full(N, np.nan)

    def one_group(gi: int, G: Group) -> None:
        """Everything for one held-out group; writes only its own rows and keys (thread-safe)."""
        say(f"budget: held out {G.name} ({gi + 1}/{len(groups)})")
        A = frozenset(G.agents)
        for a in G.agents:
            _fill_ps(runner, su, p_out, A, a)
        train_groups = [g for g in groups if g.name != G.name]
        folds = agent_folds(train_groups, min(bcfg.max_folds, len(train_groups)), dims_of)
        row_fold = su.row_fold(folds)
        p_in, ps_exclusions = _inner_p_success(runner, su, folds, A)
        held = np.isin(row_agent, G.agents)
        for d in dims:
            tg, R = targets[d], res[d]
            dgroups = [g.name for g in train_groups if d in dims_of[g.name]]
            rows_ho = np.flatnonzero(held & tg.row_known)
            if len(rows_ho) == 0:
                continue
            if len(dgroups) < bcfg.min_groups:
                R.skipped[G.name] = f"only {len(dgroups)} training agent group(s) with known {d}: cannot calibrate without the held-out agent"
                continue
            B = budgets[d]
            fit = _fit_calibrated(su, tg, np.flatnonzero(~held & tg.row_known), row_fold, len(folds), B, bcfg)
            rows_tr, tr_runs, unit, ccq, fold_tr = fit.rows, fit.runs, fit.unit, fit.ccq, fit.fold
            z_tr, rate_tr, sw = fit.z, fit.rate, fit.sw
            X_ho, rate_ho, z_ho, _ = su.design(tg, rows_ho, unit)
            q_raw = ccq.predict(X_ho)
            q_ho = corrected_quantiles(q_raw, ccq.corrections_, bcfg.alphas)
            # online mode: realized budgets of the held-out agent's finished runs only (never its outcome labels)
            R.q_online[rows_ho], R.Q_online[rows_ho], R.n_own_online[rows_ho] = online_quantiles(
                q_raw, z_ho, su.run_w[rows_ho], prow[rows_ho], row_agent[rows_ho], ccq.corrections_, bcfg.alphas,
                bcfg.levels, orders)
            room_ho = B - tg.spent[rows_ho]
            R.z[rows_ho], R.rate[rows_ho], R.q[rows_ho] = z_ho, rate_ho, q_ho
            R.p_within[rows_ho] = _within(q_ho, bcfg.alphas, room_ho, rate_ho)
            R.outer[rows_ho] = gi
            R.estimators[G.name] = BudgetEstimator(d, unit, B, ccq, fit.names)
            room_tr = B - tg.spent[rows_tr]
            # linear extrapolation, same folds, same conformal treatment (symmetric in z)
            zhat_in = np.full(len(rows_tr), np.nan)
            for k in range(len(folds)):
                m = fold_tr == k
                if not m.any():
                    continue
                lin = LinearExtrapolation().fit(T_run[np.unique(prow[rows_tr][~m])])
                zhat_in[m] = to_z(lin.predict(tt[rows_tr][m], tg.spent[rows_tr][m], unit), rate_tr[m])
            resid = z_tr - zhat_in
            ok_lin = ~np.isnan(resid) & (sw > 0)
            n_cal = len(np.unique(prow[rows_tr][ok_lin]))
            Q_lin = [conformal_quantile(np.abs(resid[ok_lin]), sw[ok_lin], lv, n_cal) for lv in bcfg.levels]
            lin_full = LinearExtrapolation().fit(T_run[tr_runs])
            zhat_ho = to_z(lin_full.predict(tt[rows_ho], tg.spent[rows_ho], unit), rate_ho)
            R.zhat_lin[rows_ho] = zhat_ho
            R.Q_lin[rows_ho] = np.asarray(Q_lin)[None, :]
            zx_ho = np.log1p(np.maximum(room_ho, 0) / rate_ho)
            R.p_within_lin[rows_ho] = np.where(room_ho < 0, 0.0, residual_cdf(resid[ok_lin], sw[ok_lin], zx_ho - zhat_ho))
            pwl_in = np.full(len(rows_tr), np.nan)
            zx_tr = np.log1p(np.maximum(room_tr, 0) / rate_tr)
            for k in range(len(folds)):
                m = fold_tr == k
                other = ok_lin & (fold_tr != k)
                if m.any() and other.any():
                    pwl_in[m] = np.where(room_tr[m] < 0, 0.0, residual_cdf(resid[other], sw[other], zx_tr[m] - zhat_in[m]))
            # thresholds on the large calibration agents (never the held-out ones)
            p_in_rows = p_in[rows_tr]
            large_tr = row_group[rows_tr] != SMALL
            sel: dict[str, Any] = {}
            for name, pw in (("model", fit.pw_in), ("linear", pwl_in), ("outcome_only", np.ones(len(rows_tr)))):
                sel[name] = _select_on_calibration(su, tg, fit, p_in_rows * pw, B, bcfg, lo)
            ss = _stopset(tg, rows_tr, prow, np.ones(len(rows_tr)), row_group[rows_tr], y_run, T_run, slices,
                          require=large_tr, budget=B)
            sel["step_cap"] = select_cap(ss, bcfg.max_cost_pp, int(T_run[tr_runs].max()))
            R.taus[G.name] = sel
            R.folds[G.name] = {
                "held_out": G.agents,
                "calibration_folds": [[g.name for g in f if d in dims_of[g.name]] for f in folds],
                "quantile_models_fitted_on": [m.fit_agents_ for m in ccq.models_],
                "conformity_scores_from": ccq.calibration_agents_,
                "thresholds_selected_on": sel["model"].get("selected_on", []),
                "p_success_fitted_without": {"held_out": sorted(A), "inner": ps_exclusions},
                "unit": unit,
                "corrections_z": {str(k): v for k, v in ccq.corrections_.items()},
                "corrections_z_linear": {str(lv): q for lv, q in zip(bcfg.levels, Q_lin)},
                "n_calibration_runs": int(len(np.unique(prow[rows_tr][~np.isnan(ccq.oof_[:, 0])]))),
                "n_training_runs": int(len(tr_runs)),
            }

    todo = [(gi, G) for gi, G in enumerate(groups) if only is None or G.name in only]
    if bcfg.n_workers > 1 and len(todo) > 1:
        # LightGBM releases the GIL (ctypes) and each booster is single-threaded, so two held-out
        # groups run side by side without OpenMP oversubscription; results do not depend on the order
        with ThreadPoolExecutor(max_workers=bcfg.n_workers) as pool:
            for fut in [pool.submit(one_group, gi, G) for gi, G in todo]:
                fut.result()
    else:
        for gi, G in todo:
            one_group(gi, G)
    return BudgetRun(ds, cfg, bcfg, groups, targets, budgets, p_out, res, round(time.time() - t_start, 1))


# ============================================================ shipped model

SHIPPED_FORMAT = "earlyeval-budget"
SHIPPED_VERSION = 1


def shipped_config(cfg: EvalConfig, bcfg: BudgetConfig | None = None) -> tuple[EvalConfig, BudgetConfig]:
    """``budget_config`` for a given outcome config: its fold-free families, the budget's n_jobs and seed."""
    from dataclasses import replace

    bcfg = bcfg or BudgetConfig()
    return replace(cfg, families=fold_free(cfg.families), n_jobs=bcfg.n_jobs, seed=bcfg.seed), bcfg


def fit_shipped(ds: Dataset, cfg: EvalConfig, bcfg: BudgetConfig | None = None,
                progress: Callable[[str], None] | None = None) -> dict[str, Any] | None:
    """The budget model ``earlyeval train`` ships (JSON-able; ``budget_live.LiveBudget`` reads it).

    It is what ``run_budget`` builds for a held-out agent, with no agent held out: every
    labelled agent group (the small ones as one group) is a calibration group, dealt into
    the same agent folds (``agent_folds``); per dimension that ``run_budget`` evaluates,
    the fold models, the CQR corrections from all out-of-fold scores, the unit, B
    (``choose_budget``, the same B as in the report) and tau, selected by ``select_tau`` on
    the inner predictions of the large calibration agents (fold models, corrections without
    their fold, P(success) from the outcome model fitted without their fold: the fold-free
    families of `cfg`, as ``budget_config``).  No label outside the training data is used.
    None when no dimension has enough agent groups to be calibrated."""
    bcfg = bcfg or BudgetConfig()
    say = progress or (lambda m: log.info(m))
    su = _setup(ds, cfg, bcfg)
    if not su.dims:
        say("budget: no dimension has enough agent groups to be calibrated; no budget model shipped")
        return None
    groups = su.groups
    folds = agent_folds(groups, min(bcfg.max_folds, len(groups)), su.dims_of)
    row_fold = su.row_fold(folds)
    lo = max(cfg.min_halt_step, 1) - 1
    say(f"budget: {', '.join(su.dims)} on {len(groups)} agent group(s) in {len(folds)} calibration folds")
    runner = FoldRunner(ds, cfg, None)
    p_in, exclusions = _inner_p_success(runner, su, folds, frozenset())

    def one_dim(d: str) -> dict[str, Any]:
        tg, B = su.targets[d], su.budgets[d]
        fit = _fit_calibrated(su, tg, np.flatnonzero(tg.row_known), row_fold, len(folds), B, bcfg)
        sel = _select_on_calibration(su, tg, fit, p_in[fit.rows] * fit.pw_in, B, bcfg, lo)
        ccq = fit.ccq
        return {
            "estimator": BudgetEstimator(d, fit.unit, B, ccq, fit.names).get_state(),
            "tau": float(sel["tau"]),
            "tau_selection": sel,
            "budget_rule": f"{bcfg.budget_quantile:.0%} quantile of run totals over every labelled run whose {d} is known"
                           + (" (rounded up)" if d == "steps" else " (2 significant digits)"),
            "runs_known": int(tg.run_known.sum()),
            "runs_excluded_unknown": tg.excluded_by_agent(ds),
            "calibration_folds": [[g.name for g in f if d in su.dims_of[g.name]] for f in folds],
            "quantile_models_fitted_on": [m.fit_agents_ for m in ccq.models_],
            "conformity_scores_from": ccq.calibration_agents_,
            "corrections_z": {str(k): v for k, v in ccq.corrections_.items()},
            "n_calibration_runs": int(len(np.unique(su.prow[fit.rows][~np.isnan(ccq.oof_[:, 0])]))),
        }

    if bcfg.n_workers > 1 and len(su.dims) > 1:
        with ThreadPoolExecutor(max_workers=bcfg.n_workers) as pool:  # see run_budget: single-threaded boosters
            dims_out = dict(zip(su.dims, pool.map(one_dim, su.dims)))
    else:
        dims_out = {d: one_dim(d) for d in su.dims}
    free = free_opening_agents(ds, bcfg.free_opening_formats)
    return {
        "format": SHIPPED_FORMAT,
        "version": SHIPPED_VERSION,
        "alphas": list(bcfg.alphas),
        "levels": list(bcfg.levels),
        "min_halt_step": int(cfg.min_halt_step),
        # the unmetered opening turn counts 0 (run_usage) when every training agent's runs are of such a format
        "free_opening": bool(free) and set(ds.agents) <= free,
        "free_opening_formats": list(bcfg.free_opening_formats),
        "dimensions": dims_out,
        "skipped_dimensions": {d: f"fewer than {bcfg.min_groups + 1} agent groups with known {d}" for d in DIMENSIONS
                               if d not in su.dims},
        "p_success_for_tau": {"families": list(cfg.families), "fitted_without": exclusions,
                              "note": "tau is selected on P(success) of the fold-free outcome model fitted without each "
                                      "calibration fold; live, P(feasible) uses the shipped outcome model's P(success)"},
        "groups": [{"name": g.name, "agents": g.agents, "small": g.small} for g in groups],
        "folds": [[g.name for g in f] for f in folds],
        "config": bcfg.to_dict(),
        # no wall-clock value: this dict is a hashed model file, identical for identical trainings
    }


def predict_prefixes(shipped: dict[str, Any], ds: Dataset, p_success: np.ndarray,
                     families: list[str]) -> dict[str, dict[str, np.ndarray]]:
    """Batch predictions of a shipped budget model on every prefix row of `ds` (nan where the run's
    usage is unknown): the same design and code as ``run_budget``'s held-out predictions.  `families`
    are the outcome config's (their fold-free blocks are the static features); `p_success` is aligned
    with ``ds.prefixes``.  The reference the Monitor's live budget is tested against."""
    N = len(ds.prefixes)
    free = free_opening_agents(ds, tuple(shipped.get("free_opening_formats", ()))) if shipped.get("free_opening") else set()
    fams = fold_free(families)
    X_static = np.hstack([ds.blocks[f] for f in fams]) if fams else np.zeros((N, 0), np.float32)
    tt = ds.prefixes["t"].to_numpy().astype(np.float64)
    out: dict[str, dict[str, np.ndarray]] = {}
    for d, spec in shipped["dimensions"].items():
        est = BudgetEstimator.from_state(spec["estimator"])
        tg = dim_targets(ds, d, free)
        rows = np.flatnonzero(tg.row_known)
        Xb, _ = budget_features(tg, rows, tt[rows], est.unit)
        names = [n for f in fams for n in ds.block_names[f]] + spend_feature_names(d)
        if names != est.feature_names:
            raise ValueError(f"{d}: the dataset's features differ from the estimator's")
        X = np.hstack([X_static[rows], Xb])
        res = {k: np.full(N, np.nan) for k in ("spent", "p_within_budget", "p_feasible")}
        iv = est.intervals(X, tg.spent[rows], tt[rows])
        for k, v in iv.items():
            res[k] = np.full(N, np.nan)
            res[k][rows] = v
        res["spent"][rows] = tg.spent[rows]
        res["p_within_budget"][rows] = est.prob_within(X, tg.spent[rows], tt[rows])
        res["p_feasible"][rows] = p_success[rows] * res["p_within_budget"][rows]
        res["X"] = np.full((N, X.shape[1]), np.nan, np.float32)
        res["X"][rows] = X
        out[d] = res
    return out


def _stopset(tg: DimTargets, rows: np.ndarray, prow: np.ndarray, p_rows: np.ndarray, row_group: np.ndarray,
             y_run: np.ndarray, T_run: np.ndarray, slices: dict[int, tuple[int, int]], require: np.ndarray,
             budget: float) -> StopSet:
    """Group prefix rows (a subset of the prefix table, run-contiguous) into per-run arrays.

    `p_rows`, `row_group` and `require` are aligned with `rows`."""
    pr = prow[rows]
    starts = np.flatnonzero(np.r_[True, pr[1:] != pr[:-1]]) if len(pr) else np.zeros(0, dtype=np.int64)
    ends = np.r_[starts[1:], len(pr)]
    grp, ys, Ts, ps, rems, tots = [], [], [], [], [], []
    for s0, e0 in zip(starts, ends):
        r = int(pr[s0])
        a, b = slices[r]
        if e0 - s0 != b - a:
            raise ValueError(f"run {r}: only some of its prefixes were given")
        idx = np.arange(s0, e0)
        if not np.all(require[idx]):
            continue
        grp.append(str(row_group[s0]))
        ys.append(y_run[r])
        Ts.append(T_run[r])
        ps.append(np.asarray(p_rows[idx], dtype=np.float64))
        rems.append(tg.remaining[a:b])
        tots.append(tg.totals[r])
    y = np.asarray(ys, dtype=np.int64)
    tot = np.asarray(tots, dtype=np.float64)
    feas = ((y == 1) & (tot <= budget)).astype(np.int64)
    return StopSet(grp, y, feas, np.asarray(Ts), ps, rems, tot, budget)


# ==================================================================== metrics

BINS = np.r_[np.round(np.arange(0.0, 1.01, 0.1), 2), np.inf]
METHODS = ("model", "linear")


@dataclass
class View:
    """The held-out rows of one dimension restricted to a set of runs, with everything metrics need."""

    rows: np.ndarray
    runs: list[int]
    w: np.ndarray  # 1/(T-1)
    t: np.ndarray
    y: np.ndarray  # per row, the run's outcome
    feasible: np.ndarray  # per row, the run's feasibility
    remaining: np.ndarray
    spent: np.ndarray
    p_feas: dict[str, np.ndarray]
    bounds: dict[tuple[str, float], tuple[np.ndarray, np.ndarray]]  # (method, level) -> (lo, hi) in budget units
    mid: dict[str, np.ndarray]
    run_key: np.ndarray  # per row, its run


def _view(run: BudgetRun, R: DimResult, rows: np.ndarray) -> View:
    ds, b = run.ds, run.bcfg
    pf = ds.prefixes
    tg = run.targets[R.dim]
    prow = pf["run"].to_numpy()[rows]
    y_run = np.asarray([int(t.outcome) for t in ds.trajs])
    feas_run = (y_run == 1) & (np.nan_to_num(tg.totals, nan=np.inf) <= R.budget)
    rate = R.rate[rows]
    ps = run.p_success[rows]
    bounds, mid = {}, {}
    med = list(b.alphas).index(0.5)
    for i, lv in enumerate(b.levels):
        lo_i, hi_i = pair_for(lv, b.alphas)
        bounds[("model", lv)] = (from_z(R.q[rows, lo_i], rate), from_z(R.q[rows, hi_i], rate))
        Q = R.Q_lin[rows, i]
        bounds[("linear", lv)] = (from_z(R.zhat_lin[rows] - Q, rate), from_z(R.zhat_lin[rows] + Q, rate))
    mid["model"] = from_z(R.q[rows, med], rate)
    mid["linear"] = from_z(R.zhat_lin[rows], rate)
    return View(rows, list(dict.fromkeys(prow.tolist())), pf["weight"].to_numpy()[rows], pf["t"].to_numpy()[rows],
                y_run[prow], feas_run[prow].astype(int), tg.remaining[rows], tg.spent[rows],
                {"model": ps * R.p_within[rows], "linear": ps * R.p_within_lin[rows], "outcome_only": ps},
                bounds, mid, prow)


def _round(d: Any) -> Any:
    if isinstance(d, dict):
        return {k: _round(v) for k, v in d.items()}
    return _f(d)


def _f(x: Any) -> Any:
    if isinstance(x, (float, np.floating)):
        return None if np.isnan(x) else round(float(x), 4)
    return x


def feasibility_block(v: View, p: np.ndarray, thr: float) -> dict[str, Any]:
    """BAGEN's feasibility scores: macro-F1 and Fail-F1 at the first turn and over all turns."""
    pred = (p >= thr).astype(int)
    first = v.t == 1
    out = {
        "macro_f1_first_turn": macro_f1(v.feasible[first], pred[first]),
        "macro_f1_all_turns": macro_f1(v.feasible, pred, v.w),
        "fail_f1_first_turn": class_f1(v.feasible[first], pred[first], 0),
        "fail_f1_all_turns": class_f1(v.feasible, pred, 0, v.w),
    }
    out["auroc_all_turns"] = auroc(v.feasible, p, v.w)
    return {k: _f(x) for k, x in out.items()}


def interval_block(v: View, method: str, level: float, B: float, p_feas: np.ndarray, thr: float) -> dict[str, Any]:
    """Plain coverage over every prefix, and BAGEN's interval scores on feasible runs predicted feasible."""
    lo, hi = v.bounds[(method, level)]
    W = np.sum(v.w)
    out: dict[str, Any] = {
        "coverage": interval_coverage(v.remaining, lo, hi, v.w),
        "truth_above_interval": float(np.sum(v.w * (v.remaining > hi)) / W),  # optimistic misses
        "truth_below_interval": float(np.sum(v.w * (v.remaining < lo)) / W),
        "width_over_B_median": interval_width(lo, hi, B, v.w),
        "width_over_B_mean": interval_width(lo, hi, B, v.w, stat="mean"),
    }
    sel = (v.feasible == 1) & (p_feas >= thr)
    out["bagen_rows"] = int(sel.sum())
    if sel.any():
        y, l, h, w = v.remaining[sel], lo[sel], hi[sel], v.w[sel]
        miss = (y < l) | (y > h)
        mid = (l + h) / 2
        rel = np.abs(mid - y) / np.maximum(y, 1e-12)
        rel_med = np.abs(v.mid[method][sel] - y) / np.maximum(y, 1e-12)
        out.update({
            "median_prediction_rel_error_median": weighted_quantile(rel_med, 0.5, w),
            "bagen_coverage": interval_coverage(y, l, h, w),
            "bagen_width_over_B_median": interval_width(l, h, B, w),
            "bagen_midpoint_rel_error_median": weighted_quantile(rel, 0.5, w),
            "bagen_midpoint_rel_error_mean": float(np.sum(w * rel) / np.sum(w)),
            "bagen_optimism": float(np.sum(w * (miss & (h < y))) / np.sum(w * miss)) if miss.any() else None,
        })
    return {k: _f(x) for k, x in out.items()}


def late_recognition(v: View, p: np.ndarray, B: float) -> dict[str, Any]:
    """Mean P(feasible) on failed runs per 10 % bin of budget used (each run counts once per bin)."""
    fail = v.y == 0
    used = v.spent / B
    b = np.clip(np.searchsorted(BINS, used, side="right") - 1, 0, len(BINS) - 2)
    table = []
    for k in range(len(BINS) - 1):
        m = fail & (b == k)
        if not m.any():
            table.append({"bin": _bin_label(k), "mean_p_feasible": None, "n_runs": 0})
            continue
        _, inv = np.unique(v.run_key[m], return_inverse=True)
        per_run = np.bincount(inv, weights=p[m]) / np.bincount(inv)
        table.append({"bin": _bin_label(k), "mean_p_feasible": _f(float(per_run.mean())), "n_runs": int(len(per_run))})
    first_below = next((row["bin"] for row in table if row["mean_p_feasible"] is not None and row["mean_p_feasible"] < 0.5), None)
    # per run: P(feasible) < 0.5 at some prefix with less than 60 % of the budget used
    _, inv = np.unique(v.run_key[fail], return_inverse=True)
    early = ((p[fail] < 0.5) & (used[fail] < 0.6)).astype(float)
    rec = np.bincount(inv, weights=early, minlength=inv.max() + 1 if len(inv) else 0) > 0 if len(inv) else np.zeros(0, bool)
    return {"bins": table, "first_bin_below_0.5": first_below,
            "failed_runs_recognized_before_60pct": _f(float(rec.mean())) if len(rec) else None, "n_failed_runs": int(len(rec))}


def _bin_label(k: int) -> str:
    lo = BINS[k]
    return f">={lo:.0%}" if np.isinf(BINS[k + 1]) else f"{lo:.0%}-{BINS[k + 1]:.0%}"


def _width_at_coverage(v: View, R: DimResult, target: float | None, B: float) -> dict[str, Any] | None:
    """Diagnostic (uses held-out labels, never a decision): the linear baseline's median width/B when its
    symmetric z-interval is widened or narrowed until its coverage equals `target`."""
    if target is None:
        return None
    zhat, rate = R.zhat_lin[v.rows], R.rate[v.rows]
    # true z >= 0, so [max(zhat - Q, 0), zhat + Q] covers it iff |z - zhat| <= Q: the Q reaching `target`
    # coverage is a weighted quantile of |z - zhat|
    Q = weighted_quantile(np.abs(R.z[v.rows] - zhat), target, v.w)
    if Q is None:
        return None
    lo, hi = from_z(zhat - Q, rate), from_z(zhat + Q, rate)
    return {"coverage": _f(interval_coverage(v.remaining, lo, hi, v.w)), "width_over_B_median": _f(interval_width(lo, hi, B, v.w))}


def early_stop_block(run: BudgetRun, R: DimResult, v: View, method: str, group_of_run: dict[int, str]) -> dict[str, Any]:
    """Early stop on P(feasible) < tau (tau from the run's own outer fold) or a step cap."""
    ds = run.ds
    pf = ds.prefixes
    tg = run.targets[R.dim]
    slices = _run_slices(pf["run"].to_numpy())
    lo = max(run.cfg.min_halt_step, 1) - 1
    y_run = np.asarray([int(t.outcome) for t in ds.trajs])
    T_run = np.asarray([len(t.steps) for t in ds.trajs])
    rows_all = v.rows
    p_rows = np.ones(len(rows_all)) if method.startswith("step_cap") else v.p_feas[method]
    ss = _stopset(tg, rows_all, pf["run"].to_numpy(), p_rows, _row_groups(pf, rows_all, group_of_run), y_run, T_run, slices,
                  np.ones(len(rows_all), bool), R.budget)
    if method.startswith("step_cap"):
        if method == "step_cap":
            ks = [R.taus[g]["step_cap"].get("k") for g in ss.group]
            halt = np.asarray([cap_halts(_one(ss, i), k)[0] if k else len(ss.p[i]) for i, k in enumerate(ks)])
            out = stop_stats(ss, halt)
            out["caps"] = {g: R.taus[g]["step_cap"].get("k") for g in sorted(set(ss.group))}
        else:
            k = int(method.rsplit("_", 1)[1])
            out = stop_stats(ss, cap_halts(ss, k))
            out["cap"] = k
        return _round(out)
    halt = np.asarray([_halt_index(p, np.asarray([R.taus[g][method]["tau"]]), lo)[0] for p, g in zip(ss.p, ss.group)])
    out = stop_stats(ss, halt)
    out["tau"] = {g: R.taus[g][method]["tau"] for g in sorted(set(ss.group))}
    # frontier diagnostic: one tau chosen on these held-out labels with the same rule (never the headline)
    orc = select_tau(ss, run.bcfg.taus, run.bcfg.max_cost_pp, lo)
    o = stop_stats(ss, np.asarray([_halt_index(p, np.asarray([orc["tau"]]), lo)[0] for p in ss.p]))
    out["oracle_tau"] = {"tau": orc["tau"], "saved_on_failed": o.get("saved_on_failed"),
                         "success_rate_cost_pp": o.get("success_rate_cost_pp"),
                         "note": "tau picked on the held-out labels: an upper bound for this P(feasible), never the headline"}
    return _round(out)


def _row_groups(pf: Any, rows: np.ndarray, group_of_run: dict[int, str]) -> np.ndarray:
    return np.asarray([group_of_run[int(r)] for r in pf["run"].to_numpy()[rows]])


def _one(ss: StopSet, i: int) -> StopSet:
    return StopSet([ss.group[i]], ss.y[i:i + 1], ss.feas[i:i + 1], ss.T[i:i + 1], [ss.p[i]], [ss.rem[i]], ss.total[i:i + 1], ss.budget)


def dim_block(run: BudgetRun, R: DimResult, rows: np.ndarray, group_of_run: dict[int, str]) -> dict[str, Any]:
    """Every BAGEN metric of one dimension on a set of held-out rows."""
    b = run.bcfg
    if len(rows) == 0:
        return {"n_runs": 0}
    v = _view(run, R, rows)
    B = R.budget
    out: dict[str, Any] = {
        "n_runs": len(v.runs),
        "n_prefixes": int(len(rows)),
        "resolve_rate": _f(float(np.mean([run.ds.trajs[r].outcome for r in v.runs]))),
        "feasible_rate": _f(float(np.mean(v.feasible[v.t == 1]))) if (v.t == 1).any() else None,
        "coverage": {m: {str(lv): _f(interval_coverage(v.remaining, *v.bounds[(m, lv)], v.w)) for lv in b.levels} for m in METHODS},
        "intervals": {m: {str(lv): interval_block(v, m, lv, B, v.p_feas[m], b.feasible_threshold) for lv in b.levels} for m in METHODS},
        "feasibility": {m: feasibility_block(v, v.p_feas[m], b.feasible_threshold) for m in ("model", "linear", "outcome_only")},
        "late_recognition": {m: late_recognition(v, v.p_feas[m], B) for m in ("model", "linear", "outcome_only")},
    }
    out["linear_at_model_coverage"] = {str(lv): _width_at_coverage(v, R, out["coverage"]["model"][str(lv)], B) for lv in b.levels}
    # systematic shift of this agent against the training agents: weighted median of z_true - z_predicted
    # (z = log1p(remaining / pace); +0.69 means the truth is about twice the predicted median)
    med = list(b.alphas).index(0.5)
    out["median_z_residual"] = {"model": _f(weighted_quantile(R.z[rows] - R.q[rows, med], 0.5, v.w)),
                                "linear": _f(weighted_quantile(R.z[rows] - R.zhat_lin[rows], 0.5, v.w))}
    caps = sorted({int(np.ceil(f * run.budgets["steps"])) for f in (0.5, 0.75, 1.0)}) if "steps" in run.budgets else []
    methods = ["model", "linear", "outcome_only", "step_cap"] + [f"step_cap_{k}" for k in caps]
    out["early_stop"] = {m: early_stop_block(run, R, v, m, group_of_run) for m in methods}
    return out


def budget_report(run: BudgetRun) -> dict[str, Any]:
    """reports/<bench>/budget.json: per dimension, per held-out agent and pooled over the large ones."""
    ds, b = run.ds, run.bcfg
    pf = ds.prefixes
    prow = pf["run"].to_numpy()
    run_agent = np.asarray([t.agent for t in ds.trajs])
    row_agent = run_agent[prow]
    group_of_agent = {a: g.name for g in run.groups for a in g.agents}
    group_of_run = {i: group_of_agent[a] for i, a in enumerate(run_agent)}
    large = [g.name for g in run.groups if not g.small]
    small = next((g for g in run.groups if g.small), None)
    dims_out: dict[str, Any] = {}
    for d, R in run.dims.items():
        tg = run.targets[d]
        pred = R.outer >= 0
        agents_out = {}
        for a in ds.agents:
            rows = np.flatnonzero(pred & (row_agent == a))
            if len(rows):
                blk = dim_block(run, R, rows, group_of_run)
                blk["small_n"] = group_of_agent[a] == SMALL
                agents_out[a] = blk
        pooled_rows = np.flatnonzero(pred & np.isin(row_agent, large))
        dims_out[d] = {
            "budget_B": R.budget,
            "budget_rule": f"{b.budget_quantile:.0%} quantile of run totals over every labelled run whose {d} is known"
                           + (" (rounded up)" if d == "steps" else " (2 significant digits)"),
            "runs_known": int(tg.run_known.sum()),
            "runs_excluded_unknown": tg.excluded_by_agent(ds),
            "runs_with_free_opening_turn": tg.free_opening_runs,
            "holdout_groups": sorted(R.folds),
            "skipped": R.skipped,
            "pooled": dim_block(run, R, pooled_rows, group_of_run),
            "small_group": dim_block(run, R, np.flatnonzero(pred & np.isin(row_agent, small.agents)), group_of_run) if small else None,
            "agents": agents_out,
            "folds": R.folds,
            "online": _online_report(run, R, pred, row_agent, large, group_of_agent),
        }
    rep = {
        "bench": ds.bench,
        "version": 1,
        # the outcome model's task prior (a static feature here too) is dated like loao.json's headline
        "protocol": "as_of" if run.cfg.prior_pool == "as_of" else "current_pool",
        "seconds": run.seconds,
        "config": {"budget": b.to_dict(), "outcome_model": run.cfg.to_dict()},
        "method": {
            "targets": "remaining usage after prefix t (steps t..T-1) per dimension; runs with any unknown step are excluded "
                       "from that dimension, never counted as 0; tau2's hard-coded greeting (no LLM call, no usage at all) counts as 0",
            "estimator": "LightGBM quantile regression of z = log1p(remaining / pace), pace = (spent + unit)/(t + 1); alphas "
                         f"{list(b.alphas)}; crossing fixed by sorting; features: the outcome model's fold-free blocks "
                         f"({fold_free(run.cfg.families)}) + spend so far, pace, last step / pace",
            "conformal": "CQR on calibration agents: training agents dealt into <= "
                         f"{b.max_folds} agent folds; fold k's model (fitted without fold k and without the held-out agent) scores fold k; "
                         f"correction = weighted level*(1+1/n_runs) quantile of the scores; weights 1/(T-1) per prefix and "
                         f"{'equal total weight per agent group' if b.score_weighting == 'agent' else 'equal weight per run'}; "
                         "held-out prediction = mean of the fold models' quantiles + correction",
            "feasibility": "feasible = success and total <= B; P(feasible) = P(success) [outcome model without the held-out agent] "
                           "x P(remaining <= B - spent) [piecewise-linear CDF through the corrected quantiles]; predicted feasible iff "
                           f"P >= {b.feasible_threshold}",
            "early_stop": f"halt at the first t with P(feasible) < tau; tau maximizes the budget saved on failed runs of the calibration "
                          f"agents (inner predictions, corrections without their own fold) s.t. the mean over those agent groups of the "
                          f"success-rate cost <= {b.max_cost_pp} pp",
            "linear_baseline": "remaining = spend per step so far x (median T of training runs longer than t - t), symmetric "
                               "z-interval conformalized on the same calibration agents; its P(remaining <= room) is the weighted CDF "
                               "of its calibration residuals",
            "step_cap": "halt every run after k steps; `step_cap` picks k on the calibration agents with the same rule, "
                        "`step_cap_<k>` are fixed caps at 50/75/100 % of B_steps",
            "pooled": "over the large held-out agents, each predicted by its own fold; small agents are held out together",
            "metrics": "coverage: weighted share of prefixes (1/(T-1)) whose remaining usage lies in the interval; bagen_*: on "
                       "prefixes of feasible runs predicted feasible; width/B; midpoint relative error |mid - y|/y; optimism = share "
                       "of misses where the interval lies below the truth; late recognition: failed runs, bins of spent/B",
        },
        "holdout_groups": [{"name": g.name, "agents": g.agents, "small": g.small} for g in run.groups],
        "dimensions": dims_out,
    }
    rep["targets"] = target_summary(rep, b)
    return rep


def _online_report(run: BudgetRun, R: DimResult, pred: np.ndarray, row_agent: np.ndarray, large: list[str],
                   group_of_agent: dict[str, str]) -> dict[str, Any]:
    """``budget_online``'s intervals per held-out agent and pooled over the large ones (beside the label-free ones)."""
    from .budget_online import NOTE, ONLINE_MIN_RUNS, ONLINE_SEED, online_block

    b, tg = run.bcfg, run.targets[R.dim]
    prow = run.ds.prefixes["run"].to_numpy()
    w = run.ds.prefixes["weight"].to_numpy()

    def blk(rows: np.ndarray) -> dict[str, Any]:
        return online_block(R.q_online[rows], R.n_own_online[rows], R.rate[rows], tg.remaining[rows], w[rows], prow[rows],
                            b.alphas, b.levels, R.budget)

    agents = {a: dict(blk(np.flatnonzero(pred & (row_agent == a))), small_n=group_of_agent[a] == SMALL)
              for a in run.ds.agents if (pred & (row_agent == a)).any()}
    return {"note": NOTE, "min_runs": ONLINE_MIN_RUNS, "order_seed": ONLINE_SEED,
            "pooled": blk(np.flatnonzero(pred & np.isin(row_agent, large))), "agents": agents}


def target_summary(rep: dict[str, Any], b: BudgetConfig) -> dict[str, Any]:
    """The issue's four targets, measured (pooled over large held-out agents, and per agent for coverage)."""
    out: dict[str, Any] = {}
    for d, blk in rep["dimensions"].items():
        P = blk["pooled"]
        if not P.get("n_runs"):
            continue
        cov = {}
        for lv in b.levels:
            per = {a: x["coverage"]["model"][str(lv)] for a, x in blk["agents"].items() if not x["small_n"]}
            ok = {a: c is not None and abs(c - lv) <= 0.05 for a, c in per.items()}
            cov[str(lv)] = {"pooled": P["coverage"]["model"][str(lv)],
                            "pooled_within_5pp": P["coverage"]["model"][str(lv)] is not None and abs(P["coverage"]["model"][str(lv)] - lv) <= 0.05,
                            "agents_within_5pp": f"{sum(ok.values())}/{len(ok)}", "per_agent": per}
        wid = {}
        for lv in b.levels:
            m = P["intervals"]["model"][str(lv)]["width_over_B_median"]
            l = P["intervals"]["linear"][str(lv)]["width_over_B_median"]
            eq = (P.get("linear_at_model_coverage") or {}).get(str(lv)) or {}
            wid[str(lv)] = {"model": m, "linear_conformal": l, "linear_coverage": P["coverage"]["linear"][str(lv)],
                            "linear_at_model_coverage": eq.get("width_over_B_median"),
                            "model_narrower": m is not None and eq.get("width_over_B_median") is not None and m < eq["width_over_B_median"]}
        es = P["early_stop"]["model"]
        unc = es.get("uncapped") or {}
        lr = P["late_recognition"]["model"]
        first = lr["first_bin_below_0.5"]
        out[d] = {
            "coverage_within_5pp": cov,
            "median_width_over_B": wid,
            "early_stop": {"saved_on_failed": es["saved_on_failed"], "steps_saved_on_failed": es["steps_saved_on_failed"],
                           "success_rate_cost_pp": es["success_rate_cost_pp"], "false_abort_rate": es["false_abort_rate"],
                           "meets_40pct_at_2pp": (es["saved_on_failed"] or 0) >= 0.4 and (es["success_rate_cost_pp"] or 0) <= 2.0,
                           "oracle_tau": es.get("oracle_tau"),
                           "uncapped_saved_on_unresolved": _f(unc.get("saved_on_unresolved")),
                           "uncapped_resolve_rate_cost_pp": _f(unc.get("resolve_rate_cost_pp")),
                           "tau": es.get("tau")},
            "late_recognition": {"first_bin_below_0.5": first,
                                 "below_0.5_before_60pct": first is not None and not first.startswith(">=") and float(first.split("-")[1].rstrip("%")) <= 60,
                                 "failed_runs_recognized_before_60pct": lr["failed_runs_recognized_before_60pct"]},
        }
        on = blk.get("online")
        if on and on["pooled"].get("n_runs"):
            oc = {}
            for lv in b.levels:
                k = str(lv)
                per = {a: x["coverage"][k] for a, x in on["agents"].items() if not x["small_n"]}
                ok = {a: c is not None and abs(c - lv) <= 0.05 for a, c in per.items()}
                pc = on["pooled"]["coverage"][k]
                oc[k] = {"pooled": pc, "pooled_within_5pp": pc is not None and abs(pc - lv) <= 0.05,
                         "agents_within_5pp": f"{sum(ok.values())}/{len(ok)}", "per_agent": per,
                         "label_free_agents_within_5pp": cov[k]["agents_within_5pp"],
                         "median_width_over_B": on["pooled"]["width_over_B_median"][k],
                         "label_free_median_width_over_B": wid[k]["model"]}
            out[d]["online"] = {"coverage_within_5pp": oc, "note": on["note"]}
    return out


# ====================================================================== plots

def plot_intervals(run: BudgetRun, path: Path, dims: list[str] | None = None) -> Path:
    """True remaining vs the conformalized bands along a few real held-out runs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ds, b = run.ds, run.bcfg
    dims = dims or [d for d in ("steps", "output_tokens", "cost_usd") if d in run.dims][:2]
    picks = _example_runs(run, dims[0], b.n_example_runs)
    fig, axes = plt.subplots(len(dims), len(picks), figsize=(4.2 * max(len(picks), 1), 3.4 * len(dims)), squeeze=False)
    slices = _run_slices(ds.prefixes["run"].to_numpy())
    for i, d in enumerate(dims):
        R = run.dims[d]
        for j, r in enumerate(picks):
            ax = axes[i][j]
            a, e = slices[r]
            rows = np.arange(a, e)
            rows = rows[R.outer[rows] >= 0]
            if len(rows) == 0:
                ax.set_axis_off()
                continue
            v = _view(run, R, rows)
            t = v.t
            lo9, hi9 = v.bounds[("model", 0.9)]
            lo8, hi8 = v.bounds[("model", 0.8)]
            ax.fill_between(t, lo9, hi9, alpha=0.2, color="C0", label="model 90%")
            ax.fill_between(t, lo8, hi8, alpha=0.35, color="C0", label="model 80%")
            ax.plot(t, v.mid["model"], "C0--", lw=1, label="model median")
            llo, lhi = v.bounds[("linear", 0.9)]
            ax.plot(t, llo, "C1:", lw=1.2, label="linear 90%")
            ax.plot(t, lhi, "C1:", lw=1.2)
            ax.plot(t, v.remaining, "k.-", lw=1.2, ms=3, label="true remaining")
            tr = ds.trajs[r]
            ax.set_title(f"{tr.agent[:30]}\n{'resolved' if tr.outcome else 'failed'}, T={len(tr.steps)}", fontsize=8)
            ax.set_xlabel("prefix t")
            ax.set_ylabel(f"remaining {d}")
            ax.set_yscale("symlog" if d == "steps" else "log")
            if i == 0 and j == 0:
                ax.legend(fontsize=6)
    fig.suptitle(f"{ds.bench}: remaining budget along held-out runs (LOAO, conformalized)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _example_runs(run: BudgetRun, dim: str, n: int) -> list[int]:
    """Deterministic picks: per the largest held-out agents, a resolved and a failed run of median length."""
    R = run.dims[dim]
    tg = run.targets[dim]
    prow = run.ds.prefixes["run"].to_numpy()
    predicted = set(prow[R.outer >= 0].tolist())
    others = set().union(*[set(prow[run.dims[d].outer >= 0].tolist()) for d in run.dims])
    large = sorted([g for g in run.groups if not g.small], key=lambda g: -run.ds.n_runs(g.agents[0]))
    picks: list[int] = []
    for g in large:
        for y in (1, 0):
            cand = [i for i, t in enumerate(run.ds.trajs) if t.agent in g.agents and t.outcome == y and i in predicted
                    and tg.run_known[i] and len(t.steps) >= 5 and i in others]
            if cand:
                Ts = np.asarray([len(run.ds.trajs[i].steps) for i in cand])
                picks.append(cand[int(np.argmin(np.abs(Ts - np.median(Ts))))])
            if len(picks) >= n:
                return picks
    return picks


def plot_late_recognition(rep: dict[str, Any], path: Path) -> Path:
    """Mean P(feasible) on failed runs vs the share of the budget already used."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dims = list(rep["dimensions"])
    fig, axes = plt.subplots(1, len(dims), figsize=(4.2 * len(dims), 3.4), squeeze=False)
    for ax, d in zip(axes[0], dims):
        P = rep["dimensions"][d]["pooled"]
        if not P.get("n_runs"):
            ax.set_axis_off()
            continue
        for m, style in (("model", "C0o-"), ("linear", "C1s--"), ("outcome_only", "C2^:")):
            rows = P["late_recognition"][m]["bins"]
            x = [k for k, r in enumerate(rows) if r["mean_p_feasible"] is not None]
            ax.plot(x, [rows[k]["mean_p_feasible"] for k in x], style, label=m, ms=4)
        labels = [r["bin"] for r in P["late_recognition"]["model"]["bins"]]
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=60, fontsize=6)
        ax.axhline(0.5, color="grey", lw=0.8)
        ax.axvline(5.5, color="grey", lw=0.8, ls=":")
        ax.set_ylim(0, 1)
        ax.set_title(f"{d}: B = {rep['dimensions'][d]['budget_B']:g}", fontsize=9)
        ax.set_xlabel("budget used (spent / B)")
        ax.set_ylabel("mean P(feasible), failed runs")
        ax.legend(fontsize=7)
    fig.suptitle(f"{rep['bench']}: late recognition (LOAO, pooled large held-out agents)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# ================================================================ entry point

def budget_config(bench: str, **overrides: Any) -> tuple[EvalConfig, BudgetConfig]:
    """The outcome model's settings for `bench` restricted to its fold-free families.

    The text family is refitted per fold (about two minutes a fit on tau2 on two
    cores); the LOAO here needs one outcome fit per (held-out agent, agent fold),
    so the budget evaluation uses the fold-free families only."""
    from .pipeline import eval_config

    bcfg = BudgetConfig(**{k: v for k, v in overrides.items() if k in BudgetConfig.__dataclass_fields__})
    cfg = eval_config(bench, n_jobs=bcfg.n_jobs, seed=bcfg.seed)
    cfg.families = fold_free(cfg.families)
    return cfg, bcfg


def budget_bench(bench: str, root: str | Path | None = None, progress: Callable[[str], None] | None = None) -> dict[str, Path]:
    """`earlyeval budget`: LOAO budget evaluation -> reports/<bench>/budget.json and two PNGs."""
    from .dataset import load_dataset
    from .pipeline import write_json
    from .workspace import reports_dir

    cfg, bcfg = budget_config(bench)
    ds = load_dataset(bench, cfg.families, Path(root) if root else None, progress=progress is not None)
    run = run_budget(ds, cfg, bcfg, progress)
    rep = budget_report(run)
    out = reports_dir(bench)
    paths = {"report": write_json(rep, out / "budget.json")}
    paths["intervals_png"] = plot_intervals(run, out / "budget_intervals.png")
    paths["late_png"] = plot_late_recognition(rep, out / "budget_late_recognition.png")
    if progress:
        for line in summary_lines(rep):
            progress(line)
    return paths


def summary_lines(rep: dict[str, Any]) -> list[str]:
    lines = [f"{rep['bench']}: budget evaluation in {rep['seconds']} s"]
    for d, t in rep["targets"].items():
        c = t["coverage_within_5pp"]
        w = t["median_width_over_B"]
        e = t["early_stop"]
        l = t["late_recognition"]
        lines.append(
            f"{d:<14} B={rep['dimensions'][d]['budget_B']:g} cov80={c['0.8']['pooled']} ({c['0.8']['agents_within_5pp']}) "
            f"cov90={c['0.9']['pooled']} ({c['0.9']['agents_within_5pp']}) width90 model={w['0.9']['model']} "
            f"linear@eq={w['0.9']['linear_at_model_coverage']} stop saved={e['saved_on_failed']} cost={e['success_rate_cost_pp']}pp "
            f"late<0.5 at {l['first_bin_below_0.5']}")
        if "online" in t:
            o = t["online"]["coverage_within_5pp"]
            lines.append(f"{'':<14} online (finished runs' budgets, no labels): cov80={o['0.8']['pooled']} ({o['0.8']['agents_within_5pp']}) "
                         f"cov90={o['0.9']['pooled']} ({o['0.9']['agents_within_5pp']}) width90={o['0.9']['median_width_over_B']}")
    return lines
