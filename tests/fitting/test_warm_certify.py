"""The certifying warm start (issue 21 item 5): it holds its stated level on synthetic agents of known accuracy,
never reads a label outside its K runs, and can lower a threshold when the runs support it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy.special import expit

from earlyeval.config.eval_config import EvalConfig
from earlyeval.evaluation.adapt import warm_split
from earlyeval.evaluation.warm_start import warm_start_block
from earlyeval.fitting.certify import (
    certify,
    error_counts,
    min_runs_to_certify,
    side_level,
    side_path,
    warm_path,
)
from earlyeval.fitting.metrics import NEVER, RunSet
from earlyeval.fitting.thresholds import fit_warm_start

TAUS = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.93, 0.95, 0.97, 0.99)
CFG = EvalConfig(taus=TAUS, target_accuracy=0.95, confidence=0.9)  # delta = 0.1
DELTA = 0.1


def synthetic_agent(
    n: int, seed: int, rate: float = 0.4, signal: float = 3.0, deceptive: float = 0.08
) -> RunSet:
    """n runs of an agent whose per-run process is known: y ~ Bernoulli(rate); P(success) drifts towards the
    outcome (away from it on a `deceptive` share of runs) with a random walk on the logit scale."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < rate).astype(int)
    T = rng.integers(6, 20, n)
    sign = (2 * y - 1) * np.where(rng.random(n) < deceptive, -1, 1)
    L = int(T.max()) - 1
    walk = np.cumsum(rng.normal(0, 0.24, (n, L)), axis=1) + rng.normal(0, 0.5, (n, 1))
    ps = [expit(walk[i, : t - 1] + sign[i] * signal * np.arange(1, t) / t) for i, t in enumerate(T)]
    # every prefix open (task skips on): the certification's statistics, not the gates, are under test here
    return RunSet(
        ["a"] * n, [f"r{i}" for i in range(n)], y, T, ps, [1 - p for p in ps], task_skips=True
    )


@pytest.fixture(scope="module")
def agent():
    """A large population (its recalls are the agent's true ones, to ~0.002) and its true recall per pair."""
    pop = synthetic_agent(30000, seed=0)
    pairs = [(a, b) for a in (*TAUS, NEVER) for b in (*TAUS, NEVER)]
    truth = {
        p: (1 - c["e_s"] / c["n_pos"], 1 - c["e_f"] / c["n_neg"])
        for p, c in zip(pairs, error_counts(pop, pairs))
    }
    return pop, truth


def _draw(pop: RunSet, k: int, rng: np.random.Generator) -> RunSet:
    m = np.zeros(len(pop), dtype=bool)
    m[rng.choice(len(pop), size=k, replace=False)] = True
    return pop.subset(m)


def test_the_agent_has_bold_pairs_below_the_target(agent):
    """The test below can fail: along the paths, true recall falls under 0.95 before the grid's bottom."""
    _, truth = agent
    assert truth[(0.99, 0.99)][0] > 0.97 and truth[(0.99, 0.99)][1] > 0.97
    assert truth[(0.99, 0.9)][0] < 0.95 and truth[(0.9, 0.99)][1] < 0.95


def test_certified_pairs_hold_their_level_on_a_synthetic_agent(agent):
    """The guarantee: over many draws of K runs, the share of draws where a lowered side's recall is below the
    target on the agent's distribution is <= delta (up to 3 Monte-Carlo standard errors); the naive rule
    (the boldest pair whose observed recall meets the target) violates it in far more draws."""
    pop, truth = agent
    rng = np.random.default_rng(1)
    base = (0.99, 0.99)
    draws, viol, naive_viol, lowered = 300, 0, 0, 0
    naive_cfg = dataclasses.replace(CFG, confidence=None)
    for r in range(draws):
        warm = _draw(pop, 300, rng)
        _, th = fit_warm_start(warm, CFG, base)
        ts, tf = th["success"], th["failure"]
        sr, fr = truth[(ts, tf)]
        lowered += th["decision"] == "lowered"
        viol += bool((tf < base[1] and sr < 0.95) or (ts < base[0] and fr < 0.95))
        if r < 100:
            _, nv = fit_warm_start(warm, naive_cfg, None, rule="check")
            nsr, nfr = truth[(nv["success"], nv["failure"])]
            naive_viol += bool(nsr < 0.95 or nfr < 0.95)
    se = np.sqrt(DELTA * (1 - DELTA) / draws)
    assert viol / draws <= DELTA + 3 * se, (viol, draws)
    assert lowered / draws >= 0.5, lowered  # not vacuous: with 300 runs it does lower
    # positive control: without the bound, lucky runs certify
    assert naive_viol / 100 >= 0.3, naive_viol


