"""The evaluation's pass simulator (issue 28 item 5): causality, the audit sample, the cold start, the live rule."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from earlyeval.evaluation.pass_sim import pass_block, pass_metrics, pass_pooled, simulate_pass
from earlyeval.fitting.metrics import RunSet
from earlyeval.live.benchpass import audited, certify_pass, run_on_workers, would_halt
from earlyeval.model.policy import NEVER


def _agent(seed: int = 0, n: int = 300, noise: float = 0.15) -> RunSet:
    """Runs whose P(success) drifts towards the outcome along the run, with noise (so some halts are wrong)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    T = rng.integers(3, 30, n)
    ps = [
        np.clip(
            0.5 + (y[i] - 0.5) * np.linspace(0.1, 0.95, T[i] - 1) + rng.normal(0, noise, T[i] - 1),
            0,
            1,
        )
        for i in range(n)
    ]
    return RunSet(
        ["a"] * n,
        [f"run-{i:04d}" for i in range(n)],
        y,
        T,
        ps,
        [1 - p for p in ps],
        [None] * n,
        [None] * n,
        [[] for _ in range(n)],
        task_skips=True,  # every prefix open: the pass's statistics are under test, not the gates
    )


@pytest.mark.parametrize("workers", [1, 3, 8])
def test_run_on_workers_delivers_exactly_the_runs_finished_before_each_start(workers):
    rng = np.random.default_rng(workers)
    dur = rng.integers(1, 20, 60)
    start, finish, seen = {}, {}, {}
    delivered: list[int] = []

    def run(i: int, k: int, t0: int) -> int:
        start[i], finish[i] = t0, t0 + int(dur[i])
        seen[i] = set(delivered)
        return int(dur[i])

    run_on_workers(list(rng.permutation(60)), workers, run, delivered.append)
    assert sorted(delivered) == list(range(60))
    for i in range(60):
        before = {j for j in finish if j != i and start[j] < start[i] and finish[j] <= start[i]}
        assert seen[i] == before, i  # every run finished by then, and no other


def test_no_statistic_used_for_run_i_reads_a_run_not_finished_before_it_started():
    rs = _agent()
    sim = simulate_pass(rs, (0.8, 0.8), 1, seed=3, workers=8, audit_share=0.3, max_error=0.2)
    for i in range(len(rs)):
        assert sim["finished_at_start"][i] == int(
            np.sum(sim["finish"] <= sim["start"][i]) - (sim["finish"][i] <= sim["start"][i])
        )
    # the pair run i ran under is the certification over the audited runs finished before it started, exactly
    probs = [[[float(a), float(b)] for a, b in zip(rs.p_s[i], rs.p_f[i])] for i in range(len(rs))]
    for i in np.random.default_rng(0).choice(len(rs), 25, replace=False):
        prior = [
            j
            for j in range(len(rs))
            if sim["audited"][j] and sim["finish"][j] <= sim["start"][i] and j != i
        ]
        cert = certify_pass(
            [{"probs": probs[j], "outcome": int(rs.y[j])} for j in prior], (0.8, 0.8), 1, 0.05, 0.2
        )
        assert list(sim["thresholds"][i]) == [float(x) for x in cert["pair"]], i


def test_the_audit_sample_is_drawn_before_any_prediction_and_never_halted():
    rs = _agent()
    flipped = dataclasses.replace(rs, p_s=rs.p_f, p_f=rs.p_s)
    a = simulate_pass(rs, (0.7, 0.7), 1, seed=5, workers=8)
    b = simulate_pass(flipped, (0.7, 0.7), 1, seed=5, workers=1)
    expect = np.asarray([audited(5, r, 0.10) for r in rs.run_ids])
    # not of probs, order or W
    assert np.array_equal(a["audited"], expect) and np.array_equal(b["audited"], expect)
    assert 0 < expect.sum() < len(rs)
    assert np.all(a["t_halt"][a["audited"]] == 0) and np.all(b["t_halt"][b["audited"]] == 0)
    # the others can halt: the check above is not vacuous
    assert np.any(a["t_halt"][~a["audited"]] > 0)


def test_with_no_finished_run_the_pass_halts_at_the_label_free_pair_and_as_the_live_rule_does():
    rs = _agent()
    # every run starts at time 0: none finished
    sim = simulate_pass(rs, (0.75, 0.8), 2, seed=0, workers=len(rs))
    assert np.all(sim["finished_at_start"] == 0)
    assert np.all(sim["thresholds"] == np.asarray([0.75, 0.8]))
    for i in np.flatnonzero(~sim["audited"]):
        probs = [[float(a), float(b)] for a, b in zip(rs.p_s[i], rs.p_f[i])]
        live = would_halt(probs, 0.75, 0.8, 2)
        want = (
            0
            if live is None
            else next(
                t
                for t in range(1, len(probs) + 1)
                if would_halt(probs[:t], 0.75, 0.8, 2) is not None
            )
        )
        # the offline grid and the live step rule halt at the same prefix
        assert sim["t_halt"][i] == want, i


