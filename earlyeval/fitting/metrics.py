"""Evaluation metrics, in one place: the evaluator, the sweep, ``score`` and the
Monitor replay all call these functions, so a number means the same everywhere.

The vocabulary (runs, halts, ``steps_saved`` split into task skip and in-run): docs/architecture.md, "Metrics: one
vocabulary".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import numpy as np

from earlyeval.core.trajectory import Trajectory
from earlyeval.features.evidence import ACTED, EVIDENCE, EvidenceRule, evidence_rule, prefix_gates
from earlyeval.model.policy import NEVER as NEVER  # re-exported: defined with the rule
from earlyeval.model.policy import SUCCESS, first_halt, first_halt_grid, gated
from earlyeval.model.policy import TASK_SKIP_T as TASK_SKIP_T  # re-exported: defined with the rule

OPEN = (
    ACTED | EVIDENCE
)  # the gate of a prefix whose run carries no steps to read (synthetic probabilities)


@dataclass
class RunSet:
    """Per-run predictions of one evaluation set, aligned by run."""

    agents: list[str]
    run_ids: list[str]
    y: np.ndarray  # (R,) 0/1
    T: np.ndarray  # (R,) steps
    p_s: list[np.ndarray]  # per run, P(success) after prefix t = 1..T-1
    p_f: list[np.ndarray]
    in_tokens: list[np.ndarray | None] = field(default_factory=list)  # per step, None when unknown
    out_tokens: list[np.ndarray | None] = field(default_factory=list)
    actions: list[list[str]] = field(default_factory=list)  # for the repeated-action baseline
    # per run, the gate of each prefix (``features.evidence``: an action read, the run's own success evidence);
    # empty for a set built from probabilities alone, whose prefixes are then all open (``OPEN``)
    gates: list[np.ndarray] = field(default_factory=list)
    task_skips: bool = (
        False  # the task-skip policy: may a task-level prefix halt (``policy.may_halt``)
    )

    def __len__(self) -> int:
        return len(self.y)

    def halt_probs(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """(p_s, p_f) per run as the halting rule reads them (``policy.gated``): NaN where a side may not halt.
        Every halting metric reads these; AUROC and calibration read the raw ``p_s``/``p_f``."""
        pairs = [self.gated_probs(i, a, b) for i, (a, b) in enumerate(zip(self.p_s, self.p_f))]
        return [a for a, _ in pairs], [b for _, b in pairs]

    def gated_probs(
        self, i: int, p_s: np.ndarray, p_f: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Probabilities of run ``i`` (its own, or re-predicted) gated by that run's prefixes' gates."""
        g = self.gates[i] if self.gates else np.full(len(p_s), OPEN, dtype=np.int8)
        return gated(p_s, p_f, g, self.task_skips)

    def with_task_skips(self, on: bool) -> "RunSet":
        """The same runs under the task-skip policy ``on`` (the report's task-skip block beside the default)."""
        return replace(self, task_skips=bool(on))

    def subset(self, mask: np.ndarray) -> "RunSet":
        idx = np.flatnonzero(mask)
        pick = lambda xs: [xs[i] for i in idx] if xs else []
        return RunSet(
            [self.agents[i] for i in idx],
            [self.run_ids[i] for i in idx],
            self.y[idx],
            self.T[idx],
            pick(self.p_s),
            pick(self.p_f),
            pick(self.in_tokens),
            pick(self.out_tokens),
            pick(self.actions),
            pick(self.gates),
            self.task_skips,
        )

    @classmethod
    def concat(cls, sets: Sequence["RunSet"]) -> "RunSet":
        """Several sets' runs as one (e.g. the agents of one scaffold as one unit)."""
        sets = [rs for rs in sets if len(rs)]
        if not sets:
            return cls([], [], np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), [], [])
        if len({rs.task_skips for rs in sets}) > 1:
            raise ValueError("RunSet.concat: the sets differ in their task-skip policy")
        if len({bool(rs.gates) for rs in sets}) > 1:
            raise ValueError("RunSet.concat: some sets carry their prefixes' gates and some do not")
        cat = lambda name: [x for rs in sets for x in getattr(rs, name)]  # noqa: E731
        return cls(
            cat("agents"),
            cat("run_ids"),
            np.concatenate([rs.y for rs in sets]),
            np.concatenate([rs.T for rs in sets]),
            cat("p_s"),
            cat("p_f"),
            cat("in_tokens"),
            cat("out_tokens"),
            cat("actions"),
            cat("gates"),
            sets[0].task_skips,
        )

    def of_agent(self, agent: str) -> "RunSet":
        return self.subset(np.asarray([a == agent for a in self.agents]))

    def prefix_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(y, p_s, p_f, weight) over every prefix t < T, weight 1/(T-1)."""
        ys, ps, pf, ws = [], [], [], []
        for y, a, b in zip(self.y, self.p_s, self.p_f):
            n = len(a)
            if n == 0:
                continue
            ys.append(np.full(n, y))
            ps.append(a)
            pf.append(b)
            ws.append(np.full(n, 1.0 / n))
        if not ys:
            return np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0)
        return np.concatenate(ys), np.concatenate(ps), np.concatenate(pf), np.concatenate(ws)


# ------------------------------------------------------------------ policy
# The halting rule itself is earlyeval.model.policy (numpy only, shared with the live Monitor).


def runset_of_runs(
    trajs: Sequence[Trajectory],
    p_s: Sequence[np.ndarray],
    p_f: Sequence[np.ndarray],
    evidence: EvidenceRule | str,
    task_skips: bool = False,
    gates: Sequence[np.ndarray] | None = None,
) -> RunSet:
    """The RunSet of labelled runs from their per-prefix probabilities (t = 1..T-1): the one builder, used by
    the offline evaluation (``evaluate.runset``) and by a replay through the Monitor (``replay.runset_of``);
    each prefix's gate read from the run's steps by the benchmark's success ``evidence`` rule (``gates``: the
    same, already read by that rule, one array per run)."""
    if gates is None:
        rule = evidence_rule(evidence) if isinstance(evidence, str) else evidence
        gates = [prefix_gates(rule, t.steps) for t in trajs]
    return RunSet(
        [t.agent for t in trajs],
        [t.run_id for t in trajs],
        np.asarray([int(t.outcome) for t in trajs]),
        np.asarray([len(t.steps) for t in trajs]),
        [np.asarray(p, dtype=np.float64) for p in p_s],
        [np.asarray(p, dtype=np.float64) for p in p_f],
        [_tokens([s.input_tokens for s in t.steps]) for t in trajs],
        [_tokens([s.output_tokens for s in t.steps]) for t in trajs],
        [[s.action.strip() for s in t.steps] for t in trajs],
        [_aligned(g, len(p)) for g, p in zip(gates, p_s)],
        task_skips,
    )


def _aligned(g: np.ndarray, n: int) -> np.ndarray:
    """A run's gates for its ``n`` predicted prefixes (a run of T steps has T-1; a prediction cut shorter keeps
    its first n)."""
    if len(g) < n:
        raise ValueError(f"{n} predicted prefixes for a run of {len(g) + 1} steps")
    return g[:n]


def _tokens(xs: list[int | None]) -> np.ndarray | None:
    """A run's per-step token counts, or None when any step's count is unknown (unknown is not 0)."""
    if not xs or any(x is None for x in xs):
        return None
    return np.asarray(xs, dtype=np.float64)


def halting(
    p_s: np.ndarray,
    p_f: np.ndarray,
    tau_s: float,
    tau_f: float,
    min_t: int = 1,
    gate: np.ndarray | None = None,
    task_skips: bool = False,
) -> tuple[int, int]:
    """(t_halt, predicted) for one run under ``policy``'s rule, its prefixes gated by ``gate`` (None: open, a run
    read from probabilities alone); t_halt = 0 (and predicted -1) means not halted."""
    g = np.full(len(p_s), OPEN, dtype=np.int8) if gate is None else gate
    a, b = gated(p_s, p_f, g, task_skips)
    t, pred = first_halt([a], [b], tau_s, tau_f, min_t)
    return int(t[0]), int(pred[0])


def apply_policy(
    rs: RunSet, tau_s: float, tau_f: float, min_t: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """(t_halt, predicted) per run of ``rs``; see ``halting``."""
    if len(rs) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    t, pred = first_halt(*rs.halt_probs(), tau_s, tau_f, min_t)
    return t.astype(np.int64), pred.astype(np.int64)


# ----------------------------------------------------------------- metrics


def _tokens_saved(tokens: Sequence[np.ndarray | None], t_halt: np.ndarray) -> float | None:
    tot = saved = 0.0
    known = False
    for tok, th in zip(tokens, t_halt):
        if tok is None or len(tok) == 0 or np.any(np.isnan(tok)):
            continue
        known = True
        s = float(np.sum(tok))
        tot += s
        if th > 0:
            saved += float(np.sum(tok[th:]))
    if not known or tot <= 0:
        return None
    return saved / tot


def _f(x: float | None) -> float | None:
    if x is None:
        return None
    if isinstance(x, float) and math.isnan(x):
        return None
    return float(x)


def auroc(y: np.ndarray, p: np.ndarray, w: np.ndarray) -> float | None:
    # scikit-learn is imported here, not at the top: the live path (Monitor.warm_start) imports this
    # module for the halting metrics and must not load scikit-learn (a third-party import, no cycle)
    from sklearn.metrics import roc_auc_score

    if len(y) == 0 or len(np.unique(y)) < 2:
        return None
    return float(roc_auc_score(y, p, sample_weight=w))


def outcome_metrics(
    y: np.ndarray,
    T: np.ndarray,
    t_halt: np.ndarray,
    pred: np.ndarray,
    in_tokens: Sequence | None = None,
    out_tokens: Sequence | None = None,
) -> dict[str, Any]:
    """Policy metrics of one set of runs given where (and as what) each was halted."""
    n = len(y)
    if n == 0:
        return {"n_runs": 0}
    halted = t_halt > 0
    recorded = np.where(halted, pred, y)
    correct = recorded == y
    pos, neg = y == 1, y == 0
    sr = float(correct[pos].mean()) if pos.any() else None
    fr = float(correct[neg].mean()) if neg.any() else None
    saved_steps = np.where(halted, T - t_halt, 0)
    skip = halted & (t_halt <= TASK_SKIP_T)
    tot = T.sum()
    return {
        "n_runs": int(n),
        "resolve_rate": float(y.mean()),
        "halted_fraction": float(halted.mean()),
        "halted_accuracy": float(correct[halted].mean()) if halted.any() else None,
        "outcome_accuracy": float(correct.mean()),
        "success_recall": sr,
        "failure_recall": fr,
        "economic_consistency": None if sr is None or fr is None else min(sr, fr),
        "steps_saved": float(saved_steps.sum() / tot) if tot > 0 else None,
        "steps_saved_task_skip": float(saved_steps[skip].sum() / tot) if tot > 0 else None,
        "steps_saved_in_run": float(saved_steps[~skip].sum() / tot) if tot > 0 else None,
        "input_tokens_saved": _tokens_saved(in_tokens, t_halt) if in_tokens else None,
        "output_tokens_saved": _tokens_saved(out_tokens, t_halt) if out_tokens else None,
        "predicted_resolve_rate": float(recorded.mean()),
        "resolve_rate_shift_pp": float(100.0 * (recorded.mean() - y.mean())),
        "halted_as_success": int((halted & (pred == 1)).sum()),
        "halted_as_failure": int((halted & (pred == 0)).sum()),
    }


def evaluate_policy(rs: RunSet, tau_s: float, tau_f: float, min_t: int = 1) -> dict[str, Any]:
    """Full metric block for a RunSet under thresholds (tau_s, tau_f)."""
    t_halt, pred = apply_policy(rs, tau_s, tau_f, min_t)
    m = outcome_metrics(rs.y, rs.T, t_halt, pred, rs.in_tokens, rs.out_tokens)
    y, ps, pf, w = rs.prefix_arrays()
    m["auroc_success"] = auroc(y, ps, w)
    m["auroc_failure"] = auroc(1 - y, pf, w)
    m["mean_p_success"] = float(np.average(ps, weights=w)) if len(w) else None
    m["thresholds"] = {"success": float(tau_s), "failure": float(tau_f)}
    return {k: _f(v) if isinstance(v, float) else v for k, v in m.items()}


def spearman(pred: Sequence[float], true: Sequence[float]) -> float | None:
    from scipy.stats import spearmanr

    if len(pred) < 3:
        return None
    r = spearmanr(pred, true).statistic
    return None if r != r else float(r)


# -------------------------------------------------------------- grid search


@dataclass
class GridResult:
    taus_s: np.ndarray
    taus_f: np.ndarray
    outcome_accuracy: np.ndarray  # (Ns, Nf)
    halted_accuracy: np.ndarray
    steps_saved: np.ndarray
    shift_pp: np.ndarray
    economic_consistency: np.ndarray
    success_recall: np.ndarray | None = None
    failure_recall: np.ndarray | None = None
    n_pos: int = 0
    n_neg: int = 0


def wilson_lower(p: np.ndarray, n: int, confidence: float) -> np.ndarray:
    """One-sided Wilson lower confidence bound of a proportion p observed on n trials."""
    from scipy.stats import norm

    if n <= 0:
        return np.full_like(np.asarray(p, dtype=float), np.nan)
    if isinstance(confidence, bool) or not (
        isinstance(confidence, (int, float)) and 0.0 < confidence < 1.0
    ):
        # 1.0 is an infinite z, which makes every bound NaN (and a NaN bound must never pass a constraint)
        raise ValueError(f"the Wilson bound's confidence must be in (0, 1), not {confidence!r}")
    z = float(norm.ppf(confidence))
    p = np.asarray(p, dtype=float)
    centre = p + z * z / (2 * n)
    half = z * np.sqrt(np.clip(p * (1 - p) / n + z * z / (4 * n * n), 0, None))
    return (centre - half) / (1 + z * z / n)


def grid_metrics(rs: RunSet, taus_s: np.ndarray, taus_f: np.ndarray, min_t: int = 1) -> GridResult:
    """Vectorized policy metrics for every (tau_s, tau_f) pair (``policy.first_halt_grid``), then broadcasting."""
    R = len(rs)
    Ns, Nf = len(taus_s), len(taus_f)
    if R == 0:
        z = np.full((Ns, Nf), np.nan)
        return GridResult(taus_s, taus_f, z, z, z, z, z)
    t_halt, pred = first_halt_grid(*rs.halt_probs(), taus_s, taus_f, min_t)  # (R, Ns, Nf)
    halted = t_halt > 0
    pred_success = pred == SUCCESS
    y = rs.y[:, None, None]
    T = rs.T[:, None, None].astype(np.float64)
    recorded = np.where(halted, pred_success.astype(int), y)
    correct = recorded == y
    n_halted = halted.sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        halted_acc = np.where(
            n_halted > 0, (correct & halted).sum(0) / np.maximum(n_halted, 1), np.nan
        )
        saved = np.where(halted, T - t_halt, 0).sum(0) / T.sum()
        pos, neg = rs.y == 1, rs.y == 0
        sr = correct[pos].mean(0) if pos.any() else np.full((Ns, Nf), np.nan)
        fr = correct[neg].mean(0) if neg.any() else np.full((Ns, Nf), np.nan)
    return GridResult(
        taus_s,
        taus_f,
        correct.mean(0),
        halted_acc,
        saved,
        100.0 * (recorded.mean(0) - rs.y.mean()),
        np.minimum(sr, fr),
        sr,
        fr,
        int(pos.sum()),
        int(neg.sum()),
    )


# ---------------------------------------------------------------- baselines


def step_cap_policy(T: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Halt every run still going after k steps and call it a failure."""
    t_halt = np.where(T > k, k, 0)
    return t_halt.astype(np.int64), np.where(t_halt > 0, 0, -1)


