"""Warm start measured offline: K runs of the held-out agent completed first, its thresholds certified on them.

``thresholds.fit_warm_start`` is the rule (shared with ``score`` and ``Monitor.warm_start``); here it
is applied to random shares of a held-out agent's runs and the policy metrics counted over every run,
the warm runs at full cost, for ``loao.json``'s ``warm_start`` blocks (the certifying rule, the default)
and ``warm_start_check`` (issue 14's checking rule, which may only raise, for comparison).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from earlyeval.evaluation.adapt import warm_split
from earlyeval.fitting.metrics import RunSet, apply_policy, outcome_metrics
from earlyeval.fitting.thresholds import ThresholdRule, fit_warm_start, recalibrated
from earlyeval.model.thresholds import Recalibration


def warm_policy_metrics(
    rs: RunSet, warm: np.ndarray, cal: Recalibration, th: dict[str, Any], cfg: ThresholdRule
) -> dict[str, Any]:
    """Outcome metrics over every run: the warm runs completed at full cost, the rest halted under (cal, th)."""
    rest = rs.subset(~warm)
    t_rest, p_rest = apply_policy(
        recalibrated(rest, cal), th["success"], th["failure"], cfg.min_halt_step
    )
    t_all = np.zeros(len(rs), dtype=np.int64)
    p_all = np.full(len(rs), -1, dtype=np.int64)
    t_all[~warm], p_all[~warm] = t_rest, p_rest
    return outcome_metrics(rs.y, rs.T, t_all, p_all, rs.in_tokens, rs.out_tokens)


def warm_start_block(
    rs: RunSet,
    cfg: ThresholdRule,
    share: float,
    base: tuple[float, float] | None = None,
    rule: str = "certify",
) -> dict[str, Any]:
    """Warm start: a random `share` of the agent's runs completes first (labels known); the agent's
    label-free thresholds ``base`` are certified, kept or raised on them (``fit_warm_start`` with `rule`); the
    rest is halted.  Savings count every run, the warm-start runs at full cost.  Averaged over
    `cfg.warm_repeats` seeded draws; ``decisions`` counts the draws per outcome of the rule."""
    keys = (
        "halted_fraction",
        "halted_accuracy",
        "outcome_accuracy",
        "steps_saved",
        "steps_saved_task_skip",
        "steps_saved_in_run",
        "resolve_rate_shift_pp",
        "economic_consistency",
        "success_recall",
        "failure_recall",
        "input_tokens_saved",
        "output_tokens_saved",
    )
    draws = []
    for r in range(cfg.warm_repeats):
        warm = warm_split(len(rs), share, seed=cfg.seed * 1000 + r)
        cal, th = fit_warm_start(rs.subset(warm), cfg, base, rule=rule)
        m = warm_policy_metrics(rs, warm, cal, th, cfg)
        m["thresholds"] = (th["success"], th["failure"])
        m["decision"] = th.get("decision") or (
            "kept" if base is not None and m["thresholds"] == tuple(base) else "raised"
        )
        m["recalibration"] = (cal.a, cal.b)
        draws.append(m)
    out: dict[str, Any] = {
        "share": share,
        "repeats": cfg.warm_repeats,
        "warm_runs": int(warm.sum()),
        "rule": rule,
    }
    for k in keys:
        vals = [d[k] for d in draws if d.get(k) is not None]
        out[k] = float(np.mean(vals)) if vals else None
        if k in ("outcome_accuracy", "steps_saved") and vals:
            out[k + "_std"] = float(np.std(vals))
    out["thresholds_per_draw"] = [d["thresholds"] for d in draws]
    out["decisions"] = {
        k: sum(d["decision"] == k for d in draws) for k in ("lowered", "kept", "raised")
    }
    return out


def warm_pooled(
    agents_out: dict[str, Any], holdout: list[str], key: str = "warm_start"
) -> dict[str, Any]:
    """Warm-start metrics (block `key`) pooled over held-out agents: run-weighted accuracies, step-weighted savings."""
    out: dict[str, Any] = {}
    shares = next(iter(agents_out.values()), {}).get(key, {}).keys() if agents_out else []
    for sh in shares:
        n = np.asarray([agents_out[a]["n_runs"] for a in holdout], dtype=float)
        blk: dict[str, Any] = {}
        for k in (
            "halted_fraction",
            "halted_accuracy",
            "outcome_accuracy",
            "steps_saved",
            "steps_saved_task_skip",
            "steps_saved_in_run",
            "resolve_rate_shift_pp",
            "economic_consistency",
        ):
            v = np.asarray(
                [
                    np.nan if agents_out[a][key][sh].get(k) is None else agents_out[a][key][sh][k]
                    for a in holdout
                ]
            )
            w = n
            if k.startswith("steps_saved"):
                w = np.asarray([agents_out[a]["total_steps"] for a in holdout], dtype=float)
            ok = ~np.isnan(v)
            blk[k] = float(np.sum(v[ok] * w[ok]) / np.sum(w[ok])) if ok.any() else None
        blk["decisions"] = {
            d: sum(agents_out[a][key][sh].get("decisions", {}).get(d, 0) for a in holdout)
            for d in ("lowered", "kept", "raised")
        }
        out[sh] = blk
    return out
