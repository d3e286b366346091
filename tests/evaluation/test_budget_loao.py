"""Budget awareness: targets, CQR, leakage, determinism (small synthetic data, fast)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _budget_data import budget_cfgs, budget_runs

from earlyeval.config.budget_config import ALPHAS, SMALL
from earlyeval.core.trajectory import Action, Step, Trajectory
from earlyeval.evaluation.budget_loao import run_budget
from earlyeval.evaluation.dataset import load_dataset
from earlyeval.evaluation.fold_runner import FoldRunner
from earlyeval.fitting.budget_conformal import BudgetEstimator, CrossConformalQuantiles
from earlyeval.fitting.budget_quantiles import QuantileRegressor, conformal_quantile
from earlyeval.fitting.budget_targets import dim_targets, run_usage
from earlyeval.fitting.metrics import interval_coverage, weighted_quantile
from earlyeval.model.cqr import corrected_quantiles, fix_crossing, quantile_cdf
from earlyeval.report.budget import budget_report


@pytest.fixture(scope="module")
def ds():
    return load_dataset("tau2", ["behaviour"], trajs=budget_runs(), tasks={}, progress=False)


@pytest.fixture(scope="module")
def audited(ds):
    """One run with every fit, calibration and outcome fit recorded next to the group held out at the time."""
    cfg, bcfg = budget_cfgs()
    log: list[tuple[str, str, set]] = []
    current = {"group": None}
    mp = pytest.MonkeyPatch()
    orig_fit, orig_cal, orig_ofit = (
        QuantileRegressor.fit,
        CrossConformalQuantiles.calibrate,
        FoldRunner.fit,
    )

    def fit(self, X, y, *, sample_weight=None, groups=None, feature_names=None):
        log.append((current["group"], "quantile_fit", set(groups.tolist())))
        return orig_fit(
            self, X, y, sample_weight=sample_weight, groups=groups, feature_names=feature_names
        )

    def calibrate(self, z, score_weight, fold, agents, units, calibration_units=None):
        out = orig_cal(self, z, score_weight, fold, agents, units, calibration_units)
        log.append((current["group"], "calibration", set(self.calibration_agents_)))
        log.append(
            (
                current["group"],
                "calibration_units",
                set(self.calibration_units_[self.calibration_mask_].tolist()),
            )
        )
        return out

    def ofit(self, exclude):
        log.append((current["group"], "outcome_fit_excludes", set(exclude)))
        return orig_ofit(self, exclude)

    def progress(msg: str) -> None:
        if msg.startswith("budget: held out "):
            current["group"] = msg[len("budget: held out ") :].rsplit(" (", 1)[0]

    mp.setattr(QuantileRegressor, "fit", fit)
    mp.setattr(CrossConformalQuantiles, "calibrate", calibrate)
    mp.setattr(FoldRunner, "fit", ofit)
    try:
        run = run_budget(ds, cfg, bcfg, progress)
    finally:
        mp.undo()
    return run, log


# ------------------------------------------------------------------ targets


def test_unknown_usage_is_excluded_not_zero(ds):
    gamma = [t for t in ds.trajs if t.agent == "gamma"]
    holed = next(t for t in gamma if any(s.output_tokens is None for s in t.steps))
    assert run_usage(holed, "output_tokens") is None
    some = Trajectory(
        "z",
        "a",
        "b",
        "t",
        [Step(0, "ls", "view", output_tokens=0), Step(1, "ls", "view", output_tokens=7)],
        1,
    )
    # a real 0 next to real counts stays 0
    assert run_usage(some, "output_tokens").tolist() == [
        0.0,
        7.0,
    ]
    never = Trajectory(
        "n",
        "a",
        "b",
        "t",
        [Step(0, "ls", "view", output_tokens=0), Step(1, "ls", "view", output_tokens=0)],
        1,
    )
    # a counter that never counted is unknown, not free
    assert run_usage(never, "output_tokens") is None
    tg = dim_targets(ds, "output_tokens")
    i = ds.trajs.index(holed)
    assert not tg.run_known[i] and np.isnan(tg.totals[i])
    rows = np.flatnonzero(ds.prefixes["run"].to_numpy() == i)
    assert np.all(np.isnan(tg.remaining[rows])) and not tg.row_known[rows].any()
    # delta has no usage at all: every run excluded; steps always known
    delta = [k for k, t in enumerate(ds.trajs) if t.agent == "delta"]
    assert not tg.run_known[delta].any()
    assert dim_targets(ds, "steps").run_known.all()
    # known runs: remaining + spent = total on every prefix
    known_rows = np.flatnonzero(tg.row_known)
    r = ds.prefixes["run"].to_numpy()[known_rows]
    assert np.allclose(tg.spent[known_rows] + tg.remaining[known_rows], tg.totals[r])


def test_unknown_run_never_reaches_a_fit_or_a_score(audited, ds):
    run, _ = audited
    R = run.dims["output_tokens"]
    holed = [k for k, t in enumerate(ds.trajs) if not run.targets["output_tokens"].run_known[k]]
    rows = np.isin(ds.prefixes["run"].to_numpy(), holed)
    assert np.all(R.outer[rows] == -1)  # never predicted, never scored in this dimension
    blk = budget_report(run)["dimensions"]["output_tokens"]
    assert blk["runs_excluded_unknown"]["delta"] == 28 and blk["runs_excluded_unknown"]["gamma"] > 0
    assert "delta" not in blk["agents"]


def test_free_opening_turn_only_for_an_unmetered_greeting():
    greet = Step(0, "Hi! How can I help you today?", "other")
    call = Step(0, "get_user {}", "view", actions=[Action("get_user", "{}", "view")])
    rest = [Step(1, "ok", "other", input_tokens=10, output_tokens=5, cost_usd=0.01)]
    t1 = Trajectory("a", "a", "tau2", "t", [greet] + rest, 1)
    t2 = Trajectory("b", "a", "tau2", "t", [call] + rest, 1)
    assert run_usage(t1, "output_tokens", free_opening=False) is None
    assert run_usage(t1, "output_tokens", free_opening=True).tolist() == [0.0, 5.0]
    assert run_usage(t2, "output_tokens", free_opening=True) is None  # a tool call is not free


# ------------------------------------------------------------------ metrics


def test_coverage_hand_computed():
    y = np.array([1.0, 5.0, 3.0, 10.0])
    lo = np.array([0.0, 6.0, 3.0, 2.0])
    hi = np.array([2.0, 7.0, 4.0, 9.0])
    # hits: 1 in [0,2] yes; 5 in [6,7] no; 3 in [3,4] yes (closed); 10 in [2,9] no
    assert interval_coverage(y, lo, hi) == 0.5
    assert interval_coverage(y, lo, hi, np.array([1.0, 1.0, 2.0, 0.0])) == 0.75
    assert weighted_quantile([0.1, 0.2, 0.3, 0.4], 0.5) == 0.2
    # split-conformal correction: level 0.5 * (1 + 1/4) = 0.625 -> third score
    assert conformal_quantile(np.array([0.4, 0.1, 0.3, 0.2]), np.ones(4), 0.5, 4) == 0.3


def test_quantile_crossing_is_fixed():
    q = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    assert fix_crossing(q).tolist() == [[1.0, 2.0, 3.0], [0.0, 4.0, 5.0]]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = X[:, 0] + rng.normal(size=300)
    m = QuantileRegressor(
        alphas=(0.9, 0.1, 0.5), lgbm_params={"n_estimators": 10, "min_child_samples": 5}
    ).fit(X, y)
    raw, fixed = m.predict_raw(X), m.predict(X)
    assert (raw[:, 0] > raw[:, 1]).any()  # the boosters, in this order, do cross
    assert np.all(np.diff(fixed, axis=1) >= 0)
    # a negative CQR correction can push lo above hi: re-sorted too
    qq = np.array([[0.0, 1.0, 2.0, 3.0, 4.0]])
    out = corrected_quantiles(qq, {0.8: -5.0, 0.9: -5.0}, ALPHAS)
    assert np.all(np.diff(out, axis=1) >= 0)


def test_quantile_cdf_hits_its_levels():
    pts = np.array([[1.0, 2.0, 3.0, 4.0, 5.0]])
    p = quantile_cdf(np.repeat(pts, 5, 0), ALPHAS, pts[0])
    assert np.allclose(p, ALPHAS)
    assert quantile_cdf(pts, ALPHAS, np.array([-100.0]))[0] == 0.0
    assert quantile_cdf(pts, ALPHAS, np.array([100.0]))[0] == 1.0


# ----------------------------------------------------------------- leakage


def test_held_out_agent_never_seen_by_fit_calibration_or_threshold(audited):
    run, log = audited
    agents_of = {g.name: set(g.agents) for g in run.groups}
    seen = {kind for _, kind, _ in log}
    assert {"quantile_fit", "calibration", "outcome_fit_excludes"} <= seen
    assert "calibration_units" in seen
    for group, kind, agents in log:
        held = agents_of[group]
        if kind == "outcome_fit_excludes":
            assert held <= agents, (group, agents)
        elif (
            kind == "calibration_units"
        ):  # the exchangeable units are agent groups, never the held-out one
            assert group not in agents and agents <= set(agents_of), (group, agents)
        else:
            assert not (held & agents), (group, kind, agents)
    for d, R in run.dims.items():
        assert R.folds, d
        for g, f in R.folds.items():
            held = agents_of[g]
            for fitted in f["quantile_models_fitted_on"]:
                assert not held & set(fitted)
            assert not held & set(f["conformity_scores_from"])
            assert f["calibration"] == "agent"
            for lv, per_unit in f[
                "unit_corrections_z"
            ].items():  # the groups whose corrections the rule ranked
                assert g not in per_unit and len(per_unit) >= 2, (d, g, per_unit)
                ranked = sorted(per_unit.values())
                assert (
                    f["corrections_z"][lv]
                    == ranked[int(np.ceil(0.5 * (len(ranked) + 1) - 1e-9)) - 1]
                )
            sel = (
                set().union(*[agents_of[x] for x in f["thresholds_selected_on"]])
                if f["thresholds_selected_on"]
                else set()
            )
            assert not held & sel
            assert held <= set(f["p_success_fitted_without"]["held_out"])
            for ex in f["p_success_fitted_without"]["inner"]:
                assert held <= set(ex)


def test_held_out_budgets_never_reach_its_own_intervals_fit_or_calibration(audited):
    """Tripling every token count of the held-out agent changes nothing about the models and corrections its
    intervals come from (the fold models, the per-group corrections, the rank taken, the unit); the same change
    does move another held-out agent's calibration, where alpha is a calibration agent (positive control)."""
    run, _ = audited
    trajs = budget_runs()
    for t in trajs:
        if t.agent == "alpha":
            for st in t.steps:
                st.input_tokens = None if st.input_tokens is None else 3 * st.input_tokens
    ds2 = load_dataset("tau2", ["behaviour"], trajs=trajs, tasks={}, progress=False)
    cfg, bcfg = budget_cfgs()
    run2 = run_budget(ds2, cfg, bcfg, only=["alpha", "beta"])
    before, after = run.dims["input_tokens"].estimators, run2.dims["input_tokens"].estimators
    assert before["alpha"].model.get_state() == after["alpha"].model.get_state()
    assert before["alpha"].unit == after["alpha"].unit
    assert (
        before["beta"].model.get_state()["unit_corrections"]
        != after["beta"].model.get_state()["unit_corrections"]
    )


