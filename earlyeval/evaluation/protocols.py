"""The protocols a loao report carries beside its headline, its baselines and its ablation rows.

One registry: ``PROTOCOLS`` lists every protocol of ``loao.json``'s ``protocols`` block, each with what it means
(the report's ``protocols.doc``) and how its configuration is derived from the headline's (``None`` where it does
not apply); ``PRIOR_ONLY`` is the baseline the headline model is compared against (``baselines``).  A new
protocol is one ``Protocol`` entry: ``add_protocols`` runs it and ``evaluate_fits`` counts its fits from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from earlyeval.config.eval_config import EvalConfig
from earlyeval.evaluation.blocks import HEADLINE as HEADLINE_KEYS
from earlyeval.evaluation.dataset import Dataset
from earlyeval.evaluation.evaluate import LoaoResult, in_process_runner, run_loao
from earlyeval.evaluation.fidelity import fidelity_block
from earlyeval.evaluation.fit_plan import planned_fits
from earlyeval.evaluation.fold_runner import FoldRunner
from earlyeval.evaluation.forecast import forecast, forecast_check
from earlyeval.evaluation.guard import TASK_LEVEL, guard_config
from earlyeval.evaluation.loao_report import loao_report
from earlyeval.evaluation.loso import run_loso

Progress = Callable[[str], None] | None
Runners = Callable[..., FoldRunner]

HISTORY = ("prior", "peer_prior")  # the families that read other agents' (dated) results
# the families with task-level features (the prior-only baseline)
TASK_FAMILIES = (
    "prior",
    "gold",
    "peer_prior",
)


@dataclass(frozen=True)
class Protocol:
    """One way of evaluating: its name in the report, what it means, and its configuration derived from the
    headline's (``derive`` returns ``None`` where the protocol does not apply to that configuration)."""

    name: str
    doc: str
    derive: Callable[[EvalConfig], EvalConfig | None]
    # each held-out agent by the agents dated strictly before it (``evaluate.forward_groups``), not by all others
    forward: bool = False
    # also report the same protocol on its task-level features alone (its prior-only / peer-only baseline)
    task_level_baseline: bool = False


def _uses_history(cfg: EvalConfig) -> bool:
    return bool(set(HISTORY) & set(cfg.families))


def _current_pool(cfg: EvalConfig) -> EvalConfig | None:
    return cfg.replace(prior_pool="current") if _uses_history(cfg) else None


def _no_prior(cfg: EvalConfig) -> EvalConfig | None:
    rest = [f for f in cfg.families if f not in HISTORY]
    return cfg.replace(families=rest) if _uses_history(cfg) and rest else None


def _peer(cfg: EvalConfig) -> EvalConfig | None:
    # no public prior: the task is known only through the other agents' results, each dated before the run
    rest = [f for f in cfg.families if f != "prior"]
    return cfg.replace(families=[*rest, "peer_prior"] if "peer_prior" not in rest else rest)


def _prior_only(cfg: EvalConfig) -> EvalConfig | None:
    # the model's own families and columns, the model reading the task-level ones only: the prior guard's fallback
    return guard_config(cfg) if any(f in TASK_FAMILIES for f in cfg.families) else None


HEADLINE = "as_of"  # the protocol of the report's top-level agents/pooled blocks
PROTOCOLS: tuple[Protocol, ...] = (
    Protocol(
        HEADLINE,
        "every run's task prior (and peer_prior) counts only public submissions / agents dated strictly before "
        "the run's own date, training and held-out runs alike (the headline: top-level agents/pooled)",
        lambda cfg: cfg,
    ),
    Protocol(
        "current_pool",
        "every run's task prior counts today's full public pool (minus its own scaffold x model)",
        _current_pool,
    ),
    Protocol(
        "no_prior",
        "no public history at all: the prior (and peer_prior) families left out (a benchmark without a leaderboard)",
        _no_prior,
    ),
    Protocol(
        "peer",
        "no public prior: the task is known only through the other training agents' results on it (peer_prior), "
        "each run counting only agents dated strictly before it; with its peer-only baseline",
        _peer,
        task_level_baseline=True,
    ),
    Protocol(
        "forward",
        "what a user has when a new agent arrives: each held-out agent predicted (and its thresholds chosen) by a "
        "model of the agents dated strictly before it only, for the agents with at least 3 older large agents; "
        "with its prior-only baseline",
        lambda cfg: cfg,
        forward=True,
        task_level_baseline=True,
    ),
)
# the baseline: the same model family, columns and threshold rule on the task-level features alone
PRIOR_ONLY = Protocol(
    "prior_only",
    "same model family, columns and threshold rule (inner LOAO, as_of), reading the task-level features only",
    _prior_only,
)
PROTOCOLS_DOC = {p.name: p.doc for p in PROTOCOLS}
GAIN_KEYS = (
    "auroc_success",
    "halted_accuracy",
    "outcome_accuracy",
    "steps_saved",
    "steps_saved_task_skip",
    "steps_saved_in_run",
)
ABLATION_KEYS = (*GAIN_KEYS, "resolve_rate_shift_pp", "economic_consistency")


