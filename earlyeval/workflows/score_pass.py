"""``earlyeval score --pass``: a folder replayed as one benchmark pass (issue 28 item 1), in simulated time.

Seeded order, W simulated workers, audited runs never halted; each run's thresholds come only from runs finished
before it started, and the seed fixes everything. docs/monitor.md, "Replaying a folder as a pass".
"""

from __future__ import annotations

from typing import Any, Callable

from earlyeval.core.decision import HALTING_CONTEXTS
from earlyeval.core.trajectory import Task, Trajectory
from earlyeval.live.benchpass import Pass, run_on_workers, would_halt
from earlyeval.live.benchpass import pass_order as order_of
from earlyeval.live.replay import replay
from earlyeval.model.policy import gated_pair, halting_pair

ORDER_RULE = "numpy default_rng(seed).permutation of the runs sorted by run id"


def pass_order(trajs: list[Trajectory], seed: int) -> list[int]:
    """Indices into ``trajs`` in pass order (``benchpass.pass_order`` of their run ids)."""
    return order_of([t.run_id for t in trajs], seed)


def _usage_spent(usage: dict[str, Any]) -> tuple[int | None, float | None]:
    """(tokens, dollars) a finished run spent, None when unknown (never 0)."""
    dims = [usage.get("input_tokens"), usage.get("output_tokens")]
    tokens = int(sum(d["spent"] for d in dims)) if all(d is not None for d in dims) else None
    cost = usage["cost_usd"]["spent"] if usage.get("cost_usd") is not None else None
    return tokens, cost


def replay_pass(
    mon: Any,
    trajs: list[Trajectory],
    tasks_by_id: dict[str, Task],
    cutoff: str | None,
    same_agent: str | None,
    *,
    audit_share: float,
    seed: int,
    workers: int,
    usage_of: Callable[[Trajectory, int | None], dict[str, Any]],
    on_spawn: Callable[[str, int, set[str]], None] | None = None,
    **pass_options: Any,
) -> tuple[list[dict[str, Any]], Pass]:
    """One record per run (in ``trajs``' order) replayed as a pass of ``workers`` simulated workers; the Pass.

    ``usage_of(traj, halt_t)``: the run's tokens/dollars spent (``score_usage.usage_of``), told to the Pass.
    ``on_spawn(run_id, start, finished_ids)``: called at each spawn with the runs the Pass had finished then
    (read from the Pass's own state).  ``pass_options``: ``Pass(alpha=, max_error=)``."""
    p = Pass(
        mon, None, audit_share=audit_share, seed=seed, expected_runs=len(trajs), **pass_options
    )
    records: dict[int, dict[str, Any]] = {}
    finished: set[str] = set()

    def deliver(i: int) -> None:
        t, r = trajs[i], records[i]
        tokens, cost = _usage_spent(r["usage"])
        aud = r["audited"]
        p.finish(
            t.run_id,
            steps=r["pass_duration"],
            tokens=tokens,
            cost=cost,
            halted=r["halted"],
            outcome=t.outcome if aud and t.outcome is not None else None,
        )
        finished.add(t.run_id)

    def run(i: int, k: int, start: int) -> int:
        t = trajs[i]
        if on_spawn is not None:
            on_spawn(t.run_id, start, set(p.state["finished"]))
        m = p.monitor(t.run_id)
        r = replay(m, t, tasks_by_id.get(t.task_id), cutoff, same_agent)
        r["usage"] = usage_of(t, r["halt_t"] if r["halted"] else None)
        dur = int(r["halt_t"]) if r["halted"] else len(t.steps)
        r.update(
            audited=p.is_audited(t.run_id),
            pass_order=k,
            pass_start=start,
            pass_finish=start + dur,
            pass_duration=dur,
            pass_thresholds=[m.rule.success, m.rule.failure],
            pass_runs_finished_at_start=len(finished),
        )
        records[i] = r
        return dur

    run_on_workers(pass_order(trajs, seed), workers, run, deliver)
    return [records[i] for i in range(len(trajs))], p


def pass_inconsistent(
    records: list[dict[str, Any]], halt_on: str, min_t: int, task_skips: bool = False
) -> list[str]:
    """Runs whose halt is not the policy's halt at the thresholds their monitor was spawned with (audited
    runs: never halted); the pass's form of score's ``policy_consistent`` check."""
    bad = []
    for r in records:
        if r.get("audited"):
            if r["halted"]:
                bad.append(r["run_id"])
            continue
        ts, tf = halting_pair(*r["pass_thresholds"], halt_on)
        ok = r.get("context", "full") in HALTING_CONTEXTS
        gates = r.get("gates") or [0] * len(r["p_success"])
        probs = [
            gated_pair(a, b, t, g, task_skips) if ok else None
            for t, (a, b, g) in enumerate(zip(r["p_success"], r["p_failure"], gates), start=1)
        ]
        pred = would_halt(probs, ts, tf, min_t) if probs else None
        if pred != (r["predicted"] if r["halted"] else None):
            bad.append(r["run_id"])
    return bad


def pass_block(
    p: Pass, records: list[dict[str, Any]], workers: int, savings: dict[str, Any]
) -> dict[str, Any]:
    """score.json's ``pass`` block: the order, W, the audit sample, thresholds over time, status, savings."""
    s = p.summary()
    aud = [r for r in records if r["audited"]]
    steps = sum(r["n_steps"] for r in records)
    saved = sum(r["n_steps"] - r["halt_t"] for r in records if r["halted"])
    return {
        "order": ORDER_RULE,
        "seed": p.seed,
        "workers": workers,
        "audit_share": p.audit_share,
        "n_audited": len(aud),
        "n_audited_graded": sum(r["outcome"] is not None for r in aud),
        "audited_share": len(aud) / len(records) if records else None,
        "label_free": s["label_free"],
        "thresholds_final": s["thresholds"],
        "thresholds_history": s["history"],
        "status": s["status"],
        "warnings": s["warnings"],
        # is the early-stopped score following this agent? (model.shift_test; once it fires, that side is off)
        "shift_test": s["shift_test"],
        "shift_detectable": s["shift_detectable"],
        "n_halted": sum(r["halted"] for r in records),
        "makespan": max((r["pass_finish"] for r in records), default=0),
        # audited runs are never halted: their steps (and tokens, dollars) all count as spent
        "savings": {
            "steps_total": steps,
            "steps_saved": saved,
            "steps_saved_fraction": saved / steps if steps else None,
            **{k: v for k, v in savings.items() if k != "runs"},
            "audited_counted_at_full_cost": True,
        },
    }