def repeat_action_policy(
    actions: list[list[str]], repeats: int = 3
) -> tuple[np.ndarray, np.ndarray]:
    """Halt as failure once the same non-empty action has been taken `repeats` times in a row."""
    t_out, p_out = [], []
    for acts in actions:
        th, run = 0, 1
        for i in range(1, len(acts) - 1):  # halting after step i+1 must leave the run unfinished
            run = run + 1 if acts[i] and acts[i] == acts[i - 1] else 1
            if run >= repeats:
                th = i + 1
                break
        t_out.append(th)
        p_out.append(0 if th else -1)
    return np.asarray(t_out, dtype=np.int64), np.asarray(p_out, dtype=np.int64)


# ===========================================================================
# Interval and classification metrics (budget awareness, ARCHITECTURE §5).
# Generic helpers used by earlyeval.budget; weights are per prefix (1/(T-1)
# makes every run weigh the same).  Nothing above this line depends on them.
# ===========================================================================


def weighted_quantile(x: np.ndarray, q: float, w: np.ndarray | None = None) -> float | None:
    """Lower weighted q-quantile: the smallest x whose cumulative weight share reaches q."""
    x = np.asarray(x, dtype=np.float64)
    w = np.ones_like(x) if w is None else np.asarray(w, dtype=np.float64)
    keep = ~np.isnan(x) & (w > 0)
    x, w = x[keep], w[keep]
    if len(x) == 0:
        return None
    order = np.argsort(x, kind="stable")
    cw = np.cumsum(w[order])
    k = int(np.searchsorted(cw, min(max(q, 0.0), 1.0) * cw[-1] - 1e-12 * cw[-1], side="left"))
    return float(x[order][min(k, len(x) - 1)])


