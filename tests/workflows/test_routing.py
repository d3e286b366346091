"""Routing simulator: exact charges on a hand-computed example, the oracle bound, budget flags, and no label leakage."""

from __future__ import annotations

import numpy as np
import pytest

from earlyeval.config.catalog import load_catalog
from earlyeval.config.eval_config import EvalConfig
from earlyeval.config.prices import PriceError, run_cost
from earlyeval.core.trajectory import Step, Task, Trajectory
from earlyeval.evaluation.dataset import Dataset
from earlyeval.evaluation.fold_runner import FoldRunner
from earlyeval.features import Featurizer, PriorFamily, PriorTable, build_family
from earlyeval.features.base import RunContext
from earlyeval.tables.prefixes import prefix_table
from earlyeval.workflows.routing import ESCALATE, Pair, charge, on_predicted_failure, oracle
from earlyeval.workflows.routing_pair import pair_blind, routing_predictions
from earlyeval.workflows.routing_simulation import simulate_pair


def traj(
    run_id: str,
    agent: str,
    task: str,
    outcome: int,
    T: int,
    costs: list[float | None] | None = None,
    meta: dict | None = None,
    kinds: list[str] | None = None,
) -> Trajectory:
    steps = [
        Step(
            index=i,
            action=f"cmd {i}",
            kind=(kinds[i] if kinds else "other"),
            cost_usd=None if costs is None else costs[i],
        )
        for i in range(T)
    ]
    return Trajectory(run_id, agent, "swebench", task, steps, outcome, dict(meta or {}))


# ----------------------------------------------------------------- prices


def test_run_cost_sources_and_truncation():
    per = run_cost(traj("a", "c", "t", 0, 4, [0.1, 0.2, 0.3, 0.4]))
    assert (
        per.source == "per-step"
        and per.upto(2) == pytest.approx(0.3)
        and per.total == pytest.approx(1.0)
    )
    tot = run_cost(traj("b", "c", "t", 0, 5, meta={"instance_cost": 2.0}))
    assert (
        tot.source == "instance-total-pro-rata"
        and tot.upto(2) == pytest.approx(0.8)
        and tot.total == pytest.approx(2.0)
    )
    moat = run_cost(traj("m", "c", "t", 0, 2, meta={"total_cost": 0.5}))
    assert moat.upto(1) == pytest.approx(0.25)
    cat = run_cost(traj("d", "c", "t", 0, 2), {"usd_per_step": 0.25})
    assert cat.source == "catalog-usd-per-step" and cat.total == pytest.approx(0.5)
    filled = run_cost(traj("e", "c", "t", 0, 3, [None, 0.2, 0.4]))
    # the greeting charged the mean
    assert filled.source == "per-step-filled" and filled.total == pytest.approx(0.9)
    rem = run_cost(traj("g", "c", "t", 0, 3, [None, 0.2, 0.4], meta={"agent_cost_total": 0.6}))
    assert (
        rem.source == "per-step+remainder-of-total"
        and rem.upto(1) == pytest.approx(0.0)
        and rem.total == pytest.approx(0.6)
    )
    assert per.upto(99) == per.total and per.upto(0) == 0.0
    with pytest.raises(PriceError):
        run_cost(traj("f", "c", "t", 0, 2))


# --------------------------------------------------- hand-computed example


def hand_pair() -> Pair:
    """Three tasks; prices from per-step costs, instance totals (pro-rata) and the catalog."""
    cheap = [
        run_cost(traj("c1", "C", "t1", 0, 4, [0.10, 0.20, 0.30, 0.40])),
        run_cost(traj("c2", "C", "t2", 1, 5, meta={"instance_cost": 2.0})),
        run_cost(traj("c3", "C", "t3", 0, 4, meta={"instance_cost": 1.0})),
    ]
    strong = [
        run_cost(traj("s1", "S", "t1", 1, 2, [0.5, 0.5])),
        run_cost(traj("s2", "S", "t2", 1, 3, meta={"instance_cost": 3.0})),
        run_cost(traj("s3", "S", "t3", 0, 2), {"usd_per_step": 0.25}),
    ]
    p_fail = [
        np.array([0.2, 0.97, 0.99]),
        np.array([0.1, 0.1, 0.1, 0.1]),
        np.array([0.5, 0.5, 0.98]),
    ]
    return Pair(
        "C",
        "S",
        ["t1", "t2", "t3"],
        np.array([0, 1, 0]),
        np.array([1, 1, 0]),
        cheap,
        strong,
        p_fail,
        np.array([0.3, 0.6, 0.1]),
    )


