"""loao.json's per-agent numbers equal a plain re-computation (tests/_loao_expect.py) on a tiny synthetic
LOAO: the fast, value-asserting counterpart of the key checks of the integration pipeline test."""

from __future__ import annotations

import numpy as np
import pytest
from _loao_expect import assert_agent_block_values, plain_auroc, plain_block, plain_halt
from synth import SMALL_LGBM, loao_baseline, make_trajectories

from earlyeval.config.eval_config import EvalConfig
from earlyeval.evaluation.loao_report import loao_report

FAMILIES = ["behaviour", "gold"]


@pytest.fixture(scope="module")
def loao():
    trajs, tasks = make_trajectories(
        n_tasks=16, seed=3, rates={"agent-a": 0.3, "agent-b": 0.5, "agent-c": 0.4, "agent-d": 0.6}
    )
    cfg = EvalConfig(
        families=FAMILIES,
        min_steps=3,
        holdout_min_runs=12,
        lgbm_params=SMALL_LGBM,
        warm_repeats=1,
        n_jobs=1,
        seed=0,
    )
    ds, cfg, res = loao_baseline(cfg, trajs, tasks)
    return ds, cfg, res, loao_report(ds, cfg, res)


def test_plain_reference_on_a_hand_worked_runset():
    """The reference itself, on two runs worked out by hand (so that the comparison below cannot pass vacuously)."""

    # run 1 (T=4, y=1): p_s crosses 0.7 at t=2 -> halted as success, saves 2 of 4 steps
    # run 2 (T=3, y=1): p_f crosses 0.6 at t=1 -> halted as failure (wrong), a task skip saving 2 of 3 steps
    class RS:
        y, T = np.array([1, 1]), np.array([4, 3])
        p_s = [np.array([0.2, 0.8, 0.9]), np.array([0.1, 0.3])]
        p_f = [np.array([0.5, 0.1, 0.0]), np.array([0.7, 0.2])]
        in_tokens = [np.array([10.0, 10.0, 10.0, 70.0]), None]
        out_tokens = []
        gates: list = []  # every prefix open
        task_skips = True  # run 2's halt at t = 1 is a task skip, allowed here

    assert plain_halt(RS.p_s[0], RS.p_f[0], 0.7, 0.6, 1) == (2, 1)
    assert plain_halt(RS.p_s[1], RS.p_f[1], 0.7, 0.6, 1, task_skips=True) == (1, 0)
    assert plain_halt(RS.p_s[1], RS.p_f[1], 0.7, 0.6, 1) == (
        0,
        -1,
    )  # task skips off: t = 1 is closed
    assert plain_halt(RS.p_s[1], RS.p_f[1], 0.7, 0.6, 2, task_skips=True) == (0, -1)  # min_t 2
    # the gates: no evidence at t = 2 keeps run 1's success side closed until t = 3
    assert plain_halt(RS.p_s[0], RS.p_f[0], 0.7, 0.6, 1, gates=[1, 1, 3]) == (3, 1)
    b = plain_block(RS, 0.7, 0.6, 1)
    assert (
        b["halted_fraction"] == 1.0 and b["halted_accuracy"] == 0.5 and b["outcome_accuracy"] == 0.5
    )
    assert (
        b["success_recall"] == 0.5
        and b["failure_recall"] is None
        and b["economic_consistency"] is None
    )
    assert (
        b["steps_saved"] == 4 / 7
        and b["steps_saved_task_skip"] == 2 / 7
        and b["steps_saved_in_run"] == 2 / 7
    )
    assert b["input_tokens_saved"] == 80 / 100  # only run 1 has token counts; steps 3-4 are saved
    assert (
        b["resolve_rate_shift_pp"] == -50.0
        and b["halted_as_success"] == 1
        and b["halted_as_failure"] == 1
    )
    assert plain_auroc([1, 1, 0, 0], [0.9, 0.5, 0.5, 0.1], [1, 1, 1, 1]) == 0.875  # 3.5 of 4 pairs


def test_every_agent_block_equals_the_plain_recomputation(loao):
    ds, cfg, res, rep = loao
    assert set(rep["agents"]) == set(res.sets) == {"agent-a", "agent-b", "agent-c", "agent-d"}
    assert rep["holdout_agents"] == sorted(rep["holdout_agents"]) and set(
        rep["holdout_agents"]
    ) == set(res.sets)
    for a, blk in rep["agents"].items():
        rs = res.sets[a]
        assert set(rs.agents) == {a} and len(rs) == 16
        assert a not in blk["threshold_selection"]["selected_on"]
        assert_agent_block_values(
            blk, rs, res.thresholds[a], res.oracle_thresholds[a], cfg.min_halt_step
        )


def test_pooled_block_equals_the_plain_recomputation_over_all_held_out_runs(loao):
    ds, cfg, res, rep = loao
    P = rep["pooled"]
    runs = [(res.sets[a], res.thresholds[a]) for a in rep["holdout_agents"]]
    halts = [
        plain_halt(p, q, th["success"], th["failure"], cfg.min_halt_step, g, rs.task_skips)
        for rs, th in runs
        for p, q, g in zip(rs.p_s, rs.p_f, rs.gates)
    ]
    y = [int(v) for rs, _ in runs for v in rs.y]
    T = [int(v) for rs, _ in runs for v in rs.T]
    recorded = [p if h > 0 else yy for (h, p), yy in zip(halts, y)]
    assert P["n_runs"] == len(y) == 64
    assert P["halted_fraction"] == pytest.approx(sum(h > 0 for h, _ in halts) / len(y), abs=1e-12)
    assert P["outcome_accuracy"] == pytest.approx(
        sum(r == yy for r, yy in zip(recorded, y)) / len(y), abs=1e-12
    )
    assert P["steps_saved"] == pytest.approx(
        sum(t - h for (h, _), t in zip(halts, T) if h > 0) / sum(T), abs=1e-12
    )
    assert rep["mean_abs_resolve_rate_shift_pp"] == pytest.approx(
        np.mean([abs(rep["agents"][a]["resolve_rate_shift_pp"]) for a in rep["holdout_agents"]]),
        abs=1e-12,
    )
