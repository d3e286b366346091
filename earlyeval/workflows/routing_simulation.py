"""The routing simulation: every policy of ``routing`` on one pair, charged at recorded costs, with its metrics,
budget status, comparisons (gap closed, against the oracle frontier), chance and hindsight references, and the
threshold sweeps: the ``pairs`` block of ``routing.json``."""

from __future__ import annotations

import logging
from typing import Any, Mapping, Sequence

import numpy as np

from earlyeval.fitting.metrics import NEVER
from earlyeval.workflows.routing import (
    COMPLETE,
    ESCALATE,
    STOP,
    Pair,
    Route,
    always_cheap,
    always_strong,
    charge,
    expected_value_escalation,
    frontier_at,
    on_predicted_failure,
    oracle,
    oracle_frontier,
    tier_by_prior,
    value_triggered_escalation,
)

# the simulator logged as the routing module before routing.py was split: its warnings keep that name
log = logging.getLogger("earlyeval.workflows.routing")

# USD per resolved task; a parameter, not a result
DEFAULT_VALUES_OF_SOLVE: tuple[float, ...] = (
    1.0,
    5.0,
    25.0,
)
# USD per resolved task, for the curve
VALUE_SWEEP = tuple(np.round(np.geomspace(0.1, 1000.0, 25), 4).tolist())
SWEEP_TAUS = tuple(np.round(np.arange(0.05, 0.996, 0.025), 3).tolist())
BUDGET_ORDERS = 100  # random task orders averaged for the resolve rate reachable within the budget


# ----------------------------------------------------------------- metrics


def policy_metrics(
    pair: Pair, route: Route, budget_usd: float | None = None, seed: int = 0
) -> dict[str, Any]:
    """Resolve rate, real cost, decision counts, economic consistency and budget status of one route."""
    cost, res = charge(pair, route)
    n = pair.n
    total = float(cost.sum())
    esc = route.action == ESCALATE
    need = (pair.y_cheap == 0) & (pair.y_strong == 1)
    suff = pair.y_cheap == 1
    acc_need = float(esc[need].mean()) if need.any() else None
    acc_suff = float((route.action[suff] == COMPLETE).mean()) if suff.any() else None
    esc_t = route.t[esc & (route.t > 0)]
    return {
        "n_tasks": n,
        "resolved": int(res.sum()),
        "resolve_rate": float(res.mean()) if n else None,
        "total_cost_usd": total,
        "cost_per_task_usd": total / n if n else None,
        "cost_per_resolved_usd": total / res.sum() if res.sum() else None,
        "n_escalated": int(esc.sum()),
        "n_started_on_strong": int((esc & (route.t == 0)).sum()),
        "n_stopped": int((route.action == STOP).sum()),
        "n_completed_cheap": int((route.action == COMPLETE).sum()),
        "mean_escalation_step": float(esc_t.mean()) if esc_t.size else None,
        "mean_cheap_share_used_before_escalation": float(
            np.mean(esc_t / pair.T_cheap[esc & (route.t > 0)])
        )
        if esc_t.size
        else None,
        "economic_consistency": {
            "needed_escalation_accuracy": acc_need,  # cheap fails & strong solves: was it escalated?
            "cheap_sufficed_accuracy": acc_suff,  # cheap solves: was the cheap run left to finish?
            "value": None if acc_need is None or acc_suff is None else min(acc_need, acc_suff),
            "n_needed_escalation": int(need.sum()),
            "n_cheap_sufficed": int(suff.sum()),
        },
        "budget": budget_status(cost, res, budget_usd, seed),
    }


