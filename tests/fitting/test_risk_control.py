"""The agent-quantile threshold rule: monotone side risks, the order statistic, and its stated guarantee
holding on synthetic populations of agents."""

from __future__ import annotations

import numpy as np
import pytest

from earlyeval.fitting.metrics import NEVER, RunSet, apply_policy, outcome_metrics
from earlyeval.fitting.risk_control import (
    AgentQuantileRule,
    boldest_safe,
    guarantee_check,
    guarantee_tally,
    select_agent_quantile,
    select_side,
    side_risk,
)
from earlyeval.fitting.thresholds import DEFAULT_TAUS, choose_thresholds

TAUS = DEFAULT_TAUS


def agent_runs(rng: np.random.Generator, n_runs: int, shift: float, rate: float = 0.4) -> RunSet:
    """One agent: runs whose P(success) drifts toward the truth, with an agent-level calibration ``shift``
    (the model is over- or under-confident on this agent, as on a new scaffold)."""
    y = (rng.random(n_runs) < rate).astype(np.int64)
    T = rng.integers(4, 10, size=n_runs)
    p_s = []
    for yi, Ti in zip(y, T):
        t = np.arange(1, Ti)
        z = (2 * yi - 1) * 0.5 * t + rng.normal(0, 1.5, size=len(t)) + shift + rng.normal(0, 1.0)
        p_s.append(1 / (1 + np.exp(-z)))
    return RunSet(
        [f"a{shift:.3f}"] * n_runs, [str(i) for i in range(n_runs)], y, T, p_s, [1 - p for p in p_s]
    )


def test_side_risk_only_grows_as_the_threshold_falls():
    rng = np.random.default_rng(0)
    for _ in range(20):
        rs = agent_runs(rng, 40, rng.normal(0, 1))
        taus = np.asarray(sorted(TAUS))
        for side in ("success", "failure"):
            for risk in ("mass", "recall"):
                r, saved = side_risk(rs, taus, side, risk)
                assert np.all(np.diff(r) <= 1e-12), (side, risk)  # ascending tau: risk never rises
                assert np.all(np.diff(saved) <= 1e-12)


def test_side_risk_is_the_halting_rule_with_the_other_side_off():
    from earlyeval.model.policy import first_halt_grid

    rng = np.random.default_rng(7)
    rs = agent_runs(rng, 30, 0.3)
    rs.p_s[3][1] = np.nan  # NaN never halts
    taus = np.asarray(sorted(TAUS))
    for side in ("success", "failure"):
        for min_t in (1, 3):
            r, saved = side_risk(rs, taus, side, "mass", min_t)
            ts, tf = (taus, [NEVER]) if side == "success" else ([NEVER], taus)
            # the rule on the gated view every halting metric reads (t = 1 closed: task skips are off)
            t_halt, pred = first_halt_grid(*rs.halt_probs(), ts, tf, min_t)
            t_halt = t_halt.reshape(len(rs), len(taus))
            wrong = (t_halt > 0) & (rs.y[:, None] == (0 if side == "success" else 1))
            np.testing.assert_allclose(r, wrong.sum(0) / len(rs))
            np.testing.assert_allclose(
                saved, np.where(t_halt > 0, rs.T[:, None] - t_halt, 0).sum(0) / rs.T.sum()
            )


def test_side_risk_counts_the_wrong_halts_of_that_side_only():
    # two runs: a failure whose P(success) reaches 0.95, a success that stays low
    rs = RunSet(
        ["a", "a"],
        ["f", "s"],
        np.array([0, 1]),
        np.array([3, 3]),
        [np.array([0.2, 0.95]), np.array([0.1, 0.2])],
        [np.array([0.8, 0.05]), np.array([0.9, 0.8])],
        task_skips=True,  # the halt at t = 1 below is a task skip
    )
    r, _ = side_risk(rs, np.array([0.9, 0.96]), "success", "mass")
    assert list(r) == [0.5, 0.0]  # at 0.9 the failure is halted as success: 1 of 2 runs
    r, _ = side_risk(rs, np.array([0.85, 0.95]), "failure", "recall")
    assert list(r) == [1.0, 0.0]  # at 0.85 the one success (p_f 0.9) is halted as failure


def test_boldest_safe_and_the_order_statistic():
    taus = np.array([0.6, 0.7, 0.8, 0.9, NEVER])
    assert boldest_safe(np.array([0.3, 0.1, 0.0, 0.0, 0.0]), taus, 0.05) == 0.8
    assert boldest_safe(np.array([0.3, 0.3, 0.3, 0.3, 0.0]), taus, 0.05) == NEVER
    rng = np.random.default_rng(1)
    sets = {f"a{i}": agent_runs(rng, 80, s) for i, s in enumerate([-1.0, -0.5, 0.0, 0.5, 1.0, 1.5])}
    rule = AgentQuantileRule(taus=TAUS, alpha=0.02, delta=0.15)
    out = select_side(sets, rule, "success")
    assert out["violations_allowed"] == 0 and out["guarantee"] == pytest.approx(1 / 7)
    assert out["tau"] == max(out["per_agent"].values())  # k = 0: the most cautious agent's
    # with more agents the same delta allows one violation: the second most cautious
    more = {f"b{i}": agent_runs(rng, 80, s) for i, s in enumerate(np.linspace(-1.5, 1.5, 13))}
    out2 = select_side(more, rule, "success")
    assert out2["violations_allowed"] == 1 and out2["guarantee"] == pytest.approx(2 / 14)
    assert out2["tau"] == sorted(out2["per_agent"].values(), reverse=True)[1]