def interval_coverage(
    y: np.ndarray, lo: np.ndarray, hi: np.ndarray, w: np.ndarray | None = None
) -> float | None:
    """Weighted share of targets inside their closed interval [lo, hi]."""
    y, lo, hi = (np.asarray(a, dtype=np.float64) for a in (y, lo, hi))
    w = np.ones_like(y) if w is None else np.asarray(w, dtype=np.float64)
    if len(y) == 0 or w.sum() <= 0:
        return None
    hit = (y >= lo) & (y <= hi)
    return float(np.sum(w * hit) / np.sum(w))


def interval_width(
    lo: np.ndarray,
    hi: np.ndarray,
    scale: float = 1.0,
    w: np.ndarray | None = None,
    stat: str = "median",
) -> float | None:
    """Weighted median (or mean) of (hi - lo) / scale."""
    width = (np.asarray(hi, dtype=np.float64) - np.asarray(lo, dtype=np.float64)) / scale
    if len(width) == 0:
        return None
    if stat == "mean":
        ww = np.ones_like(width) if w is None else np.asarray(w, dtype=np.float64)
        return float(np.sum(ww * width) / np.sum(ww)) if np.sum(ww) > 0 else None
    return weighted_quantile(width, 0.5, w)


def class_f1(
    y: np.ndarray, pred: np.ndarray, positive: int = 1, w: np.ndarray | None = None
) -> float | None:
    """F1 of one class (weighted counts); None when the class is absent from both y and pred."""
    y, pred = np.asarray(y), np.asarray(pred)
    w = np.ones(len(y)) if w is None else np.asarray(w, dtype=np.float64)
    tp = float(np.sum(w * ((pred == positive) & (y == positive))))
    fp = float(np.sum(w * ((pred == positive) & (y != positive))))
    fn = float(np.sum(w * ((pred != positive) & (y == positive))))
    if tp + fp + fn == 0:
        return None
    return 2 * tp / (2 * tp + fp + fn)


def macro_f1(y: np.ndarray, pred: np.ndarray, w: np.ndarray | None = None) -> float | None:
    """Mean F1 over the two classes 0/1 (a class absent from y and pred scores 0, as in sklearn)."""
    if len(np.asarray(y)) == 0:
        return None
    f = [class_f1(y, pred, c, w) for c in (0, 1)]
    return float(np.mean([0.0 if v is None else v for v in f]))
