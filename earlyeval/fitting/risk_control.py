"""Thresholds with a stated guarantee for a new agent: each halting side by an order statistic over agents.

Agents are the exchangeable units, so P(a new agent's risk > alpha) <= (k+1)/(n+1) per side. The rule and why it
holds: docs/architecture.md, "The agent-quantile threshold rule".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from earlyeval.fitting.metrics import NEVER, RunSet
from earlyeval.model.policy import SUCCESS, first_halt_grid, pad

RISKS = ("mass", "recall", "precision")
SIDES = ("success", "failure")


@dataclass(frozen=True)
class AgentQuantileRule:
    """Settings of the rule (see the module doc): the risk level ``alpha`` per side, its kind, and the
    target ``delta`` for P(a new agent's side risk > alpha); ``k`` = floor(delta (n+1)) - 1 inner agents
    may exceed alpha (never fewer than 0: with few agents the guarantee is 1/(n+1), stated as such)."""

    taus: tuple
    alpha: float = 0.01
    delta: float = 0.15
    risk: str = "mass"
    min_halt_step: int = 1
    # the success side's own risk and alpha (None: ``risk``/``alpha``), e.g. "recall": the share of a new agent's
    # failed runs credited as successes, whatever its resolve rate (a regressed agent scores as what it is)
    success_risk: str | None = None
    success_alpha: float | None = None

    def __post_init__(self) -> None:
        for name in ("alpha", "success_alpha"):
            v = getattr(self, name)
            if v is not None and (not (0.0 < float(v) < 1.0) or not math.isfinite(float(v))):
                raise ValueError(f"{name}={v!r} must be in (0, 1)")
        if not (0.0 < float(self.delta) < 1.0) or not math.isfinite(float(self.delta)):
            raise ValueError(f"delta={self.delta!r} must be in (0, 1)")
        for name in ("risk", "success_risk"):
            v = getattr(self, name)
            if v is not None and v not in RISKS:
                raise ValueError(f"{name} must be one of {RISKS}, not {v!r}")
        if isinstance(self.min_halt_step, bool) or int(self.min_halt_step) < 1:
            raise ValueError(f"min_halt_step={self.min_halt_step!r} must be an integer >= 1")

    def side(self, side: str) -> tuple[str, float]:
        """(risk, alpha) of one side."""
        if side == "success":
            return self.success_risk or self.risk, float(
                self.alpha if self.success_alpha is None else self.success_alpha
            )
        return self.risk, float(self.alpha)

    def allowed_violations(self, n_agents: int) -> int:
        return max(int(math.floor(self.delta * (n_agents + 1) + 1e-12)) - 1, 0)


def side_risk(
    rs: RunSet, taus: np.ndarray, side: str, risk: str = "mass", min_t: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """(risk, steps saved) of the one-sided policy on ``side`` at every tau of ``taus`` (the other side off):
    the halting rule's first crossing of that side alone (``policy.pad``: NaN never halts, only t < T)."""
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}, not {side!r}")
    taus = np.asarray(taus, dtype=np.float64)
    R = len(rs)
    if R == 0:
        return np.zeros(len(taus)), np.zeros(len(taus))
    ps, pf = rs.halt_probs()
    p = pad(ps if side == "success" else pf, rs.T)
    lo = max(int(min_t), 1) - 1
    p[:, :lo] = np.nan
    run_max = np.fmax.accumulate(np.where(np.isnan(p), -np.inf, p), axis=1) if p.shape[1] else p
    crossed = run_max[:, :, None] >= taus[None, None, :]  # (R, L, N): crossed by prefix t
    halted = crossed[:, -1, :] if p.shape[1] else np.zeros((R, len(taus)), dtype=bool)
    # the first crossing's prefix t (1-based)
    t_halt = np.where(halted, crossed.argmax(axis=1) + 1, 0)
    wrong_outcome = 0 if side == "success" else 1
    wrong = halted & (rs.y[:, None] == wrong_outcome)
    if risk == "precision":  # wrong among this side's halts (none halted: no error)
        n_h = halted.sum(0)
        r = np.where(n_h > 0, wrong.sum(0) / np.maximum(n_h, 1), 0.0)
    else:
        denom = R if risk == "mass" else int((rs.y == wrong_outcome).sum())
        r = wrong.sum(0) / denom if denom > 0 else np.zeros(len(taus))
    T = rs.T[:, None].astype(np.float64)
    saved = np.where(halted, T - t_halt, 0).sum(0) / max(float(rs.T.sum()), 1.0)
    return r.astype(np.float64), saved


def boldest_safe(risk: np.ndarray, taus: np.ndarray, alpha: float) -> float:
    """The lowest tau whose risk, and the risk of every tau above it, is <= alpha (NEVER when none)."""
    ok = risk <= alpha + 1e-12
    # risk only grows as tau falls, but a finite sample of prefixes is checked as it is: every tau from
    # the candidate up must be safe (a suffix of the ascending grid)
    safe_from = len(taus)
    for i in range(len(taus) - 1, -1, -1):
        if not ok[i]:
            break
        safe_from = i
    return float(taus[safe_from]) if safe_from < len(taus) else NEVER


