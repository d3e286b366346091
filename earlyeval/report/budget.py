"""reports/<bench>/budget.json laid out from the numbers ``evaluation.budget_metrics`` measured on a ``BudgetRun``
(coverage, widths, feasibility F1s, late recognition, early stop, the online intervals), the target summary,
and the CLI's summary lines."""

from __future__ import annotations

from typing import Any

from earlyeval.config.budget_config import BudgetConfig
from earlyeval.evaluation.budget_loao import BudgetRun
from earlyeval.evaluation.budget_metrics import DimensionMetrics, budget_metrics, rounded
from earlyeval.features import fold_free


def budget_report(run: BudgetRun) -> dict[str, Any]:
    """reports/<bench>/budget.json: per dimension, per held-out agent and pooled over the large ones."""
    ds, b = run.ds, run.bcfg
    dims_out = {d: _dimension_report(run, d, m) for d, m in budget_metrics(run).items()}
    rep = {
        "bench": ds.bench,
        "version": 1,
        # the outcome model's task prior (a static feature here too) is dated like loao.json's headline
        "protocol": "as_of" if run.cfg.prior_pool == "as_of" else "current_pool",
        "seconds": run.seconds,
        "config": {"budget": b.to_dict(), "outcome_model": run.cfg.to_dict()},
        "method": _method(run),
        "holdout_groups": [
            {"name": g.name, "agents": g.agents, "small": g.small} for g in run.groups
        ],
        "dimensions": dims_out,
    }
    rep["targets"] = target_summary(rep, b)
    return rep


def _dimension_report(run: BudgetRun, d: str, m: DimensionMetrics) -> dict[str, Any]:
    """One dimension of budget.json: its B and how it was chosen, the runs it covers, its measured blocks."""
    b, R = run.bcfg, run.dims[d]
    return {
        "budget_B": R.budget,
        "budget_rule": f"{b.budget_quantile:.0%} quantile of run totals over every labelled run whose {d} is known"
        + (" (rounded up)" if d == "steps" else " (2 significant digits)"),
        "runs_known": m.runs_known,
        "runs_excluded_unknown": m.runs_excluded_unknown,
        "runs_with_free_opening_turn": m.free_opening_runs,
        "holdout_groups": sorted(R.folds),
        "skipped": R.skipped,
        "pooled": m.pooled,
        "small_group": m.small_group,
        "agents": m.agents,
        "folds": R.folds,
        "online": m.online,
    }


def _method(run: BudgetRun) -> dict[str, str]:
    """budget.json's ``method``: how every number was made, in words (settings filled in)."""
    b = run.bcfg
    return {
        "targets": "remaining usage after prefix t (steps t..T-1) per dimension; runs with any unknown step are excluded "
        "from that dimension, never counted as 0; tau2's hard-coded greeting (no LLM call, no usage at all) counts as 0",
        "estimator": "LightGBM quantile regression of z = log1p(remaining / pace), pace = (spent + unit)/(t + 1); alphas "
        f"{list(b.alphas)}; crossing fixed by sorting; features: the outcome model's fold-free blocks "
        f"({fold_free(run.cfg.families)}) + spend so far, pace, last step / pace",
        "conformal": "CQR on calibration agents: training agents dealt into "
        + (
            f"one fold per scaffold (<= {b.max_scaffold_folds}; a leave-one-scaffold-out calibration, the outcome rule's "
            "inner_holdout; a dimension whose calibration agents share one scaffold: agent folds)"
            if run.cfg.inner_holdout == "scaffold"
            else f"<= {b.max_folds} agent folds"
        )
        + "; fold k's model (fitted without fold k and without the held-out agent) scores fold k; "
        + (
            f"correction = per calibration agent group, the weighted level quantile of its own scores (the correction "
            f"giving that group exactly the level), then the ceil({b.agent_quantile:g} (n + 1))-th smallest of the n "
            "groups' (the agent group is the exchangeable unit); "
            if b.calibration == "agent"
            else "correction = weighted level*(1+1/n_runs) quantile of the scores; "
        )
        + "weights 1/(T-1) per prefix and "
        f"{'equal total weight per agent group' if b.score_weighting == 'agent' else 'equal weight per run'}; "
        "held-out prediction = mean of the fold models' quantiles + correction",
        "guarantee": guarantee_text(b),
        "feasibility": "feasible = success and total <= B; P(feasible) = P(success) [outcome model without the held-out agent] "
        "x P(remaining <= B - spent) [piecewise-linear CDF through the corrected quantiles]; predicted feasible iff "
        f"P >= {b.feasible_threshold}",
        "early_stop": f"halt at the first t with P(feasible) < tau; tau maximizes the budget saved on failed runs of the calibration "
        f"agents (inner predictions, corrections without their own fold) s.t. the mean over those agent groups of the "
        f"success-rate cost <= {b.max_cost_pp} pp",
        "linear_baseline": "remaining = spend per step so far x (median T of training runs longer than t - t), symmetric "
        "z-interval conformalized on the same calibration agents; its P(remaining <= room) is the weighted CDF "
        "of its calibration residuals",
        "step_cap": "halt every run after k steps; `step_cap` picks k on the calibration agents with the same rule, "
        "`step_cap_<k>` are fixed caps at 50/75/100 % of B_steps",
        "pooled": "over the large held-out agents, each predicted by its own fold; small agents are held out together",
        "metrics": "coverage: weighted share of prefixes (1/(T-1)) whose remaining usage lies in the interval; bagen_*: on "
        "prefixes of feasible runs predicted feasible; width/B; midpoint relative error |mid - y|/y; optimism = share "
        "of misses where the interval lies below the truth; late recognition: failed runs, bins of spent/B",
    }