def test_simulator_charges_exactly_the_real_runs():
    pair = hand_pair()
    out = simulate_pair(pair, tau_f=0.96, values_of_solve=())
    P = out["policies"]
    # t1 escalated after step 2: 0.10+0.20 + strong 1.0; t2 completes: 2.0; t3 escalated after step 3: 3/4 * 1.0 + 2 * 0.25
    assert P["escalate_on_predicted_failure"]["total_cost_usd"] == pytest.approx(1.30 + 2.0 + 1.25)
    assert P["escalate_on_predicted_failure"]["resolved"] == 2
    assert P["escalate_on_predicted_failure"]["mean_escalation_step"] == pytest.approx(2.5)
    assert P["stop_on_predicted_failure"]["total_cost_usd"] == pytest.approx(0.30 + 2.0 + 0.75)
    assert (
        P["stop_on_predicted_failure"]["resolved"] == 1
        and P["stop_on_predicted_failure"]["n_stopped"] == 2
    )
    assert P["always_cheap"]["total_cost_usd"] == pytest.approx(1.0 + 2.0 + 1.0)
    assert P["always_strong"]["total_cost_usd"] == pytest.approx(1.0 + 3.0 + 0.5)
    # oracle escalates t1 after its first step (0.10 + 1.0); with stop, t3 (both fail) is stopped after step 1 (0.25)
    assert P["oracle"]["total_cost_usd"] == pytest.approx(1.10 + 2.0 + 1.0)
    assert P["oracle_with_stop"]["total_cost_usd"] == pytest.approx(1.10 + 2.0 + 0.25)
    # tier: the same share as escalation (2 of 3), hardest by prior (t3, t1) start on strong
    assert P["tier_by_prior"]["total_cost_usd"] == pytest.approx(1.0 + 2.0 + 0.5)
    # gap: cheap 1/3 -> strong 2/3; escalation closes all of it for 0.55 USD extra
    e = P["escalate_on_predicted_failure"]
    assert e["gap_closed"] == pytest.approx(1.0)
    assert e["gap_closed_per_100usd"] == pytest.approx(100 / 0.55)
    # economic consistency: t1 needed escalation (escalated), t2 sufficed (left alone)
    assert e["economic_consistency"]["value"] == 1.0
    assert P["always_strong"]["economic_consistency"]["value"] == 0.0
    assert P["stop_on_predicted_failure"]["economic_consistency"]["value"] == 0.0
    # reference: a random 2 of 3 escalated after step 1 resolves 1/3 * 1/3 + 2/3 * 2/3 in expectation
    ref = out["references"]["random_escalation_same_share"]
    assert ref["expected_resolve_rate"] == pytest.approx(5 / 9)
    assert ref["expected_total_cost_usd"] == pytest.approx(
        4.0 / 3 + 2 / 3 * (0.10 + 0.4 + 0.25 + 4.5)
    )


def test_value_gate_stops_when_escalation_does_not_pay():
    pair = hand_pair()
    out = simulate_pair(pair, tau_f=0.96, values_of_solve=(1.0, 100.0))
    strong_cost = (1.0 + 3.0 + 0.5) / 3
    low, high = (
        out["policies"]["failure_escalate_if_value@1usd"],
        out["policies"]["failure_escalate_if_value@100usd"],
    )
    assert low["rule"]["strong_expected_cost_usd"] == pytest.approx(strong_cost)
    # 0.97*0.3*1 and 0.98*0.1*1 are below 1.5 USD: both stopped; at 100 USD both escalated
    assert (low["n_escalated"], low["n_stopped"]) == (0, 2)
    assert (high["n_escalated"], high["n_stopped"]) == (2, 0)
    # without a failure threshold every task pays at step 1 at 100 USD (t1: 0.2 * 0.3 * 100 = 6 > 1.5,
    # t2: 0.1 * 0.6 * 100 = 6, t3: 0.5 * 0.1 * 100 = 5); at 1 USD nothing pays
    trig = out["policies"]["escalate_when_value_positive@100usd"]
    assert (
        trig["n_escalated"] == 3 and trig["n_stopped"] == 0 and trig["mean_escalation_step"] == 1.0
    )
    assert trig["total_cost_usd"] == pytest.approx((0.10 + 1.0) + (0.4 + 3.0) + (0.25 + 0.5))
    assert out["policies"]["escalate_when_value_positive@1usd"]["n_escalated"] == 0


