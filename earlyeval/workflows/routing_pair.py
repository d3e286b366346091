"""The honest inputs of a routing pair (``routing.Pair``): predictions, threshold and task priors without both routed agents' labels."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable, Mapping

import numpy as np

from earlyeval.config.eval_config import EvalConfig
from earlyeval.config.prices import RunCost
from earlyeval.evaluation.dataset import CURRENT_POOL, Dataset
from earlyeval.evaluation.fold_runner import FoldRunner
from earlyeval.evaluation.holdout_groups import inner_exclusion
from earlyeval.features import Featurizer, build_family
from earlyeval.features.base import RunContext
from earlyeval.features.prior import PriorFamily, default_match_patterns
from earlyeval.fitting.metrics import RunSet
from earlyeval.fitting.thresholds import choose_thresholds
from earlyeval.workflows.routing import Pair


def pair_blind(ds: Dataset, agents: Iterable[str]) -> Dataset:
    """The dataset with every run's task prior recomputed to exclude `agents`' public results too.

    The prior family excludes only a run's own agent; a router for (cheap, strong)
    must not see either agent's outcome on a task, so the feature is redefined for
    every run (training and routed alike) to exclude both, and it means the same
    thing at fit and at routing time.
    """
    agents = set(agents)
    if ds.prior_table is None or "prior" not in ds.blocks:
        return ds
    subs: list[str] = []
    pats: list[str] = []
    for t, c in zip(ds.trajs, ds.contexts):
        if t.agent in agents:
            subs += [s for s in c.exclude_submissions if s not in subs]
            for p in list(c.prior_match) or default_match_patterns(c.scaffold, c.model):
                if p not in pats:
                    pats.append(p)
    ctxs = [
        replace(
            c,
            exclude_submissions=list(c.exclude_submissions) + subs,
            prior_match=(list(c.prior_match) or default_match_patterns(c.scaffold, c.model)) + pats,
        )
        for c in ds.contexts
    ]
    fz = Featurizer([build_family("prior", prior_table=ds.prior_table)])
    X = fz.prefix_matrix(ds.trajs, ctxs)
    # the undated current-pool block is not blinded: dropped, so that nothing can route on it
    return replace(
        ds,
        contexts=ctxs,
        blocks={**{k: v for k, v in ds.blocks.items() if k != CURRENT_POOL}, "prior": X},
    )


def large_agents(ds: Dataset, cfg: EvalConfig) -> list[str]:
    """Agents held out on their own (``Dataset.large_agents``, the rule of ``evaluate.run_loao``)."""
    return ds.large_agents(cfg.holdout_min_runs)


def failure_only(rs: RunSet) -> RunSet:
    """The same predictions with P(success) zeroed: a policy that only ever halts on predicted failure."""
    return replace(rs, p_s=[np.zeros_like(p) for p in rs.p_s])


def routing_predictions(
    runner: FoldRunner, cheap: str, strong: str
) -> tuple[RunSet, dict[str, Any], dict[str, Any]]:
    """Cheap agent's predictions and the failure threshold, with neither agent's labels.

    Model: fitted without {cheap, strong}.  Threshold: ``choose_thresholds`` over
    inner agents b, each predicted by a model fitted without {cheap, strong, b} (and b's scaffold:
    ``evaluate.inner_exclusion``).
    """
    ex = frozenset({cheap, strong})
    rs = runner.predict(ex, cheap)
    inner_agents = [b for b in large_agents(runner.ds, runner.cfg) if b not in ex]
    mode = runner.cfg.inner_holdout
    inner = {
        b: failure_only(runner.predict(inner_exclusion(runner.ds, ex, frozenset([b]), mode), b))
        for b in inner_agents
    }
    th = choose_thresholds(
        inner, runner.cfg, method="inner-loao without both routed agents, failure side only"
    )
    fitted = runner.fit(ex)
    info = {
        "excluded_agents": sorted(ex),
        "trained_on": [str(a) for a in fitted.train_agents],
        "train_runs": fitted.n_train_runs,
        "train_prefixes": fitted.n_train_prefixes,
        "inner_agents": inner_agents,
    }
    return rs, th, info


def task_key(t: Any) -> str:
    dom = t.meta.get("domain") if isinstance(t.meta, dict) else None
    return f"{dom}/{t.task_id}" if dom else str(t.task_id)


def build_pair(
    ds: Dataset, costs: Mapping[str, RunCost], cheap: str, strong: str, rs_cheap: RunSet
) -> Pair:
    """Align the two agents' runs on the tasks both ran (first run per task if a task repeats)."""
    first: dict[str, dict[str, int]] = {cheap: {}, strong: {}}
    dup = {cheap: 0, strong: 0}
    for i, t in enumerate(ds.trajs):
        if t.agent in first:
            k = task_key(t)
            if k in first[t.agent]:
                dup[t.agent] += 1
            else:
                first[t.agent][k] = i
    shared = [k for k in first[cheap] if k in first[strong]]
    pred = {rid: (pf, T) for rid, pf, T in zip(rs_cheap.run_ids, rs_cheap.p_f, rs_cheap.T)}
    fam = PriorFamily(ds.prior_table) if ds.prior_table is not None else None
    yc, ys, cc, cs, pf, prior = [], [], [], [], [], []
    for k in shared:
        tc, ts = ds.trajs[first[cheap][k]], ds.trajs[first[strong][k]]
        yc.append(int(tc.outcome))
        ys.append(int(ts.outcome))
        cc.append(costs[tc.run_id])
        cs.append(costs[ts.run_id])
        p, T = pred[tc.run_id]
        if T != len(tc.steps) or len(p) != max(T - 1, 0):
            raise ValueError(f"{tc.run_id}: predictions do not cover prefixes 1..T-1")
        pf.append(np.asarray(p, dtype=np.float64))
        ctx: RunContext = ds.contexts[first[cheap][k]]
        prior.append(float(fam.start(ctx)[0]) if fam is not None else float("nan"))
    return Pair(
        cheap,
        strong,
        shared,
        np.asarray(yc, dtype=np.int64),
        np.asarray(ys, dtype=np.int64),
        cc,
        cs,
        pf,
        np.asarray(prior, dtype=np.float64),
        {
            "cheap_only_tasks": len(first[cheap]) - len(shared),
            "strong_only_tasks": len(first[strong]) - len(shared),
            "cheap_repeat_runs": dup[cheap],
            "strong_repeat_runs": dup[strong],
        },
    )
