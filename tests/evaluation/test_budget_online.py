"""Online re-conformalization of the budget intervals (evaluation.budget_online): causality, no labels, a hand example."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from _budget_data import budget_cfgs, budget_runs

from earlyeval.core.trajectory import Trajectory
from earlyeval.evaluation.budget_loao import run_budget
from earlyeval.evaluation.budget_online import (
    ONLINE_MIN_RUNS,
    online_corrections,
    online_quantiles,
    run_order,
)
from earlyeval.evaluation.dataset import load_dataset
from earlyeval.report.budget import budget_report

ALPHAS = (0.05, 0.1, 0.5, 0.9, 0.95)
LEVELS = (0.8, 0.9)


def _arrays(seed: int = 1, n_runs: int = 12):
    rng = np.random.default_rng(seed)
    runs = np.repeat(np.arange(100, 100 + n_runs), rng.integers(1, 5, n_runs))
    q = np.sort(rng.normal(size=(len(runs), len(ALPHAS))), axis=1)
    z = rng.normal(size=len(runs)) * 2
    w = np.ones(len(runs))
    return runs, q, z, w


# --------------------------------------------------------------- causality


def test_run_i_uses_only_runs_finished_before_it():
    """Perturbing the realized budgets of run i itself or of any later run leaves run i's interval unchanged;
    perturbing an earlier run changes it (so the check can fail)."""
    runs, q, z, w = _arrays()
    agents = np.full(len(runs), "new")
    order = {"new": run_order(runs, "new")}
    fb = {0.8: 0.3, 0.9: 0.6}
    k = 3
    base, Q, nown = online_quantiles(q, z, w, runs, agents, fb, ALPHAS, LEVELS, order, min_runs=k)
    pos = {int(r): i for i, r in enumerate(order["new"])}
    rpos = np.asarray([pos[int(r)] for r in runs])
    assert np.array_equal(np.unique(nown[rpos < k]), [0]) and np.all(
        nown[rpos >= k] == rpos[rpos >= k]
    )
    changed_by_earlier = 0
    for j in range(len(order["new"])):
        z2 = z.copy()
        z2[rpos == j] += 50.0  # run at position j turned out far longer than predicted
        q2, _, _ = online_quantiles(q, z2, w, runs, agents, fb, ALPHAS, LEVELS, order, min_runs=k)
        assert np.array_equal(q2[rpos <= j], base[rpos <= j]), j
        changed_by_earlier += int(not np.array_equal(q2[rpos > j], base[rpos > j]))
    assert changed_by_earlier > 0


def test_run_order_is_seeded_and_independent_of_input_order():
    r = np.arange(30)
    a = run_order(r, "agent-x")
    assert np.array_equal(a, run_order(r[::-1], "agent-x"))
    assert sorted(a.tolist()) == r.tolist() and not np.array_equal(a, r)
    assert not np.array_equal(a, run_order(r, "agent-x", seed=1))


# ------------------------------------------------------------ hand example


def test_online_correction_hand_computed():
    # runs 10..14 finish in this order; level 0.5 uses the (0.25, 0.75) pair; k = 2; fallback 0.7
    runs = np.asarray([10, 10, 11, 12, 13, 14])
    s = np.asarray([0.2, 0.4, -0.1, 0.3, 1.0, 0.0])
    w = np.asarray([0.5, 0.5, 1.0, 1.0, 1.0, 1.0])  # 1/(T-1) per prefix: run 10 has two prefixes
    order = np.asarray([10, 11, 12, 13, 14])
    Q, n = online_corrections(s, w, runs, order, 0.7, 0.5, min_runs=2)
    # pos 2: runs 10,11 -> {-0.1:1, 0.2:.5, 0.4:.5}, level .5*(1+1/2)=.75 of weight 2 -> 1.5 reached at 0.2
    # pos 3: + 0.3:1 -> cum 1, 1.5, 2.5, 3; .5*(4/3) of 3 = 2 -> 0.3
    # pos 4: + 1.0:1 -> cum 1, 1.5, 2.5, 3, 4; .5*1.25 of 4 = 2.5 -> 0.3 (run 14's own score 0.0 is not used)
    assert np.allclose(Q, [0.7, 0.7, 0.2, 0.3, 0.3])
    assert n.tolist() == [0, 0, 2, 3, 4]
    # the same through online_quantiles: q_raw = (0, 0.5, 1), z = 1 + s gives CQR scores s
    alphas = (0.25, 0.5, 0.75)
    q_raw = np.tile([0.0, 0.5, 1.0], (len(runs), 1))
    q, Qr, nr = online_quantiles(
        q_raw,
        1.0 + s,
        w,
        runs,
        np.full(len(runs), "a"),
        {0.5: 0.7},
        alphas,
        (0.5,),
        {"a": order},
        min_runs=2,
    )
    assert np.allclose(Qr[:, 0], [0.7, 0.7, 0.7, 0.2, 0.3, 0.3])
    assert np.allclose(q[3], [-0.2, 0.5, 1.2]) and np.allclose(q[0], [-0.7, 0.5, 1.7])


# ------------------------------------------------------- end to end, no labels


def _ds(trajs: list[Trajectory]):
    return load_dataset("tau2", ["behaviour"], trajs=trajs, tasks={}, progress=False)


@pytest.fixture(scope="module")
def base_online():
    cfg, bcfg = budget_cfgs()
    trajs = budget_runs()
    return trajs, budget_report(run_budget(_ds(trajs), cfg, bcfg, only=["alpha"]))


def _online(rep: dict) -> dict:
    return {d: blk["online"]["agents"].get("alpha") for d, blk in rep["dimensions"].items()}


def test_online_mode_never_reads_held_out_labels(base_online):
    trajs, rep = base_online
    cfg, bcfg = budget_cfgs()
    flipped = [
        dataclasses.replace(t, outcome=1 - t.outcome) if t.agent == "alpha" else t for t in trajs
    ]
    rep2 = budget_report(run_budget(_ds(flipped), cfg, bcfg, only=["alpha"]))
    a, b = _online(rep), _online(rep2)
    assert a["steps"]["runs_with_own_correction"] == 28 - ONLINE_MIN_RUNS
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    # the flip did reach the held-out agent's (label-using) feasibility numbers
    assert (
        rep["dimensions"]["steps"]["agents"]["alpha"]["resolve_rate"]
        != rep2["dimensions"]["steps"]["agents"]["alpha"]["resolve_rate"]
    )


def test_late_run_budget_does_not_change_earlier_runs_end_to_end(base_online):
    """A held-out run's realized tokens, changed after the fact, move only the runs that finish after it."""
    trajs, _ = base_online
    cfg, bcfg = budget_cfgs()
    ds0 = _ds(trajs)
    alpha_runs = np.flatnonzero([t.agent == "alpha" for t in ds0.trajs])
    order = run_order(alpha_runs, "alpha")
    j = ONLINE_MIN_RUNS + 1
    victim = ds0.trajs[int(order[j])].run_id
    changed = []
    for t in trajs:
        if t.run_id == victim:
            steps = [
                dataclasses.replace(s, output_tokens=(s.output_tokens or 0) * 40) for s in t.steps
            ]
            t = dataclasses.replace(t, steps=steps)
        changed.append(t)
    r0 = run_budget(ds0, cfg, bcfg, only=["alpha"])
    ds1 = _ds(changed)
    r1 = run_budget(ds1, cfg, bcfg, only=["alpha"])
    assert [t.run_id for t in ds0.trajs] == [t.run_id for t in ds1.trajs]
    prow = ds0.prefixes["run"].to_numpy()
    pos = {int(r): i for i, r in enumerate(order)}
    rpos = np.asarray([pos.get(int(r), -1) for r in prow])
    R0, R1 = r0.dims["output_tokens"], r1.dims["output_tokens"]
    before = (rpos >= 0) & (rpos < j)
    assert np.array_equal(R0.q_online[before], R1.q_online[before])
    after = rpos > j
    assert not np.array_equal(R0.Q_online[after], R1.Q_online[after])
