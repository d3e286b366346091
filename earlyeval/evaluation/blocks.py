"""The metric blocks of a report: one held-out agent, several pooled, the simple baselines.

The same blocks fill ``loao.json`` (``evaluate``), ``score.json`` (``score``) and the transfer table, so
that a number means one thing everywhere.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from earlyeval.fitting.metrics import (
    NEVER,
    RunSet,
    apply_policy,
    auroc,
    evaluate_policy,
    grid_metrics,
    outcome_metrics,
    repeat_action_policy,
    step_cap_policy,
)
from earlyeval.fitting.thresholds import ThresholdRule

HEADLINE = (
    "n_runs",
    "resolve_rate",
    "auroc_success",
    "auroc_failure",
    "halted_fraction",
    "halted_accuracy",
    "outcome_accuracy",
    "success_recall",
    "failure_recall",
    "economic_consistency",
    "steps_saved",
    "steps_saved_task_skip",
    "steps_saved_in_run",
    "input_tokens_saved",
    "output_tokens_saved",
    "resolve_rate_shift_pp",
    "predicted_resolve_rate",
    "mean_p_success",
    "halted_as_success",
    "halted_as_failure",
)


def agent_block(rs: RunSet, th: dict[str, Any], cfg: ThresholdRule) -> dict[str, Any]:
    m = evaluate_policy(rs, th["success"], th["failure"], cfg.min_halt_step)
    out = {k: m.get(k) for k in HEADLINE}
    out["total_steps"] = int(rs.T.sum())
    out["thresholds"] = {"success": th["success"], "failure": th["failure"]}
    out["threshold_selection"] = {k: v for k, v in th.items() if k not in ("success", "failure")}
    return out


def pooled_block(items: list[tuple[RunSet, dict[str, Any]]], cfg: ThresholdRule) -> dict[str, Any]:
    """Metrics over all runs of several held-out agents, each under its own fold's thresholds."""
    if not items:
        return {}
    ys, Ts, th, pr, tin, tout, yy, pss, pff, ww = [], [], [], [], [], [], [], [], [], []
    for rs, t in items:
        t_halt, pred = apply_policy(rs, t["success"], t["failure"], cfg.min_halt_step)
        ys.append(rs.y)
        Ts.append(rs.T)
        th.append(t_halt)
        pr.append(pred)
        tin += rs.in_tokens
        tout += rs.out_tokens
        a, b, c, d = rs.prefix_arrays()
        yy.append(a)
        pss.append(b)
        pff.append(c)
        ww.append(d)
    m = outcome_metrics(
        np.concatenate(ys), np.concatenate(Ts), np.concatenate(th), np.concatenate(pr), tin, tout
    )
    y, ps, pf, w = map(np.concatenate, (yy, pss, pff, ww))
    m["auroc_success"] = auroc(y, ps, w)
    m["auroc_failure"] = auroc(1 - y, pf, w)
    m["mean_p_success"] = float(np.average(ps, weights=w)) if len(w) else None
    return {k: m.get(k) for k in HEADLINE}


def baseline_blocks(rs: RunSet) -> dict[str, dict[str, Any]]:
    out = {}
    for k in (20, 30, 40):
        t, p = step_cap_policy(rs.T, k)
        out[f"step_cap_{k}"] = outcome_metrics(rs.y, rs.T, t, p, rs.in_tokens, rs.out_tokens)
    t, p = repeat_action_policy(rs.actions, 3)
    out["repeat_action"] = outcome_metrics(rs.y, rs.T, t, p, rs.in_tokens, rs.out_tokens)
    return out