def test_small_agents_are_held_out_together(audited):
    run, _ = audited
    small = [g for g in run.groups if g.small]
    assert len(small) == 1 and set(small[0].agents) == {"tiny1", "tiny2"}


# ----------------------------------------------------------- determinism


def test_same_seed_same_numbers(ds, audited):
    """A second run with the same seed (fresh FoldRunner, two worker threads instead of one) gives the same report."""
    cfg, bcfg = budget_cfgs()
    bcfg = bcfg.replace(n_workers=2)
    a = budget_report(audited[0])
    b = budget_report(run_budget(ds, cfg, bcfg))
    for r in (a, b):
        r.pop("seconds")
        r["config"]["budget"].pop("n_workers")
    assert json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def test_report_has_bagen_metrics_and_sane_values(audited):
    run, _ = audited
    rep = budget_report(run)
    json.dumps(rep, default=float)
    P = rep["dimensions"]["steps"]["pooled"]
    for k in ("macro_f1_first_turn", "macro_f1_all_turns", "fail_f1_all_turns"):
        assert k in P["feasibility"]["model"]
    for m in ("model", "linear"):
        for lv in ("0.8", "0.9"):
            c = P["coverage"][m][lv]
            assert c is None or 0.0 <= c <= 1.0
    assert len(P["late_recognition"]["model"]["bins"]) == 11
    es = P["early_stop"]["model"]
    assert 0.0 <= es["success_rate_cost_pp"] <= 100.0
    assert {"model", "linear", "step_cap"} <= set(P["early_stop"])
    # cost is known for alpha, beta and the small agents only: gamma/delta are never held out in that dimension
    assert set(rep["dimensions"]["cost_usd"]["holdout_groups"]) == {"alpha", "beta", SMALL}


