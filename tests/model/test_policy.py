"""The one halting rule (earlyeval.model.policy): every form equals a plain per-step loop on random inputs
built to hit the edges (ties of p and tau, equal margins on both sides, NaN, min_t, empty runs)."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from earlyeval.fitting.metrics import NEVER, RunSet, apply_policy, grid_metrics, halting
from earlyeval.model.policy import (
    CONTINUE,
    FAILURE,
    SUCCESS,
    first_halt,
    first_halt_below,
    first_halt_grid,
    pad,
    step_outcome,
)

# p and tau on one coarse grid: exact ties are common
COARSE = np.round(np.arange(0.0, 1.0001, 0.05), 2)


def brute(ps, pf, tau_s, tau_f, min_t):
    """The rule written out step by step in plain Python floats: (t_halt, outcome), (0, -1) if none."""
    for i in range(len(ps)):
        t = i + 1
        if t < min_t:
            continue
        a, b = float(ps[i]), float(pf[i])
        s_hit, f_hit = a >= tau_s, b >= tau_f  # False for NaN
        if s_hit and f_hit:
            return t, 1 if a - tau_s >= b - tau_f else 0
        if s_hit or f_hit:
            return t, 1 if s_hit else 0
    return 0, -1


def random_runs(rng, n_runs=40, max_len=12, nan_share=0.1, mirror=False):
    ps, pf = [], []
    for _ in range(n_runs):
        n = int(rng.integers(0, max_len + 1))
        a = rng.choice(COARSE, n) if rng.random() < 0.7 else rng.random(n)
        b = (
            1.0 - a
            if mirror or rng.random() < 0.3
            else (rng.choice(COARSE, n) if rng.random() < 0.7 else rng.random(n))
        )
        a, b = a.astype(np.float64), np.asarray(b, dtype=np.float64)
        a[rng.random(n) < nan_share] = np.nan
        b[rng.random(n) < nan_share] = np.nan
        ps.append(a)
        pf.append(b)
    return ps, pf


def random_taus(rng, k):
    return np.unique(np.r_[rng.choice(COARSE, k), rng.random(2), NEVER])


@pytest.mark.parametrize("seed", range(12))
def test_grid_equals_the_per_step_loop(seed):
    rng = np.random.default_rng(seed)
    ps, pf = random_runs(rng, mirror=seed % 3 == 0)
    ts, tf = random_taus(rng, 6), random_taus(rng, 6)
    min_t = int(rng.integers(0, 5))
    t, o = first_halt_grid(ps, pf, ts, tf, min_t)
    assert t.shape == o.shape == (len(ps), len(ts), len(tf))
    for r in range(len(ps)):
        for i, a in enumerate(ts):
            for j, b in enumerate(tf):
                assert (t[r, i, j], o[r, i, j]) == brute(ps[r], pf[r], a, b, min_t), (
                    r,
                    a,
                    b,
                    min_t,
                )


def test_random_inputs_reach_every_edge():
    """The random inputs above do exercise ties, NaN steps, both outcomes and min_t (else the test proves little)."""
    ties = nan_skips = 0
    outcomes = set()
    for seed in range(12):
        rng = np.random.default_rng(seed)
        ps, pf = random_runs(rng, mirror=seed % 3 == 0)
        ts, tf = random_taus(rng, 6), random_taus(rng, 6)
        for a, b in zip(ps, pf):
            for x in ts:
                for y in tf:
                    th, oc = brute(a, b, x, y, 1)
                    outcomes.add(oc)
                    if th and a[th - 1] >= x and b[th - 1] >= y:
                        ties += 1
                    if th and np.isnan(a[: th - 1]).any():
                        nan_skips += 1
    assert outcomes == {-1, 0, 1} and ties > 50 and nan_skips > 50


@pytest.mark.parametrize("seed", range(6))
def test_one_pair_scalar_and_metrics_forms_agree(seed):
    rng = np.random.default_rng(100 + seed)
    ps, pf = random_runs(rng, n_runs=60)
    for _ in range(10):
        a, b = float(rng.choice(COARSE)), float(rng.choice(COARSE))
        min_t = int(rng.integers(0, 5))
        t, o = first_halt(ps, pf, a, b, min_t)
        rs = RunSet(
            ["x"] * len(ps),
            [str(i) for i in range(len(ps))],
            np.zeros(len(ps), int),
            np.asarray([len(p) + 1 for p in ps]),
            ps,
            pf,
            task_skips=True,  # the raw rule: every prefix open (the gates are tested in test_gates.py)
        )
        ta, oa = apply_policy(rs, a, b, min_t)
        for r in range(len(ps)):
            want = brute(ps[r], pf[r], a, b, min_t)
            got = halting(ps[r], pf[r], a, b, min_t, task_skips=True)
            assert (t[r], o[r]) == want == (ta[r], oa[r]) == got
            # the Monitor's form: the rule at each prefix, stopping at the first halt
            live = next(
                (
                    (k + 1, c)
                    for k in range(len(ps[r]))
                    if (c := step_outcome(ps[r][k], pf[r][k], a, b, k + 1, min_t)) != CONTINUE
                ),
                (0, -1),
            )
            assert live == want


def test_step_outcome_edges():
    assert step_outcome(0.9, 0.1, 0.9, 0.9, 1) == SUCCESS  # p == tau crosses
    assert step_outcome(0.1, 0.9, 0.9, 0.9, 1) == FAILURE
    assert step_outcome(0.95, 0.95, 0.9, 0.9, 1) == SUCCESS  # equal margins: success
    assert step_outcome(0.95, 0.99, 0.9, 0.9, 1) == FAILURE  # larger failure margin
    assert step_outcome(math.nan, 0.99, 0.9, 0.9, 1) == FAILURE  # a NaN side never crosses
    assert step_outcome(math.nan, math.nan, 0.0, 0.0, 1) == CONTINUE
    assert step_outcome(0.99, 0.99, 0.9, 0.9, 2, min_t=3) == CONTINUE
    assert step_outcome(0.99, 0.01, 0.9, 0.9, 3, min_t=3) == SUCCESS
    assert step_outcome(0.99, 0.01, NEVER, NEVER, 5) == CONTINUE
    assert isinstance(step_outcome(0.99, 0.01, 0.9, 0.9, 1), int)


def test_padded_input_and_run_length():
    ps = [np.array([0.1, 0.2, 0.95]), np.array([0.96])]
    pf = [1 - p for p in ps]
    m = pad(ps)
    assert m.shape == (2, 3) and np.isnan(m[1, 1:]).all()
    np.testing.assert_array_equal(first_halt(m, pad(pf), 0.9, 0.99)[0], [3, 1])
    # T: only prefixes t < T may halt (here the arrays hold every step, the last one included)
    np.testing.assert_array_equal(first_halt(ps, pf, 0.9, 0.99, T=np.array([3, 2]))[0], [0, 1])
    with pytest.raises(
        ValueError, match="list of per-run arrays"
    ):  # one run's 1-D array is not R one-step runs
        first_halt(ps[0], pf[0], 0.9, 0.9)
    with pytest.raises(ValueError, match="thresholds"):
        first_halt_grid(ps, pf, [np.nan], [0.5])


def test_grid_metrics_counts_each_pair_as_apply_policy_does():
    rng = np.random.default_rng(7)
    ps, pf = random_runs(rng, n_runs=50, nan_share=0.05)
    T = np.asarray([len(p) + 1 for p in ps])
    y = rng.integers(0, 2, len(ps))
    rs = RunSet(["x"] * len(ps), [str(i) for i in range(len(ps))], y, T, ps, pf)
    taus = random_taus(rng, 5)
    g = grid_metrics(rs, taus, taus, min_t=2)
    for i, a in enumerate(taus):
        for j, b in enumerate(taus):
            t, p = apply_policy(rs, a, b, 2)
            halted = t > 0
            rec = np.where(halted, p, y)
            assert g.outcome_accuracy[i, j] == pytest.approx((rec == y).mean())
            assert g.steps_saved[i, j] == pytest.approx(np.where(halted, T - t, 0).sum() / T.sum())


def test_policy_module_is_numpy_only():
    code = (
        "import sys, earlyeval.model.policy; bad = [m for m in ('pandas', 'sklearn', 'scipy', 'lightgbm') if m in sys.modules];"
        "print(','.join(bad))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == ""


@pytest.mark.parametrize("seed", range(6))
def test_first_halt_below_equals_budget_halt_index(seed):
    """The budget's early stop (first index i >= lo with p[i] < tau) is first_halt_below at min_t = lo + 1:
    ``fitting.budget_stopping.halt_index`` calls it, and both equal the per-step loop and the old cumulative-minimum code."""
    from earlyeval.fitting.budget_stopping import halt_index

    def _halt_index(p, taus, lo):  # the budget's own implementation before it called the policy
        n = len(p)
        if n <= lo:
            return np.full(len(taus), n, dtype=np.int64)
        m = np.minimum.accumulate(p[lo:])
        return lo + np.searchsorted(-m, -np.asarray(taus), side="right")

    rng = np.random.default_rng(300 + seed)
    ps, _ = random_runs(rng, n_runs=40, nan_share=0.0)
    taus = np.unique(np.r_[rng.choice(COARSE, 8), rng.random(3), 0.0, 1.0])
    for lo in range(4):
        h = first_halt_below(ps, taus, lo + 1)
        for r, p in enumerate(ps):
            old = _halt_index(p, taus, lo)
            np.testing.assert_array_equal(np.where(h[r] > 0, h[r] - 1, len(p)), old)
            np.testing.assert_array_equal(halt_index(p, taus, lo), old)
            for k, tau in enumerate(
                taus
            ):  # and both equal the loop "first t >= lo + 1 with p < tau"
                want = next((i + 1 for i in range(lo, len(p)) if p[i] < tau), 0)
                assert h[r, k] == want


def test_halting_pair_turns_a_side_off_with_never():
    from earlyeval.model.policy import HALT_ON, check_halt_on, halting_pair

    assert HALT_ON == ("failure", "success", "both")
    assert halting_pair(0.9, 0.98, "both") == (0.9, 0.98)
    assert halting_pair(0.9, 0.98, "failure") == (NEVER, 0.98)
    assert halting_pair(0.9, 0.98, "success") == (0.9, NEVER)
    with pytest.raises(
        ValueError, match=r"agent.earlyeval.halt_on: 'Failure' is not one of failure, success, both"
    ):
        check_halt_on("Failure", "agent.earlyeval.halt_on")
    # an off side never halts, whatever its probability
    assert step_outcome(1.0, 0.0, *halting_pair(0.9, 0.98, "failure"), 5) == CONTINUE
    assert step_outcome(0.0, 1.0, *halting_pair(0.9, 0.98, "success"), 5) == CONTINUE
