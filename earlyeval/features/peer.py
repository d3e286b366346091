"""Peer task prior: how often the OTHER training agents solved this task.

The ``peer_prior`` family, for benchmarks without public leaderboard history (tau2-bench, Toolathlon), where
task difficulty must come from the other agents' runs. Fitted per fold, each training run's own agent left
out, so that no row sees its own label. The features, the shrinkage and the time rule: docs/architecture.md,
"Feature families".
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from earlyeval.core.trajectory import Step, Trajectory
from earlyeval.features.base import FOLD_FITTED, FamilyBase, RunContext

NAN = float("nan")


def task_of(ctx: RunContext) -> str:
    """The run's task id: the context's own, else its Task's (tau2 has no task table)."""
    return ctx.task_id or (ctx.task.task_id if ctx.task is not None else "")


@dataclass
class PeerTable:
    """Per task, per training agent: [successes, labelled runs]; and the training base rate."""

    counts: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    base_rate: float = NAN
    # agent -> its earliest run date ("" unknown)
    dates: dict[str, str] = field(default_factory=dict)

    @classmethod
    def fit(cls, trajs: list[Trajectory], contexts: list[RunContext]) -> "PeerTable":
        counts: dict[str, dict[str, list[int]]] = defaultdict(dict)
        k_all = n_all = 0
        dates: dict[str, str] = {}
        for t, ctx in zip(trajs, contexts):
            if t.outcome is None:
                continue
            d = dates.get(t.agent)
            dates[t.agent] = (
                ctx.as_of if d is None else (min(d, ctx.as_of) if d and ctx.as_of else "")
            )
            tid = task_of(ctx) or t.task_id
            c = counts[tid].setdefault(t.agent, [0, 0])
            c[0] += int(t.outcome)
            c[1] += 1
            k_all += int(t.outcome)
            n_all += 1
        return cls(
            {tid: dict(sorted(by.items())) for tid, by in sorted(counts.items())},
            k_all / n_all if n_all else NAN,
            dict(sorted(dates.items())),
        )

    def visible(self, agent: str, as_of: str) -> bool:
        """An agent's runs count for a run dated ``as_of`` only if the agent is dated strictly before it."""
        if not as_of:
            return True
        d = self.dates.get(agent, "")
        return bool(d) and d < as_of

    def peers(self, task_id: str, agent: str, as_of: str = "") -> tuple[int, int, list[float]]:
        """(successes, runs, per-agent rates) of every agent but ``agent`` on the task, dated before ``as_of``."""
        k = n = 0
        rates = []
        for a, (ka, na) in self.counts.get(task_id, {}).items():
            if a == agent or na <= 0 or not self.visible(a, as_of):
                continue
            k += ka
            n += na
            rates.append(ka / na)
        return k, n, rates


class PeerPriorFamily(FamilyBase):
    name: ClassVar[str] = "peer_prior"
    fit_scope: ClassVar[str] = FOLD_FITTED  # fitted from the training fold's outcome labels
    needs_task: ClassVar[bool] = True
    _names: ClassVar[list[str]] = [
        "peer_rate",
        "peer_agent_rate",
        "peer_shrunk",
        "peer_n_runs",
        "peer_n_agents",
    ]
    # values depend on the context only: batch may compute them once per run and repeat them
    constant_per_run: ClassVar[bool] = True

    def __init__(
        self, table: PeerTable | None = None, strength: float = 4.0, counts: bool = False
    ) -> None:
        self.table = table
        self.strength = float(strength)
        self.counts = bool(counts)

    @property
    def names(self) -> list[str]:
        return list(self._names if self.counts else self._names[:3])

    def check_context(self, ctx: RunContext) -> str | None:
        if self.table is None or task_of(ctx) not in self.table.counts:
            return "the task is not in the model's peer-agent table: its peer success rate is NaN"
        return None

    def fit(self, trajs: list[Trajectory], contexts: list[RunContext]) -> "PeerPriorFamily":
        self.table = PeerTable.fit(trajs, contexts)
        return self

    def start(self, ctx: RunContext) -> np.ndarray:
        if self.table is None:
            return np.full(len(self.names), NAN)
        k, n, rates = self.table.peers(task_of(ctx), ctx.agent, ctx.as_of)
        p0, a = self.table.base_rate, self.strength
        rate = k / n if n else NAN
        agent_rate = float(np.mean(rates)) if rates else NAN
        shrunk = (k + a * p0) / (n + a) if (n + a) > 0 and not np.isnan(p0) else rate
        vals = [rate, agent_rate, shrunk] + ([float(n), float(len(rates))] if self.counts else [])
        return np.asarray(vals, dtype=np.float64)

    def update(self, state: np.ndarray, step: Step) -> None:
        return None

    def values(self, state: np.ndarray) -> np.ndarray:
        return state

    def get_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        t = self.table
        base = None if t is None or np.isnan(t.base_rate) else t.base_rate  # JSON has no NaN
        return (
            {
                "strength": self.strength,
                "with_counts": self.counts,
                "base_rate": base,
                "counts": None if t is None else t.counts,
                "dates": None if t is None else t.dates,
            },
            {},
        )

    @classmethod
    def from_state(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> "PeerPriorFamily":
        with_counts = bool(meta.get("with_counts", False))
        if meta.get("counts") is None:
            return cls(None, float(meta.get("strength", 4.0)), with_counts)
        counts = {
            str(tid): {str(a): [int(c[0]), int(c[1])] for a, c in by.items()}
            for tid, by in meta["counts"].items()
        }
        base = meta.get("base_rate")
        dates = {str(a): str(d or "") for a, d in (meta.get("dates") or {}).items()}
        strength = float(meta["strength"])
        if not (math.isfinite(strength) and strength > 0):
            raise ValueError(f"strength: {meta['strength']!r} is not a positive number")
        return cls(
            PeerTable(counts, NAN if base is None else float(base), dates), strength, with_counts
        )
