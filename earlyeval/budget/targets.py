"""Budget targets and spend features: per-step usage of a run, remaining/spent per prefix, the streaming twin.

``dim_targets`` builds them in batch from a ``Dataset``; ``SpendTracker`` step by step on the live path.
The spend features have one implementation, ``spend_features``, called by both.  numpy only (the
``Dataset`` is described by the ``PrefixTable`` protocol, never imported), so the live budget can import this module."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from earlyeval.core.trajectory import Step, Trajectory


class PrefixTable(Protocol):
    """What the targets read of a ``dataset.Dataset`` (evaluation layer): a structural type, so that this module (budget
    maths, below the evaluation layer) never imports it, not even for type checking."""

    trajs: list[Trajectory]
    catalog: Any  # .runs: each with .agent and .format
    prefixes: Any  # a table with "run" and "t" columns, one row per prefix


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
    return DimTargets(dim, known, totals, usage, spent, last, rem, known[prow] if N else np.zeros(0, bool), n_free)


def run_slices(prow: np.ndarray) -> dict[int, tuple[int, int]]:
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
    (``live.budget.LiveBudget``: one prefix, n dimensions, `unit` per dimension).
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
