"""``earlyeval score``'s numbers on the labelled runs: the metric blocks (as in loao.json, one rule and one
metric set: ``metrics.apply_policy`` / ``outcome_metrics``), the check that the monitor's halts are the policy's,
and the what-if frontier over a threshold grid."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from earlyeval.config.prices import PriceError, run_cost
from earlyeval.core.decision import HALTING_CONTEXTS
from earlyeval.core.trajectory import Trajectory
from earlyeval.evaluation.blocks import agent_block, pooled_block
from earlyeval.fitting.metrics import apply_policy, outcome_metrics
from earlyeval.fitting.thresholds import DEFAULT_TAUS as GRID  # the threshold grid (one definition)
from earlyeval.fitting.thresholds import WarmStartRule
from earlyeval.fitting.warm import (  # warm_start: score_runs' K option
    _scorable,
    halting_policy,
    runset_of,
)
from earlyeval.workflows.score_pass import pass_inconsistent
from earlyeval.workflows.sweep import frontier

log = logging.getLogger("earlyeval.workflows.score")


THRESHOLD_METHODS = {
    "model": "the model directory's thresholds.json",
    "override": "given at run time (--thresholds)",
    "warm start": "warm start",
    "pass": "the pass's, per run: label-free, then certified by its audit runs",
}


def metric_blocks(
    rs: Any,
    thresholds: dict[str, Any],
    warm: np.ndarray | None = None,
    source: str | None = None,
    halts: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict[str, Any]:
    """Per-agent blocks (as in loao.json) and, for several agents, the pooled block.

    ``warm``: runs of a warm start, completed at full cost (never halted); the policy metrics count them.
    ``source``: where the thresholds came from (``thresholds.source_of``).  ``halts``: (t_halt, predicted
    code) per run of ``rs``, the halts the monitor made: the policy metrics count those (a run whose
    context lets no halt is not halted), so that the table and the count of halted runs are one set of numbers."""

    # blocks read min_halt_step only
    cfg = WarmStartRule(taus=(), min_halt_step=int(thresholds.get("min_halt_step", 1)))
    source = source or ("model" if warm is None else "warm start")
    th = {
        "success": float(thresholds["success"]),
        "failure": float(thresholds["failure"]),
        "method": THRESHOLD_METHODS.get(source, source),
    }
    agents = list(dict.fromkeys(rs.agents))
    blocks = {a: agent_block(rs.of_agent(a), th, cfg) for a in agents}
    pooled = pooled_block([(rs.of_agent(a), th) for a in agents], cfg) if len(agents) > 1 else None
    if halts is None and warm is not None and warm.any():
        halts = apply_policy(rs, th["success"], th["failure"], cfg.min_halt_step)
        halts[0][warm], halts[1][warm] = 0, -1
    if halts is not None:
        t_halt, pred = halts
        agent = np.asarray(rs.agents)
        for a in agents:
            m = agent == a
            blocks[a].update(
                outcome_metrics(
                    rs.y[m],
                    rs.T[m],
                    t_halt[m],
                    pred[m],
                    [x for x, k in zip(rs.in_tokens, m) if k],
                    [x for x, k in zip(rs.out_tokens, m) if k],
                )
            )
            if warm is not None and warm.any():
                blocks[a]["warm_runs"] = int(warm[m].sum())
        if pooled is not None:
            pooled.update(outcome_metrics(rs.y, rs.T, t_halt, pred, rs.in_tokens, rs.out_tokens))
    return {"agents": blocks, "pooled": pooled}


# --------------------------------------------------------------- what-if

WHAT_IF_KEYS = (
    "halted_fraction",
    "halted_accuracy",
    "outcome_accuracy",
    "steps_saved",
    "steps_saved_task_skip",
    "steps_saved_in_run",
    "resolve_rate_shift_pp",
    "input_tokens_saved",
    "output_tokens_saved",
)


def what_if(
    rs: Any,
    taus: Any,
    min_t: int = 1,
    warm: np.ndarray | None = None,
    costs: list[Any] | None = None,
) -> dict[str, Any]:
    """The labelled runs' metrics at every (tau_s, tau_f) of a grid, pooled: ``metrics.apply_policy`` and
    ``metrics.outcome_metrics`` (the one halting rule and metric set), plus dollars saved on the runs with a
    known cost; and the savings/accuracy frontier (``sweep.frontier``: no other point saves more steps at a
    higher outcome accuracy).  Warm-start runs complete in full at every point."""
    import pandas as pd

    rows = []
    taus = [float(x) for x in taus]
    for ts in taus:
        for tf in taus:
            t_halt, pred = apply_policy(rs, ts, tf, min_t)
            if warm is not None:
                t_halt[warm], pred[warm] = 0, -1
            m = outcome_metrics(rs.y, rs.T, t_halt, pred, rs.in_tokens, rs.out_tokens)
            row: dict[str, Any] = {"tau_s": ts, "tau_f": tf, **{k: m.get(k) for k in WHAT_IF_KEYS}}
            if costs is not None:
                known = [(c, int(t)) for c, t in zip(costs, t_halt) if c is not None]
                row["cost_usd_saved"] = (
                    sum(c.total - c.upto(t) for c, t in known if t > 0) if known else None
                )
            rows.append(row)
    df = pd.DataFrame(rows).assign(mode="what_if", agent="pooled")
    f = frontier(df.astype({"steps_saved": float, "outcome_accuracy": float}), "what_if")
    return {
        "runs": int(len(rs)),
        "taus": taus,
        "min_halt_step": int(min_t),
        "rule": "metrics.apply_policy over the replayed probabilities; steps_saved_task_skip = halts at t <= 1",
        "grid": rows,
        "frontier": [rows[i] for i in f.index],
    }


def labelled_metrics(
    mon: Any,
    trajs: list[Trajectory],
    records: list[dict[str, Any]],
    warm_ids: set[str],
    th_source: str,
    what_if_taus: Any,
) -> dict[str, Any]:
    """The labelled runs' metric blocks under the monitor's thresholds, the check that its halts are the
    policy's halts, and the what-if frontier when asked for."""
    out: dict[str, Any] = {}
    rs = runset_of(trajs, records, halting_policy(mon.bundle))
    warm = np.asarray([rid in warm_ids for rid in rs.run_ids], dtype=bool)
    ts, tf = mon.rule.pair  # the pair the rule applies under halt_on
    lab = [r for t, r in zip(trajs, records) if _scorable(t, r)]  # the runs of rs, in its order
    made = (
        np.asarray([int(r["halt_t"] or 0) if r["halted"] else 0 for r in lab], dtype=np.int64),
        np.asarray(
            [
                {"success": 1, "failure": 0}.get(r["predicted"], -1) if r["halted"] else -1
                for r in lab
            ]
        ),
    )
    out.update(
        metric_blocks(
            rs,
            {**mon.thresholds, "success": ts, "failure": tf},
            warm if warm_ids else None,
            source=th_source,
            halts=made,
        )
    )
    for blk in (
        out["agents"].values() if th_source == "pass" else ()
    ):  # the runs completed in full are the audit sample
        blk["audited_runs"] = blk.pop("warm_runs", 0)
    # the monitor's own halts must be the policy's halts on its probabilities: one rule, checked
    t_halt, pred = apply_policy(rs, ts, tf, mon.rule.min_halt_step)
    # a run whose context lets no halt ("partial", "none": missing information never halts) must not halt at all
    t_halt = np.asarray(
        [
            int(th) if r.get("context", "full") in HALTING_CONTEXTS else 0
            for r, th in zip(lab, t_halt)
        ]
    )
    mism = [
        r["run_id"]
        for r, th, pr in zip(lab, t_halt, pred)
        if not r.get("warm")
        and (
            (r["halt_t"] or 0) != int(th)
            or (th and r["predicted"] != ("success" if pr == 1 else "failure"))
        )
    ]
    if th_source == "pass":  # each run halts at the thresholds its monitor was spawned with
        mism = pass_inconsistent(lab, mon.halt_on, mon.rule.min_halt_step, mon.rule.task_skips)
    out["policy_consistent"] = not mism
    if mism:
        log.error(
            "monitor halts differ from metrics.apply_policy on %d runs, e.g. %s",
            len(mism),
            mism[:3],
        )
    if what_if_taus is not None and what_if_taus is not False:
        taus = (
            ((mon.bundle.training.get("config") or {}).get("taus") or GRID)
            if what_if_taus is True
            else what_if_taus
        )
        by_id = {t.run_id: t for t in trajs}
        costs = []
        for rid in rs.run_ids:
            try:
                costs.append(run_cost(by_id[rid]))
            except PriceError:
                costs.append(None)
        out["what_if"] = what_if(
            rs, taus, mon.rule.min_halt_step, warm if warm_ids else None, costs
        )
    return out


def shadow_block(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Where a shadow monitor would have been wrong, per agent: each labelled run it would have halted with
    another outcome than the graded one (run, step, prediction), beside its would-be halts and their count.
    This is what a team reads before turning halting on (docs/monitor.md, "Shadow mode")."""
    agents: dict[str, dict[str, Any]] = {}
    for r in records:
        if r.get("outcome") is None or r.get("warm"):
            continue
        a = agents.setdefault(str(r["agent"]), {"labelled_runs": 0, "would_halt": 0, "wrong": []})
        a["labelled_runs"] += 1
        if not r["halted"]:
            continue
        a["would_halt"] += 1
        said = 1 if r["predicted"] == "success" else 0
        if said != int(r["outcome"]):
            a["wrong"].append(
                {"run_id": r["run_id"], "step": r["halt_t"], "predicted": r["predicted"]}
            )
    for a in agents.values():
        a["n_wrong"] = len(a["wrong"])
    return {
        "doc": "nothing was halted: the would-be halts of a shadow monitor, graded; see the agents' blocks "
        "for what they would have saved and the shift they would have caused",
        "agents": agents,
        "n_wrong": sum(a["n_wrong"] for a in agents.values()),
    }