# ------------------------------------------------------ oracle upper bound


def random_pair(rng: np.random.Generator, n: int = 60) -> Pair:
    cheap, strong, pf = [], [], []
    for i in range(n):
        T = int(rng.integers(1, 15))
        cheap.append(run_cost(traj(f"c{i}", "C", f"t{i}", 0, T, list(rng.uniform(0, 0.2, T)))))
        Ts = int(rng.integers(1, 15))
        strong.append(
            run_cost(
                traj(f"s{i}", "S", f"t{i}", 0, Ts, meta={"instance_cost": float(rng.uniform(0, 3))})
            )
        )
        pf.append(rng.uniform(0, 1, max(T - 1, 0)))
    yc = (rng.uniform(size=n) < 0.3).astype(int)
    ys = (rng.uniform(size=n) < 0.5).astype(int)
    return Pair(
        "C", "S", [f"t{i}" for i in range(n)], yc, ys, cheap, strong, pf, rng.uniform(0, 1, n)
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_oracle_is_an_upper_bound(seed):
    pair = random_pair(np.random.default_rng(seed))
    out = simulate_pair(pair, tau_f=0.7, values_of_solve=(0.5, 5.0))
    best = out["policies"]["oracle"]["resolve_rate"]
    front = np.asarray(out["oracle_frontier"])
    points = [(m["total_cost_usd"], m["resolve_rate"]) for m in out["policies"].values()]
    points += [
        (p["total_cost_usd"], p["resolve_rate"]) for pts in out["sweeps"].values() for p in pts
    ]
    for cost, rr in points:
        assert rr <= best + 1e-12
        k = np.searchsorted(front[:, 0], cost + 1e-6, side="right") - 1
        assert rr <= front[max(k, 0), 1] + 1e-12
    assert out["policies"]["oracle"]["economic_consistency"]["value"] == 1.0


# ------------------------------------------------------------------ budget


def test_budget_overspend_is_flagged_never_silent():
    pair = hand_pair()
    out = simulate_pair(pair, tau_f=0.96, budget_usd=3.2, values_of_solve=())
    P = out["policies"]
    esc = P["escalate_on_predicted_failure"]["budget"]
    assert esc["over_budget"] is True and esc["overspend_usd"] == pytest.approx(4.55 - 3.2)
    assert esc["spend_if_stopped_at_budget_usd"] == pytest.approx(3.2)
    assert (
        esc["resolve_rate_stopping_at_budget"] <= P["escalate_on_predicted_failure"]["resolve_rate"]
    )
    assert P["stop_on_predicted_failure"]["budget"]["over_budget"] is False  # 3.05 <= 3.2
    assert P["stop_on_predicted_failure"]["budget"]["overspend_usd"] == 0.0
    assert set(out["over_budget_policies"]) == {
        k for k, m in P.items() if m["total_cost_usd"] > 3.2
    }
    assert "escalate_on_predicted_failure" in out["over_budget_policies"]
    assert (
        simulate_pair(pair, 0.96, values_of_solve=())["policies"]["always_cheap"]["budget"][
            "over_budget"
        ]
        is None
    )


def test_budget_stop_counts_only_tasks_finished_within_budget():
    pair = hand_pair()
    # a budget below every task's cost resolves nothing
    out = simulate_pair(pair, tau_f=0.96, budget_usd=0.5, values_of_solve=())
    assert all(
        m["budget"]["resolve_rate_stopping_at_budget"] == 0.0
        for m in out["policies"].values()
        if m["budget"]["over_budget"]
    )


# ------------------------------------------------------------ no leakage

AGENTS = ["A", "B", "C", "D", "E"]


def synthetic_dataset(n_tasks: int = 30, T: int = 12) -> Dataset:
    """Five agents on the same tasks; success correlates with editing and testing, so the model has signal."""
    rng = np.random.default_rng(0)
    trajs, tasks = [], {}
    for j in range(n_tasks):
        tasks[f"t{j}"] = Task(f"t{j}", prompt=f"fix bug {j}")
    for a in AGENTS:
        for j in range(n_tasks):
            y = int(rng.uniform() < 0.4)
            kinds = list(
                rng.choice(["edit", "test", "view"] if y else ["search", "view", "other"], T)
            )
            trajs.append(
                traj(
                    f"{a}/t{j}",
                    a,
                    f"t{j}",
                    y,
                    T,
                    list(rng.uniform(0.01, 0.05, T)),
                    {"split": "lite"},
                    kinds,
                )
            )
    cat = load_catalog("swebench")
    ctxs = [RunContext.of(t, tasks[t.task_id]) for t in trajs]
    fz = Featurizer([build_family("behaviour")])
    ds = Dataset("swebench", cat, trajs, tasks, ctxs, prefix_table(trajs, min_steps=2))
    ds.blocks["behaviour"] = fz.prefix_matrix(trajs, ctxs)
    ds.block_names["behaviour"] = fz.names
    return ds


def test_no_routed_agent_label_reaches_the_router(monkeypatch):
    ds = synthetic_dataset()
    cfg = EvalConfig(
        families=["behaviour"],
        min_steps=5,
        holdout_min_runs=10,
        n_jobs=1,
        lgbm_params={"n_estimators": 15, "num_leaves": 4, "min_child_samples": 5},
    )
    runner = FoldRunner(ds, cfg)
    seen: list[tuple[frozenset, list[str]]] = []
    fit = runner.fit

    def spy(exclude: frozenset):
        f = fit(exclude)
        seen.append((exclude, list(f.train_agents)))
        return f

    monkeypatch.setattr(runner, "fit", spy)
    rs, th, info = routing_predictions(runner, "A", "B")
    assert seen, "the router fitted no model"
    for exclude, trained in seen:
        assert {"A", "B"} <= set(exclude)
        assert not {"A", "B"} & set(trained)
    assert set(info["trained_on"]) == {"C", "D", "E"}
    assert sorted(th["selected_on"]) == ["C", "D", "E"]  # thresholds on inner agents only
    assert set(rs.agents) == {"A"}
    assert th["success"] > 1.0  # routing never halts a predicted success


def test_pair_prior_excludes_both_routed_agents_public_results():
    table = PriorTable(
        submissions={
            "subA": {"split": "lite", "text": "agenta"},
            "subB": {"split": "lite", "text": "agentb"},
            "subX": {"split": "lite", "text": "other"},
            "subY": {"split": "lite", "text": "another"},
        },
        resolved_by={"t0": ["subA", "subB", "subX"]},
    )
    tasks = {"t0": Task("t0")}
    trajs = [
        traj("A/t0", "A", "t0", 1, 3, meta={"split": "lite", "public_submissions": ["subA"]}),
        traj("B/t0", "B", "t0", 1, 3, meta={"split": "lite", "public_submissions": ["subB"]}),
        traj("C/t0", "C", "t0", 0, 3, meta={"split": "lite"}),
    ]
    ctxs = [RunContext.of(t, tasks["t0"]) for t in trajs]
    fam = PriorFamily(table)
    fz = Featurizer([fam])
    ds = Dataset(
        "swebench",
        load_catalog("swebench"),
        trajs,
        tasks,
        ctxs,
        prefix_table(trajs, 2),
        blocks={"prior": fz.prefix_matrix(trajs, ctxs)},
        block_names={"prior": fz.names},
        prior_table=table,
    )
    # own-agent exclusion only: A's prior still counts B's success (2 of 3)
    assert fam.start(ctxs[0])[0] == pytest.approx(2 / 3)
    blind = pair_blind(ds, {"A", "B"})
    for c in blind.contexts:  # every run, routed or not: only subX, subY remain (1 of 2)
        assert fam.start(c)[0] == pytest.approx(1 / 2)
    assert np.allclose(blind.blocks["prior"][:, 0], 0.5)


def test_escalation_route_uses_the_halting_rule():
    pair = hand_pair()
    r = on_predicted_failure(pair, 0.96, ESCALATE)
    assert list(r.action) == [ESCALATE, 0, ESCALATE] and list(r.t) == [2, 5, 3]
    cost, res = charge(pair, oracle(pair))
    assert list(res) == [1, 1, 0]