def select_side(sets: Mapping[str, RunSet], rule: AgentQuantileRule, side: str) -> dict[str, Any]:
    """One side's threshold by the rule, with the per-agent boldest safe thresholds it was read from."""
    taus = np.asarray(sorted(set(float(t) for t in rule.taus) | {NEVER}), dtype=np.float64)
    per_agent: dict[str, float] = {}
    for a, rs in sets.items():
        if len(rs) == 0:
            continue
        risk, alpha = rule.side(side)
        r, _ = side_risk(rs, taus, side, risk, rule.min_halt_step)
        per_agent[a] = boldest_safe(r, taus, alpha)
    n = len(per_agent)
    k = rule.allowed_violations(n)
    if n == 0:
        return {
            "tau": NEVER,
            "per_agent": {},
            "n_agents": 0,
            "violations_allowed": 0,
            "guarantee": None,
        }
    ordered = sorted(per_agent.values(), reverse=True)  # most cautious first
    tau = ordered[min(k, n - 1)]
    return {
        "tau": float(tau),
        "per_agent": per_agent,
        "n_agents": n,
        "violations_allowed": k,
        "guarantee": (k + 1) / (n + 1),
    }


def select_agent_quantile(
    sets: Mapping[str, RunSet], rule: AgentQuantileRule, method: str = "agent-quantile"
) -> dict[str, Any]:
    """(tau_s, tau_f) by the agent-quantile rule on the inner agents' predictions ``sets``; the dict has the
    keys ``select_thresholds`` returns (success, failure, method, selected_on, ...) and the guarantee."""
    s = select_side(sets, rule, "success")
    f = select_side(sets, rule, "failure")
    saved = _pooled_saved(sets, s["tau"], f["tau"], rule.min_halt_step)
    n = s["n_agents"]
    g = s["guarantee"]
    (rs_, as_), (rf_, af_) = rule.side("success"), rule.side("failure")
    return {
        "success": s["tau"],
        "failure": f["tau"],
        "method": method,
        "selected_on": sorted(sets),
        "rule": "agent-quantile",
        "alpha": rule.alpha,
        "risk": rule.risk,
        "sides": {"success": {"risk": rs_, "alpha": as_}, "failure": {"risk": rf_, "alpha": af_}},
        "delta": rule.delta,
        "violations_allowed": s["violations_allowed"],
        "guarantee_per_side": g,
        "guarantee": None
        if g is None
        else (
            f"for a new agent exchangeable with these {n} agents, P(its share of {_what(rs_, 'success')} > "
            f"{as_:g}) <= {g:.3f}, and P(its share of {_what(rf_, 'failure')} > {af_:g}) <= {g:.3f}"
        ),
        "boldest_safe": {"success": s["per_agent"], "failure": f["per_agent"]},
        "selection_steps_saved": saved,
    }


def guarantee_check(rs: RunSet, th: Mapping[str, Any], min_t: int = 1) -> dict[str, Any] | None:
    """How the rule's promise fared on the agent it was made for: each side's realised risk at the fold's
    thresholds, as the rule measured it on the inner agents (that side alone), against ``alpha``. None when
    ``th`` was not chosen by this rule."""
    if th.get("rule") != "agent-quantile" or len(rs) == 0:
        return None
    sides = th.get("sides") or {s: {"risk": th["risk"], "alpha": th["alpha"]} for s in SIDES}
    risk = {
        side: float(
            side_risk(
                rs, np.asarray([th[side]], dtype=np.float64), side, sides[side]["risk"], min_t
            )[0][0]
        )
        for side in SIDES
    }
    return {
        "alpha": float(th["alpha"]),
        "risk": th["risk"],
        "sides": sides,
        "promised_violation_at_most": th.get("guarantee_per_side"),
        "side_risk": risk,
        "held": {side: risk[side] <= float(sides[side]["alpha"]) + 1e-12 for side in SIDES},
    }


def guarantee_tally(checks: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    """On how many held-out agents each side's promise held (None when no agent's thresholds came from the rule)."""
    done = [c for c in checks if c]
    if not done:
        return None
    return {
        "agents": len(done),
        "held": {side: sum(bool(c["held"][side]) for c in done) for side in SIDES},
        "held_both": sum(all(c["held"].values()) for c in done),
        "promised_violation_at_most": max((c["promised_violation_at_most"] or 0.0) for c in done),
    }


def _what(risk: str, side: str) -> str:
    other = "failed" if side == "success" else "successful"
    base = "runs" if risk == "mass" else f"{other} runs"
    return (
        f"{base} halted as {side} ({other} runs recorded as {side})"
        if risk == "mass"
        else f"{base} halted as {side}"
    )


def _pooled_saved(sets: Mapping[str, RunSet], tau_s: float, tau_f: float, min_t: int) -> float:
    tot = saved = 0.0
    for rs in sets.values():
        if len(rs) == 0:
            continue
        t_halt, _ = first_halt_grid(*rs.halt_probs(), [tau_s], [tau_f], min_t)
        t = t_halt[:, 0, 0]
        saved += float(np.where(t > 0, rs.T - t, 0).sum())
        tot += float(rs.T.sum())
    return saved / tot if tot else 0.0


__all__ = [
    "AgentQuantileRule",
    "boldest_safe",
    "guarantee_check",
    "guarantee_tally",
    "select_agent_quantile",
    "select_side",
    "side_risk",
    "SUCCESS",
]
