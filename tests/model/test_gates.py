"""The prefix gates of the halting rule (model/policy.py ``may_halt``/``gated``): no success halt without the run's
own evidence, no task-level halt unless the task-skip policy is on; one rule for the scalar and batch forms and
for every metric that halts runs."""

from __future__ import annotations

import numpy as np
import pytest

from earlyeval.features.evidence import ACTED, EVIDENCE
from earlyeval.fitting.metrics import (
    NEVER,
    RunSet,
    apply_policy,
    evaluate_policy,
    grid_metrics,
    halting,
)
from earlyeval.fitting.risk_control import side_risk
from earlyeval.model.policy import SUCCESS, gated, may_halt, step_outcome

OPEN = ACTED | EVIDENCE


@pytest.mark.parametrize("task_skips", [False, True])
def test_may_halt_scalar_and_array_forms_agree(task_skips):
    ts = np.arange(1, 6)
    for gate in range(4):
        s_arr, f_arr = may_halt(ts, np.full(5, gate), task_skips)
        for i, t in enumerate(ts):
            s, f = may_halt(int(t), gate, task_skips)
            assert (bool(s), bool(f)) == (bool(s_arr[i]), bool(f_arr[i]))
            task_level = t <= 1 or not gate & ACTED
            assert bool(f) == (task_skips or not task_level)
            assert bool(s) == (bool(f) and bool(gate & EVIDENCE))


def test_a_confident_run_without_evidence_is_never_halted_as_a_success_by_any_form():
    ps = np.full(9, 0.999)
    pf = 1 - ps
    no_evidence = np.full(9, ACTED, dtype=np.int8)
    rs = RunSet(["a"], ["r"], np.array([0]), np.array([10]), [ps], [pf], gates=[no_evidence])
    assert tuple(apply_policy(rs, 0.9, 0.9)[0]) == (0,)
    assert evaluate_policy(rs, 0.9, 0.9)["halted_as_success"] == 0
    g = grid_metrics(rs, np.array([0.5, 0.9]), np.array([0.5, 0.9]))
    assert np.all(g.halted_accuracy != g.halted_accuracy)  # NaN: nothing halted at any pair
    risk, saved = side_risk(rs, np.array([0.5, 0.9, 0.99]), "success")
    assert not risk.any() and not saved.any()
    assert halting(ps, pf, 0.9, 0.9, gate=no_evidence) == (0, -1)
    # the scalar rule on the gated values: what the Monitor applies
    for t in range(1, 10):
        s_ok, f_ok = may_halt(t, ACTED)
        assert (
            step_outcome(ps[t - 1] if s_ok else np.nan, pf[t - 1] if f_ok else np.nan, 0.9, 0.9, t)
            != SUCCESS
        )


def test_evidence_from_prefix_4_on_halts_there_and_task_skips_open_prefix_1():
    ps = np.array([0.95, 0.95, 0.95, 0.95, 0.95])
    gate = np.array([ACTED, ACTED, ACTED, OPEN, OPEN], dtype=np.int8)
    rs = RunSet(["a"], ["r"], np.array([1]), np.array([6]), [ps], [1 - ps], gates=[gate])
    assert tuple(apply_policy(rs, 0.9, NEVER)[0]) == (4,)
    # failure side: closed only at t = 1 (a task skip) unless the policy allows it
    pf = np.full(5, 0.97)
    rf = RunSet(["a"], ["r"], np.array([0]), np.array([6]), [1 - pf], [pf], gates=[gate])
    assert tuple(apply_policy(rf, NEVER, 0.95)[0]) == (2,)
    assert tuple(apply_policy(rf.with_task_skips(True), NEVER, 0.95)[0]) == (1,)


def test_no_action_read_is_task_level_at_any_t():
    pf = np.full(4, 0.99)
    gate = np.array([0, 0, ACTED, ACTED], dtype=np.int8)  # two steps without an action of the agent
    a, b = gated(1 - pf, pf, gate)
    assert np.isnan(b[:2]).all() and not np.isnan(b[2:]).any()
    a, b = gated(1 - pf, pf, gate, task_skips=True)
    assert (
        not np.isnan(b).any() and np.isnan(a).all()
    )  # no evidence bit: the success side stays closed


def test_subset_and_concat_keep_the_gates_and_the_policy():
    g1, g2 = np.array([OPEN], dtype=np.int8), np.array([ACTED], dtype=np.int8)
    mk = lambda r, g: RunSet(
        ["a"], [r], np.array([1]), np.array([2]), [np.array([0.99])], [np.array([0.01])], gates=[g]
    )
    both = RunSet.concat([mk("x", g1), mk("y", g2)]).with_task_skips(True)
    assert [list(g) for g in both.gates] == [[OPEN], [ACTED]] and both.task_skips
    sub = both.subset(np.array([False, True]))
    assert sub.task_skips and list(sub.gates[0]) == [ACTED]
    assert tuple(apply_policy(both, 0.9, NEVER)[0]) == (1, 0)
    with pytest.raises(ValueError, match="task-skip"):
        RunSet.concat([mk("x", g1), mk("y", g2).with_task_skips(True)])