def test_estimator_round_trips_through_json(audited, ds):
    run, _ = audited
    R = run.dims["steps"]
    name, est = next(iter(R.estimators.items()))
    state = json.loads(json.dumps(est.get_state()))
    again = BudgetEstimator.from_state(state)
    rows = np.flatnonzero(R.outer >= 0)[:50]
    fams = ["behaviour"]
    X = np.hstack([ds.blocks[f][rows] for f in fams])
    t = ds.prefixes["t"].to_numpy()[rows].astype(float)
    spent = run.targets["steps"].spent[rows]
    a, b = est.intervals(X, spent, t), again.intervals(X, spent, t)
    for k in a:
        assert np.allclose(a[k], b[k])
    assert np.allclose(est.prob_within(X, spent, t), again.prob_within(X, spent, t))


def test_calibration_folds_keep_a_scaffold_together_and_fall_back_per_dimension():
    """Under inner_holdout "scaffold" every calibration fold is one scaffold (its groups together, a small group
    joined to the scaffold one of its agents shares); a dimension logged by one scaffold only is dealt by agent."""
    from types import SimpleNamespace

    from earlyeval.evaluation.budget_calibration import calibration_folds, dim_folds
    from earlyeval.evaluation.dataset import HoldoutUnit

    groups = [
        HoldoutUnit("m1", ["m1"]),
        HoldoutUnit("m2", ["m2"]),
        HoldoutUnit("m3", ["m3"]),
        HoldoutUnit("g", ["g"]),
        HoldoutUnit("c", ["c"]),
        HoldoutUnit(SMALL, ["s1", "s2"], small=True),
    ]
    scaffold = {
        "m1": "moat",
        "m2": "moat",
        "m3": "moat",
        "g": "mini",
        "c": "coder",
        "s1": "coder",
        "s2": "oh",
    }
    dims_of = {
        "m1": {"steps", "cost_usd"},
        "m2": {"steps", "cost_usd"},
        "m3": {"steps", "cost_usd"},
        "g": {"steps"},
        "c": {"steps"},
        SMALL: {"steps"},
    }
    _, bcfg = budget_cfgs()
    folds = calibration_folds(groups, dims_of, scaffold, bcfg)
    names = sorted(sorted(g.name for g in f) for f in folds)
    assert names == [["c", SMALL], ["g"], ["m1", "m2", "m3"]]
    su = SimpleNamespace(dims_of=dims_of)
    assert dim_folds(su, folds, "steps", bcfg) is folds
    # only the Moatless versions log cost: one scaffold, dealt by agent
    cost = dim_folds(su, folds, "cost_usd", bcfg)
    assert sorted(g.name for f in cost for g in f) == ["m1", "m2", "m3"] and len(cost) == 2
    # without scaffolds (inner_holdout "agent"): max_folds agent folds, as before
    assert len(calibration_folds(groups, dims_of, None, bcfg)) == bcfg.max_folds
