"""Leave-one-agent-out evaluation with honest thresholds: every held-out agent (or the group of small ones) is
predicted by a model, vocabulary, calibration and thresholds fitted without its runs; thresholds come from an
inner leave-one-agent-out over the training agents (``inner_exclusion``).  A block fitted on the agent's own
labels is reported beside it as ``oracle``, never the headline (docs/architecture.md, layer 7).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from earlyeval.config.eval_config import TAU_GRID, EvalConfig
from earlyeval.evaluation.dataset import Dataset
from earlyeval.evaluation.fold_runner import FoldRunner
from earlyeval.evaluation.guard import guard_config, guarded
from earlyeval.evaluation.holdout_groups import forward_groups, inner_sets
from earlyeval.fitting.metrics import RunSet
from earlyeval.fitting.thresholds import choose_thresholds, live_thresholds, select_thresholds

log = logging.getLogger(__name__)

GRID = TAU_GRID  # the threshold grid (config.eval_config: one definition)


@dataclass
class LoaoResult:
    holdout: list[str]
    small: list[str]
    sets: dict[str, RunSet]  # held-out agent -> its predictions (from a model without it)
    thresholds: dict[str, dict[str, Any]]
    oracle_thresholds: dict[str, dict[str, Any]]
    loso: dict[str, Any]
    runner: FoldRunner
    # the other rule on the same inner predictions, reported beside the configured one
    alt_thresholds: dict[str, dict[str, Any]] = field(default_factory=dict)
    # with prior_guard: the task-level model's runner, and per held-out agent which model its fold ships
    runner_prior: FoldRunner | None = None
    model_choice: dict[str, dict[str, Any]] = field(default_factory=dict)
    # agent -> what predicted it
    folds: dict[str, tuple[FoldRunner, frozenset]] = field(default_factory=dict)
    # agent -> its fold's inner units' predictions (what its thresholds were chosen on), and the live pair
    inner: dict[str, dict[str, RunSet]] = field(default_factory=dict)
    live_thresholds: dict[str, dict[str, Any]] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict)  # derived pairs (task_skip_pair), made once


def other_rule(cfg: EvalConfig) -> EvalConfig:
    """``cfg`` with the other threshold rule (agent-quantile <-> worst-case), for the report's comparison."""
    return replace(
        cfg,
        threshold_rule="worst-case" if cfg.threshold_rule == "agent-quantile" else "agent-quantile",
    )


def in_process_runner(
    ds: Dataset, cfg: EvalConfig, progress: Callable[[str], None] | None = None, **_plan: Any
) -> FoldRunner:
    """A FoldRunner fitting in this process (``run_loao``'s default ``runners``; ``InProcess.runners``)."""
    return FoldRunner(ds, cfg, progress)


def run_loao(
    ds: Dataset,
    cfg: EvalConfig,
    progress: Callable[[str], None] | None = None,
    with_loso: bool = True,
    with_small: bool = True,
    runners: Callable[..., FoldRunner] = in_process_runner,
    forward: bool = False,
) -> LoaoResult:
    """Every held-out unit predicted by a model without it, thresholds by ``cfg``'s rule over inner agents
    (the leave-one-scaffold-out protocol is ``loso.run_loso`` on the same runner: ``pipeline.with_loso``).

    ``runners(ds, cfg, progress, with_loso=, with_small=)``: the FoldRunner to use (a cluster's, whose fits
    ran as parallel tasks: earlyeval.scale.folds; ``with_loso`` says whether leave-one-scaffold-out follows on
    it, so that its fits are planned too); default a FoldRunner fitting in this process."""

    def make(c: EvalConfig) -> FoldRunner:
        return runners(ds, c, progress, with_loso=with_loso, with_small=with_small)

    runner = make(cfg)
    fallback = make(guard_config(cfg)) if cfg.prior_guard else None
    units = ds.holdout_units(cfg.holdout_min_runs)
    pool = [
        u.agents[0] for u in units if not u.small
    ]  # the large agents: every fold's inner units come from them
    small = [a for u in units if u.small for a in u.agents] if with_small else []
    groups = [(frozenset([a]), [a]) for a in pool] + ([(frozenset(small), small)] if small else [])
    if forward:  # each agent by the agents dated strictly before it (``forward_groups``)
        groups = forward_groups(ds, pool, small)
    held = {a for _, g in groups for a in g}
    res = LoaoResult(
        [a for a in pool if a in held], [a for a in small if a in held], {}, {}, {}, {}, runner
    )
    res.runner_prior = fallback
    for ex, agents in groups:
        _fold(res, cfg, runner, fallback, ex, agents, pool)
    return res


def _fold(
    res: LoaoResult,
    cfg: EvalConfig,
    runner: FoldRunner,
    fallback: FoldRunner | None,
    ex: frozenset,
    agents: list[str],
    pool: list[str],
) -> None:
    """One held-out unit of ``run_loao``: its (guarded) model, its inner units among ``pool`` and every threshold
    pair chosen on them (the rule's, the other rule's, the live default's), its agents' predictions."""
    methods: dict[str, str] = {}

    def inner_of(r: FoldRunner) -> dict[str, RunSet]:
        sets_, methods["m"] = inner_sets(r, ex, pool)
        return sets_

    r, inner, ch = guarded(runner, fallback, inner_of)
    th = choose_thresholds(inner, cfg, method=methods["m"])
    th_alt = choose_thresholds(inner, other_rule(cfg), method=methods["m"])
    th_live = live_thresholds(inner, cfg, method=methods["m"])
    for a in agents:
        res.sets[a], res.folds[a], res.inner[a] = r.predict(ex, a), (r, ex), inner
        res.thresholds[a], res.alt_thresholds[a], res.live_thresholds[a] = th, th_alt, th_live
        if ch:
            res.model_choice[a] = ch
        res.oracle_thresholds[a] = select_thresholds(
            {a: res.sets[a]}, cfg, method="oracle: held-out labels"
        )
