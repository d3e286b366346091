"""What a run -- or the first t steps of a run -- really cost, in USD.

Routing and budgets charge real money, so cost comes from the data wherever it has costs and from the
catalog's price only where it does not; an unknown cost is a ``PriceError``, never 0. The rules, in the order
they are tried (per step, instance total pro rata, catalog price per step): docs/architecture.md, "What a run
costs".
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import numpy as np

from earlyeval.config.catalog import Catalog
from earlyeval.core.errors import EarlyEvalError
from earlyeval.core.trajectory import Trajectory

# meta keys holding a run's real total cost, in the order they are trusted
INSTANCE_TOTAL_KEYS: tuple[str, ...] = ("instance_cost", "total_cost", "agent_cost_total")
SOURCES: tuple[str, ...] = (
    "per-step",
    "per-step+remainder-of-total",
    "per-step-filled",
    "instance-total-pro-rata",
    "catalog-usd-per-step",
)


class PriceError(EarlyEvalError, ValueError):
    """A run whose cost is neither in the data nor priced by the catalog."""

    def __init__(self, run_id: str, reason: str) -> None:
        super().__init__(f"{run_id}: {reason}")
        self.run_id = run_id
        self.reason = reason


@dataclass(frozen=True)
class RunCost:
    """Cumulative cost of one run: ``cum[t]`` is the cost of its first t steps (``cum[0] = 0``)."""

    run_id: str
    source: str
    cum: np.ndarray  # (T + 1,)
    instance_total: float | None = (
        None  # the meta total, when the format has one (for cross-checks)
    )

    @property
    def T(self) -> int:
        return len(self.cum) - 1

    @property
    def total(self) -> float:
        return float(self.cum[-1])

    def upto(self, t: int) -> float:
        """Cost of the run halted after step t (t is clipped to 0..T)."""
        return float(self.cum[int(min(max(t, 0), self.T))])


def _instance_total(meta: Mapping[str, Any]) -> float | None:
    for k in INSTANCE_TOTAL_KEYS:
        v = meta.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and v >= 0:
            return float(v)
    return None


def run_cost(traj: Trajectory, price: Mapping[str, Any] | None = None) -> RunCost:
    """Cost of one run by the first rule the data supports (module docstring)."""
    T = len(traj.steps)
    total = _instance_total(traj.meta)
    known = [s.cost_usd for s in traj.steps]
    have = [c for c in known if c is not None]
    if T and len(have) == T:
        per = np.asarray(have, dtype=np.float64)
        return RunCost(traj.run_id, "per-step", np.concatenate([[0.0], np.cumsum(per)]), total)
    if T and have:
        if total is not None and total >= sum(have) - 1e-9:
            # the run's total says what its unmetered steps cost together: share the remainder
            fill, source = (
                max(total - sum(have), 0.0) / (T - len(have)),
                "per-step+remainder-of-total",
            )
        else:
            fill, source = float(np.mean(have)), "per-step-filled"
        per = np.asarray([fill if c is None else c for c in known], dtype=np.float64)
        return RunCost(traj.run_id, source, np.concatenate([[0.0], np.cumsum(per)]), total)
    if total is not None:
        frac = np.arange(T + 1, dtype=np.float64) / max(T, 1)
        return RunCost(traj.run_id, "instance-total-pro-rata", total * frac, total)
    usd = (price or {}).get("usd_per_step")
    if isinstance(usd, (int, float)) and usd >= 0:
        return RunCost(
            traj.run_id,
            "catalog-usd-per-step",
            float(usd) * np.arange(T + 1, dtype=np.float64),
            None,
        )
    raise PriceError(
        traj.run_id,
        "no per-step cost, no instance total in meta and no price.usd_per_step in the catalog",
    )


def catalog_prices(cat: Catalog) -> dict[str, dict[str, Any]]:
    """Catalog ``price`` table per run folder name (the ``meta.run`` of its trajectories)."""
    return {r.name: dict(r.price) for r in cat.runs}


def price_runs(
    trajs: Iterable[Trajectory], cat: Catalog, unpriced: str = "raise"
) -> dict[str, RunCost]:
    """RunCost of every trajectory, keyed by run_id, each priced by its own run folder's catalog entry.
    ``unpriced``: "raise" (PriceError) or "skip" (the run is left out: its cost is unknown, never 0)."""
    prices = catalog_prices(cat)
    by_agent = {r.agent: dict(r.price) for r in cat.runs}
    out: dict[str, RunCost] = {}
    for t in trajs:
        price = prices.get(str(t.meta.get("run", ""))) or by_agent.get(t.agent, {})
        try:
            out[t.run_id] = run_cost(t, price)
        except PriceError:
            if unpriced != "skip":
                raise
    return out


def pricing_summary(
    trajs: Iterable[Trajectory], costs: Mapping[str, RunCost], cat: Catalog
) -> dict[str, Any]:
    """Per agent: which pricing source was used on how many runs, totals, and the catalog's declared source.

    Where a run has both per-step costs and a meta total, the two are compared:
    they disagree on a few Moatless runs (the per-step sum is what is charged).
    """
    declared = {r.agent: dict(r.price) for r in cat.runs}
    agg: dict[str, dict[str, Any]] = {}
    for t in trajs:
        c = costs[t.run_id]
        a = agg.setdefault(
            t.agent,
            {
                "runs": 0,
                "sources": Counter(),
                "total": 0.0,
                "steps": 0,
                "checked": 0,
                "disagree": 0,
                "sum_charged": 0.0,
                "sum_meta": 0.0,
            },
        )
        a["runs"] += 1
        a["sources"][c.source] += 1
        a["total"] += c.total
        a["steps"] += c.T
        if c.source.startswith("per-step") and c.instance_total is not None:
            a["checked"] += 1
            a["sum_charged"] += c.total
            a["sum_meta"] += c.instance_total
            if abs(c.total - c.instance_total) > 0.01 * max(c.instance_total, 1e-9):
                a["disagree"] += 1
    out: dict[str, Any] = {}
    for agent, a in agg.items():
        src = a["sources"].most_common(1)[0][0]
        block: dict[str, Any] = {
            "source": src,
            "sources": dict(a["sources"]),
            "catalog_price": declared.get(agent, {}),
            "runs": a["runs"],
            "total_usd": round(a["total"], 4),
            "mean_usd_per_run": round(a["total"] / max(a["runs"], 1), 5),
            "mean_usd_per_step": round(a["total"] / max(a["steps"], 1), 5),
        }
        if src == "instance-total-pro-rata":
            block["truncation"] = (
                "pro-rata: a run halted after t of T steps is charged instance_cost * t / T"
            )
        if a["checked"]:
            block["per_step_vs_instance_total"] = {
                "runs_compared": a["checked"],
                "runs_differing_over_1pct": a["disagree"],
                "sum_per_step_usd": round(a["sum_charged"], 4),
                "sum_instance_total_usd": round(a["sum_meta"], 4),
            }
        out[agent] = block
    return out
