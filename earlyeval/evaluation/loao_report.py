"""The loao.json document of a ``LoaoResult``: each held-out agent's block (its fold's rule, the live
default and task-skip modes, the other rule, the oracle, the simulated pass, baselines and warm start),
the held-out agents pooled, and how the thresholds were chosen."""

from __future__ import annotations

from typing import Any

import numpy as np

from earlyeval.config.eval_config import EvalConfig
from earlyeval.config.prices import price_runs
from earlyeval.evaluation.blocks import (
    agent_block,
    baseline_blocks,
    dollars_block,
    failure_only_thresholds,
    model_at_steps_saved,
    oracle_frontier_saved,
    pooled_baselines,
    pooled_block,
    sum_dollars,
)
from earlyeval.evaluation.dataset import Dataset
from earlyeval.evaluation.evaluate import LoaoResult, other_rule
from earlyeval.evaluation.pass_predict import repredictor
from earlyeval.evaluation.pass_sim import pass_block, pass_pooled
from earlyeval.evaluation.warm_start import warm_pooled, warm_start_block
from earlyeval.fitting.metrics import spearman
from earlyeval.fitting.risk_control import guarantee_check, guarantee_tally
from earlyeval.fitting.thresholds import choose_thresholds


def _agent_report(
    res: LoaoResult,
    a: str,
    cfg: EvalConfig,
    alt_cfg: EvalConfig,
    costs: dict[str, Any],
    light: bool,
    pass_features: bool,
) -> dict[str, Any]:
    """One held-out agent's block of loao.json: its fold's rule, the failure-only, other-rule and oracle
    variants, the simulated pass and (unless ``light``) baselines and warm start; what its fold trained on."""
    rs = res.sets[a]
    th = res.thresholds[a]
    base_th = (th["success"], th["failure"])
    blk = agent_block(rs, th, cfg)
    blk["guarantee_check"] = guarantee_check(rs, th, cfg.min_halt_step)
    fold = res.folds.get(a)
    blk["pass"] = pass_block(
        rs,
        base_th,
        cfg.min_halt_step,
        costs,
        repredict=repredictor(*fold, a) if fold and pass_features else None,
    )
    blk["small_n"] = a in res.small
    blk["dollars"] = dollars_block(rs, costs, th, cfg)
    blk.update(mode_blocks(res, a, cfg, costs))
    if a in res.alt_thresholds:
        blk["other_rule"] = agent_block(rs, res.alt_thresholds[a], alt_cfg)
    orc = agent_block(rs, res.oracle_thresholds[a], cfg)
    orc["note"] = "thresholds picked on this agent's own labels: an upper bound, never the headline"
    blk["oracle"] = orc
    blk["oracle_frontier_steps_saved"] = oracle_frontier_saved(rs, blk.get("halted_accuracy"), cfg)
    if not light:
        base = baseline_blocks(rs)
        for name, b in base.items():
            b["model_at_equal_steps_saved"] = model_at_steps_saved(
                rs, b.get("steps_saved") or 0.0, cfg
            )
        blk["baselines"] = base
        blk["warm_start"] = {
            f"{sh:.0%}": warm_start_block(rs, cfg, sh, base_th) for sh in cfg.warm_shares
        }
        # issue 14's checking rule (may only raise), beside the certifying default for comparison
        blk["warm_start_check"] = {
            f"{sh:.0%}": warm_start_block(rs, cfg, sh, base_th, rule="check")
            for sh in cfg.warm_shares
        }
    ex = res.folds[a][1] if a in res.folds else frozenset([a])
    ad = res.runner.adaptation.get((ex, a))
    if ad:
        blk["adaptation"] = ad
    fitted = res.runner.fit(ex)
    blk["trained_on"] = {
        "agents": fitted.train_agents,
        "runs": fitted.n_train_runs,
        "prefixes": fitted.n_train_prefixes,
    }
    if a in res.model_choice:
        blk["model_choice"] = res.model_choice[a]
    return blk


