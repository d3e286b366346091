"""The held-out agent's runs never reach fit, calibration, vocabulary or thresholds."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from synth import SMALL_LGBM, loao_baseline, make_dataset, make_trajectories

from earlyeval.config.eval_config import EvalConfig
from earlyeval.evaluation.evaluate import run_loao
from earlyeval.evaluation.loao_report import loao_report

TEXT = {
    "dims": {
        b: 8 for b in ("prompt", "actions", "action_last", "observations", "observation_last")
    },
    "min_df": 2,
    "min_agents": 1,
}


def config(**kw) -> EvalConfig:
    base = dict(
        families=["behaviour", "gold", "text"],
        min_steps=3,
        holdout_min_runs=20,
        lgbm_params=SMALL_LGBM,
        warm_repeats=2,
        text_params=TEXT,
        n_jobs=1,
        seed=0,
    )
    base.update(kw)
    return EvalConfig(**base)


@pytest.fixture(scope="module")
def data():
    trajs, tasks = make_trajectories(
        n_tasks=24, seed=1, rates={"agent-a": 0.3, "agent-b": 0.5, "agent-c": 0.4, "agent-d": 0.6}
    )
    for t in trajs:  # a token only agent-a ever prints
        if t.agent == "agent-a":
            for s in t.steps:
                s.observation += " zzqxmarker zzqxmarker"
    return trajs, tasks


@pytest.fixture(scope="module")
def baseline(data):
    return loao_baseline(config(), *data)


def test_flipping_held_out_labels_changes_nothing_about_its_evaluation(data, baseline):
    trajs, tasks = data
    _, cfg, res1 = baseline
    flipped = copy.deepcopy(trajs)
    for t in flipped:
        if t.agent == "agent-a":
            t.outcome = 1 - t.outcome
    res2 = run_loao(make_dataset(cfg.families, trajs=flipped, tasks=tasks), cfg)
    a1, a2 = res1.sets["agent-a"], res2.sets["agent-a"]
    for p, q in zip(a1.p_s, a2.p_s):
        np.testing.assert_array_equal(p, q)
    assert res1.thresholds["agent-a"] == res2.thresholds["agent-a"]
    # positive control: agent-a's labels do reach the models of the other agents' folds
    changed = any(
        not np.array_equal(p, q) for p, q in zip(res1.sets["agent-b"].p_s, res2.sets["agent-b"].p_s)
    )
    assert changed


def test_vocabulary_and_fits_exclude_the_held_out_agent(baseline):
    _, cfg, res = baseline
    held = res.runner.fit(frozenset(["agent-a"]))
    assert "agent-a" not in held.train_agents
    for block in held.text.blocks.values():
        assert not any("zzqxmarker" in w for w in block.vocab)
    # positive control: the marker does enter the vocabulary when agent-a is a training agent
    other = res.runner.fit(frozenset(["agent-b"]))
    assert any("zzqxmarker" in w for w in other.text.blocks["observations"].vocab)
    for agent, th in res.thresholds.items():
        assert agent not in th["selected_on"]
    for excluded, agent in res.runner._preds:
        assert agent in excluded


def test_refuses_to_predict_an_agent_with_a_model_trained_on_it(data):
    trajs, tasks = data
    cfg = config(families=["behaviour"])
    res = run_loao(make_dataset(cfg.families, trajs=trajs, tasks=tasks), cfg)
    with pytest.raises(ValueError):
        res.runner.predict(frozenset(["agent-b"]), "agent-a")


def test_same_seed_same_metrics(data, baseline):
    trajs, tasks = data
    ds0, cfg, res0 = baseline
    reps = [loao_report(ds0, cfg, res0)]
    ds = make_dataset(cfg.families, trajs=trajs, tasks=tasks)
    reps.append(loao_report(ds, cfg, run_loao(ds, cfg)))
    assert reps[0]["agents"] == reps[1]["agents"]
    assert reps[0]["pooled"] == reps[1]["pooled"]
    assert reps[0]["pooled"]["auroc_success"] is not None


def test_em_adaptation_uses_no_held_out_labels(data):
    trajs, tasks = data
    cfg = config(families=["behaviour", "gold"], adapt="em")
    res1 = run_loao(make_dataset(cfg.families, trajs=trajs, tasks=tasks), cfg)
    flipped = copy.deepcopy(trajs)
    for t in flipped:
        if t.agent == "agent-c":
            t.outcome = 1 - t.outcome
    res2 = run_loao(make_dataset(cfg.families, trajs=flipped, tasks=tasks), cfg)
    key = (frozenset(["agent-c"]), "agent-c")
    assert res1.runner.adaptation[key] == res2.runner.adaptation[key]
    for p, q in zip(res1.sets["agent-c"].p_s, res2.sets["agent-c"].p_s):
        np.testing.assert_array_equal(p, q)


def test_inner_models_leave_out_the_inner_agents_whole_scaffold(data):
    """inner_holdout="scaffold": the model that predicts inner agent B for thresholds saw no agent of B's
    scaffold (nor the held-out agent); with "agent" it saw B's scaffold mate."""
    from earlyeval.evaluation.fold_runner import FoldRunner
    from earlyeval.evaluation.holdout_groups import inner_sets

    trajs, tasks = copy.deepcopy(data[0]), data[1]
    for t in trajs:
        t.meta["scaffold"] = "shared-scaffold" if t.agent in ("agent-b", "agent-c") else t.agent
    for mode, mate_seen in (("scaffold", False), ("agent", True)):
        cfg = config(families=["behaviour", "gold"], inner_holdout=mode)
        runner = FoldRunner(make_dataset(cfg.families, trajs=trajs, tasks=tasks), cfg)
        sets, method = inner_sets(
            runner, frozenset(["agent-a"]), ["agent-a", "agent-b", "agent-c", "agent-d"]
        )
        assert sorted(sets) == ["agent-b", "agent-c", "agent-d"]
        for ex, agent in runner._preds:
            fitted = runner.fit(ex)
            assert "agent-a" not in fitted.train_agents and agent not in fitted.train_agents
            if agent in ("agent-b", "agent-c"):
                mate = "agent-c" if agent == "agent-b" else "agent-b"
                assert (mate in fitted.train_agents) is mate_seen, (
                    mode,
                    agent,
                    fitted.train_agents,
                )
            else:  # agent-d has a scaffold of its own: both modes train on b and c
                assert {"agent-b", "agent-c"} <= set(fitted.train_agents)
        assert ("scaffold" in method) is (mode == "scaffold")


