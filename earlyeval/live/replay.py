"""Replaying a finished run through a Monitor, step by step, as a live loop would feed it (``Monitor.replay``),
and the per-run record ``earlyeval score`` (a folder of someone else's runs) and the warm start (``fitting.warm``:
K finished runs of a new agent) keep of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from earlyeval.core.trajectory import Task, Trajectory
from earlyeval.live.runstate import (
    run_context as run_context,
)  # a replay's context, defined with the run

if TYPE_CHECKING:  # pragma: no cover
    from earlyeval.live.benchpass import AuditMonitor
    from earlyeval.live.monitor import Monitor


def replay(
    monitor: Monitor | AuditMonitor,
    traj: Trajectory,
    task: Task | None,
    as_of: str | None = "",
    same_agent: str | None = None,
) -> dict[str, Any]:
    """Feed steps 1..T-1 of a finished run to the monitor (``Monitor.replay``; an audited run of a pass: its
    ``AuditMonitor``, which never halts); the per-run record."""
    ps: list[float] = []
    pf: list[float] = []
    gates: list[int] = []
    halt = None
    errors = []
    for d in monitor.replay(traj, task, as_of=as_of, same_agent=same_agent):
        if d.p_success is None or d.p_failure is None:  # fail-open: no probability for this prefix
            errors.append(d.reason)
            ps.append(float("nan"))
            pf.append(float("nan"))
            gates.append(0)
            continue
        ps.append(d.p_success)
        pf.append(d.p_failure)
        gates.append(int(d.gate or 0))
        if (d.halt or d.would_halt) and halt is None:  # a shadow monitor's halt is recorded alike
            halt = (len(ps), d)
    run = monitor.run
    return {
        "run_id": traj.run_id,
        "agent": traj.agent,
        "task_id": traj.task_id,
        "n_steps": len(traj.steps),
        "not_in_label_list": bool(traj.meta.get("not_in_label_list")),
        "outcome": traj.outcome,
        "halted": halt is not None,
        "halt_t": halt[0] if halt else None,  # prefix length (steps seen) at the halt
        "halt_step_index": halt[1].step_index if halt else None,
        "predicted": (halt[1].outcome or halt[1].would_outcome) if halt else None,
        "shadow": bool(halt[1].shadow) if halt else False,  # a would-be halt: nothing was halted
        # "task prior" when the task alone decided (policy.HALT_RULES)
        "halt_rule": halt[1].halt_rule if halt else None,
        "p_success_at_halt": halt[1].p_success if halt else None,
        "p_failure_at_halt": halt[1].p_failure if halt else None,
        "reason": halt[1].reason
        if halt
        else (f"not halted in {len(ps)} prefixes" if ps else "too short to halt"),
        "top_features": [list(x) for x in halt[1].top_features] if halt else [],
        "warnings": list(run.warnings),
        "context": run.context,  # Decision.context, and where the task's fields came from
        "context_source": dict(run.context_source),
        "errors": errors,
        "p_success": ps,
        "p_failure": pf,
        "gates": gates,  # each prefix's gate (Decision.gate): what the rule read, as offline
    }
