"""The shipped budget model (budget.shipped.fit_shipped) and its live twin in the Monitor (budget.live.LiveBudget).

Oracle: on every prefix of synthetic runs, ``Decision.budget`` equals ``evaluation.budget_shipped.predict_prefixes`` (the
batch code of the budget package) -- the boosters' feature rows bit for bit, intervals and probabilities to 1e-9.
"""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pytest
from _bounds import assert_same_number
from _budget_data import budget_cfgs, budget_runs

from earlyeval.config.budget_config import SMALL, BudgetConfig
from earlyeval.core.errors import ModelDirError
from earlyeval.core.trajectory import Action, Step, Trajectory
from earlyeval.evaluation.budget_calibration import agent_folds, choose_budget, holdout_groups
from earlyeval.evaluation.budget_loao import run_budget
from earlyeval.evaluation.budget_shipped import fit_shipped, predict_prefixes
from earlyeval.evaluation.dataset import load_dataset
from earlyeval.evaluation.fold_runner import FoldRunner
from earlyeval.features import Featurizer, RunContext, build_family
from earlyeval.fitting.budget_targets import dim_targets
from earlyeval.live.monitor import Monitor
from earlyeval.live.remaining_budget import LiveBudget, _interp
from earlyeval.model.fastpredict import StackedPredictor
from earlyeval.model.modeldir import ModelBundle, load_model_dir, read_manifest, save_model_dir
from earlyeval.model.spend import DIMENSIONS, SHIPPED_FORMAT, SpendTracker, spend_features

TH = {"success": 0.99, "failure": 0.99, "min_halt_step": 2}


@pytest.fixture(scope="module")
def ds():
    return load_dataset("tau2", ["behaviour"], trajs=budget_runs(), tasks={}, progress=False)


@pytest.fixture(scope="module")
def shipped(ds):
    cfg, bcfg = budget_cfgs()
    cfg = cfg.replace(min_halt_step=TH["min_halt_step"])
    return fit_shipped(ds, cfg, bcfg)


@pytest.fixture(scope="module")
def model_dir(ds, shipped, tmp_path_factory):
    cfg, _ = budget_cfgs()
    full = FoldRunner(ds, cfg, None).fit(frozenset())
    bundle = ModelBundle(
        Featurizer([build_family("behaviour")]),
        full.model,
        dict(TH),
        training={"benchmarks": ["synth"]},
        extra={"budget": shipped},
    )
    return save_model_dir(bundle, tmp_path_factory.mktemp("budget") / "m")


def _save_variant(model_dir: Path, dest: Path, edit) -> Path:
    b = load_model_dir(model_dir)
    spec = copy.deepcopy(b.extra["budget"])
    edit(spec)
    return save_model_dir(
        ModelBundle(b.featurizer, b.model, b.thresholds, b.training, {"budget": spec}), dest
    )


def _stream(mon: Monitor, traj: Trajectory, ctx: RunContext):
    mon.start_context(ctx, traj.run_id)
    out = []
    for s in traj.steps:
        d = mon.observe(s)
        rows = (
            {
                dim: mon.loaded.budget_model.design_row(mon.run.spend, mon.run.last_features, dim)
                for dim in mon.loaded.budget_model.dims
                if d.budget and d.budget.get(dim) is not None
            }
            if mon.loaded.budget_model is not None
            else {}
        )
        out.append((d, rows))
    return out


# ------------------------------------------------------------------ the shipped fit


