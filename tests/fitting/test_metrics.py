"""Metrics checked against hand-computed examples; the vectorized grid agrees with the per-run policy."""

from __future__ import annotations

import numpy as np
import pytest

from earlyeval.fitting.metrics import (
    NEVER,
    RunSet,
    apply_policy,
    evaluate_policy,
    grid_metrics,
    halting,
    outcome_metrics,
    repeat_action_policy,
    step_cap_policy,
)
from earlyeval.model.policy import first_halt_grid


def test_outcome_metrics_hand_computed():
    # 4 runs: y = 1,0,0,1; T = 10,20,5,8
    y = np.array([1, 0, 0, 1])
    T = np.array([10, 20, 5, 8])
    # run 0 halted at 4 as success (right), run 1 halted at 5 as failure (right),
    # run 2 not halted, run 3 halted at 2 as failure (wrong)
    t_halt = np.array([4, 5, 0, 2])
    pred = np.array([1, 0, -1, 0])
    tin = [np.arange(1, 11, dtype=float), None, None, None]
    m = outcome_metrics(y, T, t_halt, pred, in_tokens=tin)
    assert m["halted_fraction"] == pytest.approx(3 / 4)
    assert m["halted_accuracy"] == pytest.approx(2 / 3)
    assert m["outcome_accuracy"] == pytest.approx(3 / 4)
    assert m["success_recall"] == pytest.approx(1 / 2)
    assert m["failure_recall"] == pytest.approx(1.0)
    assert m["economic_consistency"] == pytest.approx(1 / 2)
    assert m["steps_saved"] == pytest.approx((6 + 15 + 6) / 43)
    # tokens: only run 0 is known; steps 5..10 of 1..10 are saved
    assert m["input_tokens_saved"] == pytest.approx(sum(range(5, 11)) / 55)
    assert m["output_tokens_saved"] is None  # unknown stays unknown
    assert m["resolve_rate_shift_pp"] == pytest.approx(100 * (1 / 4 - 2 / 4))


def test_halting_rule_first_crossing_and_min_step():
    ps = np.array([0.2, 0.5, 0.9, 0.95])
    pf = 1 - ps
    assert halting(ps, pf, 0.85, 0.9) == (3, 1)
    assert halting(ps, pf, 0.99, 0.75, task_skips=True) == (
        1,
        0,
    )  # a task skip, when the policy allows it
    assert halting(ps, pf, 0.99, 0.75) == (0, -1)  # by default t = 1 is the task's, not the run's
    assert halting(ps, pf, 0.99, 0.75, min_t=2, task_skips=True) == (0, -1)
    assert halting(ps, pf, NEVER, NEVER) == (0, -1)
    # the success side alone: the first prefix at each tau (0 = none)
    t, o = first_halt_grid([ps], [np.full(4, np.nan)], np.array([0.1, 0.5, 0.92, 0.99]), [NEVER])
    np.testing.assert_array_equal(t[0, :, 0], [1, 2, 4, 0])
    np.testing.assert_array_equal(o[0, :, 0], [1, 1, 1, -1])


def test_grid_equals_per_run_policy():
    rng = np.random.default_rng(0)
    n = 60
    T = rng.integers(2, 30, n)
    y = rng.integers(0, 2, n)
    ps = [np.clip(rng.beta(2, 2, t - 1) * 0.6 + 0.4 * yy, 0, 1) for t, yy in zip(T, y)]
    pf = [1 - p for p in ps]
    rs = RunSet(["a"] * n, [str(i) for i in range(n)], y, T, ps, pf)
    taus = np.array([0.5, 0.7, 0.9, NEVER])
    g = grid_metrics(rs, taus, taus, min_t=2)
    for i, ts in enumerate(taus):
        for j, tf in enumerate(taus):
            t, p = apply_policy(rs, ts, tf, min_t=2)
            m = outcome_metrics(y, T, t, p)
            assert g.outcome_accuracy[i, j] == pytest.approx(m["outcome_accuracy"])
            assert g.steps_saved[i, j] == pytest.approx(m["steps_saved"])
            assert g.shift_pp[i, j] == pytest.approx(m["resolve_rate_shift_pp"])
            if m["halted_accuracy"] is None:
                assert np.isnan(g.halted_accuracy[i, j])
            else:
                assert g.halted_accuracy[i, j] == pytest.approx(m["halted_accuracy"])


def test_auroc_weights_every_run_equally():
    # one long failed run with high scores must not swamp a short successful run
    rs = RunSet(
        ["a", "a"],
        ["r1", "r2"],
        np.array([1, 0]),
        np.array([3, 101]),
        [np.array([0.9, 0.9]), np.full(100, 0.1)],
        [np.array([0.1, 0.1]), np.full(100, 0.9)],
    )
    m = evaluate_policy(rs, NEVER, NEVER)
    assert m["auroc_success"] == pytest.approx(1.0)
    y, p, _, w = rs.prefix_arrays()
    assert w[:2].sum() == pytest.approx(1.0) and w[2:].sum() == pytest.approx(1.0)


def test_baselines():
    T = np.array([10, 25, 45])
    t, p = step_cap_policy(T, 20)
    np.testing.assert_array_equal(t, [0, 20, 20])
    np.testing.assert_array_equal(p, [-1, 0, 0])
    t, p = repeat_action_policy(
        [["a", "b", "b", "b", "c"], ["a", "a", "a"], ["x", "x", "y", "x"]], repeats=3
    )
    # run 0: third identical action at step 4 (t=4 < T=5); run 1: third at t=3 = T: cannot halt at the end
    np.testing.assert_array_equal(t, [4, 0, 0])
    np.testing.assert_array_equal(p, [0, -1, -1])