def protocol_configs(cfg: EvalConfig) -> dict[str, EvalConfig]:
    """The configurations evaluated beside the headline (``cfg`` itself), by name: every protocol that applies
    to ``cfg``, in registry order, then the prior-only baseline where it applies."""
    out: dict[str, EvalConfig] = {}
    for p in (*PROTOCOLS, PRIOR_ONLY):
        derived = p.derive(cfg) if p.name != HEADLINE else None
        if derived is not None:
            out[p.name] = derived
    return out


def protocols_of(cfg: EvalConfig) -> list[Protocol]:
    """The protocols (and the prior-only baseline) evaluated beside the headline, in ``protocol_configs``' order."""
    names = protocol_configs(cfg)
    return [p for p in (*PROTOCOLS, PRIOR_ONLY) if p.name in names]


def with_loso(ds: Dataset, cfg: EvalConfig, res: Any) -> Any:
    """``res`` with its leave-one-scaffold-out protocol (``loso.run_loso``) on the same fitted runner."""
    res.loso = run_loso(ds, cfg, res.runner, res.holdout, res.runner_prior)
    return res


def full_report(
    ds: Dataset, cfg: EvalConfig, res: LoaoResult, progress: Progress, light: bool = False
) -> dict[str, Any]:
    """``loao_report`` of ``res`` with its fidelity checks (``evaluation.fidelity``: does the early-stopped score
    follow the agent): what every protocol reports, the headline included."""
    rep = loao_report(ds, cfg, res, light=light)
    rep["fidelity"] = fidelity_block(res, seed=cfg.seed, progress=progress)
    rep["forecast"] = forecast(res, cfg)
    rep["forecast_check"] = forecast_check(res, cfg)
    return rep


def protocol_report(
    ds: Dataset,
    cfg: EvalConfig,
    progress: Progress,
    runners: Runners = in_process_runner,
    protocol: Protocol | None = None,
) -> dict[str, Any]:
    """One protocol's blocks: LOAO per agent and pooled, leave-one-scaffold-out per scaffold, its fidelity (and,
    where the protocol asks, the same on its task-level features alone: ``task_level_baseline``)."""
    forward = bool(protocol and protocol.forward)
    res = run_loao(ds, cfg, progress, runners=runners, with_loso=not forward, forward=forward)
    if not forward:
        res = with_loso(ds, cfg, res)
    block = protocol_block(full_report(ds, cfg, res, progress, light=True))
    if protocol and protocol.task_level_baseline:
        base_cfg = guard_config(cfg)
        base = run_loao(ds, base_cfg, progress, runners=runners, with_loso=False, forward=forward)
        block["task_level_baseline"] = {
            "features": list(TASK_LEVEL),
            "pooled": full_report(ds, base_cfg, base, None, light=True)["pooled"],
            "agents": {
                a: {k: v for k, v in b.items() if k in HEADLINE_KEYS}
                for a, b in loao_report(ds, base_cfg, base, light=True)["agents"].items()
            },
        }
    return block


def protocol_block(rep: dict[str, Any]) -> dict[str, Any]:
    """The per-agent and pooled metric blocks of a loao report (what every protocol carries)."""
    keep = (
        "thresholds",
        "small_n",
        "total_steps",
        "failure_only",
        "task_skips",
        "dollars",
        "other_rule",
        "pass",
        "guarantee_check",
        "oracle_frontier_steps_saved",
        *HEADLINE_KEYS,
    )
    return {
        "agents": {a: {k: b.get(k) for k in keep if k in b} for a, b in rep["agents"].items()},
        "pooled": rep["pooled"],
        "holdout_agents": rep["holdout_agents"],
        "pass_pooled": rep.get("pass_pooled"),
        "fidelity": rep.get("fidelity"),
        "forecast": rep.get("forecast"),
        "forecast_check": rep.get("forecast_check"),
        "mean_abs_resolve_rate_shift_pp": rep.get("mean_abs_resolve_rate_shift_pp"),
        "leave_one_scaffold_out": rep.get("leave_one_scaffold_out", {}),
    }