def test_shipped_is_budget_py_with_every_agent_calibrating(ds, shipped):
    cfg, bcfg = budget_cfgs()
    run = run_budget(ds, cfg, bcfg)
    # the dimensions the LOAO report evaluates, no other
    assert list(shipped["dimensions"]) == list(run.dims)
    json.dumps(shipped)  # JSON-able as is (boosters as LightGBM text)
    groups = holdout_groups(ds, cfg)
    assert shipped["groups"] == [
        {"name": g.name, "agents": g.agents, "small": g.small} for g in groups
    ]
    targets = {d: dim_targets(ds, d) for d in DIMENSIONS}
    run_agent = np.asarray([t.agent for t in ds.trajs])
    dims_of = {
        g.name: {d for d in DIMENSIONS if targets[d].run_known[np.isin(run_agent, g.agents)].any()}
        for g in groups
    }
    folds = agent_folds(groups, min(bcfg.max_folds, len(groups)), dims_of)
    assert shipped["folds"] == [[g.name for g in f] for f in folds]
    for d, blk in shipped["dimensions"].items():
        tg = targets[d]
        known_agents = sorted({t.agent for i, t in enumerate(ds.trajs) if tg.run_known[i]})
        assert (
            blk["estimator"]["budget"] == choose_budget(tg, bcfg.budget_quantile) == run.budgets[d]
        )
        # every agent with known usage calibrates
        assert blk["conformity_scores_from"] == known_agents
        fold_agents = [
            {a for gname in f for g in groups if g.name == gname for a in g.agents}
            for f in shipped["folds"]
        ]
        for fitted, f_agents in zip(blk["quantile_models_fitted_on"], fold_agents):
            assert not set(fitted) & f_agents  # fold model k never saw fold k
        # tau on the large calibration agents only
        assert SMALL not in blk["tau_selection"]["selected_on"]
        assert blk["tau"] in bcfg.taus
    assert shipped["min_halt_step"] == TH["min_halt_step"]


def test_shipped_is_deterministic(ds, shipped):
    cfg, bcfg = budget_cfgs()
    cfg = cfg.replace(min_halt_step=TH["min_halt_step"])
    bcfg = bcfg.replace(n_workers=1)  # the fixture fitted the dimensions on two threads
    again = fit_shipped(ds, cfg, bcfg)
    a, b = dict(again), dict(shipped)
    assert "seconds" not in a and "seconds" not in b  # no wall-clock value in a hashed model file
    for x in (a, b):
        x["config"] = {k: v for k, v in x["config"].items() if k != "n_workers"}
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


# ------------------------------------------------------------------ streaming spend


def test_spend_tracker_equals_dim_targets_on_every_prefix(ds):
    prow = ds.prefixes["run"].to_numpy()
    for d in DIMENSIONS:
        tg = dim_targets(ds, d)
        for r, traj in enumerate(ds.trajs):
            st = SpendTracker((d,))
            rows = np.flatnonzero(prow == r)
            for k, step in enumerate(traj.steps[:-1]):
                st.update(step)
                row = rows[k]
                if tg.row_known[row]:
                    assert st.known(0)
                    assert st.spent(0) == tg.spent[row] and st.last(0) == tg.last[row]  # bitwise
                so_far = [getattr(s, d) for s in traj.steps[: k + 1]] if d != "steps" else [1]
                if any(v is None for v in so_far):
                    assert not st.known(0)  # unknown stays unknown: never 0


def test_spend_tracker_free_opening_and_silent_counter():
    greet = Step(0, "Hi! How can I help you today?", "other")
    rest = [
        Step(k, "ok", "other", input_tokens=10 * k, output_tokens=5, cost_usd=0.01)
        for k in range(1, 4)
    ]
    st = SpendTracker(("steps", "output_tokens", "cost_usd"), free_opening=True)
    st.update(greet)
    # the unmetered greeting counts 0
    assert st.known(1) and st.spent(1) == 0.0 and st.last(1) == 0.0
    for s in rest:
        st.update(s)
    assert st.spent(1) == 15.0 and st.spent(2) == pytest.approx(0.03) and st.spent(0) == 4.0
    st2 = SpendTracker(("output_tokens",), free_opening=False)
    st2.update(greet)
    assert not st2.known(0)  # without the tau2 rule the greeting's missing usage is unknown
    silent = SpendTracker(("output_tokens",))
    silent.update(Step(0, "a", "other", output_tokens=0))
    # a counter that has only said 0 is not trusted yet (run_usage drops all-zero runs)
    assert not silent.known(0)
    silent.update(Step(1, "b", "other", output_tokens=7))
    assert silent.known(0) and silent.spent(0) == 7.0


def test_spend_features_one_implementation():
    rng = np.random.default_rng(0)
    spent, last = rng.uniform(0, 1e5, 50), rng.uniform(0, 1e4, 50)
    t = rng.integers(1, 80, 50).astype(float)
    X = spend_features(spent, last, t, 123.0)
    for i in (0, 7, 49):  # one row at a time (the streaming call) gives the same float32 values
        assert np.array_equal(
            spend_features(spent[i : i + 1], last[i : i + 1], float(t[i]), np.array([123.0])),
            X[i : i + 1],
        )