def live_pair(res: LoaoResult, a: str) -> dict[str, Any]:
    """The live default's thresholds of ``a``'s fold (chosen for halt_on: failure), or the benchmark pair with
    success off for a result made without them."""
    return res.live_thresholds.get(a) or failure_only_thresholds(res.thresholds[a])


def task_skip_pair(res: LoaoResult, a: str, cfg: EvalConfig) -> dict[str, Any]:
    """``a``'s fold's thresholds chosen, by the same rule on the same inner units, with task skips allowed."""
    key = f"task_skips:{a}"
    if key not in res.cache:
        inner = {b: rs.with_task_skips(True) for b, rs in res.inner.get(a, {}).items()}
        res.cache[key] = choose_thresholds(inner, cfg, method="inner units, task skips on")
    return res.cache[key]


def mode_blocks(res: LoaoResult, a: str, cfg: EvalConfig, costs: dict[str, Any]) -> dict[str, Any]:
    """The live default (failure only, its own thresholds and guarantee) and the task-skip policy (on, its own
    thresholds), each apart from the benchmark-mode headline; the task-skip block's savings and shift are
    what the policy adds, never part of the headline."""
    rs = res.sets[a]
    live = live_pair(res, a)
    fo = agent_block(rs, live, cfg)
    fo["dollars"] = dollars_block(rs, costs, live, cfg)
    out = {"failure_only": fo}
    if res.inner.get(a):
        skip = task_skip_pair(res, a, cfg)
        out["task_skips"] = agent_block(rs.with_task_skips(True), skip, cfg)
    return out


def _pooled_report(
    res: LoaoResult, cfg: EvalConfig, alt_cfg: EvalConfig, agents_out: dict[str, Any]
) -> dict[str, Any]:
    """The large held-out agents' runs pooled, each under its own fold's thresholds (and the variants')."""
    items = [(res.sets[a], res.thresholds[a]) for a in res.holdout]
    pooled = pooled_block(items, cfg)
    pooled["failure_only"] = pooled_block(
        [(res.sets[a], live_pair(res, a)) for a in res.holdout], cfg
    )
    if all(res.inner.get(a) for a in res.holdout):
        pooled["task_skips"] = pooled_block(
            [(res.sets[a].with_task_skips(True), task_skip_pair(res, a, cfg)) for a in res.holdout],
            cfg,
        )
    pooled["dollars"] = sum_dollars([agents_out[a]["dollars"] for a in res.holdout])
    pooled["failure_only"]["dollars"] = sum_dollars(
        [agents_out[a]["failure_only"]["dollars"] for a in res.holdout]
    )
    if all(a in res.alt_thresholds for a in res.holdout):
        pooled["other_rule"] = pooled_block(
            [(res.sets[a], res.alt_thresholds[a]) for a in res.holdout], alt_cfg
        )
    steps = {a: float(res.sets[a].T.sum()) for a in res.holdout}
    orc_saved = sum(agents_out[a]["oracle_frontier_steps_saved"] * steps[a] for a in res.holdout)
    rule_saved = sum((agents_out[a].get("steps_saved") or 0.0) * steps[a] for a in res.holdout)
    pooled["share_of_oracle_savings"] = rule_saved / orc_saved if orc_saved > 0 else None
    pooled["guarantee_held"] = guarantee_tally(
        [agents_out[a].get("guarantee_check") for a in res.holdout]
    )
    return pooled


