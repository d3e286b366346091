"""The remaining-budget pieces a halting process loads: the dimensions, the shipped file's format, the spend
features and their streaming twin ``SpendTracker``.

``spend_features`` is the ONE implementation of the budget features: the batch path
(``earlyeval.fitting.budget_targets.budget_features``) and the live one (``live.remaining_budget.LiveBudget``) both call it."""

from __future__ import annotations

from typing import Any

import numpy as np

from earlyeval.core.trajectory import Step

DIMENSIONS: tuple[str, ...] = ("steps", "output_tokens", "input_tokens", "cost_usd")
SHIPPED_FORMAT = "earlyeval-budget"
SHIPPED_VERSION = 1


def unmetered_opening(step: Step) -> bool:
    """A tau2-style hard-coded greeting: no action and no usage at all (no LLM call was made)."""
    return (
        not step.actions
        and step.input_tokens is None
        and step.output_tokens is None
        and step.cost_usd is None
    )


def pace(spent: np.ndarray, t: np.ndarray, unit: float) -> np.ndarray:
    """Spend per step so far, shrunk towards `unit` by one pseudo-step (never 0)."""
    return (spent + unit) / (t + 1.0)


def spend_features(spent: np.ndarray, last: np.ndarray, t: Any, unit: Any) -> np.ndarray:
    """(n, 3) float32: log1p(spent / unit), log(pace / unit), log1p(last / pace).

    The ONE implementation of the budget features, called by the batch path
    (``budget_features``: n prefixes of one dimension) and by the streaming one
    (``live.remaining_budget.LiveBudget``: one prefix, n dimensions, `unit` per dimension).
    Every operation is elementwise, so a row gets the same float32 values
    whichever way the rows are stacked."""
    rate = pace(spent, t, unit)
    # assigning float64 columns rounds as astype(float32) does
    out = np.empty((len(spent), 3), dtype=np.float32)
    out[:, 0] = np.log1p(spent / unit)
    out[:, 1] = np.log(rate / unit)
    out[:, 2] = np.log1p(last / rate)
    return out


def spend_feature_names(dim: str) -> list[str]:
    """Names of `spend_features` for a token/cost dimension (steps has none: its spend is t)."""
    return (
        []
        if dim == "steps"
        else [f"budget_{dim}_spent", f"budget_{dim}_pace", f"budget_{dim}_last_rel"]
    )


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
        greeting = self.t == 0 and self.free_opening and unmetered_opening(step)
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