def guarantee_text(b: BudgetConfig) -> str:
    """What the interval calibration promises a new agent (the report's and the docs' one wording)."""
    if b.calibration != "agent":
        return (
            "run-level split conformal: exchangeable runs, not agents; nothing is promised for a new agent whose runs "
            "differ from the calibration agents'"
        )
    return (
        f"if the held-out agent and the n calibration agent groups are exchangeable (each scored by a model that did not "
        f"see it), then, from its first run, P(its coverage >= the nominal level) >= ceil({b.agent_quantile:g} (n + 1))/(n + 1) "
        f"and P(its coverage <= the nominal level) >= 1 - that + 1/(n + 1) (the new agent's own correction is as likely to "
        "fall below as above the chosen rank of the calibration groups' corrections); coverage is over the agent's prefixes, "
        "weighted 1/(T-1). It bounds the chance of under-coverage; it does not bound how far a dissimilar agent falls"
    )


def target_summary(rep: dict[str, Any], b: BudgetConfig) -> dict[str, Any]:
    """The issue's four targets, measured (pooled over large held-out agents, and per agent for coverage)."""
    out: dict[str, Any] = {}
    for d, blk in rep["dimensions"].items():
        P = blk["pooled"]
        if not P.get("n_runs"):
            continue
        cov = {}
        for lv in b.levels:
            per = {
                a: x["coverage"]["model"][str(lv)]
                for a, x in blk["agents"].items()
                if not x["small_n"]
            }
            ok = {a: c is not None and abs(c - lv) <= 0.05 for a, c in per.items()}
            held = {a: c is not None and c >= lv for a, c in per.items()}
            promised = {a: (blk["folds"].get(a) or {}).get("coverage_guarantee") for a in per}
            cov[str(lv)] = {
                "pooled": P["coverage"]["model"][str(lv)],
                "pooled_within_5pp": P["coverage"]["model"][str(lv)] is not None
                and abs(P["coverage"]["model"][str(lv)] - lv) <= 0.05,
                "agents_within_5pp": f"{sum(ok.values())}/{len(ok)}",
                "per_agent": per,
                "linear_pooled": P["coverage"]["linear"][str(lv)],
                "pooled_at_least_linear": (P["coverage"]["model"][str(lv)] or 0)
                >= (P["coverage"]["linear"][str(lv)] or 0),
                # the stated guarantee (method.guarantee) against what happened on the held-out agents
                "guaranteed_P_at_least_nominal": {
                    a: (g or {}).get(str(lv)) for a, g in promised.items()
                },
                "agents_at_least_nominal": f"{sum(held.values())}/{len(held)}",
            }
        wid = {}
        for lv in b.levels:
            m = P["intervals"]["model"][str(lv)]["width_over_B_median"]
            l = P["intervals"]["linear"][str(lv)]["width_over_B_median"]
            eq = (P.get("linear_at_model_coverage") or {}).get(str(lv)) or {}
            wid[str(lv)] = {
                "model": m,
                "linear_conformal": l,
                "linear_coverage": P["coverage"]["linear"][str(lv)],
                "linear_at_model_coverage": eq.get("width_over_B_median"),
                "model_narrower": m is not None
                and eq.get("width_over_B_median") is not None
                and m < eq["width_over_B_median"],
            }
        es = P["early_stop"]["model"]
        unc = es.get("uncapped") or {}
        lr = P["late_recognition"]["model"]
        first = lr["first_bin_below_0.5"]
        out[d] = {
            "coverage_within_5pp": cov,
            "median_width_over_B": wid,
            "early_stop": {
                "saved_on_failed": es["saved_on_failed"],
                "steps_saved_on_failed": es["steps_saved_on_failed"],
                "success_rate_cost_pp": es["success_rate_cost_pp"],
                "false_abort_rate": es["false_abort_rate"],
                "meets_40pct_at_2pp": (es["saved_on_failed"] or 0) >= 0.4
                and (es["success_rate_cost_pp"] or 0) <= 2.0,
                "oracle_tau": es.get("oracle_tau"),
                "uncapped_saved_on_unresolved": rounded(unc.get("saved_on_unresolved")),
                "uncapped_resolve_rate_cost_pp": rounded(unc.get("resolve_rate_cost_pp")),
                "tau": es.get("tau"),
            },
            "late_recognition": {
                "first_bin_below_0.5": first,
                "below_0.5_before_60pct": first is not None
                and not first.startswith(">=")
                and float(first.split("-")[1].rstrip("%")) <= 60,
                "failed_runs_recognized_before_60pct": lr["failed_runs_recognized_before_60pct"],
            },
        }
        on = blk.get("online")
        if on and on["pooled"].get("n_runs"):
            oc = {}
            for lv in b.levels:
                k = str(lv)
                per = {a: x["coverage"][k] for a, x in on["agents"].items() if not x["small_n"]}
                ok = {a: c is not None and abs(c - lv) <= 0.05 for a, c in per.items()}
                pc = on["pooled"]["coverage"][k]
                oc[k] = {
                    "pooled": pc,
                    "pooled_within_5pp": pc is not None and abs(pc - lv) <= 0.05,
                    "agents_within_5pp": f"{sum(ok.values())}/{len(ok)}",
                    "per_agent": per,
                    "label_free_agents_within_5pp": cov[k]["agents_within_5pp"],
                    "median_width_over_B": on["pooled"]["width_over_B_median"][k],
                    "label_free_median_width_over_B": wid[k]["model"],
                }
            out[d]["online"] = {"coverage_within_5pp": oc, "note": on["note"]}
    return out