def pooled_baselines(
    sets: dict[str, RunSet], holdout: list[str], agents_out: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """The baselines over the runs of the held-out agents pooled, each with its agents' own blocks
    (``agents_out[a]["baselines"]``, from ``baseline_blocks``)."""
    baselines: dict[str, Any] = {}
    for name in ("step_cap_20", "step_cap_30", "step_cap_40", "repeat_action"):
        ys, Ts, ths, prs, tin, tout = [], [], [], [], [], []
        for a in holdout:
            rs = sets[a]
            if name == "repeat_action":
                t, p = repeat_action_policy(rs.actions, 3)
            else:
                t, p = step_cap_policy(rs.T, int(name.rsplit("_", 1)[1]))
            ys.append(rs.y)
            Ts.append(rs.T)
            ths.append(t)
            prs.append(p)
            tin += rs.in_tokens
            tout += rs.out_tokens
        b = outcome_metrics(
            np.concatenate(ys),
            np.concatenate(Ts),
            np.concatenate(ths),
            np.concatenate(prs),
            tin,
            tout,
        )
        b["agents"] = {a: agents_out[a]["baselines"][name] for a in holdout}
        baselines[name] = b
    return baselines


def model_at_steps_saved(
    rs: RunSet, target_saved: float, cfg: ThresholdRule
) -> dict[str, Any] | None:
    """The model as a failure-only policy, tau_f lowered until it saves at least `target_saved`.

    Steps saved depends on predictions only, never on labels, so matching a
    baseline's savings this way uses no held-out labels.
    """
    if target_saved is None or target_saved <= 0:
        return None
    taus = np.round(np.arange(0.99, 0.0, -0.01), 2)
    g = grid_metrics(rs, np.asarray([NEVER]), taus, cfg.min_halt_step)
    ok = np.flatnonzero(g.steps_saved[0] >= target_saved - 1e-12)
    if ok.size == 0:
        return {"reached": False, "max_steps_saved": float(np.nanmax(g.steps_saved[0]))}
    j = ok[0]
    m = evaluate_policy(rs, NEVER, float(taus[j]), cfg.min_halt_step)
    return {
        "reached": True,
        "failure_threshold": float(taus[j]),
        "steps_saved": m["steps_saved"],
        "outcome_accuracy": m["outcome_accuracy"],
        "halted_accuracy": m["halted_accuracy"],
    }


def failure_only_thresholds(th: dict[str, Any]) -> dict[str, Any]:
    """The live default: the same thresholds with success halts off (a live success halt needs a patch)."""
    return {**th, "success": NEVER}


def dollars_block(
    rs: RunSet, costs: dict[str, Any], th: dict[str, Any], cfg: ThresholdRule
) -> dict[str, Any]:
    """Dollars of the runs and of the steps the policy saved, from ``config.prices`` (each run's own price source);
    runs without a price are left out and counted."""
    t_halt, _ = apply_policy(rs, th["success"], th["failure"], cfg.min_halt_step)
    return dollars_at(rs, costs, t_halt)


def dollars_at(rs: RunSet, costs: dict[str, Any], t_halt: np.ndarray) -> dict[str, Any]:
    """``dollars_block`` for given halting prefixes (0 = not halted), e.g. a simulated pass's."""
    total = saved = 0.0
    priced = 0
    for rid, t in zip(rs.run_ids, t_halt):
        c = costs.get(rid)
        if c is None:
            continue
        priced += 1
        total += c.total
        if t > 0:
            saved += c.total - c.upto(int(t))
    return {
        "runs_priced": priced,
        "runs": len(rs),
        "total_usd": total,
        "usd_saved": saved,
        "usd_saved_share": saved / total if total > 0 else None,
    }


def sum_dollars(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """Several agents' ``dollars_block``s summed (the pooled row's), the share recomputed from the sums."""
    total = sum(b["total_usd"] for b in blocks)
    saved = sum(b["usd_saved"] for b in blocks)
    return {
        "runs_priced": sum(b["runs_priced"] for b in blocks),
        "runs": sum(b["runs"] for b in blocks),
        "total_usd": total,
        "usd_saved": saved,
        "usd_saved_share": saved / total if total > 0 else None,
    }


def oracle_frontier_saved(rs: RunSet, halted_accuracy: float | None, cfg: ThresholdRule) -> float:
    """The most steps any threshold pair of the grid saves on this agent at a halted accuracy at least
    ``halted_accuracy`` (the per-agent oracle, fitted on its own labels, at the rule's own accuracy)."""
    taus = np.asarray(cfg.taus, dtype=np.float64)
    g = grid_metrics(rs, taus, taus, cfg.min_halt_step)
    acc = 1.0 if halted_accuracy is None else float(halted_accuracy)
    ok = np.nan_to_num(g.halted_accuracy, nan=1.0) >= acc - 1e-12
    return float(np.where(ok, g.steps_saved, 0.0).max())