def budget_status(
    cost: np.ndarray,
    res: np.ndarray,
    budget_usd: float | None,
    seed: int = 0,
    orders: int = BUDGET_ORDERS,
) -> dict[str, Any]:
    """Whether a pass fits in budget B, the overspend, and what stopping at B would resolve.

    Stopping at B: tasks are processed in a fixed random order (seeded), and the
    first task whose cost would take the spend past B is cut there, unresolved, as
    is every later task.  Also the mean over `orders` random orders.
    """
    total = float(cost.sum())
    if budget_usd is None:
        return {"budget_usd": None, "over_budget": None, "note": "no budget given (--budget)"}
    rng = np.random.default_rng(seed)
    rates, done = [], []
    for k in range(max(orders, 1)):
        o = rng.permutation(len(cost))
        fits = np.cumsum(cost[o]) <= budget_usd + 1e-9
        rates.append(float(res[o][fits].sum()) / max(len(cost), 1))
        done.append(int(fits.sum()))
    over = total > budget_usd + 1e-9
    return {
        "budget_usd": float(budget_usd),
        "over_budget": bool(over),
        "overspend_usd": max(0.0, total - float(budget_usd)),
        "spend_if_stopped_at_budget_usd": min(total, float(budget_usd)),
        "resolve_rate_stopping_at_budget": rates[0],
        "tasks_completed_within_budget": done[0],
        "resolve_rate_stopping_at_budget_mean_over_orders": float(np.mean(rates)),
        "resolve_rate_stopping_at_budget_std_over_orders": float(np.std(rates)),
        "orders": max(orders, 1),
        "order_seed": seed,
    }


def add_comparisons(policies: dict[str, dict[str, Any]], frontier: np.ndarray) -> None:
    """Gap closed between always-cheap and always-strong, per extra dollar, versus the oracle, in place."""
    lo, hi = policies["always_cheap"], policies["always_strong"]
    gap = hi["resolve_rate"] - lo["resolve_rate"]
    orc = policies["oracle"]
    for name, m in policies.items():
        extra = m["total_cost_usd"] - lo["total_cost_usd"]
        closed = (m["resolve_rate"] - lo["resolve_rate"]) / gap if gap > 0 else None
        m["gap_closed"] = closed
        m["extra_cost_over_always_cheap_usd"] = extra
        m["gap_closed_per_100usd"] = (
            100.0 * closed / extra if closed is not None and extra > 1e-9 else None
        )
        if closed is not None and closed > 0 and extra <= 1e-9:
            m["gap_closed_note"] = "closes the gap at no extra cost over always-cheap"
        m["frontier_resolve_rate_at_same_cost"] = frontier_at(frontier, m["total_cost_usd"])
        if m["resolve_rate"] > m["frontier_resolve_rate_at_same_cost"] + 1e-9:
            log.error("policy %s beats the oracle frontier: the simulator is wrong", name)
    for name, m in policies.items():
        oc, op = orc.get("gap_closed"), orc.get("gap_closed_per_100usd")
        m["vs_oracle"] = {
            "gap_closed_ratio": m["gap_closed"] / oc
            if m["gap_closed"] is not None and oc
            else None,
            "gap_closed_per_usd_ratio": m["gap_closed_per_100usd"] / op
            if m["gap_closed_per_100usd"] is not None and op
            else None,
        }


# ---------------------------------------------------------------- the pass


