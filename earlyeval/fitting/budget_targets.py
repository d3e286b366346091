"""Budget targets: per-step usage of a run, remaining/spent per prefix, built in batch from a ``Dataset``.

The spend features and their streaming twin ``SpendTracker`` are ``earlyeval.model.spend`` (the live path loads
them); ``budget_features`` here calls the same ``spend_features``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from earlyeval.core.trajectory import Trajectory
from earlyeval.model.spend import spend_feature_names, spend_features, unmetered_opening


class PrefixTable(Protocol):
    """What the targets read of a ``dataset.Dataset`` (evaluation layer): a structural type, so that this module (budget
    maths, below the evaluation layer) never imports it, not even for type checking."""

    trajs: list[Trajectory]
    catalog: Any  # .runs: each with .agent and .format
    prefixes: Any  # a table with "run" and "t" columns, one row per prefix


def run_usage(traj: Trajectory, dim: str, free_opening: bool = False) -> np.ndarray | None:
    """Per-step usage of one run in `dim`, or None when any step is unknown (never 0 for unknown)."""
    if dim == "steps":
        return np.ones(len(traj.steps))
    vals = [getattr(s, dim) for s in traj.steps]
    if free_opening and len(vals) > 1 and vals[0] is None and unmetered_opening(traj.steps[0]):
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

    def excluded_by_agent(self, ds: PrefixTable) -> dict[str, int]:
        out: dict[str, int] = {}
        for i, t in enumerate(ds.trajs):
            if not self.run_known[i]:
                out[t.agent] = out.get(t.agent, 0) + 1
        return out


def free_opening_agents(ds: PrefixTable, formats: tuple) -> set[str]:
    return {r.agent for r in ds.catalog.runs if r.format in set(formats)}


def dim_targets(ds: PrefixTable, dim: str, free_agents: set[str] | None = None) -> DimTargets:
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
    for r, (a, b) in run_slices(prow).items():
        u = usage[r]
        if u is None:
            continue
        cum = np.cumsum(u)
        t = tt[a:b]
        spent[a:b] = cum[t - 1]
        last[a:b] = u[t - 1]
        rem[a:b] = cum[-1] - cum[t - 1]
    return DimTargets(
        dim, known, totals, usage, spent, last, rem, known[prow] if N else np.zeros(0, bool), n_free
    )


def run_slices(prow: np.ndarray) -> dict[int, tuple[int, int]]:
    """Row range of every run in the prefix table (rows are stored run by run)."""
    if len(prow) == 0:
        return {}
    starts = np.flatnonzero(np.r_[True, prow[1:] != prow[:-1]])
    ends = np.r_[starts[1:], len(prow)]
    return {int(prow[s]): (int(s), int(e)) for s, e in zip(starts, ends)}


def budget_features(
    tg: DimTargets, rows: np.ndarray, t: np.ndarray, unit: float
) -> tuple[np.ndarray, list[str]]:
    """Spend so far, pace and last-step spend relative to pace (token/cost dims only)."""
    if tg.dim == "steps":
        return np.zeros((len(rows), 0), np.float32), []
    return spend_features(tg.spent[rows], tg.last[rows], t, unit), spend_feature_names(tg.dim)