def summary_lines(rep: dict[str, Any]) -> list[str]:
    lines = [f"{rep['bench']}: budget evaluation in {rep['seconds']} s"]
    for d, t in rep["targets"].items():
        c = t["coverage_within_5pp"]
        w = t["median_width_over_B"]
        e = t["early_stop"]
        l = t["late_recognition"]
        lines.append(
            f"{d:<14} B={rep['dimensions'][d]['budget_B']:g} cov80={c['0.8']['pooled']} ({c['0.8']['agents_within_5pp']} within 5 pp, "
            f"{c['0.8']['agents_at_least_nominal']} >= 80 %) cov90={c['0.9']['pooled']} ({c['0.9']['agents_within_5pp']}, "
            f"{c['0.9']['agents_at_least_nominal']}) linear {c['0.8']['linear_pooled']}/{c['0.9']['linear_pooled']} width90 model={w['0.9']['model']} "
            f"linear@eq={w['0.9']['linear_at_model_coverage']} stop saved={e['saved_on_failed']} cost={e['success_rate_cost_pp']}pp "
            f"late<0.5 at {l['first_bin_below_0.5']}"
        )
        if "online" in t:
            o = t["online"]["coverage_within_5pp"]
            lines.append(
                f"{'':<14} online (finished runs' budgets, no labels): cov80={o['0.8']['pooled']} ({o['0.8']['agents_within_5pp']}) "
                f"cov90={o['0.9']['pooled']} ({o['0.9']['agents_within_5pp']}) width90={o['0.9']['median_width_over_B']}"
            )
    return lines
