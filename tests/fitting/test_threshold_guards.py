"""A bound that comes out NaN never selects a threshold, and a model whose thresholds halt most of its own
training runs at step 1 is refused at train, with the numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from earlyeval.fitting.metrics import RunSet, wilson_lower
from earlyeval.fitting.thresholds import WarmStartRule, select_thresholds, step1_halts
from earlyeval.model.thresholds import ThresholdError

TAUS = (0.6, 0.7, 0.8, 0.9, 10.0)


def _runs(n: int = 40, seed: int = 0) -> RunSet:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    T = rng.integers(4, 12, n)
    p_s = [
        np.clip(np.full(t - 1, 0.3 + 0.5 * yi) + rng.normal(0, 0.1, t - 1), 0.01, 0.99)
        for t, yi in zip(T, y)
    ]
    return RunSet(
        ["a"] * n,
        [f"r{i}" for i in range(n)],
        y,
        T,
        p_s,
        [1 - p for p in p_s],
        [None] * n,
        [None] * n,
        [[""] * int(t) for t in T],
        task_skips=True,  # the guard reads the policy in effect: step-1 halts exist only with task skips on
    )


@pytest.mark.parametrize("confidence", [1.0, 0.0, 1.5, -0.1, math.nan, math.inf, True])
def test_a_confidence_outside_0_1_is_refused_not_read_as_a_pass(confidence):
    with pytest.raises(ThresholdError, match="confidence"):
        select_thresholds({"a": _runs()}, WarmStartRule(taus=TAUS, confidence=confidence))
    if not isinstance(confidence, bool) and not (0 < confidence < 1):
        with pytest.raises(ValueError, match="confidence"):
            wilson_lower(np.array([0.9]), 10, confidence)


def test_a_nan_metric_never_selects(monkeypatch):
    import earlyeval.fitting.thresholds as th

    real = th.grid_metrics

    def nan_recall(rs, ts, tf, min_t=1):
        g = real(rs, ts, tf, min_t)
        g.success_recall[0, 0] = np.nan  # a bound that could not be computed at one pair
        return g

    monkeypatch.setattr(th, "grid_metrics", nan_recall)
    with pytest.raises(ThresholdError, match="NaN at 1 of"):
        select_thresholds({"a": _runs()}, WarmStartRule(taus=TAUS, confidence=0.9))


def test_good_settings_select_and_an_agent_with_one_outcome_constrains_one_side():
    rs = _runs()
    out = select_thresholds({"a": rs}, WarmStartRule(taus=TAUS, confidence=0.9))
    assert out["success"] in TAUS and out["failure"] in TAUS
    only_failures = RunSet(
        rs.agents,
        rs.run_ids,
        np.zeros(len(rs), int),
        rs.T,
        rs.p_s,
        rs.p_f,
        rs.in_tokens,
        rs.out_tokens,
        rs.actions,
    )
    # success recall 0/0: no constraint
    select_thresholds({"a": only_failures}, WarmStartRule(taus=TAUS, confidence=0.9))


def test_thresholds_that_halt_most_runs_at_step_1_are_refused_with_the_numbers():
    rs = _runs()
    ok = step1_halts(rs, {"success": 10.0, "failure": 10.0, "min_halt_step": 1})
    assert ok["halted_at_step_1"] == 0 and ok["runs"] == 40
    with pytest.raises(
        ThresholdError,
        match=r"halt 40 of 40 training runs \(100.0 %\) at step 1, more than the 50 %",
    ):
        step1_halts(rs, {"success": 0.5, "failure": 0.5, "min_halt_step": 1})
    # task skips off (the default policy): no run halts at step 1, whatever the thresholds
    off = step1_halts(rs.with_task_skips(False), {"success": 0.5, "failure": 0.5})
    assert off["halted_at_step_1"] == 0
