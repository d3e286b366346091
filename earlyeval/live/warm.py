"""Warm-start fitting for a Monitor: K finished, labelled runs of the new agent replayed through the model as it
was loaded, then the thresholds certified on them (``modeling.thresholds.fit_warm_start``).  Not a per-step
decision, so it lives beside the Monitor rather than in it."""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping

import numpy as np

from earlyeval.core.trajectory import Task, Trajectory
from earlyeval.live.replay import replay, runset_of
from earlyeval.modeling.thresholds import WarmStartRule, fit_warm_start


def labelled_runs(runs: Iterable[Trajectory]) -> list[Trajectory]:
    """The runs with their outcomes as ints; refused (ValueError) unless every one is labelled 0/1 and there are two."""
    runs = list(runs)
    unlabelled = [t.run_id for t in runs if t.outcome is None]
    if unlabelled:
        raise ValueError(f"warm start needs finished, labelled runs; no outcome for {unlabelled[:3]}")
    bad = [(t.run_id, t.outcome) for t in runs if not is_label(t.outcome)]
    if bad:  # an outcome of 7 (or 0.5, "1") is not a label: refused, never read as "success"
        raise ValueError(f"warm start needs outcomes 0/1 (or booleans); run {bad[0][0]!r} has {bad[0][1]!r}"
                         + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""))
    runs = [t if type(t.outcome) is int else dataclasses.replace(t, outcome=int(t.outcome)) for t in runs]
    if len(runs) < 2:
        raise ValueError(f"warm start needs at least 2 labelled runs, got {len(runs)}")
    return runs


def fit_warm(base: Any, runs: list[Trajectory], tasks: Mapping[str, Task], current: tuple[float, float],
             as_of: str | None, same_agent: str | None, recalibrate: bool, rule: str | None) -> tuple[Any, dict[str, Any]]:
    """(calibration, thresholds with the rule's selection) from ``runs`` replayed through ``base``, a monitor on
    the loaded model without any warm start; ``current`` is the (tau_s, tau_f) pair being certified."""
    records = [replay(base, t, tasks.get(t.task_id), as_of=as_of, same_agent=same_agent) for t in runs]
    failed = [r["run_id"] for r in records if r["errors"]]
    if failed:
        raise ValueError(f"warm start: no probabilities for runs {failed[:3]} (fail-open during replay)")
    rs = runset_of(runs, records)
    settings = WarmStartRule.from_training(dict(base.bundle.training.get("config") or {}), base.min_halt_step)
    return fit_warm_start(rs, settings, base=current, recalibrate=recalibrate, rule=rule)


def is_label(y: Any) -> bool:
    """A finished run's outcome: 0 or 1 (an int, a bool, a numpy integer), nothing else."""
    return isinstance(y, (bool, int, np.integer, np.bool_)) and int(y) in (0, 1)