def test_the_simulated_guarantee_holds_at_its_stated_level_on_synthetic_agents():
    """Agents of known accuracy: at step 1, P(success) p ~ U(0.5, 1); a run succeeds surely when p >= 0.8, else
    w.p. 1/2.  Halting as success at tau < 0.8 errs at rate 0.5 (0.8 - tau) / (1 - tau), above max_error = 0.1
    for tau < 0.75: certifying such a tau is a violation.  Re-certified after every graded run, it happens in at
    most alpha of the passes (binomial slack)."""
    alpha, max_error, reps, n, bad_tau = 0.2, 0.10, 20, 600, 0.75
    bad = moved = 0
    for r in range(reps):
        rng = np.random.default_rng(100 + r)
        p = rng.uniform(0.5, 1.0, n)
        y = np.where(p >= 0.8, 1, rng.random(n) < 0.5).astype(np.int64)
        rs = RunSet(
            ["a"] * n,
            [f"s{r}-{i}" for i in range(n)],
            y,
            np.full(n, 2),
            [np.asarray([v]) for v in p],
            [np.asarray([1 - v]) for v in p],
            [None] * n,
            [None] * n,
            [[] for _ in range(n)],
            task_skips=True,  # each run's one prefix is t = 1: a task skip, allowed here
        )
        sim = simulate_pass(
            rs,
            (0.99, NEVER),
            1,
            seed=r,
            workers=4,
            audit_share=1.0,
            alpha=alpha,
            max_error=max_error,
        )
        taus = [h["pair"][0] for h in sim["history"]]
        moved += bool(taus) and min(taus) < 0.99
        bad += any(t < bad_tau - 1e-12 for t in taus)
    assert bad / reps <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / reps), bad
    assert moved > 0  # the certification fires on these agents: the bound above is not vacuous


def test_pass_blocks_are_deterministic_and_count_audited_runs_at_full_cost():
    rs = _agent(1)
    a, b = (
        pass_block(rs, (0.8, 0.85), 1, seeds=(0, 1)),
        pass_block(rs, (0.8, 0.85), 1, seeds=(0, 1)),
    )
    assert a == b
    sim = simulate_pass(rs, (0.8, 0.85), 1, seed=0, workers=8)
    m = pass_metrics(rs, sim)
    saved = np.where(sim["t_halt"] > 0, rs.T - sim["t_halt"], 0).sum() / rs.T.sum()
    assert m["steps_saved"] == pytest.approx(saved, rel=1e-12)
    assert m["audited_share"] == pytest.approx(sim["audited"].mean())
    pooled = pass_pooled({"a": {"pass": a}}, {"a": rs}, ["a"])
    assert pooled["W=8"]["steps_saved"] == pytest.approx(a["W=8"]["steps_saved"], rel=1e-12)


def test_the_one_tail_decisions_agree_with_the_bisected_bounds():
    from earlyeval.model.anytime import cs_bounds, cs_lower_above, cs_upper_at_most

    checked = 0
    for n in (1, 5, 40, 200, 900):
        for e in sorted({0, 1, 2, n // 20, n // 5, n}):
            for rate in (0.01, 0.03, 0.1, 0.3):
                lo, hi = cs_bounds(e, n, 0.05 / 32)
                if min(abs(hi - rate), abs(lo - rate)) < 1e-9:
                    continue  # a tie within the bisection's precision
                assert cs_upper_at_most(e, n, 0.05 / 32, rate) == (hi <= rate), (e, n, rate)
                assert cs_lower_above(e, n, 0.05 / 32, rate) == (lo > rate), (e, n, rate)
                checked += 1
    assert checked > 60


def test_the_pass_features_of_run_i_read_only_audited_runs_finished_before_it_started():
    """``repredict`` is handed exactly the audited runs finished by run i's start, and its probabilities are the
    ones the run halts on and is certified with."""
    rs = _agent(seed=5)
    asked: dict[int, list[int]] = {}

    def repredict(i, refs):
        asked[i] = list(refs)
        if len(refs) < 3:
            return None
        return np.clip(rs.p_s[i] + 0.2, 0, 1), np.clip(rs.p_f[i] - 0.2, 0, 1)  # bolder on success

    sim = simulate_pass(rs, (0.8, 0.8), 1, seed=3, workers=8, audit_share=0.3, repredict=repredict)
    plain = simulate_pass(rs, (0.8, 0.8), 1, seed=3, workers=8, audit_share=0.3)
    assert set(asked) == set(range(len(rs)))
    for i in range(len(rs)):
        want = {
            j
            for j in range(len(rs))
            if j != i
            and sim["audited"][j]
            and sim["finish"][j] <= sim["start"][i]
            and sim["position"][j] < sim["position"][i]
        }
        assert set(asked[i]) == want, i
        assert sim["with_reference"][i] == (len(want) >= 3)
    assert sim["with_reference"].any() and not sim["with_reference"].all()
    changed = [i for i in range(len(rs)) if sim["with_reference"][i] and not sim["audited"][i]]
    assert any(
        sim["t_halt"][i] != plain["t_halt"][i] or sim["pred"][i] != plain["pred"][i]
        for i in changed
    )


def test_a_failure_only_pass_keeps_the_success_side_off_and_certifies_the_failure_halts_it_makes():
    """``halt_on="failure"``: no run halts as a success, the success side is NEVER at every start, and the failure
    side is certified on the failure-only rule's halts: the same pass as a both-sides one given (NEVER, tau_f)."""
    rs = _agent(noise=0.3)
    sim = simulate_pass(
        rs, (0.8, 0.8), 1, seed=3, workers=8, audit_share=0.5, max_error=0.1, halt_on="failure"
    )
    assert not (sim["pred"] == 1).any() and set(sim["thresholds"][:, 0]) == {NEVER}
    ref = simulate_pass(rs, (NEVER, 0.8), 1, seed=3, workers=8, audit_share=0.5, max_error=0.1)
    assert all(np.array_equal(sim[k], ref[k]) for k in ("t_halt", "pred", "thresholds"))
    # the failure side moved, alone
    assert ref["history"] and all(h["pair"][0] == NEVER for h in ref["history"])