def test_the_two_sided_policy_keeps_each_sides_bound():
    rng = np.random.default_rng(2)
    for _ in range(30):
        rs = agent_runs(rng, 60, rng.normal(0, 1))
        for ts, tf in [(0.8, 0.9), (0.7, 0.75), (0.95, 0.6)]:
            m = outcome_metrics(rs.y, rs.T, *apply_policy(rs, ts, tf))
            rs_s, _ = side_risk(rs, np.array([ts]), "success", "mass")
            rf_s, _ = side_risk(rs, np.array([tf]), "failure", "mass")
            n = len(rs)
            wrong_s = (rs.y == 0).sum() * (1 - m["failure_recall"])  # failures recorded as success
            wrong_f = (rs.y == 1).sum() * (1 - m["success_recall"])
            assert wrong_s / n <= rs_s[0] + 1e-12 and wrong_f / n <= rf_s[0] + 1e-12


@pytest.mark.parametrize("n_agents", [6, 13])
def test_the_stated_guarantee_holds_for_a_new_agent_of_the_population(n_agents):
    """Agents drawn from one population (calibration shifts ~ N(0, 1)): the rule picks on n of them, and the
    (n+1)-th's side risk exceeds alpha at most (k+1)/(n+1) of the time, up to Monte-Carlo error."""
    rng = np.random.default_rng(3)
    rule = AgentQuantileRule(taus=TAUS, alpha=0.03, delta=0.15)
    reps, viol, halts = 200, {"success": 0, "failure": 0}, 0
    bound = None
    for _ in range(reps):
        agents = [agent_runs(rng, 40, rng.normal(0, 1)) for _ in range(n_agents + 1)]
        inner = {f"a{i}": rs for i, rs in enumerate(agents[:-1])}
        th = select_agent_quantile(inner, rule)
        bound = th["guarantee_per_side"]
        new = agents[-1]
        for side, tau in (("success", th["success"]), ("failure", th["failure"])):
            r, _ = side_risk(new, np.array([tau]), side, "mass")
            viol[side] += int(r[0] > rule.alpha + 1e-12)
        halts += bool((apply_policy(new, th["success"], th["failure"])[0] > 0).any())
    se = np.sqrt(bound * (1 - bound) / reps)
    for side in viol:
        assert viol[side] / reps <= bound + 3 * se, (side, viol[side] / reps, bound)
    assert halts > reps * 0.5  # not vacuous: the rule does halt on most new agents


def test_the_boldest_agent_alone_would_break_it():
    """Negative control: the least cautious inner agent's threshold (not the rule) violates far more often."""
    rng = np.random.default_rng(4)
    rule = AgentQuantileRule(taus=TAUS, alpha=0.03, delta=0.15)
    reps, viol = 200, 0
    for _ in range(reps):
        agents = [agent_runs(rng, 50, rng.normal(0, 1)) for _ in range(7)]
        per = select_side({f"a{i}": rs for i, rs in enumerate(agents[:-1])}, rule, "success")[
            "per_agent"
        ]
        r, _ = side_risk(agents[-1], np.array([min(per.values())]), "success", "mass")
        viol += int(r[0] > rule.alpha)
    assert viol / reps > 2 / 7


def test_guarantee_check_is_the_rules_own_side_risk_on_the_new_agent():
    """The measured half of the guarantee: each side's risk at the fold's thresholds, as the rule computes it
    (that side alone), against alpha; a violation is counted, and the tally counts agents per side."""
    rng = np.random.default_rng(5)
    rule = AgentQuantileRule(taus=TAUS, alpha=0.03, delta=0.15)
    inner = {f"a{i}": agent_runs(rng, 60, rng.normal(0, 1)) for i in range(6)}
    th = select_agent_quantile(inner, rule)
    new = agent_runs(rng, 80, 0.0)
    check = guarantee_check(new, th)
    for side in ("success", "failure"):
        r, _ = side_risk(new, np.array([th[side]]), side, "mass")
        assert check["side_risk"][side] == pytest.approx(float(r[0]), abs=1e-12)
        assert check["held"][side] == (float(r[0]) <= rule.alpha)
    assert check["promised_violation_at_most"] == pytest.approx(1 / 7)
    # an over-confident agent (shifted toward success) breaks the success side at the same thresholds
    bold = agent_runs(rng, 80, 4.0)
    broken = guarantee_check(bold, {**th, "success": 0.5})
    assert broken["held"]["success"] is False and broken["side_risk"]["success"] > rule.alpha
    tally = guarantee_tally([check, broken, None])
    assert tally["agents"] == 2 and tally["held"]["success"] == int(check["held"]["success"])
    assert tally["held_both"] == int(all(check["held"].values()))
    assert guarantee_check(new, {"success": 0.9, "failure": 0.9, "rule": "worst-case"}) is None
    assert guarantee_tally([None]) is None


def test_choose_thresholds_dispatches_and_refuses_unknown_rules():
    rng = np.random.default_rng(5)
    sets = {f"a{i}": agent_runs(rng, 60, s) for i, s in enumerate([-0.5, 0.0, 0.5])}

    class Cfg:
        taus, target_accuracy, constraint, confidence, min_halt_step = TAUS, 0.95, "recall", 0.9, 1
        risk_alpha, risk_delta, risk = 0.02, 0.15, "mass"
        threshold_rule = "agent-quantile"

    th = choose_thresholds(sets, Cfg)
    assert th["rule"] == "agent-quantile" and "guarantee" in th
    Cfg.threshold_rule = "worst-case"
    assert choose_thresholds(sets, Cfg)["rule"] == "worst-case"
    Cfg.threshold_rule = "bold"
    with pytest.raises(ValueError, match="threshold_rule"):
        choose_thresholds(sets, Cfg)
    with pytest.raises(ValueError, match="alpha"):
        AgentQuantileRule(taus=TAUS, alpha=0.0)