def _threshold_detail(cfg: EvalConfig) -> str:
    """How the thresholds were chosen, in words (loao.json's ``threshold_selection_detail``)."""
    return (
        "for each held-out agent A: every other large agent B is predicted by a model fitted without A and B"
        + (" and every other agent of B's scaffold" if cfg.inner_holdout == "scaffold" else "")
        + "; "
        + (
            f"rule agent-quantile: per side, tau is the (k+1)-th most cautious of the B's boldest thresholds whose share of "
            f"runs halted wrongly on that side is <= {cfg.risk_alpha:g} (k from delta {cfg.risk_delta:g}; the guarantee per "
            "held-out agent is in its threshold_selection block, how it held in guarantee_check)"
            if cfg.threshold_rule == "agent-quantile"
            else "rule worst-case: (tau_s, tau_f) maximize the steps saved over those predictions subject to "
            + (
                "outcome accuracy"
                if cfg.constraint == "accuracy"
                else "success recall and failure recall (accuracy whatever the resolve rate)"
            )
            + f" >= {cfg.target_accuracy} on every B"
        )
        + (
            ". Prior guard: each fold ships the model of the task-level features instead when it ranks the B better"
            if cfg.prior_guard
            else ""
        )
        + ". Small runs are held out together and use the same rule."
    )


def loao_report(
    ds: Dataset, cfg: EvalConfig, res: LoaoResult, light: bool = False, pass_features: bool = True
) -> dict[str, Any]:
    """The loao.json document; ``light`` skips baselines and warm start (ablation rows need neither);
    ``pass_features=False`` simulates the passes on the static predictions (cold; the ablation rows)."""
    # counted per block
    costs = price_runs([t for t in ds.trajs if t.agent in res.sets], ds.catalog, unpriced="skip")
    alt_cfg = other_rule(cfg)
    agents_out: dict[str, Any] = {
        a: _agent_report(res, a, cfg, alt_cfg, costs, light, pass_features) for a in res.sets
    }
    pooled = _pooled_report(res, cfg, alt_cfg, agents_out)
    oracle_pooled = pooled_block(
        [(res.sets[a], res.oracle_thresholds[a]) for a in res.holdout], cfg
    )
    # baselines pooled over the held-out agents
    baselines = {} if light else pooled_baselines(res.sets, res.holdout, agents_out)
    pred_rates = [agents_out[a]["predicted_resolve_rate"] for a in res.holdout]
    true_rates = [agents_out[a]["resolve_rate"] for a in res.holdout]
    mean_ps = [agents_out[a]["mean_p_success"] for a in res.holdout]
    fits = list(res.runner._fits.values())
    return {
        "bench": ds.bench,
        "version": 1,
        "config": cfg.to_dict(),
        "threshold_selection": cfg.threshold_selection,
        "threshold_selection_detail": _threshold_detail(cfg),
        "holdout_agents": res.holdout,
        "small_agents": res.small,
        "agents": agents_out,
        "pooled": pooled,
        "oracle_pooled": {
            **oracle_pooled,
            "note": "thresholds picked per agent on its own labels: upper bound only",
        },
        "spearman": spearman(pred_rates, true_rates),
        "spearman_mean_p_success": spearman(mean_ps, true_rates),
        "mean_abs_resolve_rate_shift_pp": float(
            np.mean([abs(agents_out[a]["resolve_rate_shift_pp"]) for a in res.holdout])
        )
        if res.holdout
        else None,
        "baselines": baselines,
        "leave_one_scaffold_out": res.loso,
        "models": {
            "twin": cfg.twin,
            "fits": len(fits),
            "mirror_gap": float(
                max(
                    (
                        np.max(np.abs(b - (1 - a)))
                        for rs in res.sets.values()
                        for a, b in zip(rs.p_s, rs.p_f)
                        if len(a)
                    ),
                    default=0.0,
                )
            ),
            "top_features": fits[0].model.feature_importance(15) if fits else [],
        },
        "pass_pooled": pass_pooled(agents_out, res.sets, res.holdout),
        "warm_start_pooled": {} if light else warm_pooled(agents_out, res.holdout),
        "warm_start_check_pooled": {}
        if light
        else warm_pooled(agents_out, res.holdout, "warm_start_check"),
    }
