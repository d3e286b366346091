"""The prior guard: trajectory evidence adds, never subtracts.

Each fold (and the shipped fit) compares, on its inner units, the full model with the same model reading only
the task-level features (``TASK_LEVEL``; the other columns masked, so both have one width), and ships whichever
ranks the inner units better on average.  The held-out agent never enters the comparison.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, TypeVar

import numpy as np

from earlyeval.fitting.metrics import RunSet, auroc

C = TypeVar("C")  # an evaluate.EvalConfig (a dataclass with only_features and prior_guard)
R = TypeVar("R")  # an evaluate.FoldRunner

# the task-level features (known before the agent's first step): the prior-only baseline and the prior guard
TASK_LEVEL = (
    "prior_*",
    "task_difficulty",
    "gold_n_files",
    "gold_n_hunks",
    "gold_log_lines",
    "peer_*",
)


def guard_config(cfg: C) -> C:
    """The prior guard's fallback: the same families and columns, the model reading the task-level features only."""
    return replace(cfg, only_features=TASK_LEVEL, prior_guard=False)


def mean_auroc(sets: dict[str, RunSet]) -> float | None:
    """Mean over the units of each unit's prefix-weighted AUROC (units with one outcome left out)."""
    vals = []
    for rs in sets.values():
        y, ps, _, w = rs.prefix_arrays()
        a = auroc(y, ps, w) if len(y) else None
        if a is not None:
            vals.append(a)
    return float(np.mean(vals)) if vals else None


def guarded(
    runner: R, fallback: R | None, units: Callable[[R], dict[str, RunSet]]
) -> tuple[R, dict[str, RunSet], dict[str, Any]]:
    """The runner whose inner units (``units(runner)``) rank best on average: the full model unless the
    task-level model ranks the inner units better (``prior_guard``); with the units and the choice made."""
    inner = units(runner)
    if fallback is None:
        return runner, inner, {}
    inner_p = units(fallback)
    am, ap = mean_auroc(inner), mean_auroc(inner_p)
    keep = am is None or ap is None or am >= ap
    choice = {
        "chosen": "model" if keep else "task-level features only",
        "inner_auroc_model": am,
        "inner_auroc_task_level": ap,
    }
    return (runner, inner, choice) if keep else (fallback, inner_p, choice)