def simulate_pair(
    pair: Pair,
    tau_f: float,
    *,
    budget_usd: float | None = None,
    values_of_solve: Sequence[float] = DEFAULT_VALUES_OF_SOLVE,
    min_t: int = 1,
    seed: int = 0,
) -> dict[str, Any]:
    """Every policy on one pair, with comparisons, sweeps and the oracle frontier."""
    strong_cost = float(np.mean([c.total for c in pair.cost_strong])) if pair.n else 0.0
    esc = on_predicted_failure(pair, tau_f, ESCALATE, min_t)
    share = float((esc.action == ESCALATE).mean()) if pair.n else 0.0
    has_prior = bool(np.isfinite(pair.prior).any())
    routes = _routes(pair, tau_f, esc, share, has_prior, values_of_solve, strong_cost, min_t)
    policies = {k: policy_metrics(pair, r, budget_usd, seed) for k, r in routes.items()}
    front = oracle_frontier(pair)
    add_comparisons(policies, front)
    _describe(policies, values_of_solve, strong_cost, share, has_prior)
    sweeps = {
        "escalate_on_predicted_failure": _sweep(pair, ESCALATE, min_t),
        "stop_on_predicted_failure": _sweep(pair, STOP, min_t),
    }
    sweeps["escalate_when_value_positive"] = [
        {
            "value_of_solve_usd": float(v),
            **_point(pair, value_triggered_escalation(pair, float(v), strong_cost, min_t)),
        }
        for v in VALUE_SWEEP
    ]
    if has_prior:
        sweeps["tier_by_prior"] = [
            {"share_on_strong": s, **_point(pair, tier_by_prior(pair, s))}
            for s in np.round(np.linspace(0, 1, 21), 3)
        ]
    references = {
        "random_escalation_same_share": random_escalation(pair, share, policies),
        "escalation_threshold_in_hindsight": hindsight_threshold(
            pair, sweeps["escalate_on_predicted_failure"], policies
        ),
    }
    over = [k for k, m in policies.items() if m["budget"].get("over_budget")]
    for k in over:
        b = policies[k]["budget"]
        log.warning(
            "%s->%s %s: over budget by $%.2f (total $%.2f > B=$%.2f); stopping at B resolves %.1f%%",
            pair.cheap,
            pair.strong,
            k,
            b["overspend_usd"],
            policies[k]["total_cost_usd"],
            b["budget_usd"],
            100 * b["resolve_rate_stopping_at_budget"],
        )
    need = (pair.y_cheap == 0) & (pair.y_strong == 1)
    return {
        "cheap": pair.cheap,
        "strong": pair.strong,
        "n_tasks": pair.n,
        "tasks_not_shared": pair.dropped,
        "resolve_rate": {
            "cheap": float(pair.y_cheap.mean()),
            "strong": float(pair.y_strong.mean()),
            "either": float(((pair.y_cheap + pair.y_strong) > 0).mean()),
        },
        "task_groups": {
            "cheap_fails_strong_solves": int(need.sum()),
            "cheap_solves": int(pair.y_cheap.sum()),
            "cheap_solves_strong_fails": int(((pair.y_cheap == 1) & (pair.y_strong == 0)).sum()),
            "both_fail": int(((pair.y_cheap == 0) & (pair.y_strong == 0)).sum()),
        },
        "budget_usd": budget_usd,
        "over_budget_policies": over,
        "policies": policies,
        "references": references,
        "oracle_frontier": [[float(c), float(r)] for c, r in front],
        "sweeps": sweeps,
    }


def _routes(
    pair: Pair,
    tau_f: float,
    esc: Route,
    share: float,
    has_prior: bool,
    values_of_solve: Sequence[float],
    strong_cost: float,
    min_t: int,
) -> dict[str, Route]:
    """Every policy's route on the pair, by name, in the order the report lists them (``esc``: the
    escalation on predicted failure, already routed; ``share``: the share of tasks it escalates)."""
    routes: dict[str, Route] = {
        "always_cheap": always_cheap(pair),
        "always_strong": always_strong(pair),
        "stop_on_predicted_failure": on_predicted_failure(pair, tau_f, STOP, min_t),
        "escalate_on_predicted_failure": esc,
    }
    for v in values_of_solve:
        routes[f"failure_escalate_if_value@{v:g}usd"] = expected_value_escalation(
            pair, tau_f, v, strong_cost, min_t
        )
        routes[f"escalate_when_value_positive@{v:g}usd"] = value_triggered_escalation(
            pair, v, strong_cost, min_t
        )
    if has_prior:
        routes["tier_by_prior"] = tier_by_prior(pair, share)
    routes["oracle"] = oracle(pair)
    routes["oracle_with_stop"] = oracle(pair, stop_both_fail=True)
    return routes