def test_a_side_not_lowered_keeps_the_label_free_recall(agent):
    """Lowering tau_f can only add successes halted as failures and remove failures halted as successes, run by
    run (and the mirror for tau_s): why each side may be certified on its own."""
    pop, _ = agent
    small = pop.subset(np.arange(len(pop)) < 3000)
    for base in ((0.97, 0.97), (0.9, 0.95)):
        b = error_counts(small, [base])[0]
        for pair in side_path(TAUS, base, 1):  # tau_f lower
            c = error_counts(small, [pair])[0]
            assert c["e_s"] >= b["e_s"] and c["e_f"] <= b["e_f"], (base, pair)
        for pair in side_path(TAUS, base, 0):  # tau_s lower
            c = error_counts(small, [pair])[0]
            assert c["e_f"] >= b["e_f"] and c["e_s"] <= b["e_s"], (base, pair)


def test_veto_raises_a_base_that_meets_the_target_rarely(agent):
    pop, truth = agent
    rng = np.random.default_rng(2)
    good, bad = (0.97, 0.97), (0.7, 0.7)
    assert min(truth[good]) > 0.95 and max(truth[bad]) < 0.93
    draws = 200
    raised_good = sum(
        fit_warm_start(_draw(pop, 200, rng), CFG, good)[1]["decision"] == "raised"
        for _ in range(draws)
    )
    raised_bad = sum(
        fit_warm_start(_draw(pop, 200, rng), CFG, bad)[1]["decision"] == "raised" for _ in range(50)
    )
    assert raised_good / draws <= DELTA + 3 * np.sqrt(DELTA * (1 - DELTA) / draws), raised_good
    # positive control: a base far below the target is raised
    assert raised_bad / 50 >= 0.8, raised_bad


def test_a_few_lucky_runs_cannot_certify():
    """Zero errors certify a side only from min_runs_to_certify runs of that outcome on: 58 at 0.95 and delta 0.1."""
    n = min_runs_to_certify(0.95, side_level(DELTA))
    assert 0.95**n <= side_level(DELTA) < 0.95 ** (n - 1)
    for k, lowers in ((n - 1, False), (n, True)):
        # k successes, each confidently successful from its first prefix: no pair halts one as a failure
        ps = [np.full(9, 0.999)] * k + [np.full(9, 0.001)]
        warm = RunSet(
            ["a"] * (k + 1),
            [f"r{i}" for i in range(k + 1)],
            np.r_[np.ones(k, int), 0],
            np.full(k + 1, 10),
            ps,
            [1 - p for p in ps],
        )
        th = certify(warm, (0.99, 0.99), TAUS, 0.95, DELTA)
        assert (th["failure"] < 0.99) is lowers, (k, th["failure"])
        assert th["success"] == 0.99  # one failure certifies nothing about failure recall


def test_warm_start_never_reads_a_label_outside_its_k_runs(agent):
    pop, _ = agent
    rs = pop.subset(np.arange(len(pop)) < 600)
    cfg = dataclasses.replace(CFG, warm_repeats=3, seed=0)
    base = (0.99, 0.99)
    before = warm_start_block(rs, cfg, 0.2, base)
    masks = [warm_split(len(rs), 0.2, seed=cfg.seed * 1000 + r) for r in range(3)]
    outside = ~np.logical_or.reduce(masks)
    flipped = dataclasses.replace(rs, y=np.where(outside, 1 - rs.y, rs.y))
    after = warm_start_block(flipped, cfg, 0.2, base)
    assert before["thresholds_per_draw"] == after["thresholds_per_draw"]
    assert before["decisions"] == after["decisions"] and before["decisions"]["lowered"] >= 1
    # positive control: flipping the warm runs' own labels changes the decision
    inside = dataclasses.replace(rs, y=np.where(masks[0], 1 - rs.y, rs.y))
    _, th0 = fit_warm_start(rs.subset(masks[0]), cfg, base)
    _, th1 = fit_warm_start(inside.subset(masks[0]), cfg, base)
    assert (th0["success"], th0["failure"], th0["decision"]) != (
        th1["success"],
        th1["failure"],
        th1["decision"],
    )


def test_paths_are_fixed_by_the_grid_and_the_base():
    bolder, cautious = warm_path(TAUS, (0.9, 0.95))
    assert bolder[0] == (0.85, 0.93) and bolder[-1] == (0.5, 0.5)
    assert cautious[0] == (0.93, 0.97) and cautious[-1] == (NEVER, NEVER)
    assert side_path(TAUS, (0.9, 0.95), 1)[:2] == [(0.9, 0.93), (0.9, 0.9)]
    assert side_path(TAUS, (0.5, 0.95), 0) == []


def test_check_rule_and_recalibration_stay_available(agent):
    pop, _ = agent
    warm = pop.subset(np.arange(len(pop)) < 60)
    cal, th = fit_warm_start(warm, CFG, (0.9, 0.95), rule="check")
    assert th["success"] >= 0.9 and th["failure"] >= 0.95
    cal, _ = fit_warm_start(warm, CFG, None, recalibrate=True)  # recalibrate implies the check rule
    assert (cal.a, cal.b) != (1.0, 0.0)
    with pytest.raises(ValueError, match="recalibrate"):
        fit_warm_start(warm, CFG, None, recalibrate=True, rule="certify")
    with pytest.raises(ValueError, match="rule"):
        fit_warm_start(warm, CFG, None, rule="bold")
