"""Folds as independent tasks: every model fit of a leave-one-agent-out evaluation runs on the cluster at once.

The fits a LOAO asks for are planned up front and run as tasks with the in-process code; a fit the plan missed is
computed in the driver, so results never change. docs/scale.md, "Each stage in detail".
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from distributed import Client, Future, as_completed

from earlyeval.config.eval_config import EvalConfig
from earlyeval.evaluation.dataset import Dataset
from earlyeval.evaluation.fit_plan import scaffold_groups
from earlyeval.evaluation.fold_runner import Fitted, FoldRunner
from earlyeval.evaluation.holdout_groups import inner_exclusion
from earlyeval.features import family_class
from earlyeval.fitting.metrics import RunSet
from earlyeval.scale.cluster import result_of
from earlyeval.scale.features import PartsRef, parts_dataset

log = logging.getLogger(__name__)


@dataclass
class FoldPlan:
    """The fits a LOAO asks for (agents left out -> agents predicted by that fit, in request order)."""

    predict: "OrderedDict[frozenset, list[str]]" = field(default_factory=OrderedDict)

    def add(self, exclude: frozenset, agent: str | None = None) -> None:
        agents = self.predict.setdefault(frozenset(exclude), [])
        if agent is not None and agent not in agents:
            agents.append(agent)

    def __len__(self) -> int:
        return len(self.predict)


def _inner(
    plan: FoldPlan, ds: Dataset, cfg: EvalConfig, held_out: frozenset, large: list[str]
) -> None:
    """What ``evaluate.inner_sets`` asks for."""
    remaining = [b for b in large if b not in held_out]
    k, mode = cfg.inner_folds, cfg.inner_holdout
    if 2 <= len(remaining) <= k:
        for b in remaining:
            plan.add(inner_exclusion(ds, held_out, frozenset([b]), mode), b)
    elif len(remaining) > k:
        order = sorted(remaining, key=lambda b: (-ds.n_runs(b), b))
        for g in (frozenset(order[i::k]) for i in range(k)):
            ex = inner_exclusion(ds, held_out, g, mode)
            for b in sorted(g):
                plan.add(ex, b)
    else:  # the validation-split fallback: the fit itself, its validation predictions made in the driver
        plan.add(held_out)


def fold_plan(
    ds: Dataset, cfg: EvalConfig, with_loso: bool = True, with_small: bool = True
) -> FoldPlan:
    """Every fit (and its predictions) ``run_loao(ds, cfg, with_loso=, with_small=)`` asks for."""
    plan = FoldPlan()
    units = ds.holdout_units(cfg.holdout_min_runs)
    large = [u.agents[0] for u in units if not u.small]
    small = [a for u in units if u.small for a in u.agents] if with_small else []
    for a in large:
        plan.add(frozenset([a]), a)
        _inner(plan, ds, cfg, frozenset([a]), large)
    if small:
        _inner(plan, ds, cfg, frozenset(small), large)
        for s in small:
            plan.add(frozenset(small), s)
    if with_loso:  # loso.run_loso: each scaffold, its inner units the other scaffolds (loso.inner_scaffold_units)
        groups = scaffold_groups(ds, large)
        for ags in groups.values():
            ex = frozenset(ags)
            for other in groups.values():
                if not set(other) & ex:
                    for b in other:
                        if b in large:
                            plan.add(ex | frozenset(other), b)
            for a in ags:
                plan.add(ex, a)
    return plan


@dataclass
class FoldResult:
    """A fit and its predictions, as they travel back: fold-fitted families as their saved state
    (``get_state``: no process-wide token cache rides along)."""

    exclude: frozenset
    fitted: Fitted
    families: list[tuple[str, dict[str, Any], dict[str, Any]]]
    sets: dict[str, RunSet]
    adaptation: dict[str, dict[str, Any]]


def run_fold(
    ds: Dataset | PartsRef, cfg: EvalConfig, exclude: frozenset, agents: list[str]
) -> FoldResult:
    """One task: the in-process ``FoldRunner`` fit without ``exclude`` and its predictions of ``agents``, on
    the dataset a ``PartsRef`` names (read by this worker from the parts) or the one given."""
    runner = FoldRunner(parts_dataset(ds) if isinstance(ds, PartsRef) else ds, cfg)
    sets = {a: runner.predict(exclude, a) for a in agents}
    fitted = runner.fit(exclude)
    states = [(fam.name, *fam.get_state()) for fam in fitted.fold_families]
    slim = replace(fitted, text=None, fold_families=[])
    adaptation = {
        a: runner.adaptation[(exclude, a)] for a in agents if (exclude, a) in runner.adaptation
    }
    return FoldResult(exclude, slim, states, sets, adaptation)


def restore(res: FoldResult) -> Fitted:
    """The driver's ``Fitted`` of a task's result (fold-fitted families back from their state)."""
    fams = [family_class(name).from_state(meta, arrays) for name, meta, arrays in res.families]
    text = next((f for f in fams if f.name == "text"), None)
    return replace(res.fitted, text=text, fold_families=fams)


class PrefetchedRunner(FoldRunner):
    """A ``FoldRunner`` whose fits and predictions were computed by fold tasks: each is registered when
    ``run_loao`` first asks for it (so the runner's order and counts are the in-process ones); what no
    task computed is computed here, in the driver, and listed in ``misses``."""

    def __init__(
        self,
        ds: Dataset,
        cfg: EvalConfig,
        progress: Callable[[str], None] | None,
        results: dict[frozenset, FoldResult],
    ):
        super().__init__(ds, cfg, progress)
        self._ready = dict(results)
        self.misses: list[tuple[str, Any]] = []

    def fit(self, exclude: frozenset) -> Fitted:
        if exclude not in self._fits:
            res = self._ready.get(exclude)
            if res is None:
                self.misses.append(("fit", sorted(exclude)))
                log.warning(
                    "fit without %s was not planned: computed in the driver", sorted(exclude)
                )
                return super().fit(exclude)
            self._fits[exclude] = restore(res)
        return self._fits[exclude]

    def predict(self, exclude: frozenset, agent: str) -> RunSet:
        key = (exclude, agent)
        res = self._ready.get(exclude)
        if key not in self._preds and res is not None and agent in res.sets:
            self.fit(exclude)  # registered before its prediction, as FoldRunner.predict does
            self._preds[key] = res.sets[agent]
            if agent in res.adaptation:
                self.adaptation[key] = res.adaptation[agent]
        elif key not in self._preds:
            self.misses.append(("predict", (sorted(exclude), agent)))
        return super().predict(exclude, agent)


def run_folds(
    client: Client,
    ds_future: Future | PartsRef,
    cfg: EvalConfig,
    plan: FoldPlan,
    progress: Callable[[str], None] | None = None,
) -> dict[frozenset, FoldResult]:
    """Every fold of ``plan`` as one task on the cluster, on the dataset ``ds_future`` holds or the parts it
    names; "fit without ..." reported as each completes."""
    futs = {
        client.submit(run_fold, ds_future, cfg, ex, agents, pure=False): ex
        for ex, agents in plan.predict.items()
    }
    out: dict[frozenset, FoldResult] = {}
    try:
        for fut in as_completed(list(futs)):
            res = result_of(fut, f"fit without {sorted(futs[fut])}")
            out[res.exclude] = res
            if progress:
                progress(f"fit without {sorted(res.exclude)}")
    except BaseException:
        client.cancel(list(futs))
        raise
    return out


def runner_factory(client: Client, ds: Dataset, ds_future: Future) -> Callable[..., FoldRunner]:
    """``run_loao``'s ``runners``: a ``PrefetchedRunner`` per configuration, its folds run on the cluster first."""

    def make(
        ds_: Dataset,
        cfg: EvalConfig,
        progress: Callable[[str], None] | None = None,
        *,
        with_loso: bool = True,
        with_small: bool = True,
    ) -> FoldRunner:
        if ds_ is not ds:
            raise ValueError(
                "this cluster's folds run on the dataset it featurized; got another one"
            )
        plan = fold_plan(ds, cfg, with_loso, with_small)
        return PrefetchedRunner(
            ds, cfg, progress, run_folds(client, ds_future, cfg, plan, progress)
        )

    return make