# ------------------------------------------------------------------ Monitor == batch


def test_monitor_budget_equals_batch_on_every_prefix(ds, shipped, model_dir):
    mon = Monitor.load(model_dir, budget=True)
    assert mon.loaded.budget_model is not None and set(mon.loaded.budget_model.dims) == set(
        shipped["dimensions"]
    )
    assert mon.loaded.budget_model.predictor_kind == "stacked"
    X = mon.featurizer.prefix_matrix(ds.trajs, ds.contexts)
    ps = mon.bundle.model.predict_success(X)
    ref = predict_prefixes(shipped, ds, ps, ["behaviour"])
    prow = ds.prefixes["run"].to_numpy()
    n_cmp = 0
    for r, (traj, ctx) in enumerate(zip(ds.trajs, ds.contexts)):
        rows = np.flatnonzero(prow == r)
        for k, (d, design) in enumerate(_stream(mon, traj, ctx)[:-1]):
            row = rows[k]
            assert d.p_success == pytest.approx(ps[row], abs=1e-9)
            for dim, res in ref.items():
                live = d.budget[dim]
                if np.isnan(res["p_feasible"][row]):
                    so_far = (
                        [getattr(s, dim) for s in traj.steps[: k + 1]] if dim != "steps" else [1]
                    )
                    if any(v is None for v in so_far):
                        assert live is None, (traj.run_id, k, dim)
                    continue
                assert live is not None, (traj.run_id, k, dim)
                # the boosters' input, bit for bit
                assert np.array_equal(design[dim], res["X"][row], equal_nan=True)
                for lv in ("0.8", "0.9"):
                    got = live["remaining"][lv]
                    assert got["low"] == pytest.approx(res[f"lo_{lv}"][row], rel=1e-9, abs=1e-12)
                    assert got["high"] == pytest.approx(res[f"hi_{lv}"][row], rel=1e-9, abs=1e-12)
                    assert got["median"] == pytest.approx(res["median"][row], rel=1e-9, abs=1e-12)
                assert live["spent"] == res["spent"][row]
                assert live["p_within_budget"] == pytest.approx(
                    res["p_within_budget"][row], abs=1e-9
                )
                assert live["p_feasible"] == pytest.approx(res["p_feasible"][row], abs=1e-9)
                blk = shipped["dimensions"][dim]
                assert live["budget"] == blk["estimator"]["budget"] and live["tau"] == blk["tau"]
                assert live["impossible"] == (
                    k + 1 >= TH["min_halt_step"] and live["p_feasible"] < blk["tau"]
                )
                n_cmp += 1
    assert n_cmp > 1000


def test_unknown_usage_is_none_never_zero(ds, model_dir):
    mon = Monitor.load(model_dir, budget=True)
    delta = next(i for i, t in enumerate(ds.trajs) if t.agent == "delta")  # no token counts at all
    for d, _ in _stream(mon, ds.trajs[delta], ds.contexts[delta]):
        assert d.budget["steps"] is not None
        for dim in mon.loaded.budget_model.dims:
            if dim != "steps":
                assert d.budget[dim] is None
    holed = next(
        t for t in ds.trajs if t.agent == "gamma" and any(s.output_tokens is None for s in t.steps)
    )
    hole = next(k for k, s in enumerate(holed.steps) if s.output_tokens is None)
    res = _stream(mon, holed, RunContext.of(holed, None))
    assert all(d.budget["output_tokens"] is not None for d, _ in res[:hole])
    assert all(d.budget["output_tokens"] is None for d, _ in res[hole:])


def test_budget_subset_and_spawn(ds, model_dir):
    default = Monitor.load(model_dir)  # steps only unless asked: the latency target holds
    assert default.loaded.budget_model.dims == ("steps",)
    assert set(Monitor.load(model_dir, budget=True).loaded.budget_model.dims) == {
        "steps",
        "output_tokens",
        "input_tokens",
        "cost_usd",
    }
    mon = Monitor.load(model_dir, budget=["steps"])
    d = mon.spawn()
    d.start_context(ds.contexts[0], "r")
    dec = d.observe(ds.trajs[0].steps[0])
    assert list(dec.budget) == ["steps"]
    with pytest.raises(ValueError):
        Monitor.load(model_dir, budget=["tokens_of_doom"])
    off = Monitor.load(model_dir, budget=False)
    off.start_context(ds.contexts[0], "r")
    assert off.observe(ds.trajs[0].steps[0]).budget is None