def add_protocols(
    report: dict[str, Any],
    ds: Dataset,
    cfg: EvalConfig,
    progress: Progress,
    runners: Runners = in_process_runner,
) -> None:
    """``report["protocols"]`` (the headline's blocks and every other protocol that applies) and the prior-only
    baseline with the model's gain over it (``report["baselines"]["prior_only"]``).

    The prior-only baseline is the same model family and threshold rule on the task-level features alone
    (as_of); its halts can only be task skips, since its features do not change along a run."""
    derived = protocol_configs(cfg)
    prot: dict[str, Any] = {"doc": PROTOCOLS_DOC, HEADLINE: protocol_block(report)}
    for p in PROTOCOLS:
        if p.name in derived:
            prot[p.name] = protocol_report(ds, derived[p.name], progress, runners, p)
    report["protocols"] = prot
    if PRIOR_ONLY.name in derived:
        base = protocol_report(ds, derived[PRIOR_ONLY.name], progress, runners)
        report["baselines"][PRIOR_ONLY.name] = prior_only_block(report, base, cfg)


def prior_only_block(
    report: dict[str, Any], base: dict[str, Any], cfg: EvalConfig
) -> dict[str, Any]:
    """The prior-only baseline's blocks and the headline model's gain over it, per agent, pooled and per
    held-out scaffold."""
    loso = report.get("leave_one_scaffold_out", {})
    return {
        **base["pooled"],
        "agents": base["agents"],
        "features": list(TASK_LEVEL),
        "families": [f for f in cfg.families if f in TASK_FAMILIES],
        "note": PRIOR_ONLY.doc,
        "model_gain": {
            "pooled": gains(report["pooled"], base["pooled"]),
            "agents": {
                a: gains(report["agents"][a], b)
                for a, b in base["agents"].items()
                if a in report["agents"]
            },
            "leave_one_scaffold_out": {
                sc: gains(loso.get(sc, {}).get("pooled", {}), b["pooled"])
                for sc, b in base["leave_one_scaffold_out"].items()
            },
        },
        "leave_one_scaffold_out": base["leave_one_scaffold_out"],
    }


def gains(model: dict[str, Any], base: dict[str, Any]) -> dict[str, float | None]:
    """``model - base`` per ``GAIN_KEYS`` (None where either is unknown)."""
    return {k: _diff(model.get(k), base.get(k)) for k in GAIN_KEYS}


def _diff(a: Any, b: Any) -> float | None:
    return None if a is None or b is None else float(a) - float(b)


def ablation_rows(
    ds: Dataset,
    cfg: EvalConfig,
    ablations: list[tuple[str, dict[str, Any]]],
    progress: Progress,
    runners: Runners = in_process_runner,
) -> list[dict[str, Any]]:
    """One row per ablation (a name and the settings it changes): LOAO without LOSO or small agents, light."""
    rows = []
    for name, over in ablations:
        c2 = cfg.replace(**over)
        r2 = run_loao(ds, c2, progress, with_loso=False, with_small=False, runners=runners)
        rows.append(
            ablation_row(name, over, loao_report(ds, c2, r2, light=True, pass_features=False))
        )
    return rows


def ablation_row(name: str, over: dict[str, Any], rep: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "changes": {k: v for k, v in over.items()},
        "agents": {a: {k: b.get(k) for k in ABLATION_KEYS} for a, b in rep["agents"].items()},
        "pooled": {k: rep["pooled"].get(k) for k in ABLATION_KEYS},
        "mean_auroc": float(
            np.mean(
                [b["auroc_success"] for a, b in rep["agents"].items() if a in rep["holdout_agents"]]
            )
        ),
        "mean_abs_resolve_rate_shift_pp": rep.get("mean_abs_resolve_rate_shift_pp"),
    }


def evaluate_fits(
    ds: Dataset, cfg: EvalConfig, ablations: list[tuple[str, dict[str, Any]]] | None = None
) -> int:
    """How many models an evaluation fits (``planned_fits`` of each LOAO it runs: the headline with its LOSO,
    every protocol and baseline, every ablation): the progress bar's total."""
    n = planned_fits(ds, cfg) + sum(planned_fits(ds, c) for c in protocol_configs(cfg).values())
    return n + sum(
        planned_fits(ds, cfg.replace(**over), with_loso=False, with_small=False)
        for _, over in ablations or []
    )