def _describe(
    policies: dict[str, dict[str, Any]],
    values_of_solve: Sequence[float],
    strong_cost: float,
    share: float,
    has_prior: bool,
) -> None:
    """What each policy is, written into its metrics: the oracles marked as upper bounds, with notes; the
    prior tier's cut; the value rules' prices and decisions."""
    for k in policies:
        if k.startswith("oracle"):
            policies[k]["upper_bound"] = True
    policies["oracle"]["note"] = (
        "uses both agents' labels: escalates after the cheap run's first step (t=1, that "
        "step charged) exactly the tasks cheap fails and strong solves; the rest run on cheap"
    )
    policies["oracle_with_stop"]["note"] = (
        "as oracle, and also stops at t=1 the tasks both agents fail"
    )
    if has_prior:
        policies["tier_by_prior"]["cut"] = {
            "share_on_strong": share,
            "rule": "same share of tasks as "
            "escalate_on_predicted_failure escalates (label-free); hardest by "
            "public solve rate without both agents start on strong",
        }
    for v in values_of_solve:
        price = {
            "value_of_solve_usd": v,
            "strong_expected_cost_usd": strong_cost,
            "q": "task's public solve rate without both agents (P(strong solves) proxy; 1 without history)",
            "strong_expected_cost": "mean real cost of the strong agent's runs on the pair's tasks (a price, no labels)",
        }
        policies[f"failure_escalate_if_value@{v:g}usd"]["rule"] = {
            **price,
            "decision": "at the predicted failure (p_fail >= tau_f): escalate if p_fail * q * value_of_solve > "
            "strong_expected_cost, else stop",
        }
        policies[f"escalate_when_value_positive@{v:g}usd"]["rule"] = {
            **price,
            "decision": "escalate at the first step where p_fail * q * value_of_solve > strong_expected_cost; "
            "no failure threshold, never stops",
        }


def random_escalation(
    pair: Pair, share: float, policies: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """Expected result of escalating a random `share` of tasks after their first step: is the predictor
    better than chance at choosing what to escalate?  (Exact expectation over draws, no sampling.)"""
    cheap_full = sum(c.total for c in pair.cost_cheap)
    esc_all = sum(c.upto(1) for c in pair.cost_cheap) + sum(c.total for c in pair.cost_strong)
    rr = (
        (1 - share) * float(pair.y_cheap.mean()) + share * float(pair.y_strong.mean())
        if pair.n
        else None
    )
    cost = (1 - share) * cheap_full + share * esc_all
    lo, hi = policies["always_cheap"], policies["always_strong"]
    gap = hi["resolve_rate"] - lo["resolve_rate"]
    closed = (rr - lo["resolve_rate"]) / gap if gap > 0 and rr is not None else None
    extra = cost - lo["total_cost_usd"]
    return {
        "share": share,
        "expected_resolve_rate": rr,
        "expected_total_cost_usd": cost,
        "expected_gap_closed": closed,
        "expected_gap_closed_per_100usd": 100 * closed / extra
        if closed is not None and extra > 1e-9
        else None,
        "note": "same number of escalations as escalate_on_predicted_failure, chosen at random, after step 1",
    }


def hindsight_threshold(
    pair: Pair, sweep: Sequence[Mapping[str, Any]], policies: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """The best failure threshold for escalation picked on this pair's own labels: separates 'the score
    cannot route' from 'the honest threshold is badly placed'.  Uses held-out labels: never a result."""
    lo, hi = policies["always_cheap"], policies["always_strong"]
    gap = hi["resolve_rate"] - lo["resolve_rate"]
    best: dict[str, Any] | None = None
    for p in sweep:
        if gap <= 0:
            break
        closed = (p["resolve_rate"] - lo["resolve_rate"]) / gap
        extra = p["total_cost_usd"] - lo["total_cost_usd"]
        per = 100 * closed / extra if extra > 1e-9 else (np.inf if closed > 0 else None)
        if closed > 0 and per is not None and (best is None or per > best["gap_closed_per_100usd"]):
            best = {**p, "gap_closed": closed, "gap_closed_per_100usd": per}
    if best is not None and not np.isfinite(best["gap_closed_per_100usd"]):
        best["gap_closed_per_100usd"] = None
        best["note_cost"] = "closes part of the gap at no extra cost"
    return {"best_by_gap_closed_per_usd": best, "uses_held_out_labels": True}


def _point(pair: Pair, route: Route) -> dict[str, Any]:
    cost, res = charge(pair, route)
    return {
        "total_cost_usd": float(cost.sum()),
        "resolve_rate": float(res.mean()) if pair.n else None,
        "n_escalated": int((route.action == ESCALATE).sum()),
        "n_stopped": int((route.action == STOP).sum()),
    }


def _sweep(pair: Pair, action: int, min_t: int) -> list[dict[str, Any]]:
    """The learned policy at every failure threshold: a curve over held-out predictions, not a selection."""
    return [
        {"tau_f": float(t), **_point(pair, on_predicted_failure(pair, t, action, min_t))}
        for t in (*SWEEP_TAUS, NEVER)
    ]
