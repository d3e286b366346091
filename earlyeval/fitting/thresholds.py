"""How halting thresholds are chosen: the rule over inner agents, and the warm start's certification.

``evaluate`` (LOAO), ``earlyeval train`` and the warm start (``fitting.warm``) call the same functions; what a
halting process holds (the pair, an override, a warm start's result) is ``earlyeval.model.thresholds``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Protocol

import numpy as np

from earlyeval.config.eval_config import TAU_GRID
from earlyeval.core.numerics import logit
from earlyeval.fitting.certify import certify
from earlyeval.fitting.metrics import NEVER, RunSet, apply_policy, grid_metrics, wilson_lower
from earlyeval.fitting.risk_control import AgentQuantileRule, select_agent_quantile, select_side
from earlyeval.model.thresholds import EPS, IDENTITY, Recalibration, ThresholdError

# ------------------------------------------------------------ the selection rule


class ThresholdRule(Protocol):
    """What ``select_thresholds`` reads of a configuration (``EvalConfig`` and ``WarmStartRule`` have it)."""

    taus: tuple
    target_accuracy: float
    constraint: str
    confidence: float | None
    min_halt_step: int


RULES = ("agent-quantile", "worst-case")


def choose_thresholds(
    sets: dict[str, RunSet], cfg: Any, method: str = "inner-loao"
) -> dict[str, Any]:
    """The configured threshold rule over the units ``sets`` (inner agents or scaffolds): ``cfg.threshold_rule``
    "agent-quantile" (``risk_control``: each side by an order statistic over the units, with a stated
    guarantee; settings ``risk_alpha``, ``risk_delta``, ``risk``) or "worst-case" (``select_thresholds``:
    the Wilson-bounded recall target on every unit).  The one entry point of evaluate, train, routing."""
    rule = getattr(cfg, "threshold_rule", "worst-case")
    if rule == "agent-quantile":
        aq = AgentQuantileRule(
            taus=tuple(cfg.taus),
            alpha=float(cfg.risk_alpha),
            delta=float(cfg.risk_delta),
            risk=str(cfg.risk),
            min_halt_step=int(cfg.min_halt_step),
            success_risk=getattr(cfg, "success_risk", None),
            success_alpha=getattr(cfg, "success_alpha", None),
        )
        return select_agent_quantile(sets, aq, method=method)
    if rule == "worst-case":
        return {**select_thresholds(sets, cfg, method=method), "rule": "worst-case"}
    raise ValueError(f"threshold_rule must be one of {RULES}, not {rule!r}")


def live_thresholds(
    sets: dict[str, RunSet], cfg: Any, method: str = "inner-loao"
) -> dict[str, Any]:
    """The live default's pair (``halt_on: failure``): success off, the failure side chosen for that mode by the
    agent-quantile rule at ``cfg.live_risk``/``cfg.live_alpha`` (default: the benchmark mode's), with its own
    guarantee; under the worst-case rule, the benchmark pair with success off."""
    if getattr(cfg, "threshold_rule", "worst-case") != "agent-quantile":
        both = choose_thresholds(sets, cfg, method)
        return {**both, "success": NEVER, "mode": "failure"}
    risk = cfg.live_risk or cfg.risk
    alpha = float(cfg.live_alpha if cfg.live_alpha is not None else cfg.risk_alpha)
    rule = AgentQuantileRule(
        taus=tuple(cfg.taus),
        alpha=alpha,
        delta=float(cfg.risk_delta),
        risk=str(risk),
        min_halt_step=int(cfg.min_halt_step),
    )
    f = select_side(sets, rule, "failure")
    return {
        "success": NEVER,
        "failure": f["tau"],
        "mode": "failure",
        "method": method,
        "rule": "agent-quantile",
        "risk": risk,
        "alpha": alpha,
        "delta": rule.delta,
        "violations_allowed": f["violations_allowed"],
        "guarantee_per_side": f["guarantee"],
        "guarantee": None
        if f["guarantee"] is None
        else (
            f"live (halt_on: failure): for a new agent exchangeable with these {f['n_agents']} agents, "
            f"P(its {_live_risk_words(str(risk))} > {alpha:g}) <= {f['guarantee']:.3f}"
        ),
        "boldest_safe": {"failure": f["per_agent"]},
    }


def _live_risk_words(risk: str) -> str:
    return {
        "mass": "share of runs halted wrongly as failures",
        "recall": "share of successful runs halted as failures",
        "precision": "share of its failure halts that are wrong",
    }[risk]


@dataclass
class WarmStartRule:
    """The training's own selection settings, as recorded in a model directory (``Monitor.warm_start``)."""

    taus: tuple
    target_accuracy: float = 0.95
    constraint: str = "recall"
    confidence: float | None = 0.9
    min_halt_step: int = 1

    @classmethod
    def from_training(cls, config: Mapping[str, Any], min_halt_step: int) -> "WarmStartRule":
        keep = {
            k: (tuple(v) if k == "taus" else v)
            for k, v in config.items()
            if k in ("target_accuracy", "constraint", "confidence", "taus")
        }
        keep.setdefault("taus", DEFAULT_TAUS)
        return cls(**keep, min_halt_step=min_halt_step)


DEFAULT_TAUS = TAU_GRID  # the threshold grid (config.eval_config: one definition)


def select_thresholds(
    sets: dict[str, RunSet],
    cfg: ThresholdRule,
    method: str = "inner-loao",
    floor: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """Max pooled steps saved s.t. the constraint holds on every agent in `sets`.

    ``cfg.constraint``: "recall" (default) -- the recall of each outcome (success and failure
    separately) >= target, so the rule does not depend on the agent's resolve rate; "accuracy" --
    outcome accuracy >= target.  With ``cfg.confidence`` the criterion is the Wilson lower bound
    at that level, not the point estimate (an agent with no error at all passes).  Ties go to the
    more conservative (higher) thresholds.  (NEVER, NEVER) -- no
    halting -- is always feasible.  ``floor`` (tau_s, tau_f): only pairs at or above it are candidates
    (a warm start may make given thresholds more cautious, never bolder).
    """
    taus = np.asarray(cfg.taus, dtype=np.float64)
    _check_rule(cfg)
    if not any(len(rs) for rs in sets.values()):
        return {
            "success": NEVER,
            "failure": NEVER,
            "method": method + " (no agent to select on: never halt)",
            "selected_on": sorted(sets),
            "target_accuracy": cfg.target_accuracy,
            "selection_steps_saved": 0.0,
            "selection_min_accuracy": None,
        }
    feasible = np.ones((len(taus), len(taus)), dtype=bool)
    saved_abs = np.zeros((len(taus), len(taus)))
    total_T = 0.0
    worst = np.full((len(taus), len(taus)), np.inf)
    for a, rs in sets.items():
        if len(rs) == 0:
            continue
        g = grid_metrics(rs, taus, taus, cfg.min_halt_step)
        conf = cfg.confidence

        def bound(p: np.ndarray, n: int) -> np.ndarray:
            # no error at all always passes: a small agent cannot certify 95 % even with zero errors
            return p if conf is None else np.where(p >= 1 - 1e-12, 1.0, wilson_lower(p, n, conf))

        if cfg.constraint == "accuracy":
            crit = bound(g.outcome_accuracy, len(rs))
            _refuse_nan(crit, a, "the outcome accuracy bound", cfg)
        elif cfg.constraint == "recall":
            sr, fr = bound(g.success_recall, g.n_pos), bound(g.failure_recall, g.n_neg)
            # an agent with one outcome only puts no constraint on the other side (its recall is 0/0); any
            # other NaN is a bound that could not be computed, and it never passes (_refuse_nan)
            for side, v, n in (("success", sr, g.n_pos), ("failure", fr, g.n_neg)):
                if n > 0:
                    _refuse_nan(v, a, f"the {side} recall bound", cfg)
            crit = np.minimum(sr if g.n_pos > 0 else 1.0, fr if g.n_neg > 0 else 1.0)
        else:
            raise ValueError(f"constraint must be 'accuracy' or 'recall', not {cfg.constraint!r}")
        feasible &= crit >= cfg.target_accuracy - 1e-12
        worst = np.minimum(worst, crit)
        saved_abs += g.steps_saved * rs.T.sum()
        total_T += rs.T.sum()
    saved = saved_abs / max(total_T, 1.0)
    # a threshold must be in (0.5, 1] (or NEVER), as a model directory is checked on load: at 0.5 a probability
    # of exactly one half would halt on both sides
    feasible &= (taus[:, None] > 0.5) & (taus[None, :] > 0.5)
    if floor is not None:
        feasible &= (taus[:, None] >= floor[0] - 1e-12) & (taus[None, :] >= floor[1] - 1e-12)
        feasible[-1, -1] = True  # never halting stays possible (NEVER is the grid's last value)
    score = np.where(feasible, saved, -1.0)
    # conservative tie-break: among maxima, the largest tau_s + tau_f
    best = score.max()
    cand = np.argwhere(np.isclose(score, best))
    i, j = max(cand, key=lambda ij: (taus[ij[0]] + taus[ij[1]], taus[ij[1]]))
    return {
        "success": float(taus[i]),
        "failure": float(taus[j]),
        "method": method,
        "selected_on": sorted(sets),
        "target_accuracy": cfg.target_accuracy,
        "selection_steps_saved": float(saved[i, j]),
        "selection_min_accuracy": float(worst[i, j]),
        "constraint": cfg.constraint,
        "confidence": cfg.confidence,
        **(
            {"floor": {"success": float(floor[0]), "failure": float(floor[1])}}
            if floor is not None
            else {}
        ),
    }


def _check_rule(cfg: ThresholdRule) -> None:
    """The rule's settings, in range before anything is selected with them (a confidence of 1.0 is an infinite
    z and a NaN bound; a target outside (0.5, 1] certifies nothing)."""
    c = cfg.confidence
    if c is not None and (
        isinstance(c, bool) or not isinstance(c, (int, float)) or not 0.0 < c < 1.0
    ):
        raise ThresholdError(
            f"threshold selection: confidence={c!r} must be in (0, 1) (or None for the point estimate); "
            "at 1.0 the Wilson bound is NaN and no threshold can be certified"
        )
    t = cfg.target_accuracy
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0.5 < t <= 1.0:
        raise ThresholdError(f"threshold selection: target_accuracy={t!r} must be in (0.5, 1]")


def _refuse_nan(v: np.ndarray, agent: str, what: str, cfg: ThresholdRule) -> None:
    """A bound or metric that came out NaN never selects a threshold: the selection refuses, saying where."""
    bad = ~np.isfinite(np.asarray(v, dtype=float))
    if bad.any():
        raise ThresholdError(
            f"threshold selection refused: {what} of agent {agent!r} is NaN at {int(bad.sum())} of "
            f"{bad.size} threshold pairs (confidence={cfg.confidence!r}, constraint={cfg.constraint!r}); "
            "a NaN never certifies a threshold"
        )


def fit_recalibration(rs: RunSet) -> Recalibration:
    from sklearn.linear_model import LogisticRegression

    y, ps, _, w = rs.prefix_arrays()
    if len(np.unique(y)) < 2:
        # all warm-start runs had one outcome: only the level can be learned
        rate = float(np.clip(y.mean(), 0.02, 0.98)) if len(y) else 0.5
        base = float(np.average(ps, weights=w)) if len(w) else 0.5
        return Recalibration(1.0, float(logit(rate) - logit(np.clip(base, EPS, 1 - EPS))))
    z = logit(np.clip(ps, EPS, 1 - EPS)).reshape(-1, 1)
    lr = LogisticRegression(C=1.0).fit(z, y, sample_weight=w)
    return Recalibration(float(lr.coef_[0, 0]), float(lr.intercept_[0]))


def recalibrated(rs: RunSet, cal: Recalibration) -> RunSet:
    if cal == IDENTITY:
        return rs
    p_s = [cal(a) for a in rs.p_s]
    return replace(rs, p_s=p_s, p_f=[1.0 - x for x in p_s])


# the warm start's rules; "certify" is the default (fitting.certify)
WARM_RULES = (
    "certify",
    "check",
)


def fit_warm_start(
    warm: RunSet,
    cfg: ThresholdRule,
    base: tuple[float, float] | None = None,
    recalibrate: bool = False,
    rule: str | None = None,
) -> tuple[Recalibration, dict[str, Any]]:
    """Warm start on K finished, labelled runs of the new agent.

    ``rule="certify"`` (the default, unless ``recalibrate``): ``certify.certify`` -- the label-free pair
    ``base`` is made bolder only as far as the K runs certify it (exact binomial tails, fixed-sequence
    testing from ``base``, level delta = 1 - ``cfg.confidence``), and more cautious only when they show, at
    that level, that it misses the target; the guarantee is in ``fitting.certify``.  ``base=None`` starts
    from (NEVER, NEVER).
    ``rule="check"`` (the rule of issue 14, kept for comparison): the usual rule (``select_thresholds``,
    target recall, Wilson bound) keeps the boldest pair at or above ``base`` that the warm runs support,
    so K runs can only make the policy more cautious; one error in 15 runs raises it.  ``recalibrate``
    (the default rule is then "check"; a refitted Platt has no certificate): Platt refitted on the K runs
    first (with ``base=None``, thresholds picked on them: halted accuracy fell to 83-96 % per agent under as_of).
    Only ``warm``'s labels are read.  The one definition used by ``evaluate``, ``score`` and the Monitor."""
    rule = rule or ("check" if recalibrate else "certify")
    if rule not in WARM_RULES:
        raise ValueError(f"warm-start rule must be one of {WARM_RULES}, not {rule!r}")
    if rule == "certify":
        if recalibrate:
            raise ValueError(
                "recalibrate=True goes with rule='check' (a refitted Platt has no certificate)"
            )
        start = base if base is not None else (NEVER, NEVER)
        delta = 1.0 - (cfg.confidence if cfg.confidence is not None else 0.9)
        th = certify(
            warm, start, cfg.taus, cfg.target_accuracy, delta, cfg.constraint, cfg.min_halt_step
        )
        th["method"] = (
            f"warm start on {len(warm)} runs, certified (delta {delta:g}) from "
            f"({start[0]:g}, {start[1]:g}): {th['decision']}"
        )
        return IDENTITY, th
    cal = fit_recalibration(warm) if recalibrate else IDENTITY
    how = f"warm start on {len(warm)} runs" + (", Platt refitted" if recalibrate else "")
    if base is not None:
        how += f", never bolder than ({base[0]}, {base[1]})"
    th = select_thresholds({"warm": recalibrated(warm, cal)}, cfg, method=how, floor=base)
    return cal, th


# ------------------------------------------------------------ the trained model's own runs

# A shipped model may halt at most this share of its own training runs at step 1 (from the task alone, before
# the agent has done anything).  The real SWE-bench model halts 498 of its 2,007 training runs (24.8 %) there,
# in-sample (`earlyeval train --bench swebench`; 52 % of one agent's runs, which is why the share is pooled).
# Thresholds that halt every run at once (confidence = 1.0 made the Wilson bound NaN, read as 1.0: 0.5 / 0.5,
# 275 of 275 runs of one agent halted at step 1) are caught with a wide margin, while a rich task prior may
# still skip a quarter of the tasks.
MAX_STEP1_HALT_SHARE = 0.5


def step1_halts(
    rs: RunSet, th: Mapping[str, Any], max_share: float = MAX_STEP1_HALT_SHARE
) -> dict[str, Any]:
    """How many of these (training) runs the thresholds halt at step 1, pooled and per agent; a
    ``ThresholdError`` with the numbers when the pooled share is above ``max_share``."""
    t_halt, _ = apply_policy(
        rs, float(th["success"]), float(th["failure"]), int(th.get("min_halt_step", 1))
    )
    at1 = t_halt == 1
    agents = np.asarray(rs.agents)
    per = {
        a: [int(at1[agents == a].sum()), int((agents == a).sum())] for a in sorted(set(rs.agents))
    }
    n, N = int(at1.sum()), len(rs)
    out = {
        "halted_at_step_1": n,
        "runs": N,
        "share": n / N if N else 0.0,
        "max_share": max_share,
        "per_agent": {a: {"halted_at_step_1": k, "runs": m} for a, (k, m) in per.items()},
    }
    if N and n / N > max_share:
        worst = max(per.items(), key=lambda kv: kv[1][0] / max(kv[1][1], 1))
        raise ThresholdError(
            f"refused: thresholds success={float(th['success']):g}, failure={float(th['failure']):g} halt {n} of {N} "
            f"training runs ({100 * n / N:.1f} %) at step 1, more than the {100 * max_share:.0f} % a model may "
            f"(worst agent {worst[0]}: {worst[1][0]} of {worst[1][1]}); the selection's settings "
            f"(confidence, target_accuracy) or its data are wrong, nothing was written"
        )
    return out