# ------------------------------------------------------------------ halting, fail-open, model dir


def test_halt_on_impossible_is_off_by_default_and_says_its_rule(ds, model_dir, tmp_path):
    def all_impossible(spec):
        for blk in spec["dimensions"].values():
            blk["tau"] = 1.01  # P(feasible) < tau at every prefix

    mdir = _save_variant(model_dir, tmp_path / "strict", all_impossible)
    plain, default, on = (
        Monitor.load(model_dir),
        Monitor.load(mdir),
        Monitor.load(mdir, halt_on_impossible=True),
    )
    # a run the outcome rule does not halt early, so that the budget rule is the one that halts
    traj = next(
        t
        for t in ds.trajs
        if len(t.steps) >= 5
        and not any(d.halt for d, _ in _stream(plain, t, RunContext.of(t, None))[:3])
    )
    ctx = RunContext.of(traj, None)
    for a, b in zip(_stream(plain, traj, ctx), _stream(default, traj, ctx)):
        # flags only, no halt
        assert (a[0].halt, a[0].outcome, a[0].reason) == (
            b[0].halt,
            b[0].outcome,
            b[0].reason,
        )
    flagged = [d.budget["steps"]["impossible"] for d, _ in _stream(default, traj, ctx)]
    assert flagged[: TH["min_halt_step"] - 1] == [False] * (TH["min_halt_step"] - 1) and all(
        flagged[TH["min_halt_step"] - 1 :]
    )
    res = _stream(on, traj, ctx)
    first = next(k for k, (d, _) in enumerate(res) if d.halt)
    d = res[first][0]
    assert (
        first == TH["min_halt_step"] - 1
        and d.outcome == "failure"
        and "budget rule" in d.reason
        and "steps P(feasible)" in d.reason
    )
    assert all(x.halt for x, _ in res[first:])  # sticky
    only_steps = Monitor.load(mdir, halt_on_impossible="steps")
    assert only_steps.rule.budget_dims == ("steps",)
    with pytest.raises(ValueError):
        Monitor.load(mdir, halt_on_impossible=["wallclock"])


def test_budget_error_is_fail_open_and_keeps_the_outcome(ds, model_dir, monkeypatch, caplog):
    traj = ds.trajs[3]
    ctx = RunContext.of(traj, None)
    ref = _stream(Monitor.load(model_dir, budget=False), traj, ctx)
    mon = Monitor.load(model_dir)
    calls = {"n": 0}
    orig = LiveBudget.predict

    def flaky(self, st, x, p):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("boom")
        return orig(self, st, x, p)

    monkeypatch.setattr(LiveBudget, "predict", flaky)
    with caplog.at_level(logging.WARNING):
        res = _stream(mon, traj, ctx)
    assert res[0][0].budget is not None
    assert all(d.budget is None for d, _ in res[1:])  # off for the rest of the run
    for (a, _), (b, _) in zip(ref, res):
        assert (a.halt, a.outcome, a.p_success, a.p_failure) == (
            b.halt,
            b.outcome,
            b.p_success,
            b.p_failure,
        )
    assert any(
        "budget estimates off" in r.getMessage() and "boom" in r.getMessage()
        for r in caplog.records
    )
    monkeypatch.setattr(LiveBudget, "predict", orig)
    again = _stream(mon, traj, ctx)  # the next run starts clean
    assert all(d.budget is not None for d, _ in again)


def test_unusable_budget_part_leaves_the_monitor_working(ds, model_dir, tmp_path, caplog):
    def bad(spec):
        spec["dimensions"]["steps"]["estimator"]["feature_names"][0] = "no_such_feature"

    mdir = _save_variant(model_dir, tmp_path / "bad", bad)
    with caplog.at_level(logging.ERROR):
        mon = Monitor.load(mdir)
    assert mon.loaded.budget_model is None and mon.loaded.budget_status.startswith("error")
    d, _ = _stream(mon, ds.trajs[0], ds.contexts[0])[0]
    assert d.budget is None and d.p_success is not None


