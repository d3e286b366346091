"""Replaying a finished run through a Monitor, step by step, as a live loop would feed it.

The live layer's own replay: ``earlyeval score`` (a folder of someone else's runs) and the warm start
(``fitting.warm``: K finished runs of a new agent) both call it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from earlyeval.core.trajectory import Task, Trajectory
from earlyeval.features import RunContext
from earlyeval.features.prior import default_match_patterns


def run_context(
    traj: Trajectory, task: Task | None, as_of: str | None = "", same_agent: str | None = None
) -> RunContext:
    """The run's context for scoring.  ``as_of``: "" every public submission (an agent evaluated today),
    a YYYY-MM-DD date only those dated strictly before it, None the run's own catalog date (as offline);
    ``same_agent``: one more regex naming public submissions of this same agent (matched, like
    ``prior_match``, on name, folder, display name and models lower-cased with non-alphanumerics removed)."""
    ctx = RunContext.of(traj, task, as_of=as_of)
    if same_agent:
        pats = list(ctx.prior_match) or default_match_patterns(ctx.scaffold, ctx.model)
        ctx = dataclasses.replace(ctx, prior_match=pats + [same_agent])
    return ctx


def replay(
    monitor: Any,
    traj: Trajectory,
    task: Task | None,
    as_of: str | None = "",
    same_agent: str | None = None,
) -> dict[str, Any]:
    """Feed steps 1..T-1 of a finished run to the monitor, as a live loop would; the per-run record."""
    monitor.start_context(run_context(traj, task, as_of, same_agent), traj.run_id)
    ps: list[float] = []
    pf: list[float] = []
    halt = None
    errors = []
    for step in traj.steps[:-1]:
        d = monitor.observe(step)
        if d.p_success is None:  # fail-open: no probability for this prefix
            errors.append(d.reason)
            ps.append(float("nan"))
            pf.append(float("nan"))
            continue
        ps.append(d.p_success)
        pf.append(d.p_failure)
        if d.halt and halt is None:
            halt = (len(ps), d)
    rec: dict[str, Any] = {
        "run_id": traj.run_id,
        "agent": traj.agent,
        "task_id": traj.task_id,
        "n_steps": len(traj.steps),
        "not_in_label_list": bool(traj.meta.get("not_in_label_list")),
        "outcome": traj.outcome,
        "halted": halt is not None,
        "halt_t": halt[0] if halt else None,  # prefix length (steps seen) at the halt
        "halt_step_index": halt[1].step_index if halt else None,
        "predicted": halt[1].outcome if halt else None,
        "halt_rule": halt[1].halt_rule
        if halt
        else None,  # "task prior" when the task alone decided (policy.HALT_RULES)
        "p_success_at_halt": halt[1].p_success if halt else None,
        "p_failure_at_halt": halt[1].p_failure if halt else None,
        "reason": halt[1].reason
        if halt
        else (f"not halted in {len(ps)} prefixes" if ps else "too short to halt"),
        "top_features": [list(x) for x in halt[1].top_features] if halt else [],
        "warnings": list(monitor.warnings),
        "context": getattr(
            monitor, "context", None
        ),  # Decision.context, and where the task's fields came from
        "context_source": dict(getattr(monitor, "context_source", {}) or {}),
        "errors": errors,
        "p_success": ps,
        "p_failure": pf,
    }
    return rec
