"""Escalate instead of only stopping: the pair of agents a router works on, its routing policies and the oracle
frontier (the simulation of every policy on a pair is ``routing_simulation``).

Each task starts on the cheap agent and may be stopped or escalated to the strong one, charged at recorded
costs; neither agent's label reaches the router. The policies and the protocol: docs/architecture.md,
"Routing: escalate instead of only stopping".
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from earlyeval.config.prices import RunCost
from earlyeval.fitting.metrics import NEVER, RunSet, apply_policy

COMPLETE, STOP, ESCALATE = 0, 1, 2


# ---------------------------------------------------------------- the pair


@dataclass
class Pair:
    """Two agents' real runs on the tasks both ran, aligned by task."""

    cheap: str
    strong: str
    task_ids: list[str]
    y_cheap: np.ndarray  # (N,) 0/1
    y_strong: np.ndarray
    cost_cheap: list[RunCost]
    cost_strong: list[RunCost]
    # cheap run's P(failure) after steps 1..T-1, from a model without both agents
    p_fail: list[np.ndarray]
    prior: np.ndarray  # task solve rate in public history without both agents (nan where unknown)
    dropped: dict[str, int] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.task_ids)

    @property
    def T_cheap(self) -> np.ndarray:
        return np.asarray([c.T for c in self.cost_cheap], dtype=np.int64)

    def runset(self) -> RunSet:
        """The cheap runs as a failure-only RunSet (P(success) never crosses), for ``metrics.apply_policy``."""
        zeros = [np.zeros_like(p) for p in self.p_fail]
        return RunSet(
            agents=[self.cheap] * self.n,
            run_ids=list(self.task_ids),
            y=self.y_cheap,
            T=self.T_cheap,
            p_s=zeros,
            p_f=list(self.p_fail),
        )


@dataclass
class Route:
    """Per task: what happened (COMPLETE / STOP / ESCALATE) and after how many cheap steps (0: started on strong)."""

    action: np.ndarray
    t: np.ndarray


def charge(pair: Pair, route: Route) -> tuple[np.ndarray, np.ndarray]:
    """Real cost (USD) and outcome (0/1) of every task under a route."""
    cost = np.empty(pair.n)
    res = np.zeros(pair.n, dtype=np.int64)
    for i in range(pair.n):
        a, t = int(route.action[i]), int(route.t[i])
        c = pair.cost_cheap[i]
        if a == COMPLETE:
            cost[i], res[i] = c.total, pair.y_cheap[i]
        elif a == STOP:
            cost[i], res[i] = c.upto(t), 0
        elif a == ESCALATE:
            cost[i], res[i] = c.upto(t) + pair.cost_strong[i].total, pair.y_strong[i]
        else:
            raise ValueError(f"unknown action {a}")
    return cost, res


# --------------------------------------------------------------- policies


def always_cheap(pair: Pair) -> Route:
    return Route(np.full(pair.n, COMPLETE), pair.T_cheap.copy())


def always_strong(pair: Pair) -> Route:
    return Route(np.full(pair.n, ESCALATE), np.zeros(pair.n, dtype=np.int64))


def on_predicted_failure(pair: Pair, tau_f: float, action: int, min_t: int = 1) -> Route:
    """Stop or escalate at the first step where P(failure) >= tau_f (the halting rule of ``metrics``)."""
    t_halt, _ = apply_policy(pair.runset(), NEVER, tau_f, min_t)
    halted = t_halt > 0
    return Route(np.where(halted, action, COMPLETE), np.where(halted, t_halt, pair.T_cheap))


def expected_value_escalation(
    pair: Pair, tau_f: float, value_of_solve: float, strong_cost: float, min_t: int = 1
) -> Route:
    """At a predicted failure, escalate only if p_fail * q * value_of_solve > strong's expected cost, else stop.

    q = P(strong solves the task), estimated by the task's public solve rate without
    both agents (1 where the benchmark has no history): escalating a task the strong
    agent will also fail buys nothing.
    """
    base = on_predicted_failure(pair, tau_f, ESCALATE, min_t)
    q = _filled_prior(pair)
    act = base.action.copy()
    for i in np.flatnonzero(base.action == ESCALATE):
        p = float(pair.p_fail[i][base.t[i] - 1])
        if p * q[i] * value_of_solve <= strong_cost:
            act[i] = STOP
    return Route(act, base.t)


def value_triggered_escalation(
    pair: Pair, value_of_solve: float, strong_cost: float, min_t: int = 1
) -> Route:
    """Escalate at the first step where p_fail * q * value_of_solve > strong's expected cost; never stop.

    No failure threshold: a likely failure on a task the strong agent probably
    solves is escalated early, a near-certain failure on a hopeless task never is.
    """
    q = _filled_prior(pair)
    act = np.full(pair.n, COMPLETE)
    t = pair.T_cheap.copy()
    lo = max(min_t, 1) - 1
    for i, p in enumerate(pair.p_fail):
        hit = np.flatnonzero(p[lo:] * q[i] * value_of_solve > strong_cost)
        if hit.size:
            act[i], t[i] = ESCALATE, lo + int(hit[0]) + 1
    return Route(act, t)


def tier_by_prior(pair: Pair, share: float) -> Route:
    """Start the hardest `share` of tasks (lowest public solve rate) on the strong agent, the rest on cheap."""
    q = _filled_prior(pair)
    k = int(round(share * pair.n))
    hard = np.zeros(pair.n, dtype=bool)
    hard[np.argsort(q, kind="stable")[:k]] = True
    return Route(np.where(hard, ESCALATE, COMPLETE), np.where(hard, 0, pair.T_cheap))


def oracle(pair: Pair, stop_both_fail: bool = False) -> Route:
    """Upper bound (uses both agents' labels): escalate after the cheap run's first step exactly
    the tasks cheap fails and strong solves; optionally stop there the tasks both fail."""
    need = (pair.y_cheap == 0) & (pair.y_strong == 1)
    act = np.where(need, ESCALATE, COMPLETE)
    if stop_both_fail:
        act = np.where((pair.y_cheap == 0) & (pair.y_strong == 0), STOP, act)
    return Route(act, np.where(act == COMPLETE, pair.T_cheap, np.minimum(1, pair.T_cheap)))


def _filled_prior(pair: Pair) -> np.ndarray:
    q = pair.prior.astype(np.float64).copy()
    ok = np.isfinite(q)
    q[~ok] = float(np.mean(q[ok])) if ok.any() else 1.0
    return q


def oracle_frontier(pair: Pair) -> np.ndarray:
    """(cost, resolve rate) points of the best any policy could do knowing every outcome.

    Each resolvable task is bought at its cheapest real price (cheap run if cheap
    solves it, strong run if strong does); unresolvable tasks cost nothing; tasks
    are added cheapest first (optimal when every resolved task counts the same).
    Every simulated policy lies on or below this curve.
    """
    c = np.full(pair.n, np.inf)
    for i in range(pair.n):
        if pair.y_cheap[i]:
            c[i] = min(c[i], pair.cost_cheap[i].total)
        if pair.y_strong[i]:
            c[i] = min(c[i], pair.cost_strong[i].total)
    c = np.sort(c[np.isfinite(c)])
    return np.column_stack(
        [np.concatenate([[0.0], np.cumsum(c)]), np.arange(len(c) + 1) / max(pair.n, 1)]
    )


def frontier_at(frontier: np.ndarray, cost: float) -> float:
    """Best resolve rate on the oracle frontier at a given spend."""
    k = np.searchsorted(frontier[:, 0], cost + 1e-9, side="right") - 1
    return float(frontier[max(k, 0), 1])