def test_manifest_hashes_the_budget_file(model_dir, tmp_path):
    m = read_manifest(model_dir)
    assert "extra_budget.json" in m["files"]
    assert load_model_dir(model_dir).extra["budget"]["format"] == SHIPPED_FORMAT
    import shutil

    bad = tmp_path / "tampered"
    shutil.copytree(model_dir, bad)
    p = bad / "extra_budget.json"
    txt = p.read_text()
    p.write_text(txt.replace('"tau": ', '"tau": 0', 1))
    with pytest.raises(ModelDirError, match="extra_budget.json"):
        load_model_dir(bad)


# ------------------------------------------------------------------ stacked predictor


def test_stacked_predictor_equals_each_booster_and_falls_back(monkeypatch):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(600, 6)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 0]) + rng.normal(size=600)
    boosters, maps = [], []
    for a, cols, n in ((0.1, [0, 1, 2, 3, 4, 5], 12), (0.9, [5, 2], 5), (0.5, [1, 3, 4], 9)):
        p = {
            "objective": "quantile",
            "alpha": a,
            "num_leaves": 7,
            "min_data_in_leaf": 5,
            "verbose": -1,
            "seed": 0,
        }
        # different tree counts: padded
        boosters.append(lgb.train(p, lgb.Dataset(X[:, cols], y), num_boost_round=n))
        maps.append(cols)
    R = rng.normal(size=(200, 6)).astype(np.float32)
    R[rng.random(R.shape) < 0.2] = np.nan
    R[:5] = 0.0
    ref = np.column_stack([b.predict(R[:, m], raw_score=True) for b, m in zip(boosters, maps)])
    sp = StackedPredictor(boosters, maps, 6)
    assert sp.kind == "stacked"
    # one stacked K-class model vs K boosters
    assert_same_number(np.asarray([sp(r) for r in R]), ref)
    import earlyeval.model.fastpredict as fp

    monkeypatch.setattr(
        fp, "stack_boosters", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("no"))
    )
    sep = StackedPredictor(boosters, maps, 6)
    assert sep.kind == "separate"
    assert_same_number(np.asarray([sep(r) for r in R]), ref)  # single-row C path vs Booster.predict


def test_interp_is_numpys():
    rng = np.random.default_rng(2)
    ps = [0.0, 0.05, 0.1, 0.5, 0.9, 0.95, 1.0]
    for _ in range(3000):
        xs = np.sort(np.round(rng.normal(size=7), int(rng.integers(0, 3))))  # ties
        for x in (*xs, *rng.normal(size=3), xs[0] - 1, xs[-1] + 1):
            assert _interp(float(x), xs.tolist(), ps) == np.interp(x, xs, ps, left=0.0, right=1.0)


# ------------------------------------------------------------------ train writes it


def test_train_bench_ships_the_budget_model(ds, tmp_path, monkeypatch):
    from earlyeval.app.stages.train import train_bench
    from earlyeval.evaluation import budget_shipped as shipped_module

    cfg, bcfg = budget_cfgs()
    monkeypatch.setattr(
        shipped_module, "BudgetConfig", lambda **kw: BudgetConfig(**{**bcfg.__dict__, **kw})
    )
    out = train_bench("tau2", tmp_path / "m", cfg, ds=ds)["model"]
    m = read_manifest(out)
    assert "extra_budget.json" in m["files"] and set(m["training"]["budget"]["dimensions"]) == {
        "steps",
        "output_tokens",
        "input_tokens",
        "cost_usd",
    }
    mon = Monitor.load(out)
    mon.start_context(ds.contexts[0], "r")
    assert mon.observe(ds.trajs[0].steps[0]).budget["steps"] is not None
    no = train_bench("tau2", tmp_path / "n", cfg, ds=ds, budget=False)["model"]
    assert "extra_budget.json" not in read_manifest(no)["files"]
    assert Monitor.load(no).loaded.budget_status.startswith("absent")


def test_steps_row_has_no_spend_features():
    st = SpendTracker(("steps",))
    st.update(Step(0, "ls", "view", actions=[Action("bash", "ls", "view")]))
    assert st.known(0) and st.spent(0) == 1.0