def test_scaffold_exclusion_falls_back_to_the_agent_when_it_would_leave_nothing_to_train_on(data):
    """Toolathlon's two agents share one scaffold: leaving the scaffold out would train on no run at all, so the
    inner model leaves out the inner agent only (and the held-out agent)."""
    from earlyeval.evaluation.holdout_groups import inner_exclusion

    trajs, tasks = copy.deepcopy(data[0]), data[1]
    for t in trajs:
        t.meta["scaffold"] = "one-scaffold"
    ds = make_dataset(["behaviour"], trajs=trajs, tasks=tasks)
    held, inner = frozenset(["agent-a"]), frozenset(["agent-b"])
    assert inner_exclusion(ds, held, inner, "scaffold") == held | inner
    assert inner_exclusion(ds, held, inner, "agent") == held | inner
    for t in trajs:  # with a second scaffold left to train on, the scaffold rule applies again
        t.meta["scaffold"] = "other" if t.agent == "agent-d" else "one-scaffold"
    ds2 = make_dataset(["behaviour"], trajs=trajs, tasks=tasks)
    assert inner_exclusion(ds2, held, inner, "scaffold") == frozenset(
        ["agent-a", "agent-b", "agent-c"]
    )


def test_the_agent_quantile_rule_and_the_guard_never_see_the_held_out_agent(data):
    """Inner predictions of the new rule (and of the prior guard's fallback) come from models without the held-out
    agent and without the inner agent itself; no threshold is selected on the held-out agent."""
    trajs, tasks = data
    cfg = config(families=["behaviour", "gold"], threshold_rule="agent-quantile", prior_guard=True)
    res = run_loao(make_dataset(cfg.families, trajs=trajs, tasks=tasks), cfg)
    for agent, th in res.thresholds.items():
        assert th["rule"] == "agent-quantile" and agent not in th["selected_on"]
        assert (
            agent not in th["boldest_safe"]["success"]
            and agent not in th["boldest_safe"]["failure"]
        )
    for runner in (res.runner, res.runner_prior):
        assert runner._preds
        for excluded, agent in runner._preds:
            assert agent in excluded
    for a in res.holdout:
        assert res.model_choice[a]["chosen"] in ("model", "task-level features only")


def test_leave_one_scaffold_out_never_shows_a_model_the_scaffold_it_predicts(data):
    from earlyeval.evaluation.holdout_groups import scaffold_of
    from earlyeval.evaluation.loso import run_loso

    trajs, tasks = data
    trajs = copy.deepcopy(trajs)
    for t in trajs:  # agents a and b: two versions of one scaffold
        if t.agent in ("agent-a", "agent-b"):
            t.meta["scaffold"] = "scaffold-ab"
    cfg = config(families=["behaviour", "gold"], threshold_rule="agent-quantile")
    ds = make_dataset(cfg.families, trajs=trajs, tasks=tasks)
    res = run_loao(ds, cfg)
    calls = []
    predict = res.runner.predict

    def spy(excluded, agent):
        calls.append((excluded, agent))
        return predict(excluded, agent)

    res.runner.predict = spy
    loso = run_loso(ds, cfg, res.runner, res.holdout)
    sc = scaffold_of(ds)
    assert set(loso) == {"scaffold-ab", "agent-c", "agent-d"}
    for held, blk in loso.items():
        assert held not in blk["thresholds"]["selected_on"]
        assert set(blk["thresholds"]["selected_on"]) == set(loso) - {held}
    assert calls
    for excluded, agent in calls:
        assert {
            a for a in sc if sc[a] == sc[agent]
        } <= excluded  # the predicted agent's whole scaffold is out
    # the inner units of a held-out scaffold are predicted without it too
    held_ab = {"agent-a", "agent-b"}
    inner_of_ab = [(ex, a) for ex, a in calls if a not in held_ab and held_ab <= ex and len(ex) > 2]
    assert {a for _, a in inner_of_ab} == {"agent-c", "agent-d"}
