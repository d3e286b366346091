"""One definition of the held-out units (Dataset.holdout_units), honouring the catalog's ``small`` flag,
used by evaluate.run_loao, routing and budget."""

from __future__ import annotations

import dataclasses

import pytest
from synth import SMALL_LGBM, make_dataset, make_trajectories

from earlyeval.config.eval_config import EvalConfig
from earlyeval.evaluation.budget_calibration import holdout_groups
from earlyeval.evaluation.dataset import SMALL_GROUP, HoldoutUnit
from earlyeval.evaluation.evaluate import run_loao
from earlyeval.workflows.routing_pair import large_agents


def _flag_small(trajs, agents):
    return [
        dataclasses.replace(t, meta={**t.meta, "small": True}) if t.agent in agents else t
        for t in trajs
    ]


@pytest.fixture(scope="module")
def flagged():
    """4 agents x 40 runs; agent-d is flagged small in its catalog entry although it has 40 runs."""
    trajs, tasks = make_trajectories(40)
    trajs = _flag_small(trajs, {"agent-d"})
    # agent-c keeps only 15 runs: too few to be held out alone, not flagged
    keep_c = [t for t in trajs if t.agent == "agent-c"][:15]
    trajs = [t for t in trajs if t.agent != "agent-c"] + keep_c
    cfg = EvalConfig(
        families=["behaviour"],
        min_steps=3,
        holdout_min_runs=20,
        n_jobs=1,
        lgbm_params=dict(SMALL_LGBM),
        inner_folds=6,
        warm_repeats=1,
    )
    return make_dataset(cfg.families, trajs=trajs, tasks=tasks), cfg


def test_small_flag_and_run_count_both_put_an_agent_in_the_small_group(flagged):
    ds, cfg = flagged
    assert ds.n_runs("agent-d") == 40 >= cfg.holdout_min_runs and ds.is_small("agent-d")
    units = ds.holdout_units(cfg.holdout_min_runs)
    assert units == [
        HoldoutUnit("agent-a", ["agent-a"]),
        HoldoutUnit("agent-b", ["agent-b"]),
        HoldoutUnit(SMALL_GROUP, ["agent-d", "agent-c"], True),
    ]
    # the run-count-only rule that run_loao and budget used before would have held agent-d out alone
    assert [a for a in ds.agents if ds.n_runs(a) >= cfg.holdout_min_runs] == [
        "agent-a",
        "agent-b",
        "agent-d",
    ]


def test_evaluate_routing_and_budget_use_the_same_units(flagged):
    ds, cfg = flagged
    units = ds.holdout_units(cfg.holdout_min_runs)
    assert large_agents(ds, cfg) == ds.large_agents(cfg.holdout_min_runs) == ["agent-a", "agent-b"]
    assert [(g.name, g.agents, g.small) for g in holdout_groups(ds, cfg)] == [
        (u.name, u.agents, u.small) for u in units
    ]
    res = run_loao(ds, cfg)
    assert res.holdout == ["agent-a", "agent-b"] and res.small == ["agent-d", "agent-c"]
    # the small group is held out together: each one's predictions are the (cached) fold fitted without both
    ex = frozenset(["agent-d", "agent-c"])
    assert all(res.runner.predict(ex, a) is res.sets[a] for a in ex)
    assert res.thresholds["agent-d"] is res.thresholds["agent-c"]


def test_no_small_agent_no_small_unit():
    ds = make_dataset(["behaviour"], n_tasks=20)
    assert [u.small for u in ds.holdout_units(10)] == [False] * 4
    assert [u.name for u in ds.holdout_units(21)] == [SMALL_GROUP]
