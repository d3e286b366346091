"""The warm start: K finished, labelled runs of a new agent replayed through the model as it was loaded, then the
thresholds certified on them (``fitting.thresholds.fit_warm_start``).  It returns a ``model.thresholds.WarmStart``,
which the Monitor is handed (``Monitor.use_warm_start``): the fitting stays offline, the Monitor only halts."""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping

import numpy as np

from earlyeval.core.trajectory import Task, Trajectory
from earlyeval.features.evidence import DEFAULT_RULE
from earlyeval.fitting.metrics import RunSet, runset_of_runs
from earlyeval.fitting.thresholds import WarmStartRule, fit_warm_start
from earlyeval.live.monitor import Monitor
from earlyeval.live.replay import replay
from earlyeval.model.thresholds import WarmStart


def warm_start(
    monitor: Monitor,
    runs: Iterable[Trajectory],
    tasks: Mapping[str, Task] | None = None,
    as_of: str | None = "",
    same_agent: str | None = None,
    recalibrate: bool = False,
    rule: str | None = None,
) -> WarmStart:
    """Fit a warm start for ``monitor`` from K finished, labelled runs of the new agent.

    The runs are replayed through the model as it was loaded (``monitor.without_warm_start()``);
    ``fit_warm_start`` then certifies the monitor's current thresholds on them (the default ``rule="certify"``,
    ``fitting.certify``: each side is lowered only as far as exact binomial tests at the training's confidence
    certify the target recall, and both are raised only when the runs show the current pair misses it).
    ``rule="check"``: raised until the runs support them, never lowered (``recalibrate=True`` implies it: Platt
    refitted on them first).  Only these runs' labels are read.  ``as_of``/``same_agent`` as in ``score``.
    Hand the result to ``monitor.use_warm_start``."""
    runs = labelled_runs(runs)
    base = monitor.without_warm_start()
    known = {**monitor.loaded.tasks, **dict(tasks or {})}
    records = [
        replay(base, t, known.get(t.task_id), as_of=as_of, same_agent=same_agent) for t in runs
    ]
    failed = [r["run_id"] for r in records if r["errors"]]
    if failed:
        raise ValueError(
            f"warm start: no probabilities for runs {failed[:3]} (fail-open during replay)"
        )
    settings = WarmStartRule.from_training(
        dict(monitor.bundle.training.get("config") or {}), monitor.rule.min_halt_step
    )
    cal, th = fit_warm_start(
        runset_of(runs, records, halting_policy(monitor.bundle)),
        settings,
        base=(monitor.rule.success, monitor.rule.failure),
        recalibrate=recalibrate,
        rule=rule,
    )
    return WarmStart(
        success=float(th["success"]),
        failure=float(th["failure"]),
        calibration=cal,
        runs=tuple(t.run_id for t in runs),
        selection={k: v for k, v in th.items() if k not in ("success", "failure")},
    )


def labelled_runs(runs: Iterable[Trajectory]) -> list[Trajectory]:
    """The runs with their outcomes as ints; refused (ValueError) unless every one is labelled 0/1 and there are two."""
    runs = list(runs)
    unlabelled = [t.run_id for t in runs if t.outcome is None]
    if unlabelled:
        raise ValueError(
            f"warm start needs finished, labelled runs; no outcome for {unlabelled[:3]}"
        )
    bad = [(t.run_id, t.outcome) for t in runs if not is_label(t.outcome)]
    if bad:  # an outcome of 7 (or 0.5, "1") is not a label: refused, never read as "success"
        raise ValueError(
            f"warm start needs outcomes 0/1 (or booleans); run {bad[0][0]!r} has {bad[0][1]!r}"
            + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else "")
        )
    runs = [
        t if type(t.outcome) is int else dataclasses.replace(t, outcome=int(t.outcome))
        for t in runs
    ]
    if len(runs) < 2:
        raise ValueError(f"warm start needs at least 2 labelled runs, got {len(runs)}")
    return runs


def is_label(y: Any) -> bool:
    """A finished run's outcome: 0 or 1 (an int, a bool, a numpy integer), nothing else."""
    return isinstance(y, (bool, int, np.integer, np.bool_)) and int(y) in (0, 1)


def halting_policy(bundle: Any) -> tuple[str, bool]:
    """(the success evidence rule, the task-skip policy) a model directory was trained and evaluated with (its
    training config; a directory written before them: the defaults, "change" and no task skips)."""
    cfg = dict((getattr(bundle, "training", None) or {}).get("config") or {})
    return str(cfg.get("success_evidence") or DEFAULT_RULE), bool(cfg.get("task_skips", False))


def runset_of(
    trajs: list[Trajectory], records: list[dict[str, Any]], policy: tuple[str, bool]
) -> RunSet:
    """A metrics.RunSet of the labelled runs, by ``metrics.runset_of_runs`` (the offline evaluation's own builder),
    gated by ``policy`` (``halting_policy`` of the replaying monitor's model)."""
    lab = [(t, r) for t, r in zip(trajs, records) if _scorable(t, r)]
    for t, r in lab:
        if len(r["p_success"]) != max(len(t.steps) - 1, 0):
            raise RuntimeError(
                f"replay gave {len(r['p_success'])} prefix predictions for run {t.run_id} of {len(t.steps)} steps"
            )
    return runset_of_runs(
        [t for t, _ in lab],
        [r["p_success"] for _, r in lab],
        [r["p_failure"] for _, r in lab],
        policy[0],
        policy[1],
    )


def _scorable(t: Trajectory, rec: dict[str, Any]) -> bool:
    """Labelled, and every prefix has probabilities (a fail-open step has none)."""
    return t.outcome is not None and not rec["errors"]
